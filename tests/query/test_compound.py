"""Compound selective queries against NumPy: every shape the planner prunes, on random data.

The planner keeps, block by block, what zone maps decide of each part of a
filter (a disjunction's range only on its own chunks, a block every row of
which matches not evaluated at all) and prunes the rows past the full
chunks by their own bounds.  Each query here is checked against the same
expression evaluated on plain NumPy arrays (no zone maps), on tables in
memory and on disk, with and without a leftover; the mutation tests show
that a planner dropping a chunk, a part or a leftover fails these checks.
"""

import numpy as np
import pytest

import bcolzx
from bcolzx._query import blocks, planner, zonemap
from bcolzx._query.tree import Const

CHUNK = 64  # rows of a chunk of the 8-byte columns (the int32 column: 128)


def _arrays(n, seed):
    rng = np.random.default_rng(seed)
    s = np.sort(rng.integers(0, n // 2, n))               # sorted, equal values across chunk ends
    x = rng.random(n)
    x[rng.random(n) < 0.1] = np.nan
    x[2 * CHUNK:3 * CHUNK] = np.nan                        # a chunk of NaN only
    k = rng.integers(0, 10, n).astype(np.int32)
    return {"s": s, "x": x, "k": k}


def _table(arrays, where, tmp_path):
    cols = [bcolzx.carray(arrays["s"], chunklen=CHUNK), bcolzx.carray(arrays["x"], chunklen=CHUNK),
            bcolzx.carray(arrays["k"], chunklen=2 * CHUNK)]
    if where == "memory":
        return bcolzx.ctable(cols, names=["s", "x", "k"])
    path = str(tmp_path / "t")
    bcolzx.ctable(cols, names=["s", "x", "k"], rootdir=path, mode="w").flush()
    return bcolzx.open(path, mode="r")


def _shapes(s):
    """Conditions of every shape, with constants at chunk borders, in and out of the data."""
    at = [int(s[i]) for i in (CHUNK - 1, CHUNK, 3 * CHUNK, 5 * CHUNK + 7, len(s) - 1)]
    a, b, c, d, last = at
    tail = int(s[min(len(s) - 1, len(s) // CHUNK * CHUNK)])  # the leftover's first value
    return [
        f"(s == {tail})",
        f"(s >= {tail}) & (s <= {tail}) & (k >= 0)",
        f"((s > {a}) | (x > 0.5)) & (s < {d})",
        f"((s == {b}) | (k == 2) | (s == {d})) & (s <= {c})",
        f"(s > {a}) & (s < {b + 3})",
        f"({a} < s < {c}) & (k == 3)",
        f"({c} > s) & (k == 3) & ({a} <= s)",
        f"~((s <= {a}) | (s >= {c}) | (k != 3))",
        "(s > lo) & (s < hi) & (k == kk)",
        f"((s > {a}) & (s < {b + 2})) | ((s > {d}) & (s < {d + 5}))",
        f"((s >= {a}) & (s <= {a})) | ((s >= {last}) & (s <= {last}))",
        f"((s == {a}) | (s == {c}) | (s == {d}) | (s == -3)) & (k < 5)",
        f"(s == {b}) | (s == {last})",
        f"(s == {last}) | (s == {last + 1})",
        "(x > 0.5) | (x != x)",
        f"~(x < 0.2) & (s >= {c})",
        f"(x == x) & (s < {b})",
        f"~((x > 0.3) | (s > {a}))",
        f"(s >= {c}) ^ (k > 4)",
        f"(s < {a}) or (s > {d})",
        f"not (s > {a})",
        f"(s > {a}) and (k >= 0)",
        f"(s >= {int(s[0])}) & (s <= {last})",        # every row: decided, nothing evaluated
        f"(s > {last}) | (s < {int(s[0])})",          # no row: every chunk ruled out
        "(s == -5) | (s > 1000000) | (k == 100)",     # values outside every chunk
        f"(s > {c}) & (s < {a})",                     # an empty range
        f"((s > {a}) | (s < {d})) & ~(k == 9)",
        f"(s >= {b}) & (s <= {b})",                   # an equal value over a chunk end
        f"(k == 3) | (k == 7) | (k == {2 ** 40})",     # isin-like, a value past int32
        f"((s == {d}) | (s == {2 ** 62}) | (s == -1)) & (k >= 2)",
        "(k == 3.0) | (k == 4)",
    ]


USER = {"lo": 40, "hi": 200, "kk": 3}


def _expected(arrays, expr):
    mask = bcolzx.eval(expr, user_dict={**arrays, **USER}, vm="python", out_flavor="numpy")
    return np.flatnonzero(mask)


def _differences(table, arrays):
    """The conditions whose rows differ from NumPy's, through every query method."""
    wrong = []
    for expr in _shapes(arrays["s"]):
        want = _expected(arrays, expr)
        got = table.fetchwhere(expr, outcols=["nrow__", "s"], out_flavor="numpy", user_dict=USER)
        if not (np.array_equal(got["nrow__"], want)
                and np.array_equal(got["s"], arrays["s"][want])):
            wrong.append(expr)
            continue
        rows = [r.nrow__ for r in table.where(expr, outcols=["nrow__"], user_dict=USER,
                                              vm="numexpr")]
        if rows != want.tolist():
            wrong.append(expr)
    return wrong


@pytest.fixture(params=[(1000, 0), (16 * CHUNK, 1), (700, 2)],
                ids=["leftover", "full-chunks", "short-leftover"])
def arrays(request):
    n, seed = request.param
    return _arrays(n, seed)


@pytest.mark.parametrize("where", ["memory", "disk"])
def test_every_shape_selects_numpys_rows(arrays, where, tmp_path):
    assert _differences(_table(arrays, where, tmp_path), arrays) == []


@pytest.mark.parametrize("where", ["memory", "disk"])
def test_skip_limit_and_blen_over_pruned_blocks(where, tmp_path):
    arrays = _arrays(1000, 3)
    table = _table(arrays, where, tmp_path)
    s = arrays["s"]
    a, b, c, d = (int(s[i]) for i in (CHUNK - 1, 2 * CHUNK + 1, 5 * CHUNK, 9 * CHUNK))
    expr = f"((s > {a}) & (s < {b})) | ((s >= {c}) & (s <= {d}) & (k < 7))"
    want = _expected(arrays, expr)
    assert len(want) > 40
    for skip, limit in ((0, None), (5, None), (0, 7), (13, 20), (len(want) - 2, 10),
                        (len(want), 3), (3, 0)):
        end = None if limit is None else skip + limit
        got = table.fetchwhere(expr, outcols="nrow__", out_flavor="numpy", skip=skip,
                               limit=limit)["nrow__"]
        np.testing.assert_array_equal(got, want[skip:end])
        got = [r[0] for r in table.where(expr, outcols=["nrow__"], skip=skip, limit=limit,
                                         out_flavor=tuple)]
        assert got == want[skip:end].tolist()
        for blen in (1, 7, 50, 1000):
            parts = list(table.whereblocks(expr, blen=blen, outcols=["nrow__", "k"],
                                           skip=skip, limit=limit))
            assert all(len(p) == blen for p in parts[:-1])
            got = np.concatenate(parts)["nrow__"] if parts else np.empty(0, int)
            np.testing.assert_array_equal(got, want[skip:end])
    result = table.fetchwhere(expr, out_flavor="bcolz", skip=4, limit=30)
    for name in ("s", "x", "k"):
        np.testing.assert_array_equal(result.cols[name][:], arrays[name][want[4:34]])


def test_a_disjunction_evaluates_each_range_only_on_its_own_chunks(monkeypatch):
    """Each kept block evaluates what is left of the filter there: the one
    range its chunk may hold, never the other range, never the leftover."""
    n = 20 * CHUNK + 10
    s = bcolzx.carray(np.arange(n), chunklen=CHUNK)
    seen = []
    real = blocks.python_vm

    def recorded(tree, namespace, record=None):
        seen.append((len(next(iter(namespace.values()))), tree))
        return real(tree, namespace, record)
    monkeypatch.setattr(blocks, "python_vm", recorded)
    expr = f"((s > {CHUNK + 5}) & (s < {CHUNK + 20})) | ((s > {7 * CHUNK + 3}) & (s < {8 * CHUNK}))"
    got = np.concatenate([pos for _, pos, _ in planner.matches(expr, {"s": s}, {}, "python")])
    np.testing.assert_array_equal(got, np.flatnonzero(
        ((np.arange(n) > CHUNK + 5) & (np.arange(n) < CHUNK + 20))
        | ((np.arange(n) > 7 * CHUNK + 3) & (np.arange(n) < 8 * CHUNK))))
    constants = sorted(tuple(sorted(c.right.value for c in _compares(tree))) for _, tree in seen)
    # block 1: its range (two comparisons, one per conjunction part); block 7:
    # only s > 7*CHUNK+3 (s < 8*CHUNK holds on every row of it)
    assert constants == [(CHUNK + 5,), (CHUNK + 20,), (7 * CHUNK + 3,)]
    assert all(rows == CHUNK for rows, _ in seen)


def _compares(tree):
    if hasattr(tree, "operands"):
        return [c for o in tree.operands for c in _compares(o)]
    if tree.__class__.__name__ == "Compare":
        return [tree]
    if hasattr(tree, "left") and hasattr(tree.left, "op"):
        return _compares(tree.left) + _compares(tree.right)
    return _compares(tree.operand) if hasattr(tree, "operand") else []


def test_a_block_every_row_of_which_matches_is_not_read():
    n = 10 * CHUNK
    s = bcolzx.carray(np.arange(n), chunklen=CHUNK)
    read = []
    engine = s.engine
    real = engine.read

    def counted(start, stop, out=None):
        read.append((start, stop))
        return real(start, stop, out)
    engine.read = counted
    got = [(lo, len(pos)) for lo, pos, _ in planner.matches(
        f"(s >= {CHUNK}) & (s < {4 * CHUNK + 1})", {"s": s}, {}, "python")]
    assert got == [(CHUNK, CHUNK), (2 * CHUNK, CHUNK), (3 * CHUNK, CHUNK), (4 * CHUNK, 1)]
    assert read == [(4 * CHUNK, 5 * CHUNK)]   # only the block the bounds do not decide


# -- the checks above fail for a planner that prunes wrongly ----------------------------


def _fails_with(monkeypatch, tmp_path, where="memory"):
    arrays = _arrays(1000, 0)
    return _differences(_table(arrays, where, tmp_path), arrays)


def test_a_planner_that_drops_a_chunk_is_caught(monkeypatch, tmp_path):
    real = planner._Skipper.__call__

    def drops_the_second_chunk(self, lo, hi):
        return real(self, lo, hi) or lo // CHUNK == 1
    monkeypatch.setattr(planner._Skipper, "__call__", drops_the_second_chunk)
    assert _fails_with(monkeypatch, tmp_path)


def test_a_planner_that_drops_a_part_of_a_disjunction_is_caught(monkeypatch, tmp_path):
    real = zonemap.remaining

    def drops_the_last_or(tree, decided):
        left = real(tree, decided)
        if getattr(left, "op", None) == "or" and hasattr(left, "right"):
            return left.left
        if getattr(left, "op", None) == "or":
            return left.operands[0]
        return left
    monkeypatch.setattr(planner, "remaining", drops_the_last_or)
    planner._remaining.cache_clear()
    try:
        assert _fails_with(monkeypatch, tmp_path)
    finally:
        planner._remaining.cache_clear()


def test_a_planner_that_decides_too_much_is_caught(monkeypatch, tmp_path):
    real = zonemap.remaining
    monkeypatch.setattr(planner, "remaining",
                        lambda tree, decided: Const(True) if decided.any() else
                        real(tree, decided))
    planner._remaining.cache_clear()
    try:
        assert _fails_with(monkeypatch, tmp_path)
    finally:
        planner._remaining.cache_clear()


@pytest.mark.parametrize("where", ["memory", "disk"])
def test_a_planner_that_misreads_the_leftover_is_caught(monkeypatch, tmp_path, where):
    real = planner._tail_bounds

    def shifted(column, start, length, dtype):
        found = real(column, start, length, dtype)
        if found is None or dtype.kind not in "iu":
            return found
        return found[0] + 1, found[1], found[2]    # misses the leftover's smallest value
    monkeypatch.setattr(planner, "_tail_bounds", shifted)
    planner._ANALYSED._results.clear()
    try:
        assert _fails_with(monkeypatch, tmp_path, where)
    finally:
        planner._ANALYSED._results.clear()


@pytest.mark.parametrize("dtype", ["i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "f8"])
def test_an_isin_like_disjunction_gives_the_python_vms_booleans(dtype):
    from bcolzx._query.blocks import _Part
    from bcolzx._query.expr import compile_expression
    from bcolzx._query.pyvm import python_vm

    info = np.iinfo(dtype) if dtype[0] in "iu" else None
    unsorted = np.arange(-5, 300).astype(dtype)
    if info is not None:
        unsorted[:3] = [info.min, info.max, info.max - 1]
    ascending = np.sort(np.repeat(unsorted, 3))            # runs of equal values
    almost = ascending.copy()
    almost[-2], almost[-1] = almost[-1], almost[-2] - 1    # sorted but for the end
    top = 0 if info is None else min(int(info.max), 2 ** 63 - 1)
    for expr in (f"(a == 3) | (a == 250) | (a == -2) | (a == {top})",
                 f"(a == {2 ** 40}) | (7 == a) | (a == {-2 ** 62}) | (a == {2 ** 63 - 1})",
                 "(a == 1) | (a == 1)", "((a == 4) | (a == 9)) | (a == 11)",
                 "(a == 4) | (a == 9) | (a == 4) | (a == 299)"):
        tree = compile_expression(expr).tree
        part = _Part.of(tree)
        assert part.members is not None and part.members[0] == "a"
        for values in (unsorted, ascending, almost, ascending[:0], ascending[:1]):
            np.testing.assert_array_equal(part.evaluate({"a": values}),
                                          python_vm(tree, {"a": values}),
                                          err_msg=f"{dtype} {expr} {values[:5]}")
    for expr in ("(a == 3) | (b == 4)", "(a == 3) | (a > 4)", "(a == 3.5) | (a == 4)",
                 "(a == True) | (a == 4)", "a == 3"):
        assert _Part.of(compile_expression(expr).tree).members is None, expr


def test_fetchwheres_table_is_the_table_of_its_rows():
    """fetchwhere's result in memory is the table its rows make (same chunk
    lengths, sizes, values), built without compressing its rows first."""
    n = 5000
    rng = np.random.default_rng(5)
    cols = [np.arange(n), rng.random(n),
            np.array([f"s{i % 13}" for i in range(n)], dtype=np.dtypes.StringDType()),
            np.array([{"k": i} for i in range(n)], dtype=object),
            np.arange(n * 3).reshape(n, 3).astype("i2"),
            np.array([b"ab%d" % (i % 7) for i in range(n)])]
    names = ["i", "x", "s", "o", "m", "b"]
    t = bcolzx.ctable(cols, names=names, allow_pickle=True)
    for expr, kw in (("(i > 100) & (i < 4000)", {}), ("i < 0", {}),
                     ("(i % 7 == 0) | (i > 4990)", {"limit": 50, "skip": 3}),
                     ("i >= 4000", {"outcols": ["s", "m", "b"]})):
        got = t.fetchwhere(expr, out_flavor="bcolz", **kw)
        rows = t.fetchwhere(expr, out_flavor="numpy", **kw)
        want = bcolzx.ctable([rows[n].astype(t.cols[n].dtype) for n in rows.dtype.names],
                             names=list(rows.dtype.names), allow_pickle=True)
        assert got.names == want.names and len(got) == len(want) == len(rows)
        assert got.cbytes == want.cbytes and got.nbytes == want.nbytes
        for name in got.names:
            a, b = got.cols[name], want.cols[name]
            assert (a.dtype, a.shape, a.chunklen, a.mode, a.nchunks, a.cparams, a.dflt) == \
                (b.dtype, b.shape, b.chunklen, b.mode, b.nchunks, b.cparams, b.dflt), name
            assert a[:].tolist() == b[:].tolist(), name
        got.append(got[:1] if len(got) else want[:0])   # a table like any other
        got.flush()
