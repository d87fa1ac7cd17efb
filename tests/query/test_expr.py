"""Expressions: the whitelist, the python VM's typing, and python VM == numexpr VM."""

import doctest
import itertools
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bcolzx._query import blocks as blocks_module
from bcolzx._query import expr as expr_module
from bcolzx._query import zonemap as zonemap_module
from bcolzx._query.expr import FUNCTIONS, MAX_LENGTH, compile_expression
from bcolzx.errors import BcolzxError, ExpressionError

# -- validation -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, words",
    [
        ("a.real", "attribute"),
        ("a.__class__", "attribute"),
        ("a[0]", "indexing"),
        ("(lambda: 1)()", "calls"),
        ("lambda x: x", "lambda"),
        ("[x for x in a]", "comprehension"),
        ("{x for x in a}", "comprehension"),
        ("(x for x in a)", "comprehension"),
        ("sin(x=a)", "positional"),
        ("sin(*a)", "unpacking"),
        ("open('f')", "'open' is not allowed"),
        ("__import__('os')", "'__import__' is not allowed"),
        ("eval('1')", "'eval' is not allowed"),
        ("_a + 1", "may not start with '_'"),
        ("(y := a)", "assignment"),
        ("f'{a}'", "f-string"),
        ("a if b else c", "conditional"),
        ("a @ b", "@"),
        ("a in b", "'in'"),
        ("a is b", "'is'"),
        ("None", "None"),
        ("...", "Ellipsis"),
        ("[a, b]", "List"),
        ("(a, b)", "Tuple"),
        ("{'k': a}", "Dict"),
        ("'abc'", "can only be compared"),
        ("a + 'abc'", "can only be compared"),
        ("sin + 1", "is a function"),
        ("sin(a, b)", "takes 1 argument"),
        ("where(a, b)", "takes 3 argument"),
        ("2 ** 10 ** 10", "does not fit in int64"),
        ("1 << 10 ** 9", "does not fit in int64"),
        ("2 ** 63", "does not fit in int64"),
        ("a + 9223372036854775808", "does not fit in int64"),
        ("1 / 0 + a", "division by zero"),
        ("a +", "invalid expression"),
        ("", "invalid expression"),
        ("a = 1", "invalid expression"),
        ("import os", "invalid expression"),
    ],
)
def test_forbidden_expressions_raise_before_evaluation(text, words):
    with pytest.raises(ExpressionError) as info:
        compile_expression(text)
    assert words in str(info.value)


def test_expression_error_is_a_bcolzx_value_error():
    assert issubclass(ExpressionError, BcolzxError)
    assert issubclass(ExpressionError, ValueError)


def test_syntax_error_is_chained():
    with pytest.raises(ExpressionError) as info:
        compile_expression("a + * b")
    assert isinstance(info.value.__cause__, SyntaxError)


def test_too_long_and_too_deep_expressions_are_refused():
    with pytest.raises(ExpressionError, match="longer than"):
        compile_expression("a" + " + a" * MAX_LENGTH)
    with pytest.raises(ExpressionError, match="nested deeper|cannot be parsed|invalid"):
        compile_expression("-" * 5000 + "a")
    with pytest.raises(ExpressionError):
        compile_expression("(" * 300 + "a" + ")" * 300)


def test_long_sums_are_not_too_deep():
    text = " + ".join(f"a{i % 7}" for i in range(150))
    namespace = {f"a{i}": np.arange(3) for i in range(7)}
    np.testing.assert_array_equal(compile_expression(text).evaluate(namespace),
                                  np.arange(3) * 150)


def test_non_str_expression_is_a_type_error():
    with pytest.raises(TypeError):
        compile_expression(b"a + 1")


@pytest.mark.parametrize(
    "text, suggestion",
    [
        ("a < 5 & b > 1", "(a < 5) & (b > 1)"),
        ("a < 5 | b > 1", "(a < 5) | (b > 1)"),
        ("a == 1 ^ b == 2", "(a == 1) ^ (b == 2)"),
        ("a == 1 & b", "(a == 1) & b"),
        ("(a < 5) & b > 1", "(a < 5) & (b > 1)"),
        ("a >= 0 & b < 1 | c > 2", "(a >= 0) & (b < 1) | (c > 2)"),
    ],
)
def test_bitwise_operator_inside_a_comparison_asks_for_parentheses(text, suggestion):
    with pytest.raises(ExpressionError, match="parentheses") as info:
        compile_expression(text)
    assert repr(suggestion) in str(info.value)


@pytest.mark.parametrize("text", ["(a & b) == 0", "(a < 5) & (b > 1)", "((a) | b) != c",
                                  "a & b", "0 < (a ^ b) < 5"])
def test_explicit_parentheses_are_not_a_precedence_trap(text):
    compile_expression(text)


def test_names_in_order_of_first_appearance_without_functions():
    e = compile_expression("sqrt(b) + a * b - where(c > 0, a, d)")
    assert e.names == ("b", "a", "c", "d")
    assert compile_expression("0 < x < 5").names == ("x",)
    assert compile_expression("2 + 3").names == ()


def test_compiled_expressions_are_cached():
    assert compile_expression("a + 1") is compile_expression("a + 1")


def test_every_function_is_accepted_with_its_arity():
    for name, arity in FUNCTIONS.items():
        args = ", ".join(f"x{i}" for i in range(arity))
        assert compile_expression(f"{name}({args})").names == tuple(
            f"x{i}" for i in range(arity))


def test_unknown_name_is_reported():
    e = compile_expression("a + missing")
    with pytest.raises(ExpressionError, match="'missing'"):
        e.evaluate({"a": np.arange(3)})
    with pytest.raises(ExpressionError, match="'missing'"):
        e.dtype({"a": np.int32})


def test_unknown_vm_is_a_value_error():
    with pytest.raises(ValueError, match="virtual machine"):
        compile_expression("a").evaluate({"a": 1}, vm="cython")


def test_numexpr_vm_without_numexpr_says_so(monkeypatch):
    monkeypatch.setitem(sys.modules, "numexpr", None)  # makes `import numexpr` fail
    expr_module._numexpr_plan.cache_clear()
    try:
        with pytest.raises(ExpressionError, match="numexpr"):
            compile_expression("a + 1").evaluate({"a": np.arange(3)}, vm="numexpr")
    finally:
        expr_module._numexpr_plan.cache_clear()


def test_importing_the_engine_does_not_import_numexpr():
    code = ("import sys, bcolzx._query, bcolzx._query.expr, bcolzx._query.blocks, "
            "bcolzx._query.zonemap; assert 'numexpr' not in sys.modules")
    # Run where the bcolzx under test is found first (not an unbuilt source tree).
    import bcolzx

    parent = os.path.dirname(os.path.dirname(os.path.abspath(bcolzx.__file__)))
    env = dict(os.environ, PYTHONPATH=parent)
    subprocess.run([sys.executable, "-c", code], check=True, cwd=parent, env=env)


@pytest.mark.parametrize("module", [expr_module, zonemap_module, blocks_module])
def test_docstring_examples_run(module):
    result = doctest.testmod(module, verbose=False)
    assert result.attempted > 0 and result.failed == 0


# -- the python VM against NumPy computed by hand -----------------------------------------

I8 = np.array([-128, -1, 0, 1, 127], np.int8)
I32 = np.array([-5, -1, 0, 3, 7], np.int32)
I32_MIN = np.array([np.iinfo(np.int32).min, 7, -7, 7, 0], np.int32)
F32 = np.array([0.1, 0.25, np.nan, -2.0, 1e30], np.float32)
F64 = np.array([0.5, np.nan, -3.0, np.inf, 2.0])
B = np.array([True, False, True, False, True])


@pytest.mark.parametrize(
    "text, namespace, expected",
    [
        # small integers compute in int32: no int8 overflow
        ("a + a", {"a": I8}, I8.astype(np.int32) * 2),
        ("a * 1000", {"a": I8}, I8.astype(np.int32) * 1000),
        ("-a", {"a": I8}, -I8.astype(np.int32)),
        ("~a", {"a": I8}, ~I8.astype(np.int32)),
        # literal int32, 64-bit literal, Python scalar bound to a name is int64
        ("a + 1", {"a": I32}, I32 + np.int32(1)),
        ("a + 2**40", {"a": I32}, I32.astype(np.int64) + 2**40),
        ("a + k", {"a": I32, "k": 1}, I32.astype(np.int64) + 1),
        # true division of integers is float64; floor division and modulo floor
        ("a / 2", {"a": I32}, I32 / 2.0),
        ("a // 2", {"a": I32}, I32 // np.int32(2)),
        ("a % 3", {"a": I32}, I32 % np.int32(3)),
        ("a // b", {"a": I32_MIN, "b": np.array([-1, 0, 2, -2, 5], np.int32)},
         np.array([np.iinfo(np.int32).min, 0, -4, -4, 0], np.int32)),
        ("a ** 2", {"a": I32}, I32 ** 2),
        # float32 with a float literal computes (and compares) in float64
        ("f * 2.0", {"f": F32}, F32.astype(np.float64) * 2.0),
        ("f * 2", {"f": F32}, F32 * np.float32(2)),
        ("f > 0.1", {"f": F32}, F32.astype(np.float64) > 0.1),
        ("f + k", {"f": F32, "k": np.float32(1)}, F32 + np.float32(1)),
        # int64 with float32 computes in float32 (numexpr's kind order)
        ("i + f", {"i": np.array([1, 2, 3, 4, 5], np.int64), "f": F32},
         np.float32([1, 2, 3, 4, 5]) + F32),
        # numexpr's float formulas for // and %
        ("x % y", {"x": np.array([7.5, -7.5, 5.0, 1.0, 0.0]),
                   "y": np.array([2.0, 2.0, 0.0, np.inf, -1.0])},
         np.array([1.5, 0.5, np.nan, np.nan, 0.0])),
        ("x // y", {"x": np.array([7.5, -7.5, 5.0]), "y": np.array([2.0, 2.0, 0.0])},
         np.array([3.0, -4.0, np.inf])),
        # booleans: + is or, * is and, / is float64 division
        ("b + b", {"b": B}, B),
        ("b * ~b", {"b": B}, np.zeros(5, bool)),
        ("b / (b + 1)", {"b": B}, B / (B.astype(np.int32) + 1.0)),
        # comparisons, chained too, and NaN
        ("0 < a < 5", {"a": I32}, (I32 > 0) & (I32 < 5)),
        ("x != x", {"x": F64}, np.isnan(F64)),
        ("~(x < 1)", {"x": F64}, ~(F64 < 1)),
        # and/or/not are element-wise
        ("(a > 0) and (a < 5) or not b", {"a": I32, "b": B},
         ((I32 > 0) & (I32 < 5)) | ~B),
        ("a and x", {"a": I32, "x": F64}, (I32 != 0) & (F64 != 0)),
        # functions: integers give float64, booleans float32
        ("sqrt(a)", {"a": np.array([4, 9], np.int16)}, np.array([2.0, 3.0])),
        ("abs(a)", {"a": np.array([-4, 9], np.int32)}, np.array([4.0, 9.0])),
        ("sin(b)", {"b": B}, np.sin(B.astype(np.float32))),
        ("abs(c)", {"c": np.array([3 + 4j])}, np.array([5 + 0j])),
        ("conj(x)", {"x": np.array([1.5])}, np.array([1.5 + 0j])),
        ("real(a) + imag(a)", {"a": np.array([1, 2], np.int8)}, np.array([1.0, 2.0])),
        ("complex(x, y)", {"x": np.array([1.0]), "y": np.array([2], np.int32)},
         np.array([1 + 2j])),
        ("isnan(x) | isinf(x)", {"x": F64}, ~np.isfinite(F64)),
        ("floor(x) + ceil(x)", {"x": np.float32([1.5, -1.5])}, np.float32([3.0, -3.0])),
        ("fmod(a, 3)", {"a": I32}, np.fmod(I32.astype(np.float64), 3.0)),
        ("arctan2(a, 1)", {"a": I32}, np.arctan2(I32.astype(np.float64), 1.0)),
        ("where(a > 0, a, 0.5)", {"a": I32}, np.where(I32 > 0, I32, 0.5)),
        ("where(True, a, 0.5)", {"a": I32}, I32),
        # shifts out of range, as numexpr defines them
        ("a << 40", {"a": I32}, np.zeros(5, np.int32)),
        ("a >> 40", {"a": I32}, np.where(I32 < 0, -1, 0).astype(np.int32)),
        # constants fold with Python arithmetic
        ("a * (1 / 2)", {"a": I32}, I32 * 0.5),
        ("2 + 3", {}, np.array(5, np.int32)),
        ("sqrt(4) + a", {"a": I32}, I32 + 2.0),
        ("~True | a", {"a": B}, B),
        # complex arithmetic
        ("c * c / c", {"c": np.array([1 + 2j, 3 - 1j])},
         np.array([1 + 2j, 3 - 1j])),
        # strings are compared (str literals become ASCII bytes for bytes columns)
        ("s == 'ab'", {"s": np.array([b"ab", b"a", b"abc"])}, np.array([True, False, False])),
        ("s > 'a'", {"s": np.array(["ab", "a", ""])}, np.array([True, False, False])),
        ("s < t", {"s": np.array([b"a", b"b"]), "t": np.array([b"b", b"a"])},
         np.array([True, False])),
        ("contains(s, 'b')", {"s": np.array([b"ab", b"a", b"cb"])},
         np.array([True, False, True])),
        # datetime64 compared with dates, as strings or values
        ("d >= '2021-01-01'", {"d": np.array(["2020-05-01", "2021-01-01", "NaT"], "M8[D]")},
         np.array([False, True, False])),
        ("d < t", {"d": np.array(["2020-05-01", "2022-01-01"], "M8[D]"),
                   "t": np.datetime64("2021-01-01")}, np.array([True, False])),
        # dtypes numexpr lacks follow NumPy
        ("q + 1", {"q": np.array([2**64 - 1, 5], np.uint64)}, np.array([0, 6], np.uint64)),
        ("q > 2**62", {"q": np.array([2**63, 5], np.uint64)}, np.array([True, False])),
    ],
)
def test_python_vm_matches_numpy_by_hand(text, namespace, expected):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the VM silences floating point warnings
        result = compile_expression(text).evaluate(namespace)
    expected = np.asarray(expected)
    assert result.dtype == expected.dtype
    np.testing.assert_array_equal(result, expected)


@pytest.mark.parametrize(
    "text, namespace, words",
    [
        ("b - b", {"b": B}, "'-'"),
        ("-b", {"b": B}, "'-'"),
        ("x & 1", {"x": F64}, "'&'"),
        ("x << 1", {"x": F64}, "'<<'"),
        ("~x", {"x": F64}, "'~'"),
        ("c < 1", {"c": np.array([1j])}, "complex"),
        ("a ** -1", {"a": I32}, "negative integer powers"),
        ("a ** b", {"a": I32, "b": np.array([1, 2, -1, 0, 1], np.int32)}, "negative"),
        ("floor(c)", {"c": np.array([1j])}, "complex"),
        ("s + t", {"s": np.array([b"a"]), "t": np.array([b"b"])}, "compared"),
        ("s == 1", {"s": np.array([b"a"])}, "compare"),
        ("u == s", {"u": np.array(["a"]), "s": np.array([b"a"])}, "equal"),
        ("s == 'é'", {"s": np.array([b"a"])}, "compare"),
        ("d > 'yesterday'", {"d": np.array(["2020-01-01"], "M8[D]")}, "compare"),
    ],
)
def test_operators_that_do_not_apply_raise_expression_error(text, namespace, words):
    with pytest.raises(ExpressionError, match=words):
        compile_expression(text).evaluate(namespace)


def test_dtype_is_known_without_data():
    e = compile_expression("a / 2 + b")
    assert e.dtype({"a": "int8", "b": np.float32}) == np.float64
    assert compile_expression("a + 1").dtype({"a": np.int16}) == np.int32
    assert compile_expression("a + 1").dtype({"a": np.uint32}) == np.int64
    assert compile_expression("a + 1").dtype({"a": np.float16}) == np.float32
    assert compile_expression("a + 1").dtype({"a": np.complex64}) == np.complex128
    assert compile_expression("a < '2020-01-01'").dtype({"a": "M8[s]"}) == np.bool_
    assert compile_expression("a == 'x'").dtype({"a": "S3"}) == np.bool_


def test_scalars_only_give_a_0d_result():
    result = compile_expression("x * 2 + y").evaluate({"x": 3, "y": 0.5})
    assert result.shape == () and result == 6.5


# -- python VM == numexpr VM ----------------------------------------------------------------

DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "float32", "float64", "complex64", "complex128"]
BINARY = ["+", "-", "*", "/", "//", "%", "**", "&", "|", "^", "<<", ">>",
          "<", "<=", "==", "!=", ">", ">="]
UNARY = ["-a", "~a", "not a", "abs(a)", "sqrt(a)", "sin(a)", "exp(a)", "log(a)", "expm1(a)",
         "arctan(a)", "tanh(a)", "floor(a)", "ceil(a)", "real(a)", "imag(a)", "conj(a)",
         "isnan(a)", "isinf(a)", "isfinite(a)", "a + 3", "a * 2.5", "a - 2**40", "a / 3",
         "a // 2", "a % 2.5", "a ** 2", "a < 1.5", "a == 0", "where(a > 0, a, 1)",
         "where(a > 0, 1.5, -1)", "(a > 1) and (a < 5)", "(a > 1) | ~(a < -1)"]
#: (expression, dtype) pairs numexpr itself must evaluate (no fallback).
NATIVE = [("a + b", "int32"), ("a * b", "float64"), ("a / b", "int64"), ("a < b", "float32"),
          ("a & b", "bool"), ("a - b", "complex128"), ("a == b", "int16"), ("a % b", "float64")]


def _sample(dtype, n=48, seed=0):
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return rng.integers(0, 2, n).astype(bool)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        values = rng.integers(max(info.min, -50), min(info.max, 50), n, endpoint=True)
        values = values.astype(dtype)
        values[:3] = [info.min, info.max, 0]
        return values
    values = rng.standard_normal(n) * 8
    if dtype.kind == "c":
        values = values + 1j * rng.standard_normal(n)
    values = values.astype(dtype)
    values[:5] = [np.nan, np.inf, -np.inf, 0.0, -0.0]
    return values


def _tolerance(dtype):
    return 4 * np.finfo(dtype).eps if dtype.kind in "fc" else 0


def _assert_same(python, other, text):
    """Same dtype; same values, to a few ulp for transcendental functions."""
    assert python.dtype == other.dtype, text
    if python.dtype.kind not in "fc":
        np.testing.assert_array_equal(python, other, err_msg=text)
        return
    np.testing.assert_array_equal(np.isnan(python), np.isnan(other), err_msg=text)
    np.testing.assert_allclose(python, other, rtol=_tolerance(python.dtype), atol=0,
                               equal_nan=True, err_msg=text)


def _both(text, namespace):
    e = compile_expression(text)
    try:
        python = e.evaluate(namespace)
    except ExpressionError:
        with pytest.raises(ExpressionError):
            e.evaluate(namespace, vm="numexpr")
        return None
    _assert_same(python, e.evaluate(namespace, vm="numexpr"), text)
    return python


@pytest.mark.parametrize("op", BINARY)
def test_numexpr_vm_equals_python_vm_for_every_operator_and_dtype_pair(op):
    pytest.importorskip("numexpr")
    text = f"a {op} b"
    for da, db in itertools.product(DTYPES, DTYPES):
        b = _sample(db, seed=1)
        if op in ("**", "<<", ">>") and b.dtype.kind in "iu":
            b = b % 5  # in range, non-negative
        _both(text, {"a": _sample(da), "b": b})


@pytest.mark.parametrize("text", UNARY)
def test_numexpr_vm_equals_python_vm_for_every_function_and_dtype(text):
    pytest.importorskip("numexpr")
    for dtype in DTYPES:
        _both(text, {"a": _sample(dtype)})


@pytest.mark.parametrize("text, dtype", NATIVE)
def test_numexpr_vm_really_uses_numexpr_where_it_can(text, dtype):
    pytest.importorskip("numexpr")
    namespace = {"a": _sample(dtype), "b": _sample(dtype, seed=2)}
    e = compile_expression(text)
    signature = tuple((name, namespace[name].dtype) for name in e.names)
    assert expr_module._numexpr_plan(e, signature) is not None
    _both(text, namespace)


@pytest.mark.parametrize(
    "text, namespace",
    [
        ("a // b", {"a": I32_MIN, "b": np.full(5, -1, np.int32)}),  # SIGFPE in numexpr
        ("a % b", {"a": I32_MIN, "b": np.full(5, -1, np.int32)}),
        ("a + 1", {"a": np.array([2**64 - 1], np.uint64)}),  # numexpr: int64
        ("a * 2", {"a": np.array([1.5], np.longdouble)}),
        ("a > '2020-01-01'", {"a": np.array(["2021-01-01"], "M8[D]")}),
        ("a == 'x'", {"a": np.array(["x", "y"])}),
        ("a == b", {"a": np.array([1, 2], ">i4"), "b": np.array([1, 3], "<i4")}),
        ("sum + max", {"sum": I32, "max": I32}),  # numexpr's own function names
        ("a and b", {"a": I32, "b": F64}),
        ("contains(s, 'b')", {"s": np.array([b"ab", b"a"])}),
        ("complex(a, a)", {"a": I32}),
        ("a ** 2", {"a": np.array([1 + 1j])}),
    ],
)
def test_numexpr_vm_falls_back_to_python_where_numexpr_differs(text, namespace):
    pytest.importorskip("numexpr")
    e = compile_expression(text)
    _assert_same(e.evaluate(namespace), e.evaluate(namespace, vm="numexpr"), text)


def test_numexpr_vm_with_strings_and_literals():
    pytest.importorskip("numexpr")
    s = np.array([b"ab", b"a", b"", b"abc", b"a\x00b"])
    t = np.array([b"ab", b"a\x00", b"\x00", b"ab", b"a"])
    for op in ("<", "<=", "==", "!=", ">", ">="):
        _both(f"s {op} t", {"s": s, "t": t})
        _both(f"s {op} 'ab'", {"s": s})
    _both("(x > 1e300 * 10) | (x != x)", {"x": F64})  # an inf constant
    _both("x * (2 + 1j)", {"x": F64})
    _both("x + sqrt(2)", {"x": F32})


_OPS = st.sampled_from(["+", "-", "*", "/", "<", ">=", "==", "!="])
_LEAVES = st.sampled_from(["a", "b", "c", "1", "2.5", "-3", "(2**40)"])


@st.composite
def _arithmetic(draw, depth=3):
    if depth == 0 or draw(st.booleans()):
        return draw(_LEAVES)
    op = draw(_OPS)
    left, right = draw(_arithmetic(depth - 1)), draw(_arithmetic(depth - 1))
    return f"({left} {op} {right})"


@settings(max_examples=60, deadline=None)
@given(text=_arithmetic(), seed=st.integers(0, 2**16),
       dtypes=st.tuples(*[st.sampled_from(["int8", "int32", "int64", "float32", "float64",
                                           "bool"])] * 3))
def test_random_arithmetic_is_identical_in_both_vms(text, seed, dtypes):
    pytest.importorskip("numexpr")
    namespace = {name: _sample(dtype, n=16, seed=seed + i)
                 for i, (name, dtype) in enumerate(zip("abc", dtypes))}
    try:
        e = compile_expression(text)
        python = e.evaluate(namespace)
    except ExpressionError:  # e.g. constants out of int64, or b - b for booleans
        return
    other = e.evaluate(namespace, vm="numexpr")
    assert python.dtype == other.dtype
    np.testing.assert_array_equal(python, other)  # arithmetic: bit for bit
