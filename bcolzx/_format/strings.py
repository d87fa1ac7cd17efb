"""Strings and bytes as the items of a dataset, never pickled (docs/format/strings.md).

Two kinds of variable-length items are stored natively, in :data:`~bcolzx._format.vlen.PLANAR`
chunks (each row's bytes, located by a table of lengths):

``"utf8"``
    NumPy's ``StringDType`` (NumPy >= 2): each row's UTF-8 encoding.  A
    ``StringDType(na_object=...)`` with NaN or None as its missing value
    stores missing rows (:data:`NA_OBJECTS`); a row is decoded only once its
    bytes are checked to be well-formed UTF-8.
``"bytes"``
    An object column declared as bytes, :data:`BYTES_DTYPE` (the dtype h5py
    calls ``h5py.vlen_dtype(bytes)``): each row's bytes, as they are.

Here: which dtypes are which kind (:func:`item_kind`), the dtype as
``meta/storage`` records it, rows to chunks and back (through the
:mod:`bcolzx._ext.strings` kernel for StringDType, which NumPy 2 alone has,
imported on first use), and the prefix-bounded bounds of a chunk's strings
for its zone map.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from bcolzx._format import vlen
from bcolzx.errors import CorruptDataError

__all__ = ["BOUND_BYTES", "BYTES_DTYPE", "NA_OBJECTS", "STRING_CHAR", "bounds",
           "check_rows", "check_string_dtype", "encode_rows", "exact_bounds", "field_dtype",
           "is_bytes", "is_string", "item_kind", "lower_bound", "match_rows", "missing_rows",
           "na_name", "pack_rows",
           "string_dtype", "upper_bound"]

#: The dtype of a column of variable-length bytes: object, declared as bytes
#: through NumPy's dtype metadata (as h5py's ``vlen_dtype(bytes)``).
BYTES_DTYPE = np.dtype("O", metadata={"vlen": bytes})
#: ``meta/storage["dtype"]`` of a StringDType dataset (NumPy's character code for it).
STRING_CHAR = "T"
#: The missing values a stored StringDType may have, by their ``meta/storage`` name.
NA_OBJECTS: dict[str, Any] = {"nan": float("nan"), "none": None}
#: Zone-map bounds keep at most this many bytes of a chunk's smallest and
#: largest string (docs/format/strings.md).
BOUND_BYTES = 32


#: NumPy's StringDType class (None on NumPy 1, which has none).
_STRING_DTYPE = getattr(getattr(np, "dtypes", None), "StringDType", None)


def is_string(dtype: Any) -> bool:
    """Whether `dtype` is a NumPy ``StringDType`` (False on NumPy 1, which has none)."""
    return _STRING_DTYPE is not None and isinstance(dtype, _STRING_DTYPE)


def is_bytes(dtype: Any) -> bool:
    """Whether `dtype` is object declared as bytes (:data:`BYTES_DTYPE`, h5py's
    ``vlen_dtype(bytes)``)."""
    return isinstance(dtype, np.dtype) and dtype == np.dtype(object) and \
        (dtype.metadata or {}).get("vlen") is bytes


def item_kind(dtype: Any) -> str | None:
    """The ``meta/storage["vlen"]`` value of a dataset of `dtype`: ``"utf8"``
    (StringDType), ``"bytes"`` (:data:`BYTES_DTYPE`), ``"pickle"`` (any other
    object dtype), or None (fixed-size items)."""
    if getattr(dtype, "kind", None) not in ("T", "O"):  # the common case, asked first
        return None
    if is_string(dtype):
        return "utf8"
    if is_bytes(dtype):
        return "bytes"
    if isinstance(dtype, np.dtype) and dtype == np.dtype(object):
        return "pickle"
    return None


def field_dtype(dtype: np.dtype) -> np.dtype:
    """The dtype of a structured field holding values of `dtype`: object for a
    StringDType (NumPy has no StringDType fields; the field holds ``str``),
    else `dtype` itself."""
    return np.dtype(object) if is_string(dtype) else dtype


def na_name(dtype: np.dtype) -> str | None:
    """The name (:data:`NA_OBJECTS`) of a StringDType's missing value, None without one.

    Raises
    ------
    TypeError
        For a missing value bcolzx does not store (a string sentinel,
        ``pandas.NA``...).
    """
    if not hasattr(dtype, "na_object"):
        return None
    na = dtype.na_object
    if na is None:
        return "none"
    if isinstance(na, float) and na != na:
        return "nan"
    raise TypeError(f"{dtype}: bcolzx stores strings whose missing value is NaN or None "
                    f"(StringDType(na_object=numpy.nan) or na_object=None), not {na!r}")


def check_string_dtype(dtype: np.dtype) -> np.dtype:
    """`dtype` if it is a StringDType bcolzx stores (see :func:`na_name`).

    Raises
    ------
    TypeError
        As :func:`na_name`.
    """
    na_name(dtype)
    return dtype


def string_dtype(na: str | None = None) -> np.dtype:
    """The StringDType of a stored dataset whose missing value is named `na`.

    Raises
    ------
    ValueError
        For a name not in :data:`NA_OBJECTS`.
    TypeError
        On NumPy 1, which has no StringDType.
    """
    cls = getattr(getattr(np, "dtypes", None), "StringDType", None)
    if cls is None:
        raise TypeError(f"variable-length strings need NumPy >= 2 (StringDType); this is "
                        f"NumPy {np.__version__}")
    if na is None:
        return cls()
    if na not in NA_OBJECTS:
        raise ValueError(f"unknown missing value {na!r} (known: {sorted(NA_OBJECTS)})")
    return cls(na_object=NA_OBJECTS[na])


def _kernel():
    from bcolzx._ext import strings

    return strings


def encode_rows(rows: np.ndarray, kind: str) -> bytes:
    """The uncompressed :data:`~bcolzx._format.vlen.PLANAR` chunk of `rows`: a
    StringDType array (``"utf8"``) or an object array of bytes (``"bytes"``).

    Raises
    ------
    ValueError
        For a missing value in a StringDType without ``na_object``, or an
        item of 4 GiB or more.
    TypeError
        For a ``"bytes"`` row that is not bytes-like.
    """
    if kind == "utf8":
        return _kernel().encode(rows, hasattr(rows.dtype, "na_object"))
    return vlen.encode_planar(rows)


def pack_rows(chunk, where: vlen.Located, out: np.ndarray, first: int) -> None:
    """Rows ``first .. first + len(out) - 1`` of a chunk of strings located by
    :func:`~bcolzx._format.vlen.locate`, into `out` (a StringDType array),
    each checked to be well-formed UTF-8 first.

    Raises
    ------
    CorruptDataError
        If a string is not well-formed UTF-8 (`out` is then partly written).
    """
    bad = _kernel().pack(chunk, where.offsets, where.na, out, first)
    if bad >= 0:
        raise CorruptDataError(f"row {bad} of a chunk of strings is not well-formed UTF-8")


def check_rows(chunk, where: vlen.Located) -> None:
    """Check that every row of a chunk of strings located by
    :func:`~bcolzx._format.vlen.locate` is well-formed UTF-8, as
    :func:`pack_rows` does, for a caller that uses their bytes as they are.

    Raises
    ------
    CorruptDataError
        If a string is not well-formed UTF-8.
    """
    bad = _kernel().check_rows(chunk, where.offsets)
    if bad >= 0:
        raise CorruptDataError(f"row {bad} of a chunk of strings is not well-formed UTF-8")


def match_rows(chunk, nitems: int | None, na_ok: bool, op: str, needle: bytes,
               na_result: bool, out: np.ndarray, first: int) -> None:
    """Test rows ``first .. first + len(out) - 1`` of a decompressed chunk of
    strings (`nitems` rows, or any number) against the UTF-8 `needle` (``row
    <op> needle``, or ``op(row, needle)`` for ``startswith``, ``endswith`` and
    ``contains``), into the boolean array `out`, from the chunk's bytes; a
    missing row gives `na_result`.  The chunk's table is validated as
    :func:`~bcolzx._format.vlen.locate` validates it (`na_ok`: whether rows
    may be missing), and each row tested is checked to be well-formed UTF-8,
    as :func:`pack_rows` checks it.

    Raises
    ------
    CorruptDataError
        If the table is damaged, holds fewer rows than asked for, or a
        string is not well-formed UTF-8.
    ValueError
        For an unknown `op`.
    """
    if op not in _kernel().MATCH_OPS:
        raise ValueError(f"unknown test {op!r}")
    try:
        bad = _kernel().match(chunk, -1 if nitems is None else nitems, na_ok, op, needle,
                              na_result, out.view(np.uint8), first)
    except ValueError as exc:
        raise CorruptDataError(f"variable-length chunk: {exc}") from None
    if bad >= 0:
        raise CorruptDataError(f"row {bad} of a chunk of strings is not well-formed UTF-8")


def missing_rows(rows: np.ndarray) -> np.ndarray:
    """A boolean mask of the missing (NA) rows of a 1-D StringDType array."""
    return _kernel().na_mask(np.ascontiguousarray(rows).reshape(-1)).view(np.bool_) \
        .reshape(rows.shape)


def lower_bound(value: bytes) -> bytes:
    """A prefix of at most :data:`BOUND_BYTES` bytes of `value`: no larger than it."""
    return value[:BOUND_BYTES]


def upper_bound(value: bytes) -> bytes:
    """At most :data:`BOUND_BYTES` bytes no smaller than `value` (byte order):
    `value` itself when short enough, else its prefix with the last byte
    that is not 0xFF incremented (and what follows it dropped)."""
    if len(value) <= BOUND_BYTES:
        return value
    head = value[:BOUND_BYTES].rstrip(b"\xff")
    if not head:  # never for UTF-8, which has no 0xFF byte
        return value
    return head[:-1] + bytes([head[-1] + 1])


def exact_bounds(rows: np.ndarray) -> tuple[bytes | None, bytes | None, bool]:
    """The UTF-8 of the smallest and largest string of a StringDType array
    (None when every row is missing), and whether a row is missing."""
    lo, hi, has_na = _kernel().bounds(rows)
    if lo < 0:
        return None, None, bool(has_na)
    return str(rows[lo]).encode("utf-8"), str(rows[hi]).encode("utf-8"), bool(has_na)


def bounds(rows: np.ndarray) -> tuple[bytes | None, bytes | None, bool]:
    """The zone-map bounds of a non-empty StringDType array.

    Returns
    -------
    tuple
        ``(lo, hi, has_na)``: prefix bounds (:func:`lower_bound`,
        :func:`upper_bound`) of the UTF-8 of the smallest and largest string,
        None when every row is missing; whether a row is missing.
    """
    lo, hi, has_na = exact_bounds(rows)
    if lo is None or hi is None:
        return None, None, has_na
    return lower_bound(lo), upper_bound(hi), has_na
