"""Tests of string columns against strings, answered from the chunks' bytes
(bcolzx._query.textscan, bcolzx._ext.strings.match): the same masks as NumPy's
evaluation of the same expression on the same StringDType array."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bcolzx
from bcolzx._ext import strings as kernel
from bcolzx._format import strings, vlen
from bcolzx._query import textscan
from bcolzx._query.expr import compile_expression
from bcolzx.errors import CorruptDataError

S = np.dtypes.StringDType()
SNAN = np.dtypes.StringDType(na_object=np.nan)
SNONE = np.dtypes.StringDType(na_object=None)

#: Empty strings, ASCII, 2-, 3- and 4-byte characters, prefixes of each other,
#: and a row longer than a C-Blosc2 block.
POOL = ["", "A", "AA", "AAPL", "AAPLE", "B", "MSFT", "é", "éa", "日本語", "日本", "😀", "a😀b",
        "\U0010ffff", "zz", "x" * 70_000, "café naïve"]
#: Needles: in the pool, between its strings, prefixes, empty, 4-byte.
NEEDLES = ["AAPL", "", "A", "AAP", "é", "日本", "😀", "zzz", "x" * 70_000, "x", "a", "\U0010ffff",
           "ñ"]
TESTS = ["s == v", "s != v", "s < v", "s <= v", "s > v", "s >= v", "v < s", "v >= s", "v == s",
         "startswith(s, v)", "endswith(s, v)", "contains(s, v)"]


def _values(n, dtype=S, seed=0, na=0):
    rng = np.random.default_rng(seed)
    values = np.array(POOL, dtype=dtype)[rng.integers(0, len(POOL), n)]
    if na:
        values[rng.integers(0, n, na)] = dtype.na_object
    return values


@pytest.fixture
def unpacked(monkeypatch):
    """Fail any packing of chunks into StringDType arrays (the test must be
    answered from the chunks' bytes)."""
    def refuse(*args, **kwargs):
        raise AssertionError("a chunk was decoded into strings")
    monkeypatch.setattr(strings, "pack_rows", refuse)


def _reference(expr, values, needle):
    return bcolzx.eval(expr, user_dict={"s": values, "v": needle}, out_flavor="numpy")


@pytest.mark.parametrize("expr", TESTS)
def test_tests_equal_numpys_on_every_edge(make, expr, unpacked):
    values = _values(3_000)
    c = make(values, chunklen=256)  # chunk borders inside the blocks asked for
    for needle in NEEDLES:
        want = _reference(expr, values, needle)
        for blen in (None, 100, 1000):
            got = bcolzx.eval(expr, user_dict={"s": c, "v": needle}, out_flavor="numpy",
                              blen=blen)
            assert got.dtype == np.bool_ and got.tolist() == want.tolist(), (needle, blen)


@pytest.mark.parametrize("expr", ["s == v", "s != v", "startswith(s, v)", "v == s"])
def test_ascii_tickers_equal_numpys(make, expr, unpacked):
    """Short ASCII rows (the word-at-a-time comparison), needles of 0 to 9
    bytes, rows at the chunks' ends."""
    rng = np.random.default_rng(11)
    letters = np.array(list("ABCDEFGHIJ"))
    pool = ["".join(rng.choice(letters, k)) for k in rng.integers(0, 10, 300)]
    pool += ["ABCDEFGH", "ABCDEFGHI", "A", "AB", ""]
    values = np.array(pool, dtype=S)[rng.integers(0, len(pool), 5_000)]
    c = make(values, chunklen=512)
    for needle in ["", "A", "AB", "ABCDEFG", "ABCDEFGH", "ABCDEFGHI", "J" * 8, str(values[-1]),
                   str(values[511]), str(values[512])]:
        got = bcolzx.eval(expr, user_dict={"s": c, "v": needle}, out_flavor="numpy")
        assert got.tolist() == _reference(expr, values, needle).tolist(), needle


@pytest.mark.parametrize("dtype", [SNAN, SNONE])
@pytest.mark.parametrize("expr", ["s == 'AAPL'", "s != 'AAPL'", "s != ''", "startswith(s, '')",
                                  "contains(s, 'A')", "endswith(s, 'L')", "s < 'B'",
                                  "'B' <= s"])
def test_missing_rows_give_numpys_answer(make, dtype, expr):
    values = _values(2_000, dtype, seed=1, na=300)
    c = make(values, chunklen=128)
    try:
        want = bcolzx.eval(expr, user_dict={"s": values}, out_flavor="numpy")
    except ValueError as exc:  # NumPy refuses to order None: so must the carray
        with pytest.raises(type(exc)):
            bcolzx.eval(expr, user_dict={"s": c}, out_flavor="numpy")
        return
    assert bcolzx.eval(expr, user_dict={"s": c}, out_flavor="numpy").tolist() == want.tolist()


def test_tests_combine_with_other_columns_and_are_not_packed(make, unpacked):
    values = _values(5_000, seed=2)
    x = np.arange(5_000)
    c = make(values, chunklen=512)
    cases = ["(s == 'AAPL') & (x > 100)", "(x < 2000) & startswith(s, 'A') & (s != 'AAPL')",
             "(s == 'MSFT') | (s == 'é') | (x == 7)", "where(s < 'B', x, -x)",
             "~(s >= 'M')", "sum(where(contains(s, 'x'), 1, 0))"]
    for expr in cases:
        want = bcolzx.eval(expr, user_dict={"s": values, "x": x}, out_flavor="numpy")
        got = bcolzx.eval(expr, user_dict={"s": c, "x": x}, out_flavor="numpy")
        np.testing.assert_array_equal(got, want, err_msg=expr)


def test_the_column_is_still_read_where_it_is_needed_as_strings(make):
    values = _values(1_000, seed=3)
    c = make(values, chunklen=64)
    other = _values(1_000, seed=4)
    want = (values == other) | (values == "AAPL")
    got = bcolzx.eval("(s == t) | (s == 'AAPL')", user_dict={"s": c, "t": other},
                      out_flavor="numpy")
    assert got.tolist() == want.tolist()


@pytest.mark.parametrize("threads", [1, 2])
def test_table_queries_with_pruned_and_unpruned_chunks(tmp_path, threads, unpacked):
    """Sorted strings: zone maps rule chunks out, the kept ones are tested from
    their bytes; the rows match NumPy's on the whole column."""
    before = bcolzx.set_nthreads(threads)
    try:
        values = np.sort(_values(4_000, seed=5))
        x = np.arange(4_000)
        root = str(tmp_path / "t")
        bcolzx.ctable([values, x], names=["s", "x"], rootdir=root, chunklen=256).flush()
        ct = bcolzx.open(root, mode="r")
        for expr, mask in [("s == 'MSFT'", values == "MSFT"), ("s < 'AB'", values < "AB"),
                           ("startswith(s, '日')", np.strings.startswith(values, "日")),
                           ("(s >= 'é') & (x % 2 == 0)", (values >= "é") & (x % 2 == 0)),
                           ("s != 'zz'", values != "zz"), ("s == 'nothing'", values == "q")]:
            got = ct.fetchwhere(expr, out_flavor="numpy", outcols=["x"])
            assert got["x"].tolist() == np.flatnonzero(mask).tolist(), expr
    finally:
        bcolzx.set_nthreads(before)


def test_a_rewritten_expression_reads_scans_instead_of_the_column():
    c = bcolzx.carray(_values(100), chunklen=16)
    expr = compile_expression("(s == v) & (x > 1) | startswith(s, 'A')")
    cols = {"s": c, "x": np.arange(100)}
    rewritten, reads = textscan.rewrite(expr, cols, {"v": np.asarray("AAPL")})
    assert set(reads) == {"x", "_s0", "_s1"}
    assert isinstance(reads["_s0"], textscan.Scan) and reads["_s0"].needle == b"AAPL"
    assert reads["_s1"].op == "startswith"
    # Not rewritten: a NumPy array, a bytes needle, a NUL NumPy would cut, two columns.
    for text, scalars in [("s == 'a\\x00'", {}), ("s == v", {"v": np.asarray(b"A")}),
                          ("s == t", {})]:
        e = compile_expression(text)
        assert textscan.rewrite(e, {"s": c, "t": c}, scalars)[0] is e, text
    e = compile_expression("s == 'A'")
    assert textscan.rewrite(e, {"s": _values(10)}, {})[0] is e


def test_damaged_utf8_is_found_by_a_test_too(tmp_path, monkeypatch):
    root = str(tmp_path / "c")
    with monkeypatch.context() as m:
        m.setattr(strings, "encode_rows", lambda rows, kind: vlen.encode_planar(
            [b"fine", b"\xc3("]))
        bcolzx.carray(np.array(["fine", "also"], dtype=S), rootdir=root, chunklen=2).flush()
    c = bcolzx.open(root, mode="r")
    with pytest.raises(CorruptDataError, match="UTF-8") as err:
        bcolzx.eval("c == 'fine'", out_flavor="numpy")
    assert err.value.chunk == 0


def test_the_kernel_checks_its_arguments_and_the_table():
    chunk = strings.encode_rows(np.array(["ab", "", "é"], dtype=S), "utf8")
    out = np.zeros(3, np.uint8)
    assert kernel.match(chunk, 3, False, "ge", b"a", False, out, 0) == -1
    assert out.tolist() == [1, 0, 1]
    assert kernel.match(chunk, -1, False, "eq", b"", False, out[:1], 1) == -1 and out[0]
    with pytest.raises(ValueError, match="unknown test"):
        kernel.match(chunk, 3, False, "like", b"a", False, out, 0)
    with pytest.raises(ValueError, match="not in a chunk"):
        kernel.match(chunk, 3, False, "eq", b"a", False, out, 1)
    with pytest.raises(ValueError, match="metadata calls for 4"):
        kernel.match(chunk, 4, False, "eq", b"a", False, out, 0)
    with pytest.raises(ValueError, match="end at"):
        kernel.match(chunk[:-1], 3, False, "eq", b"a", False, out, 0)
    with pytest.raises(ValueError, match="shorter"):
        kernel.match(chunk[:7], 3, False, "eq", b"a", False, out, 0)
    with pytest.raises(ValueError, match="more than"):
        kernel.match(b"\xff" * 8 + chunk[8:], -1, False, "eq", b"a", False, out, 0)
    with_na = vlen.encode_planar([b"a", None, b"b"])
    with pytest.raises(ValueError, match="missing"):
        kernel.match(with_na, 3, False, "eq", b"a", False, out, 0)
    assert kernel.match(with_na, 3, True, "ne", b"a", True, out, 0) == -1
    assert out.tolist() == [0, 1, 1]
    bad = vlen.encode_planar([b"ok", b"\xc3(", b"fine"])
    assert kernel.match(bad, 3, False, "eq", b"ok", False, out[:1], 0) == -1
    assert kernel.match(bad, 3, False, "eq", b"ok", False, out, 0) == 1
    assert kernel.match(bad, 3, False, "eq", b"ok", False, out[:1], 2) == -1


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(max_size=12), max_size=120), st.text(max_size=4),
       st.sampled_from(TESTS))
def test_any_text_tests_as_numpy_does(values, needle, expr):
    values = [v.replace("\x00", "") for v in values]
    needle = needle.replace("\x00", "")
    try:
        needle.encode("utf-8")
        data = np.array(values, dtype=S)
    except UnicodeEncodeError:
        return
    c = bcolzx.carray(data, chunklen=16)
    got = bcolzx.eval(expr, user_dict={"s": c, "v": needle}, out_flavor="numpy")
    assert got.tolist() == _reference(expr, data, needle).tolist()
