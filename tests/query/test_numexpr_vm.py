"""The numexpr VM: the same results as the python VM, numexpr used where it can be."""

import itertools
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bcolzx._query import numexpr_vm
from bcolzx._query.expr import compile_expression
from bcolzx.errors import ExpressionError

I32 = np.array([-5, -1, 0, 3, 7], np.int32)
I32_MIN = np.array([np.iinfo(np.int32).min, 7, -7, 7, 0], np.int32)
F32 = np.array([0.1, 0.25, np.nan, -2.0, 1e30], np.float32)
F64 = np.array([0.5, np.nan, -3.0, np.inf, 2.0])


def test_numexpr_vm_without_numexpr_says_so(monkeypatch):
    monkeypatch.setitem(sys.modules, "numexpr", None)  # makes `import numexpr` fail
    numexpr_vm.plan.cache_clear()
    try:
        with pytest.raises(ExpressionError, match="numexpr"):
            compile_expression("a + 1").evaluate({"a": np.arange(3)}, vm="numexpr")
    finally:
        numexpr_vm.plan.cache_clear()



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
NATIVE = [("a + b", "int32"), ("a * b", "float64"), ("a / b", "int64"), ("a * 2 < b", "float32"),
          ("where(a & b, 1.5, 2.5)", "bool"), ("a - b", "complex128"), ("a + 1 == b", "int16"),
          ("a % b", "float64")]
#: Filters: comparisons joined by logic, evaluated by NumPy whatever the VM.
FILTERS = ["a < b", "(a > 1) & (b <= 3)", "~((a == 1) | (b != 2))", "(0 < a < 5) ^ (b > a)",
           "(a > 1) and not (b < 2)"]


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
    assert numexpr_vm.plan(e, signature) is not None
    _both(text, namespace)


@pytest.mark.parametrize("text", FILTERS)
def test_filters_go_to_numpy_with_the_same_result(text):
    pytest.importorskip("numexpr")
    namespace = {"a": _sample("int32"), "b": _sample("float64", seed=2)}
    e = compile_expression(text)
    signature = tuple((name, namespace[name].dtype) for name in e.names)
    assert numexpr_vm.plan(e, signature) is None
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
