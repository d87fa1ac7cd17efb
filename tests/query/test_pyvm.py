"""The python VM: numexpr's typing, checked against NumPy computed by hand."""

import warnings

import numpy as np
import pytest

from bcolzx._query.expr import compile_expression
from bcolzx.errors import ExpressionError

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
