"""``ctable.groupby``: aggregates per group of key values, out of core.

How it travels:

1. The calling thread reads the stored chunks of the key and value columns
   (compressed, verified: ``engine.entries``), a batch at a time, and hands
   each batch to a *slot*: one of ``nthreads`` states, each used by one pool
   thread at a time (round robin; a slot's next batch waits for its last).
2. On the pool thread the batch is decoded chunk by chunk into the slot's
   own buffers (``engine.decode_chunk``), the keys are factorized into the
   slot's group numbers (:class:`bcolzx._ext.groupby.Int64Table`,
   :class:`~bcolzx._ext.groupby.BytesTable` for fixed-width strings or
   :class:`~bcolzx._ext.groupby.VarBytesTable` for StringDType and bytes,
   fed a key column's chunk bytes as they are when it is not aggregated too
   (``engine.decode_items``: no string is built),
   per key column, a table of code pairs for several keys) and the Cython
   kernels accumulate (sums with Kahan compensation, extremes, Welford
   moments, first/last with their row numbers, ``(group, value)`` pairs for
   ``nunique``), GIL released.  Columns of strings or bytes as values keep,
   per group, their count, first, last, smallest and largest value
   (:class:`_TextColumn`, NumPy's string comparisons, byte order), and for
   ``nunique`` a table of their distinct values.
3. The slots' partial aggregates are merged: each slot's group keys are
   factorized into one table of all groups and its accumulators combined
   (Chan's formula for the moments, the smaller row for ``first``...).
4. The groups are sorted by key and the result built: a ctable, or a pandas
   DataFrame indexed by the keys.

Memory holds the slots' tables and accumulators (proportional to the
number of groups) and a few chunks per slot, never the rows.  A ``where``
condition, or columns of different chunk lengths, take the row path: the
calling thread reads blocks of the selected rows and the slots aggregate
them the same way.  Semantics follow pandas' ``groupby(...).agg``: NaN
values are skipped, NaT keys dropped (``dropna=True``), groups sorted.
Missing strings (a ``StringDType(na_object=nan)``) are NaN to pandas: a
missing key is dropped (or, ``dropna=False``, a group of its own, sorted
last), a missing value skipped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

import numpy as np

from bcolzx import _threads
from bcolzx._analytics import Columns, selection
from bcolzx._ext import groupby as kernels
from bcolzx._format import strings
from bcolzx.errors import CorruptDataError

__all__ = ["AGGREGATIONS", "Spec", "groupby", "parse_aggregations", "to_frame"]

#: The aggregations, as pandas names them.
AGGREGATIONS = ("sum", "mean", "count", "min", "max", "std", "var", "first", "last",
                "nunique")
#: Value dtype kinds each aggregation takes (``T``: StringDType or bytes, see :func:`_kind`).
_KINDS = {"sum": "biuf", "mean": "biuf", "std": "biuf", "var": "biuf", "count": "biufmMSUT",
          "min": "biufmMSUT", "max": "biufmMSUT", "first": "biufmMSUT", "last": "biufmMSUT",
          "nunique": "biufmMSUT"}
#: Key dtype kinds (``T``: StringDType or variable-length bytes).
KEY_KINDS = "biumMSUT"
#: Kinds of text: fixed-width strings, StringDType and variable-length bytes.
_TEXT = "SUT"
#: Chunks per batch handed to a slot.
_BATCH = 4
_INT64_MAX = np.iinfo(np.int64).max


@dataclass(frozen=True)
class Spec:
    """One output column: aggregation `func` of column `column`, named `name`."""

    name: str
    column: str
    func: str


def parse_aggregations(aggregations: Any, columns: Columns,
                       keys: Sequence[str]) -> list[Spec]:
    """The output columns asked for, validated.

    `aggregations` is a mapping ``{name: (column, func)}`` (pandas' named
    aggregation), or a sequence of ``(column, func)`` or ``(column, func,
    name)`` tuples (default name ``column_func``), or one such tuple.

    Raises
    ------
    ValueError
        For an unknown aggregation, a malformed item or duplicate names.
    KeyError
        For an unknown column.
    TypeError
        For a column dtype the aggregation does not take.
    """
    if isinstance(aggregations, Mapping):
        items = [(col_func, name) for name, col_func in aggregations.items()]
    elif isinstance(aggregations, tuple) and aggregations and isinstance(aggregations[0], str):
        items = [(aggregations, None)]
    elif isinstance(aggregations, Sequence) and not isinstance(aggregations, str):
        items = [(item, None) for item in aggregations]
    else:
        raise ValueError("aggregations must be a dict {name: (column, func)} or a list of "
                         f"(column, func[, name]) tuples, not {aggregations!r}")
    specs: list[Spec] = []
    for item, name in items:
        if not isinstance(item, tuple) or len(item) not in (2, 3) or \
                not all(isinstance(x, str) for x in item) or (name is not None and len(item) == 3):
            raise ValueError(f"an aggregation is (column, func) or (column, func, name), "
                             f"not {item!r}")
        column, func = item[0], item[1]
        out = name if name is not None else (item[2] if len(item) == 3 else f"{column}_{func}")
        if func not in AGGREGATIONS:
            raise ValueError(f"unknown aggregation {func!r}; known: {', '.join(AGGREGATIONS)}")
        if column not in columns:
            raise KeyError(f"no column {column!r}; columns are {list(columns)}")
        col = columns[column]
        kind = _kind(col.dtype)
        if len(col.shape) != 1 or kind not in _KINDS[func]:
            text = " (columns of strings or bytes take count, min, max, first, last and " \
                "nunique)" if kind in _TEXT else ""
            raise TypeError(f"{func} of column {column!r} ({col.dtype}, shape "
                            f"{tuple(col.shape)}) is not supported: it takes one-dimensional "
                            f"columns of kinds {_KINDS[func]!r}{text}")
        specs.append(Spec(out, column, func))
    names = [s.name for s in specs] + list(keys)
    if len(set(names)) != len(names):
        raise ValueError(f"output names must be distinct (keys included): {names}")
    if not specs:
        raise ValueError("no aggregation asked for")
    return specs


# -- keys -------------------------------------------------------------------------------


def _kind(dtype: np.dtype) -> str:
    """`dtype`'s kind, ``"T"`` for StringDType and variable-length bytes (whose
    NumPy kinds, ``T`` and ``O``, say nothing of the latter), ``"O"`` for
    pickled objects."""
    if strings.is_string(dtype) or strings.is_bytes(dtype):
        return "T"
    return dtype.kind


class _Items:
    """Keys of StringDType or bytes as their chunks hold them, in parts: each
    ``(data, offsets, missing)``, the bytes of a decoded chunk
    (``engine.decode_items``) or of rows flattened (:func:`_flatten`), ``n + 1``
    offsets into them and uint8 flags of the missing rows (or None).  No
    string is built for a decoded chunk."""

    def __init__(self, parts: list[tuple]):
        self.parts = parts

    def __len__(self) -> int:
        return sum(len(offsets) - 1 for _, offsets, _ in self.parts)


def _key_pieces(engine: Any, lo: int, hi: int) -> list:
    """On the calling thread, what rows ``lo .. hi-1`` of a key column are made
    of (`lo` starts a chunk): the verified entries of its full chunks, as
    ``(chunk, entry)``, then the rows past them, read."""
    cl = engine.chunklen
    end = max(lo, min(hi, engine.nfull * cl))
    pieces: list = list(zip(range(lo // cl, end // cl), engine.entries(lo // cl, end // cl)))
    if hi > end:
        pieces.append(engine.read(end, hi))
    return pieces


def _decode_pieces(engine: Any, pieces: list) -> _Items:
    """On a pool thread, the keys of :func:`_key_pieces`, as :class:`_Items`."""
    parts = []
    for piece in pieces:
        if isinstance(piece, tuple):
            data, located = engine.decode_items(piece[1], piece[0])
            parts.append((data, located.offsets, located.na))
        else:
            parts.append(_flatten(piece))
    return _Items(parts)


def _flatten(arr: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Rows of StringDType or bytes as ``(data, offsets, missing)``: their bytes
    end to end, ``n + 1`` offsets, uint8 flags of the missing rows (or None)."""
    if strings.is_string(arr.dtype):
        from bcolzx._ext import strings as kernel

        return kernel.flatten(np.ascontiguousarray(arr).reshape(-1))
    n = len(arr)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, arr), dtype=np.int64, count=n), out=offsets[1:])
    return np.frombuffer(b"".join(arr), dtype=np.uint8), offsets, None


class _ValueTable:
    """The distinct values of one column, numbered in order of first appearance
    (a Cython hash table for its kind of values)."""

    def __init__(self, dtype: np.dtype):
        self.dtype = dtype
        self.kind = "var" if _kind(dtype) == "T" else "fixed" if dtype.kind in "SU" else "int"
        self.table: Any = kernels.VarBytesTable() if self.kind == "var" else \
            kernels.BytesTable(dtype.itemsize) if self.kind == "fixed" else kernels.Int64Table()

    @property
    def ngroups(self) -> int:
        return self.table.ngroups

    def encode(self, arr: Any, dropna: bool) -> np.ndarray:
        """The number of each value of `arr` (an array, or :class:`_Items`); a
        missing one (NaT, a missing string) is -1 if `dropna`, else a value of
        its own."""
        out = np.empty(len(arr), np.int64)
        if self.kind == "var":
            pos = 0
            for data, offsets, na in arr.parts if isinstance(arr, _Items) else [_flatten(arr)]:
                k = len(offsets) - 1
                flags = None if na is None else na if dropna else na * np.uint8(2)
                self.table.factorize(data, offsets, out[pos:pos + k], flags)
                pos += k
        elif self.kind == "fixed":
            self.table.factorize(arr, out)
        else:
            valid = (~np.isnat(arr)).view(np.uint8) if arr.dtype.kind in "mM" and dropna \
                else None
            self.table.factorize(_as_int64(arr), out, valid)
        return out

    def values(self) -> np.ndarray:
        """The values by number, as an array of the column's dtype."""
        dt = self.dtype
        if self.kind == "var":
            return _from_var_table(self.table, dt)
        keys = self.table.keys()
        if self.kind == "fixed":
            return np.ascontiguousarray(keys).view(dt).reshape(-1)
        if dt.kind in "mMu" and dt.itemsize == 8:
            return keys.view(dt)
        return keys.astype(dt)


def _from_var_table(table: Any, dt: np.dtype) -> np.ndarray:
    data, offsets, na_code = table.keys()
    g = len(offsets) - 1
    out = np.empty(g, dtype=dt)
    if strings.is_string(dt):
        from bcolzx._ext import strings as kernel

        na = None
        if na_code >= 0:
            na = np.zeros(g, np.uint8)
            na[na_code] = 1
        if kernel.pack(data, offsets, na, out, 0) >= 0:  # pragma: no cover - keys were str
            raise CorruptDataError("a key of the groups is not well-formed UTF-8")
        return out
    raw, bounds = data.tobytes(), offsets.tolist()
    for i in range(g):
        out[i] = raw[bounds[i]:bounds[i + 1]]
    return out


class _Keys:
    """Group numbers of rows of one or several key columns."""

    def __init__(self, dtypes: list[np.dtype], dropna: bool):
        self.dtypes = dtypes
        self.dropna = dropna
        self.tables = [_ValueTable(dt) for dt in dtypes]
        self.pairs = [kernels.Int64Table() for _ in dtypes[1:]]

    @property
    def ngroups(self) -> int:
        return self.pairs[-1].ngroups if self.pairs else self.tables[0].ngroups

    def encode(self, arrays: list[Any]) -> np.ndarray:
        """The group number of each row (-1: a missing key dropped); keys of
        strings or bytes may be :class:`_Items`."""
        n = len(arrays[0])
        codes = [table.encode(arr, self.dropna) for table, arr in zip(self.tables, arrays)]
        combined = codes[0]
        for table, more in zip(self.pairs, codes[1:]):
            if combined.max(initial=0) >= 1 << 31 or more.max(initial=0) >= 1 << 31:
                raise ValueError("more than 2**31 groups of a key column (or of the first "
                                 "keys together) are not supported")
            ok = ((combined >= 0) & (more >= 0)).view(np.uint8)
            packed = (combined << 32) | np.where(more >= 0, more, 0)
            out = np.empty(n, np.int64)
            table.factorize(packed, out, ok)
            combined = out
        return combined

    def values(self) -> list[np.ndarray]:
        """The key values of each group, one array per key column, by group number."""
        per_column = [t.values() for t in self.tables]
        if not self.pairs:
            return per_column
        # Unpack the pair tables from the last: codes of (earlier combination, column j).
        idx = [np.empty(0, np.int64)] * len(self.dtypes)
        combo = self.pairs[-1].keys()
        for j in range(len(self.dtypes) - 1, 0, -1):
            idx[j] = combo & 0xFFFFFFFF
            combo = combo >> 32
            if j > 1:
                combo = self.pairs[j - 2].keys()[combo]
        idx[0] = combo
        return [vals[i] for vals, i in zip(per_column, idx)]


def _as_int64(arr: np.ndarray) -> np.ndarray:
    if arr.dtype.kind in "mMu" and arr.dtype.itemsize == 8:
        return np.ascontiguousarray(arr).view(np.int64)
    return np.ascontiguousarray(arr, dtype=np.int64)


# -- accumulators --------------------------------------------------------------------------


class _Column:
    """The accumulators one value column needs, per group."""

    def __init__(self, dtype: np.dtype, funcs: set[str]):
        self.dtype = dtype
        self.float = dtype.kind == "f"
        self.time = dtype.kind in "mM"
        self.unsigned = dtype.kind == "u" and dtype.itemsize == 8
        self.want_sum = bool(funcs & {"sum", "mean"}) or ("count" in funcs and self.float)
        self.want_count = "count" in funcs and not self.float
        self.want_ext = bool(funcs & {"min", "max"})
        self.want_mom = bool(funcs & {"std", "var"})
        self.want_fl = bool(funcs & {"first", "last"})
        self.want_nu = "nunique" in funcs
        self.acc: dict[str, np.ndarray] = {}
        self.pairs = kernels.PairSet() if self.want_nu else None

    def fields(self) -> dict[str, tuple]:
        """Accumulator name -> (dtype, initial value)."""
        f: dict[str, tuple] = {}
        if self.want_sum:
            if self.float:
                f.update(sum=(np.float64, 0.0), comp=(np.float64, 0.0), n=(np.int64, 0))
            else:
                f.update(sum=(np.int64, 0), n=(np.int64, 0))
        if self.want_count:
            f["count"] = (np.int64, 0)
        if self.want_ext:
            if self.float:
                f.update(min=(np.float64, np.nan), max=(np.float64, np.nan))
            else:
                f.update(min=(np.int64, 0), max=(np.int64, 0), seen=(np.uint8, 0))
        if self.want_mom:
            f.update(mn=(np.int64, 0), mean=(np.float64, 0.0), m2=(np.float64, 0.0))
        if self.want_fl:
            f.update(first_at=(np.int64, _INT64_MAX), first=(np.int64, 0),
                     last_at=(np.int64, -1), last=(np.int64, 0))
        return f

    def grow(self, ngroups: int) -> None:
        _grow(self.acc, self.fields(), ngroups)

    def add(self, codes: np.ndarray, values: np.ndarray, ngroups: int,
            rows: np.ndarray | None, first_row: int) -> None:
        """Accumulate `values` (one per code) into groups ``0 .. ngroups-1``."""
        a = self.acc
        valid = None
        if self.float:
            v = np.ascontiguousarray(values, dtype=np.float64)
        else:
            v = _as_int64(values)
            if self.time:
                valid = (~np.isnat(values)).view(np.uint8)
        if self.want_sum:
            if self.float:
                kernels.sums_f8(codes, v, ngroups, a["sum"], a["comp"], a["n"])
            else:
                kernels.sums_i8(codes, v, ngroups, a["sum"], a["n"])
        if self.want_count:
            keep = codes >= 0 if valid is None else (codes >= 0) & valid.view(bool)
            a["count"][:ngroups] += np.bincount(codes[keep], minlength=ngroups)[:ngroups]
        if self.want_ext:
            if self.float:
                kernels.extremes_f8(codes, v, ngroups, a["min"], a["max"])
            else:
                kernels.extremes_i8(codes, v, ngroups, a["min"], a["max"], a["seen"], valid,
                                    self.unsigned)
        if self.want_mom:
            kernels.moments_f8(codes, np.ascontiguousarray(values, dtype=np.float64), ngroups,
                               a["mn"], a["mean"], a["m2"])
        if self.want_fl or self.want_nu:
            bits, ok = self._bits(values, v, valid)
            if self.want_fl:
                kernels.first_last(codes, bits, first_row, ngroups, a["first_at"], a["first"],
                                   a["last_at"], a["last"], ok,
                                   None if rows is None else np.ascontiguousarray(rows,
                                                                                  np.int64))
            if self.want_nu:
                self.pairs.add(codes, bits, ok)

    def _bits(self, values: np.ndarray, v: np.ndarray, valid: np.ndarray | None) -> tuple:
        """Values as int64 bits (floats: -0.0 as 0.0) and which are not NaN/NaT."""
        if not self.float:
            return v, valid
        f = v + 0.0  # -0.0 + 0.0 is 0.0: one value, as pandas counts it
        if values.dtype != np.float64:  # first/last give back the column's own values
            f = np.ascontiguousarray(values, dtype=np.float64) + 0.0
        return f.view(np.int64), (~np.isnan(f)).view(np.uint8)

    def merge(self, other: "_Column", where: np.ndarray) -> None:
        """Fold `other`'s groups, whose global numbers are `where`, into this."""
        a, b = self.acc, other.acc
        g = len(where)
        if not g:
            return
        if self.want_sum:
            if self.float:
                a["sum"][where] += b["sum"][:g] - b["comp"][:g]
            else:
                a["sum"][where] += b["sum"][:g]  # int64 arrays wrap, as the kernel does
            a["n"][where] += b["n"][:g]
        if self.want_count:
            a["count"][where] += b["count"][:g]
        if self.want_ext:
            if self.float:
                a["min"][where] = np.fmin(a["min"][where], b["min"][:g])
                a["max"][where] = np.fmax(a["max"][where], b["max"][:g])
            else:
                seen_a, seen_b = a["seen"][where].astype(bool), b["seen"][:g].astype(bool)
                lo, hi = a["min"][where], a["max"][where]
                blo, bhi = b["min"][:g], b["max"][:g]
                if self.unsigned:
                    pick_lo = blo.view(np.uint64) < lo.view(np.uint64)
                    pick_hi = bhi.view(np.uint64) > hi.view(np.uint64)
                else:
                    pick_lo, pick_hi = blo < lo, bhi > hi
                a["min"][where] = np.where(seen_b & (~seen_a | pick_lo), blo, lo)
                a["max"][where] = np.where(seen_b & (~seen_a | pick_hi), bhi, hi)
                a["seen"][where] = seen_a | seen_b
        if self.want_mom:
            na, nb = a["mn"][where].astype(np.float64), b["mn"][:g].astype(np.float64)
            n = na + nb
            with np.errstate(invalid="ignore", divide="ignore"):
                delta = b["mean"][:g] - a["mean"][where]
                mean = np.where(n > 0, a["mean"][where] + delta * nb / np.maximum(n, 1), 0.0)
                m2 = a["m2"][where] + b["m2"][:g] + delta * delta * na * nb / np.maximum(n, 1)
            a["mean"][where], a["m2"][where] = mean, m2
            a["mn"][where] += b["mn"][:g]
        if self.want_fl:
            earlier = b["first_at"][:g] < a["first_at"][where]
            a["first"][where] = np.where(earlier, b["first"][:g], a["first"][where])
            a["first_at"][where] = np.where(earlier, b["first_at"][:g], a["first_at"][where])
            later = b["last_at"][:g] > a["last_at"][where]
            a["last"][where] = np.where(later, b["last"][:g], a["last"][where])
            a["last_at"][where] = np.where(later, b["last_at"][:g], a["last_at"][where])
        if self.want_nu:
            groups, values = other.pairs.pairs()
            self.pairs.add(np.ascontiguousarray(where[groups]), values)

    def result(self, func: str, g: int, ddof: int) -> np.ndarray:
        """The aggregate `func` of groups ``0 .. g-1``, of pandas' dtype: the
        column's for ``sum`` (bools: int64), ``min``, ``max``, ``first`` and
        ``last``, and for ``std``/``var`` of floats; float64 for ``mean``."""
        out = self._result(func, g, ddof)
        kind = self.dtype.kind
        if (func == "sum" and kind in "iuf") or (func in ("std", "var") and kind == "f"):
            return out.astype(self.dtype)  # integers wrap, as pandas' sums of int8
        return out

    def _result(self, func: str, g: int, ddof: int) -> np.ndarray:
        a = self.acc
        if func == "sum":
            if self.float:
                return a["sum"][:g] - a["comp"][:g]
            return a["sum"][:g].view(np.uint64) if self.unsigned else a["sum"][:g].copy()
        if func == "mean":
            total = a["sum"][:g] - a["comp"][:g] if self.float else (
                a["sum"][:g].view(np.uint64) if self.unsigned else a["sum"][:g]
            ).astype(np.float64)
            with np.errstate(invalid="ignore", divide="ignore"):
                return np.where(a["n"][:g] > 0, total / np.maximum(a["n"][:g], 1), np.nan)
        if func == "count":
            return (a["n"] if self.float else a["count"])[:g].copy()
        if func in ("min", "max"):
            out = a[func][:g]
            if self.float:
                return out.astype(self.dtype)
            return self._back(out, a["seen"][:g].astype(bool))
        if func in ("std", "var"):
            n = a["mn"][:g]
            with np.errstate(invalid="ignore", divide="ignore"):
                var = np.where(n - ddof > 0, a["m2"][:g] / np.maximum(n - ddof, 1), np.nan)
            return np.sqrt(var) if func == "std" else var
        if func in ("first", "last"):
            seen = a[f"{func}_at"][:g]
            seen = seen < _INT64_MAX if func == "first" else seen >= 0
            bits = a[func][:g]
            if self.float:
                vals = bits.view(np.float64).astype(self.dtype)
                return np.where(seen, vals, np.nan).astype(self.dtype)
            return self._back(bits, seen)
        # nunique
        return self.pairs.counts(g)

    def _back(self, ints: np.ndarray, seen: np.ndarray) -> np.ndarray:
        """int64 accumulators as the column's dtype (NaT where nothing was seen)."""
        if self.time:
            out = ints.view(self.dtype).copy()
            out[~seen] = np.array("NaT", self.dtype)
            return out
        if self.unsigned:
            return ints.view(np.uint64).copy()
        return ints.astype(self.dtype)


def _grow(acc: dict[str, np.ndarray], fields: dict[str, tuple], ngroups: int) -> None:
    """Make each accumulator of `fields` (name -> (dtype, initial value)) hold
    `ngroups` groups, keeping what it holds."""
    for name, (dt, init) in fields.items():
        have = acc.get(name)
        size = 0 if have is None else len(have)
        if have is not None and size >= ngroups:
            continue
        if init is None:  # values of a column of text: never read before being set
            new = np.empty(max(ngroups, 2 * size, 16), dtype=dt)
            if dt.kind in "SUO":
                new[:] = b"" if dt.kind != "U" else ""
        else:
            new = np.full(max(ngroups, 2 * size, 16), init, dtype=dt)
        if have is not None:
            new[:size] = have
        acc[name] = new


class _TextColumn:
    """The accumulators of a column of strings or bytes (fixed-width, StringDType
    or variable-length bytes), per group: the count of its values that are not
    missing, the first and last of them with their rows, the smallest and
    largest (NumPy's comparisons: code point order, byte order for bytes), and
    for ``nunique`` the ``(group, value number)`` pairs, the values numbered by a
    table of the column's distinct values."""

    def __init__(self, dtype: np.dtype, funcs: set[str]):
        self.dtype = dtype
        self.funcs = funcs
        self.na_ok = hasattr(dtype, "na_object")
        self.acc: dict[str, np.ndarray] = {}
        self.values = _ValueTable(dtype) if "nunique" in funcs else None
        self.pairs = kernels.PairSet() if "nunique" in funcs else None

    def fields(self) -> dict[str, tuple]:
        f: dict[str, tuple] = {}
        if "count" in self.funcs:
            f["count"] = (np.int64, 0)
        if "first" in self.funcs:
            f.update(first_at=(np.int64, _INT64_MAX), first=(self.dtype, None))
        if "last" in self.funcs:
            f.update(last_at=(np.int64, -1), last=(self.dtype, None))
        if self.funcs & {"min", "max"}:
            f.update(seen=(np.uint8, 0), min=(self.dtype, None), max=(self.dtype, None))
        return f

    def grow(self, ngroups: int) -> None:
        _grow(self.acc, self.fields(), ngroups)

    def add(self, codes: np.ndarray, values: np.ndarray, ngroups: int,
            rows: np.ndarray | None, first_row: int) -> None:
        """Accumulate `values` (one per code; rows in increasing order) into
        groups ``0 .. ngroups-1``."""
        a = self.acc
        ok = codes >= 0
        if self.na_ok:
            ok &= ~strings.missing_rows(values)
        if self.values is not None:
            numbers = self.values.encode(values, dropna=True)
            self.pairs.add(codes, numbers, (ok & (numbers >= 0)).view(np.uint8))
        idx = np.flatnonzero(ok)
        if not len(idx):
            return
        c = codes[idx]
        if "count" in self.funcs:
            if ngroups <= 4 * len(c):
                a["count"][:ngroups] += np.bincount(c, minlength=ngroups)[:ngroups]
            else:
                groups, counts = np.unique(c, return_counts=True)
                a["count"][groups] += counts
        at = first_row + idx if rows is None else np.asarray(rows)[idx]
        if "first" in self.funcs:
            groups, i = np.unique(c, return_index=True)
            self._take("first", groups, at[i], values[idx[i]], np.less)
        if "last" in self.funcs:
            groups, i = np.unique(c[::-1], return_index=True)
            i = len(c) - 1 - i
            self._take("last", groups, at[i], values[idx[i]], np.greater)
        if self.funcs & {"min", "max"}:
            v = values[idx]
            order = np.lexsort((v, c))
            cs = c[order]
            starts = np.flatnonzero(np.concatenate(([True], cs[1:] != cs[:-1])))
            ends = np.concatenate((starts[1:], [len(cs)])) - 1
            groups = cs[starts]
            seen = a["seen"][groups].astype(bool)
            self._extreme("min", groups, seen, v[order[starts]], np.less)
            self._extreme("max", groups, seen, v[order[ends]], np.greater)
            a["seen"][groups] = 1

    def _take(self, func: str, groups: np.ndarray, at: np.ndarray, vals: np.ndarray,
              before) -> None:
        """Groups `groups` (distinct) take `vals` as their first (last) value
        where row `at` comes before (after) the one they hold."""
        a = self.acc
        take = before(at, a[f"{func}_at"][groups])
        a[f"{func}_at"][groups[take]] = at[take]
        a[func][groups[take]] = vals[take]

    def _extreme(self, func: str, groups: np.ndarray, seen: np.ndarray, vals: np.ndarray,
                 better) -> None:
        """Groups `groups` (distinct; `seen`: holding a value) take `vals` where
        better than what they hold."""
        held = self.acc[func]
        take = ~seen
        take[seen] = better(vals[seen], held[groups[seen]])
        held[groups[take]] = vals[take]

    def merge(self, other: "_TextColumn", where: np.ndarray) -> None:
        """Fold `other`'s groups, whose global numbers are `where`, into this."""
        a, b = self.acc, other.acc
        g = len(where)
        if not g:
            return
        if "count" in self.funcs:
            a["count"][where] += b["count"][:g]
        if "first" in self.funcs:
            self._take("first", where, b["first_at"][:g], b["first"][:g], np.less)
        if "last" in self.funcs:
            self._take("last", where, b["last_at"][:g], b["last"][:g], np.greater)
        if self.funcs & {"min", "max"}:
            has = b["seen"][:g].astype(bool)
            groups = where[has]
            seen = a["seen"][groups].astype(bool)
            self._extreme("min", groups, seen, b["min"][:g][has], np.less)
            self._extreme("max", groups, seen, b["max"][:g][has], np.greater)
            a["seen"][groups] = 1
        if self.values is not None and other.values is not None:
            numbers = self.values.encode(other.values.values(), dropna=True)
            groups, values = other.pairs.pairs()
            self.pairs.add(np.ascontiguousarray(where[groups]),
                           np.ascontiguousarray(numbers[values]))

    def result(self, func: str, g: int, ddof: int) -> np.ndarray:
        """The aggregate `func` of groups ``0 .. g-1``: int64 for ``count`` and
        ``nunique``, else values of the column's dtype (missing where a group
        has none, which only a dtype with missing values allows)."""
        a = self.acc
        if func == "count":
            return a["count"][:g].copy()
        if func == "nunique":
            return self.pairs.counts(g)
        if func == "first":
            seen = a["first_at"][:g] < _INT64_MAX
        elif func == "last":
            seen = a["last_at"][:g] >= 0
        else:
            seen = a["seen"][:g].astype(bool)
        out = a[func][:g].copy()
        if self.na_ok and not seen.all():
            out[~seen] = self.dtype.na_object
        return out


class _State:
    """One slot's groups and accumulators."""

    def __init__(self, key_dtypes: list[np.dtype], value_dtypes: dict[str, np.dtype],
                 funcs: dict[str, set[str]], dropna: bool):
        self.keys = _Keys(key_dtypes, dropna)
        self.columns: dict[str, Any] = {
            n: _TextColumn(value_dtypes[n], funcs[n]) if _kind(value_dtypes[n]) in _TEXT
            else _Column(value_dtypes[n], funcs[n]) for n in funcs}

    def add(self, keys: list[Any], values: dict[str, np.ndarray],
            rows: np.ndarray | None, first_row: int) -> None:
        codes = self.keys.encode(keys)
        g = self.keys.ngroups
        for name, col in self.columns.items():
            col.grow(g)
            col.add(codes, values[name], g, rows, first_row)


# -- the driver -----------------------------------------------------------------------------


def groupby(table: Columns, keys: Sequence[str], specs: list[Spec], *,
            where: Any = None, scope: Mapping[str, Any] | None = None, vm: str | None = None,
            dropna: bool = True, ddof: int = 1, nthreads: int = 1,
            batch: int = _BATCH) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Group the rows of `table` by `keys` and aggregate as `specs` say.

    Returns
    -------
    tuple
        ``(key arrays, aggregate arrays)``: one array per key and per spec,
        one row per group, groups sorted by their keys.

    Raises
    ------
    KeyError
        For an unknown key column.
    TypeError
        For a key column of a kind that cannot be a key (floats, pickled
        objects, multidimensional rows).
    ValueError
        For a bad condition.
    """
    key_cols = [table[k] for k in keys]
    for name, col in zip(keys, key_cols):
        if len(col.shape) != 1 or _kind(col.dtype) not in KEY_KINDS:
            raise TypeError(f"column {name!r} ({col.dtype}, shape {tuple(col.shape)}) cannot "
                            "be a key: keys are one-dimensional integers, bools, strings "
                            "(fixed-width or StringDType), bytes, datetimes or timedeltas")
    value_names = sorted({s.column for s in specs})
    funcs = {n: {s.func for s in specs if s.column == n} for n in value_names}
    value_dtypes = {n: table[n].dtype for n in value_names}
    key_dtypes = [c.dtype for c in key_cols]
    nslots = max(1, nthreads)
    slots = [_State(key_dtypes, value_dtypes, funcs, dropna) for _ in range(nslots)]
    used = list(dict.fromkeys([*keys, *value_names]))
    runner = _Runner(slots, nthreads)
    try:
        engines = {n: table[n].engine for n in used}
        chunklens = {e.chunklen for e in engines.values()}
        if where is None and len(chunklens) == 1:
            _by_chunks(runner, engines, list(keys), value_names, batch)
        else:
            _by_rows(runner, table, engines, list(keys), value_names, where, scope or {}, vm,
                     max(chunklens))
    finally:
        runner.finish()
    total = _merge(slots, key_dtypes, value_dtypes, funcs, dropna)
    g = total.keys.ngroups
    for col in total.columns.values():
        col.grow(g)
    key_values = total.keys.values()
    order = np.lexsort(key_values[::-1]) if g else np.empty(0, np.int64)
    results = [total.columns[s.column].result(s.func, g, ddof)[order] for s in specs]
    return [k[order] for k in key_values], results


class _Runner:
    """Batches handed to the slots on the pool, round robin, a slot's batches in order."""

    def __init__(self, slots: list[_State], nthreads: int):
        self.slots = slots
        self.inline = nthreads < 2 or _threads.in_worker()
        self.pool = None if self.inline else _threads.pool(nthreads)
        self.futures: list[Future | None] = [None] * len(slots)
        self.next = 0

    def submit(self, job) -> None:
        k = self.next
        self.next = (k + 1) % len(self.slots)
        if self.inline:
            job(self.slots[k])
            return
        previous = self.futures[k]
        if previous is not None:
            previous.result()  # a slot's state is used by one thread at a time
        self.futures[k] = self.pool.submit(job, self.slots[k])

    def finish(self) -> None:
        """Wait for every batch; raise the first failure."""
        errors = []
        for f in self.futures:
            if f is not None:
                try:
                    f.result()
                except BaseException as exc:  # noqa: BLE001 - raised below, after all
                    errors.append(exc)
        self.futures = [None] * len(self.slots)
        if errors:
            raise errors[0]


def _by_chunks(runner: _Runner, engines: dict, keys: list[str], values: list[str],
               batch: int) -> None:
    first = next(iter(engines.values()))
    cl, nfull = first.chunklen, min(e.nfull for e in engines.values())
    names = list(engines)
    raw = _raw_keys(engines, keys, values, cl)
    for c0 in range(0, nfull, batch):
        c1 = min(nfull, c0 + batch)
        entries = {n: engines[n].entries(c0, c1) for n in names}

        def job(state: _State, c0=c0, c1=c1, entries=entries) -> None:
            bufs = _buffers(state, engines, raw)
            for i, c in enumerate(range(c0, c1)):
                got: dict[str, Any] = dict(bufs)
                for n in names:
                    if n in raw:
                        got[n] = _decode_pieces(engines[n], [(c, entries[n][i])])
                    else:
                        engines[n].decode_chunk(entries[n][i], c, bufs[n])
                state.add([got[k] for k in keys], got, None, c * cl)
        runner.submit(job)
    # Rows past the full chunks every column has (the leftover, held in memory).
    start, length = nfull * cl, len(first)
    if start < length:
        rows = {n: engines[n].read(start, length) for n in names}
        runner.submit(lambda state: state.add([rows[k] for k in keys], rows, None, start))


def _raw_keys(engines: dict, keys: list[str], values: list[str], blen: int) -> set[str]:
    """The keys of strings or bytes factorized from their chunks' bytes, never
    decoded into strings: those that are not values too, in blocks of `blen`
    rows that start their chunks."""
    return {k for k in keys if k not in values and hasattr(engines[k], "decode_items")
            and blen % engines[k].chunklen == 0}


def _buffers(state: _State, engines: dict, raw: set[str]) -> dict:
    """The slot's chunk buffers, one per column but those in `raw` (made on
    first use, kept)."""
    bufs = getattr(state, "buffers", None)
    if bufs is None:
        bufs = state.buffers = {n: np.empty((e.chunklen,), e.dtype) for n, e in engines.items()
                                if n not in raw}
    return bufs


def _by_rows(runner: _Runner, table: Columns, engines: dict, keys: list[str],
             values: list[str], where: Any, scope: Mapping[str, Any], vm: str | None,
             blen: int) -> None:
    names = list(engines)
    length = len(next(iter(engines.values())))
    if where is None:
        raw = _raw_keys(engines, keys, values, blen)
        for lo in range(0, length, blen):
            hi = min(length, lo + blen)
            rows = {n: engines[n].read(lo, hi) for n in names if n not in raw}
            pieces = {n: _key_pieces(engines[n], lo, hi) for n in raw}

            def job(state: _State, rows=rows, pieces=pieces, lo=lo) -> None:
                got = {**rows, **{n: _decode_pieces(engines[n], p) for n, p in pieces.items()}}
                state.add([got[k] for k in keys], got, None, lo)
            runner.submit(job)
        return
    for lo, pos, have in selection.blocks(where, table, scope, vm):
        rows = {n: selection.values_at(table[n], lo, pos, have, n) for n in names}
        runner.submit(lambda state, rows=rows, pos=pos: state.add(
            [rows[k] for k in keys], rows, pos, 0))


def _merge(slots: list[_State], key_dtypes: list[np.dtype], value_dtypes: dict,
           funcs: dict, dropna: bool) -> _State:
    """One state with every slot's groups (the slots' partials folded in)."""
    nonempty = [s for s in slots if s.keys.ngroups]
    if len(nonempty) == 1:
        return nonempty[0]
    total = _State(key_dtypes, value_dtypes, funcs, dropna=False)
    for s in nonempty:
        where = total.keys.encode(s.keys.values())
        g = total.keys.ngroups
        for name, col in total.columns.items():
            col.grow(g)
            col.merge(s.columns[name], where)
    return total


def to_frame(key_values: list[np.ndarray], results: list[np.ndarray], keys: list[str],
             names: list[str]):
    """The result as a pandas DataFrame indexed by the keys; StringDType columns
    and keys as pandas' ``str`` (missing values NaN), bytes as objects.

    Raises
    ------
    ImportError
        If pandas is not installed.
    """
    import pandas as pd

    def column(arr: np.ndarray):
        if strings.is_string(arr.dtype):
            return pd.array(arr, dtype=pd.StringDtype(na_value=np.nan))
        if arr.dtype == np.dtype(object):  # bytes: a Series of objects, not inferred as str
            return pd.array(arr, dtype=object)
        return arr

    levels = [column(k) for k in key_values]
    index = pd.MultiIndex.from_arrays(levels, names=keys) if len(keys) > 1 \
        else pd.Index(levels[0], name=keys[0])
    return pd.DataFrame({n: column(r) for n, r in zip(names, results)}, index=index)
