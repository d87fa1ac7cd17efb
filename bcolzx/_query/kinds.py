"""numexpr's typing: the kinds operands compute in, and each operation typed as numexpr types it.

Legacy bcolz evaluated expressions with numexpr, so numexpr's typing rules
are the reference for both virtual machines; the python VM
(:mod:`~bcolzx._query.pyvm`) applies the operations below node by node, and
zone maps (:mod:`~bcolzx._query.zonemap`) apply them to interval ends:

* operands are first cast to numexpr's *kinds*: bool; int8, int16,
  uint8, uint16 and int32 become int32; uint32 and int64 become int64;
  float16 and float32 become float32; float64; complex64 and complex128
  become complex128;
* a binary operation computes in the higher kind of its operands, in
  the order bool < int32 < int64 < float32 < float64 < complex128 (so
  int64 with float32 gives float32, unlike NumPy);
* a literal integer is int32 when it fits, else int64; a literal float is
  float64 (so ``f32 * 2.0`` is float64 and ``f32 > 0.1`` compares in
  float64); a name bound to a Python scalar is ``numpy.asarray(value)``
  (so ``5`` is int64);
* ``/`` of booleans or integers gives float64; ``+`` and ``*`` of booleans
  are ``|`` and ``&``; float ``%`` is ``a - floor(a / b) * b`` and float
  ``//`` is ``floor(a / b)``, numexpr's formulas; complex ``*`` and ``/``
  use the textbook formulas numexpr uses;
* a function of an integer gives float64 and of a boolean float32;
  ``abs`` of a complex is complex; ``real``/``imag`` give float64;
  ``conj`` of a boolean or float gives complex128;
* constant sub-expressions are folded with Python arithmetic (as numexpr's
  parser does, see :mod:`~bcolzx._query.parse`): ``2**40`` is an int64
  constant, ``1/2`` is ``0.5``.

Dtypes numexpr has no kind for (uint64, longdouble, datetime64,
timedelta64, bytes and str) follow NumPy's own rules, with literals as
Python scalars.  Strings (fixed-width, and NumPy's variable-width
``StringDType``) can only be compared (and searched with ``contains``,
``startswith`` and ``endswith``); a ``str`` literal compared with a bytes column is encoded
as ASCII, and compared with a datetime64 column is parsed as a date.

An operand is a NumPy array or a :class:`Literal` (a Python constant, typed
by numexpr's literal rules where kinds meet, a weak Python scalar in NumPy's
own arithmetic).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from bcolzx._format.strings import missing_rows
from bcolzx._query.tree import BINARY_SYMBOLS
from bcolzx.errors import ExpressionError

__all__ = ["BOOL", "COMPLEX", "DOUBLE", "FLOAT", "INT", "KINDS", "LONG", "Literal", "Operand",
           "array_of", "binary", "call", "cast", "common_kind", "compare", "kind_of",
           "literal_kind", "logical", "unary", "weak"]

_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1

# -- kinds (numexpr's types) ----------------------------------------------------------

BOOL = np.dtype(np.bool_)
INT = np.dtype(np.int32)
LONG = np.dtype(np.int64)
FLOAT = np.dtype(np.float32)
DOUBLE = np.dtype(np.float64)
COMPLEX = np.dtype(np.complex128)
#: numexpr's kinds, lowest first.
KINDS = (BOOL, INT, LONG, FLOAT, DOUBLE, COMPLEX)
_INTEGERS = (INT, LONG)


def kind_of(dtype: np.dtype) -> np.dtype | None:
    """The numexpr kind `dtype` is computed in, or None for a dtype numexpr lacks.

    Parameters
    ----------
    dtype : numpy.dtype
        A column or scalar dtype.

    Returns
    -------
    numpy.dtype or None
        One of :data:`KINDS`, or None (uint64, longdouble, datetime64, strings...).

    Raises
    ------
    None
    """
    code, size = dtype.kind, dtype.itemsize
    if code == "b":
        return BOOL
    if code == "i":
        return INT if size <= 4 else LONG
    if code == "u":
        return INT if size <= 2 else LONG if size == 4 else None
    if code == "f":
        return FLOAT if size <= 4 else DOUBLE if size == 8 else None
    if code == "c":
        return COMPLEX if size <= 16 else None
    return None


def common_kind(*dtypes: np.dtype) -> np.dtype:
    """The highest of some kinds (all of them members of :data:`KINDS`).

    Raises
    ------
    ValueError
        If one of `dtypes` is not a kind.
    """
    return KINDS[max(KINDS.index(d) for d in dtypes)]


def literal_kind(value: Any) -> np.dtype:
    """The kind numexpr gives a Python literal: int32 when an int fits, else int64.

    Strings and bytes keep NumPy's dtype for them.

    Raises
    ------
    None
    """
    if isinstance(value, bool):
        return BOOL
    if isinstance(value, int):
        return INT if _INT32_MIN <= value <= _INT32_MAX else LONG
    if isinstance(value, float):
        return DOUBLE
    if isinstance(value, complex):
        return COMPLEX
    return np.asarray(value).dtype  # str, bytes


# -- operands -------------------------------------------------------------------------


class Literal(NamedTuple):
    """A Python constant during evaluation: typed by numexpr's literal rules in
    kind arithmetic, a weak Python scalar in NumPy arithmetic."""

    value: Any

    def typed(self) -> np.ndarray:
        """The constant as a 0-d array of its numexpr kind.

        Raises
        ------
        OverflowError
            For an integer beyond int64 (parsing refuses those first).
        """
        return np.asarray(self.value, dtype=literal_kind(self.value))


Operand = np.ndarray | Literal


def array_of(x: Operand) -> np.ndarray:
    """`x` as an array: a literal typed by numexpr's literal rules.

    Raises
    ------
    None
    """
    return x.typed() if isinstance(x, Literal) else x


def weak(x: Operand) -> Any:
    """`x` for NumPy's own arithmetic: a literal as a (weakly typed) Python scalar.

    Raises
    ------
    None
    """
    return x.value if isinstance(x, Literal) else x


def _kinds(*operands: Operand) -> tuple[np.ndarray, ...] | None:
    """The operands as arrays of numexpr kinds, or None if one has no kind."""
    arrays = tuple(array_of(x) for x in operands)
    if all(a.dtype in KINDS for a in arrays):
        return arrays
    return None


def cast(a: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """`a` in `dtype`, not copied when it already is.

    Raises
    ------
    TypeError, ValueError
        If NumPy cannot convert `a` (the kinds are numeric: never for a
        number or boolean array).
    """
    return a.astype(dtype, copy=False)


def _complex_mul(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    out = np.empty(np.broadcast_shapes(x.shape, y.shape), COMPLEX)
    out.real = x.real * y.real - x.imag * y.imag
    out.imag = x.real * y.imag + x.imag * y.real
    return out


def _complex_div(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    out = np.empty(np.broadcast_shapes(x.shape, y.shape), COMPLEX)
    den = y.real * y.real + y.imag * y.imag
    out.real = (x.real * y.real + x.imag * y.imag) / den
    out.imag = (x.imag * y.real - x.real * y.imag) / den
    return out


def _unsupported(op: str, kind: np.dtype) -> ExpressionError:
    return ExpressionError(f"operator {BINARY_SYMBOLS.get(op, op)!r} is not supported "
                           f"for {kind} operands")


def _int_power(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    if np.any(y < 0):
        raise ExpressionError("integers to negative integer powers are not allowed")
    return np.power(x, y)


def _float_floordiv(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.floor(x / y)  # numexpr's formula, not NumPy's floor_divide


def _float_mod(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return x - np.floor(x / y) * y  # numexpr's formula, not NumPy's remainder


_Binary = Callable[[np.ndarray, np.ndarray], np.ndarray]
_ARITHMETIC: dict[str, _Binary] = {"add": np.add, "sub": np.subtract, "mul": np.multiply,
                                   "truediv": np.true_divide}
#: The binary operators of each kind; those missing do not apply.
_KIND_BINARY: dict[str, dict[str, _Binary]] = {
    "bool": {"add": np.logical_or, "mul": np.logical_and, "and": np.logical_and,
             "or": np.logical_or, "xor": np.logical_xor},
    "int": {**_ARITHMETIC, "floordiv": np.floor_divide, "mod": np.remainder,
            "pow": _int_power, "and": np.bitwise_and, "or": np.bitwise_or,
            "xor": np.bitwise_xor, "lshift": np.left_shift, "rshift": np.right_shift},
    "float": {**_ARITHMETIC, "floordiv": _float_floordiv, "mod": _float_mod,
              "pow": np.power},
    "complex": {**_ARITHMETIC, "mul": _complex_mul, "truediv": _complex_div,
                "pow": np.power},
}


def _kind_binary(op: str, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """`op` on operands of numexpr kinds, typed as numexpr types it."""
    kind = common_kind(x.dtype, y.dtype)
    if op == "truediv" and kind in (BOOL, *_INTEGERS):
        kind = DOUBLE
    funcs = _KIND_BINARY["bool" if kind == BOOL else "int" if kind in _INTEGERS
                         else "complex" if kind == COMPLEX else "float"]
    if op not in funcs:
        raise _unsupported(op, kind)
    return np.asarray(funcs[op](cast(x, kind), cast(y, kind)), dtype=kind)


_NUMPY_BINARY: dict[str, np.ufunc] = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "truediv": np.true_divide,
    "floordiv": np.floor_divide, "mod": np.remainder, "pow": np.power,
    "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor,
    "lshift": np.left_shift, "rshift": np.right_shift,
}
_NUMPY_COMPARE: dict[str, np.ufunc] = {
    "lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal,
    "eq": np.equal, "ne": np.not_equal,
}


def binary(op: str, x: Operand, y: Operand) -> np.ndarray:
    """Apply binary operator `op` (a key of ``BINARY_SYMBOLS``) as the python VM does.

    Raises
    ------
    ExpressionError
        If the operator does not apply to these operands.
    """
    arrays = _kinds(x, y)
    if arrays is not None:
        return _kind_binary(op, *arrays)
    if any(array_of(v).dtype.kind in "SUT" for v in (x, y)):
        raise ExpressionError(f"strings can only be compared, not combined with "
                              f"{BINARY_SYMBOLS[op]!r}")
    return _numpy_call(_NUMPY_BINARY[op], weak(x), weak(y))


def _numpy_call(func: Callable[..., Any], *args: Any) -> np.ndarray:
    try:
        return np.asarray(func(*args))
    except (TypeError, ValueError, OverflowError) as exc:
        types = ", ".join(str(np.asarray(a).dtype) for a in args)
        raise ExpressionError(f"{getattr(func, '__name__', func)} cannot be applied to "
                              f"({types}): {exc}") from exc


def compare(op: str, x: Operand, y: Operand) -> np.ndarray:
    """Apply comparison `op` ('lt', 'le', 'gt', 'ge', 'eq' or 'ne') as the python VM does.

    Raises
    ------
    ExpressionError
        If the operands cannot be compared.
    """
    arrays = _kinds(x, y)
    if arrays is not None:
        kind = common_kind(arrays[0].dtype, arrays[1].dtype)
        if kind == COMPLEX and op not in ("eq", "ne"):
            raise ExpressionError("complex numbers can only be compared with '==' and '!='")
        a, b = (cast(v, kind) for v in arrays)
    else:
        a, b = _coerce_foreign(x, y)
    return np.asarray(_numpy_call(_NUMPY_COMPARE[op], a, b), dtype=BOOL)


def _coerce_foreign(x: Operand, y: Operand) -> tuple[Any, Any]:
    """Make strings comparable: str literals become ASCII bytes for bytes columns
    and dates for datetime64 ones."""
    a, b = weak(x), weak(y)
    ta, tb = array_of(x), array_of(y)
    a = _coerce_to(a, ta, tb.dtype)
    b = _coerce_to(b, tb, ta.dtype)
    strings = [t.dtype.kind in "SUT" for t in (np.asarray(a), np.asarray(b))]
    if any(strings) and not all(strings):
        raise ExpressionError(f"cannot compare {ta.dtype} with {tb.dtype}")
    return a, b


def _coerce_to(value: Any, typed: np.ndarray, other: np.dtype) -> Any:
    code = typed.dtype.kind
    try:
        if code == "U" and other.kind == "S" and typed.ndim == 0:
            return np.asarray(typed.item().encode("ascii"))
        if code == "S" and other.kind == "U" and typed.ndim == 0:
            return np.asarray(typed.item().decode("ascii"))
        if code in "SU" and other.kind in "Mm" and typed.ndim == 0:
            text = typed.item()
            text = text.decode("ascii") if isinstance(text, bytes) else text
            return np.asarray(text, dtype=other)
    except (UnicodeError, ValueError) as exc:
        raise ExpressionError(f"cannot compare {typed.item()!r} with {other}: {exc}") from exc
    return value


def unary(op: str, x: Operand) -> np.ndarray:
    """Apply unary operator `op` ('neg', 'pos', 'invert' or 'not') as the python VM does.

    Raises
    ------
    ExpressionError
        If the operator does not apply to the operand.
    """
    a = array_of(x)
    if a.dtype.kind in "SUT":
        raise ExpressionError("strings can only be compared")
    if op == "pos":
        return a
    if op == "not":
        return np.asarray(_numpy_call(np.logical_not, a), dtype=BOOL)
    if a.dtype == BOOL:
        if op == "invert":
            return np.logical_not(a)
        raise ExpressionError("unary '-' is not supported for booleans")
    if op == "invert" and a.dtype.kind not in "iu":
        raise ExpressionError(f"'~' is not supported for {a.dtype} operands")
    func = np.negative if op == "neg" else np.invert
    return _numpy_call(func, a)


def logical(op: str, operands: list[Operand]) -> np.ndarray:
    """Element-wise ``and``/``or`` of truth values, as the python VM does.

    Raises
    ------
    ExpressionError
        If an operand is a string.
    """
    func = np.logical_and if op == "and" else np.logical_or
    arrays = [array_of(x) for x in operands]
    if any(a.dtype.kind in "SUT" for a in arrays):
        raise ExpressionError(f"'{op}' needs numbers or booleans, not strings")
    return functools.reduce(lambda a, b: np.asarray(_numpy_call(func, a, b)), arrays)


_FLOAT_FUNCS: dict[str, np.ufunc] = {
    "sin": np.sin, "cos": np.cos, "tan": np.tan, "arcsin": np.arcsin, "arccos": np.arccos,
    "arctan": np.arctan, "sinh": np.sinh, "cosh": np.cosh, "tanh": np.tanh,
    "arcsinh": np.arcsinh, "arccosh": np.arccosh, "arctanh": np.arctanh, "log": np.log,
    "log10": np.log10, "log1p": np.log1p, "exp": np.exp, "expm1": np.expm1,
    "sqrt": np.sqrt, "floor": np.floor, "ceil": np.ceil, "arctan2": np.arctan2,
    "fmod": np.fmod,
}
_PREDICATES: dict[str, np.ufunc] = {"isnan": np.isnan, "isinf": np.isinf,
                                     "isfinite": np.isfinite}


def call(func: str, args: list[Operand]) -> np.ndarray:
    """Apply function `func` of :data:`FUNCTIONS` as the python VM does.

    Raises
    ------
    ExpressionError
        If the function does not apply to the arguments.
    """
    if func == "where":
        return _where(*args)
    if func == "contains":
        return _contains(*args)
    if func in ("startswith", "endswith"):
        return _affix(func, *args)
    arrays = _kinds(*args)
    if arrays is None:
        return _foreign_call(func, args)
    kind = common_kind(*(a.dtype for a in arrays))
    if func in _PREDICATES:
        arg = arrays[0] if kind in (FLOAT, DOUBLE, COMPLEX) else cast(arrays[0], DOUBLE)
        return np.asarray(_PREDICATES[func](arg), dtype=BOOL)
    if func in ("real", "imag"):
        part = np.real if func == "real" else np.imag
        return np.asarray(part(arrays[0]), dtype=DOUBLE)
    if func == "complex":
        return _complex(kind, *arrays)
    kind = _function_kind(func, kind)
    arrays = tuple(cast(a, kind) for a in arrays)
    if func == "abs":
        return np.asarray(np.abs(arrays[0]), dtype=kind)  # complex stays complex
    if func == "conj":
        return np.conj(arrays[0])
    return np.asarray(_numpy_call(_FLOAT_FUNCS[func], *arrays), dtype=kind)


def _function_kind(func: str, kind: np.dtype) -> np.dtype:
    """numexpr's result kind of a floating point function of `kind` arguments."""
    if kind in _INTEGERS:
        return DOUBLE
    if func == "conj":
        return COMPLEX
    if kind == BOOL:
        return FLOAT
    if kind == COMPLEX and func in ("floor", "ceil", "arctan2", "fmod"):
        raise ExpressionError(f"{func}() is not defined for complex numbers")
    return kind


def _complex(kind: np.dtype, real: np.ndarray, imag: np.ndarray) -> np.ndarray:
    if kind == COMPLEX:
        raise ExpressionError("complex() takes real arguments")
    out = np.empty(np.broadcast_shapes(real.shape, imag.shape), COMPLEX)
    out.real = real
    out.imag = imag
    return out


def _where(cond: Operand, x: Operand, y: Operand) -> np.ndarray:
    c = array_of(cond)
    if c.dtype.kind in "SUT":
        raise ExpressionError("the condition of where() cannot be a string")
    arrays = _kinds(x, y)
    if arrays is None:
        return _numpy_call(np.where, c, *_coerce_foreign(x, y))
    kind = common_kind(arrays[0].dtype, arrays[1].dtype)
    return np.where(c, cast(arrays[0], kind), cast(arrays[1], kind))


def _text_args(func: str, x: Operand, y: Operand) -> tuple[np.ndarray, np.ndarray]:
    a, b = _coerce_foreign(x, y)
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype.kind not in "SUT" or b.dtype.kind not in "SUT":
        raise ExpressionError(f"{func}() takes two strings")
    return a, b


def _search(func: Callable, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``func(a, b)`` where NumPy refuses missing values of a StringDType
    operand: a missing value searches as ``""`` and gives False."""
    missing = None
    for i, arr in enumerate((a, b)):
        if arr.dtype.kind == "T" and hasattr(arr.dtype, "na_object"):
            mask = missing_rows(arr)
            missing = mask if missing is None else missing | mask
            plain = np.where(mask, "", arr).astype(np.dtypes.StringDType())
            a, b = (plain, b) if i == 0 else (a, plain)
    out = np.asarray(_numpy_call(func, a, b), dtype=BOOL)
    return out if missing is None else out & ~missing


def _contains(x: Operand, y: Operand) -> np.ndarray:
    a, b = _text_args("contains", x, y)
    return _search(lambda p, q: np.char.find(p, q) >= 0, a, b)


def _affix(func: str, x: Operand, y: Operand) -> np.ndarray:
    """``startswith``/``endswith``: whether each string of `x` starts (ends) with `y`
    (False for a missing value)."""
    a, b = _text_args(func, x, y)
    return _search(getattr(np.char, func), a, b)


def _foreign_call(func: str, args: list[Operand]) -> np.ndarray:
    arrays = [array_of(a) for a in args]
    if any(a.dtype.kind in "SUT" for a in arrays):
        raise ExpressionError(f"{func}() does not take strings")
    if func in _PREDICATES:
        return np.asarray(_numpy_call(_PREDICATES[func], arrays[0]), dtype=BOOL)
    numpy_funcs = {**_FLOAT_FUNCS, "abs": np.abs, "conj": np.conj, "real": np.real,
                   "imag": np.imag, "complex": lambda a, b: a + 1j * b}
    return _numpy_call(numpy_funcs[func], *[weak(a) for a in args])
