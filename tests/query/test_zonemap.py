"""Zone maps: may_match never prunes a block that holds a matching row."""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from bcolzx._format.zonemap import bounds_of
from bcolzx._query.expr import compile_expression
from bcolzx._query.zonemap import may_match, may_match_blocks
from bcolzx.errors import ExpressionError

A = np.array([1.0, 2.0, 4.0])
A_NAN = np.array([1.0, np.nan, 4.0])
ALL_NAN = np.array([np.nan, np.nan])
B = np.array([5, 6, 7], np.int8)


def _matches(text, columns, scalars=None):
    bounds = {name: bounds_of(values) for name, values in columns.items()}
    return may_match(compile_expression(text), bounds, scalars or {})


@pytest.mark.parametrize(
    "text, expected",
    [
        ("a < 1", False),
        ("a <= 1", True),
        ("a > 4", False),
        ("a >= 4", True),
        ("a == 3", True),  # within the bounds, though no row is 3
        ("a == 5", False),
        ("a != 1", True),
        ("5 < a", False),
        ("0 < a < 1", False),
        ("1 < a < 4", True),
        ("(a > 10) | (b < 5)", False),
        ("(a > 10) | (b < 6)", True),
        ("(a > 0) & (b > 7)", False),
        ("(a > 0) and (b >= 7)", True),
        ("~(a > 0)", False),
        ("not (a > 0)", False),
        ("(a > 0) ^ (b > 0)", False),
        ("b + 100 > 107", False),
        ("b + 100 > 106", True),
        ("b * 2 < 10", False),
        ("-b > -5", False),
        ("b - a > 6", False),
        ("b - a > 5", True),
        ("a / 2 > 2", False),
        ("a / 2 >= 2", True),
        ("b > k", False),
        ("b > k - 1", True),
        ("isnan(a)", False),
        ("sin(a) > 5", True),  # functions: maybe
        ("a", True),
    ],
)
def test_may_match_on_explicit_bounds(text, expected):
    assert _matches(text, {"a": A, "b": B}, {"k": 7}) is expected


@pytest.mark.parametrize(
    "text, column, expected",
    [
        ("a < 0", A_NAN, False),
        ("~(a < 5)", A_NAN, True),  # NaN < 5 is False, so ~ is True
        ("~(a < 5)", A, False),
        ("not (a < 5)", A_NAN, True),
        ("a != 2", A_NAN, True),
        ("isnan(a)", A_NAN, True),
        ("a < 0", ALL_NAN, False),
        ("a >= 0", ALL_NAN, False),
        ("a == a", ALL_NAN, False),
        ("a != 0", ALL_NAN, True),
        ("~(a > 0)", ALL_NAN, True),
        ("isnan(a)", ALL_NAN, True),
        ("a + 1 > 0", ALL_NAN, False),
        ("~(a + 1 > 0)", ALL_NAN, True),
    ],
)
def test_nan_never_matches_a_comparison_but_its_negation(text, column, expected):
    assert _matches(text, {"a": column}) is expected


def test_integer_overflow_is_not_reasoned_about():
    b = np.array([3, 3], np.int32)
    # 3 * 10**9 wraps around in int32: the row *is* negative
    assert bool(compile_expression("b * 1000000000 < 0").evaluate({"b": b}).all())
    assert _matches("b * 1000000000 < 0", {"b": b})


def test_float32_rounding_is_that_of_the_data():
    f = np.array([16777216.0], np.float32)
    # in float32, 16777216 + 1 rounds back to 16777216
    assert compile_expression("f + 1 == 16777216").evaluate({"f": f}).all()
    assert _matches("f + 1 == 16777216", {"f": f})
    assert _matches("f * 1.0 > 0.1", {"f": np.array([0.1], np.float32)})  # float64 compare


def test_datetime_bounds_with_string_dates():
    d = np.array(["2020-01-01", "2021-06-01", "NaT"], "M8[D]")
    assert not _matches("d > '2021-07-01'", {"d": d})
    assert _matches("d > '2021-05-01'", {"d": d})
    assert _matches("d != '2021-05-01'", {"d": d})


def test_constant_conditions():
    assert _matches("~(0 < 0 < a)", {"a": A})  # ~(False & ...) is True
    assert not _matches("(1 > 2) & (a > 0)", {"a": A})
    assert _matches("(1 < 2) | (a > 10)", {"a": A})
    assert not _matches("False", {"a": A})


def test_unknown_names_and_strings_are_maybe():
    assert may_match(compile_expression("a < 0"), {})
    assert may_match(compile_expression("a == 'x'"), {"a": (1, 2)})


def test_two_tuple_bounds_and_bad_bounds():
    e = compile_expression("a > 3")
    assert not may_match(e, {"a": (np.int64(0), np.int64(3))})
    assert may_match(e, {"a": (np.int64(0), np.int64(4))})
    with pytest.raises(ValueError, match="bounds of 'a'"):
        may_match(e, {"a": (1,)})


# -- the property: False means no row matches ------------------------------------------

_COLUMN_DTYPES = st.sampled_from(["int8", "int32", "int64", "uint8", "float32", "float64"])
_CMP = st.sampled_from(["<", "<=", ">", ">=", "==", "!="])
_ARITH = st.sampled_from(["+", "-", "*", "/"])
_CONST = st.sampled_from(["0", "1", "-3", "100", "0.5", "-2.5", "1e30", "k"])


@st.composite
def _term(draw, depth=2):
    if depth == 0 or draw(st.integers(0, 2)) == 0:
        return draw(st.sampled_from(["a", "b"]) | _CONST)
    return f"({draw(_term(depth - 1))} {draw(_ARITH)} {draw(_term(depth - 1))})"


@st.composite
def _condition(draw, depth=2):
    kind = draw(st.integers(0, 5 if depth else 1))
    if kind <= 1:
        return f"({draw(_term())} {draw(_CMP)} {draw(_term())})"
    if kind == 2:
        return f"({draw(_term())} {draw(_CMP)} {draw(_term())} {draw(_CMP)} {draw(_term())})"
    if kind == 3:
        return f"~{draw(_condition(depth - 1))}"
    if kind == 4:
        return f"(not {draw(_condition(depth - 1))})"
    op = draw(st.sampled_from(["&", "|", "^", "and", "or"]))
    return f"({draw(_condition(depth - 1))} {op} {draw(_condition(depth - 1))})"


def _column(dtype):
    elements = None
    if np.dtype(dtype).kind == "f":
        elements = st.floats(-1e3, 1e3, width=np.dtype(dtype).itemsize * 8) \
            | st.sampled_from([np.nan, np.inf, -np.inf])
    return hnp.arrays(dtype, st.integers(1, 6), elements=elements)


def _columns_and_scalar(data):
    """Two columns of one length and a scalar ``k``, drawn."""
    a = data.draw(_column(data.draw(_COLUMN_DTYPES)), label="a")
    b = data.draw(_column(data.draw(_COLUMN_DTYPES)), label="b")
    n = min(len(a), len(b))
    k = data.draw(st.sampled_from([np.int64(2), 2.5, np.float32(-1.5), np.int8(-7)]), label="k")
    return a[:n], b[:n], k


@settings(max_examples=150, deadline=None)
@given(data=st.data(), text=_condition())
def test_may_match_false_means_no_row_matches(data, text):
    a, b, k = _columns_and_scalar(data)
    try:
        e = compile_expression(text)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = e.evaluate({"a": a, "b": b, "k": k})
    except ExpressionError:
        return
    bounds = {"a": bounds_of(a), "b": bounds_of(b)}
    if not may_match(e, bounds, {"k": k}):
        assert not np.asarray(result, dtype=bool).any(), (text, a, b, k)


# -- many blocks at once: the same answer as block by block ----------------------------


def _block_bounds(values, cuts):
    """Per block of `values` cut at `cuts`: the bounds, and the same as arrays."""
    each = [bounds_of(part) for part in np.split(values, cuts)]
    return each, tuple(np.array([b[i] for b in each]) for i in range(3))


def test_many_blocks_on_explicit_bounds():
    e = compile_expression("(a > 2) & (b < 6) | (-a > 0)")
    a = np.array([0.0, 1.0, 2.0, 3.0, 4.0, -1.0, np.nan, np.nan])
    b = np.array([5, 9, 5, 5, 9, 9, 5, 5], np.int8)
    _, bounds_a = _block_bounds(a, [2, 4, 6])
    _, bounds_b = _block_bounds(b, [2, 4, 6])
    got = may_match_blocks(e, {"a": bounds_a, "b": bounds_b})
    assert got.tolist() == [False, True, True, False]
    with pytest.raises(ValueError, match="one item per block"):
        may_match_blocks(e, {"a": bounds_a, "b": tuple(x[:2] for x in bounds_b)})


@settings(max_examples=150, deadline=None)
@given(data=st.data(), text=_condition())
def test_many_blocks_agree_with_one_block_at_a_time(data, text):
    a, b, k = _columns_and_scalar(data)
    n = len(a)
    cuts = sorted(set(data.draw(st.lists(st.integers(1, max(1, n - 1)), max_size=3),
                                label="cuts")) - {n})
    try:
        e = compile_expression(text)
    except ExpressionError:
        return
    each_a, bounds_a = _block_bounds(a, cuts)
    each_b, bounds_b = _block_bounds(b, cuts)
    got = may_match_blocks(e, {"a": bounds_a, "b": bounds_b}, {"k": k})
    one_by_one = [may_match(e, {"a": x, "b": y}, {"k": k}) for x, y in zip(each_a, each_b)]
    assert got.tolist() == one_by_one, (text, a, b, cuts, k)


def _decide(text, **bounds):
    from bcolzx._query.zonemap import decide_blocks

    e = compile_expression(text)
    return e, decide_blocks(e, {k: tuple(np.asarray(x) for x in v) for k, v in bounds.items()})


def test_decide_blocks_keeps_what_the_bounds_decide_of_each_part():
    from bcolzx._query.zonemap import FALSE, MAYBE, TRUE, filter_parts

    # blocks: a in [0, 9], [10, 19], [20, 29]
    e, d = _decide("(a > 12) | (a < 3)", a=([0, 10, 20], [9, 19, 29]))
    assert [type(p).__name__ for p in filter_parts(e.tree)] == ["Logical", "Compare", "Compare"] \
        or [type(p).__name__ for p in filter_parts(e.tree)] == ["Binary", "Compare", "Compare"]
    assert d.maybe.tolist() == [True, True, True]
    assert d.parts.tolist() == [[MAYBE, FALSE, MAYBE], [MAYBE, MAYBE, FALSE], [TRUE, TRUE, FALSE]]
    # NaN possible: < is never decided true there, != is (NaN != 7 holds)
    e, d = _decide("(x < 5) & (x != 7)", x=([0.0, 10.0, 6.0], [1.0, 11.0, 8.0],
                                             [True, False, False]))
    assert d.parts[:, 1].tolist() == [MAYBE, FALSE, FALSE]
    assert d.parts[:, 2].tolist() == [TRUE, TRUE, MAYBE]
    with pytest.raises(ValueError, match="not a filter"):
        _decide("a + 1", a=([0], [1]))


@pytest.mark.parametrize("text, bounds, left", [
    ("(a > 12) | (a < 3)", ([10], [19]), "a > 12"),
    ("(a > 12) | (a < 3)", ([20], [29]), "True"),
    ("(a > 12) | (a < 3)", ([5], [9]), "False"),
    ("((a > 2) & (a < 15)) | ((a > 40) & (a < 45))", ([10], [19]), "a < 15"),
    ("((a > 2) & (a < 15)) | ((a > 40) & (a < 45))", ([40], [49]), "(a > 40) & (a < 45)"),
    ("~((a <= 2) | (a >= 15))", ([10], [19]), "~(a >= 15)"),
    ("(a > 12) ^ (a > 5)", ([10], [19]), "~(a > 12)"),
    ("(a > 12) ^ (a > 25)", ([10], [19]), "a > 12"),
    ("not (a > 12)", ([20], [29]), "False"),
    ("(a == 3) | (a == 15) | (a == 16)", ([10], [19]), "(a == 15) | (a == 16)"),
    ("0 < a < 15", ([10], [19]), "a < 15"),
])
def test_remaining_folds_the_decided_parts(text, bounds, left):
    from bcolzx._query.pyvm import python_vm
    from bcolzx._query.zonemap import remaining

    e, d = _decide(text, a=bounds)
    got = remaining(e.tree, d.parts[0])
    want = compile_expression(left).tree
    # the same rows of the block, whatever the tree's shape
    rows = np.arange(bounds[0][0], bounds[1][0] + 1)
    np.testing.assert_array_equal(np.broadcast_to(python_vm(got, {"a": rows}), rows.shape),
                                  np.broadcast_to(python_vm(want, {"a": rows}), rows.shape))
    np.testing.assert_array_equal(np.broadcast_to(python_vm(got, {"a": rows}), rows.shape),
                                  python_vm(e.tree, {"a": rows}))
    assert len(str(got)) <= len(str(e.tree))


def _random_filter(rng, depth=0):
    """A random filter over columns a (floats with NaN) and b (ints)."""
    if depth >= 3 or rng.random() < 0.3:
        name = ["a", "b"][rng.integers(2)]
        op = ["<", "<=", ">", ">=", "==", "!="][rng.integers(6)]
        value = int(rng.integers(-5, 45))
        return f"({value} {op} {name})" if rng.random() < 0.3 else f"({name} {op} {value})"
    kind = rng.integers(5)
    if kind == 4:
        return f"~{_random_filter(rng, depth + 1)}"
    joined = [" & ", " | ", " ^ ", " & "][kind]
    parts = [_random_filter(rng, depth + 1) for _ in range(int(rng.integers(2, 4)))]
    return "(" + joined.join(parts) + ")"


@pytest.mark.parametrize("seed", range(12))
def test_what_remains_of_a_filter_holds_on_the_same_rows_of_each_block(seed):
    """decide_blocks + remaining on random filters and blocks (NaN, one value,
    all NaN): the remaining tree gives each block's rows exactly as the filter."""
    from bcolzx._query.pyvm import python_vm
    from bcolzx._query.zonemap import decide_blocks, remaining

    rng = np.random.default_rng(seed)
    nblocks, rows = 12, 16
    a = rng.integers(0, 40, (nblocks, rows)).astype(float)
    a[rng.random((nblocks, rows)) < 0.1] = np.nan
    a[3] = np.nan
    a[4] = 7.0
    b = np.sort(rng.integers(0, 40, nblocks * rows)).reshape(nblocks, rows)
    b[5] = 20
    bounds = {}
    for name, values in (("a", a), ("b", b)):
        found = [bounds_of(block) for block in values]
        bounds[name] = tuple(np.array([f[i] for f in found]) for i in range(3))
    for _ in range(25):
        e = compile_expression(_random_filter(rng))
        d = decide_blocks(e, bounds)
        for k in range(nblocks):
            data = {"a": a[k], "b": b[k]}
            want = python_vm(e.tree, data)
            assert d.maybe[k] or not want.any(), (e.text, k)
            got = np.broadcast_to(python_vm(remaining(e.tree, d.parts[k]), data), want.shape)
            np.testing.assert_array_equal(got, want, err_msg=f"{e.text} block {k}")
