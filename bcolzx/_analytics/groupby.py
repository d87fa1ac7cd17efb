"""``ctable.groupby``: aggregates per group of key values, out of core.

How it travels:

1. The calling thread reads the stored chunks of the key and value columns
   (compressed, verified: ``engine.entries``), a batch at a time, and hands
   each batch to a *slot*: one of ``nthreads`` states, each used by one pool
   thread at a time (round robin; a slot's next batch waits for its last).
2. On the pool thread the batch is decoded chunk by chunk into the slot's
   own buffers (``engine.decode_chunk``), the keys are factorized into the
   slot's group numbers (:class:`bcolzx._ext.groupby.Int64Table` or
   :class:`~bcolzx._ext.groupby.BytesTable` per key column, a table of code
   pairs for several keys) and the Cython kernels accumulate (sums with
   Kahan compensation, extremes, Welford moments, first/last with their row
   numbers, ``(group, value)`` pairs for ``nunique``), GIL released.
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

__all__ = ["AGGREGATIONS", "Spec", "groupby", "parse_aggregations"]

#: The aggregations, as pandas names them.
AGGREGATIONS = ("sum", "mean", "count", "min", "max", "std", "var", "first", "last",
                "nunique")
#: Value dtype kinds each aggregation takes.
_KINDS = {"sum": "biuf", "mean": "biuf", "std": "biuf", "var": "biuf", "count": "biufmM",
          "min": "biufmM", "max": "biufmM", "first": "biufmM", "last": "biufmM",
          "nunique": "biufmM"}
#: Key dtype kinds.
KEY_KINDS = "biumMSU"
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
        if len(col.shape) != 1 or col.dtype.kind not in _KINDS[func]:
            raise TypeError(f"{func} of column {column!r} ({col.dtype}, shape "
                            f"{tuple(col.shape)}) is not supported: it takes one-dimensional "
                            f"columns of kinds {_KINDS[func]!r}")
        specs.append(Spec(out, column, func))
    names = [s.name for s in specs] + list(keys)
    if len(set(names)) != len(names):
        raise ValueError(f"output names must be distinct (keys included): {names}")
    if not specs:
        raise ValueError("no aggregation asked for")
    return specs


# -- keys -------------------------------------------------------------------------------


class _Keys:
    """Group numbers of rows of one or several key columns."""

    def __init__(self, dtypes: list[np.dtype], dropna: bool):
        self.dtypes = dtypes
        self.dropna = dropna
        self.tables = [kernels.BytesTable(dt.itemsize) if dt.kind in "SU"
                       else kernels.Int64Table() for dt in dtypes]
        self.pairs = [kernels.Int64Table() for _ in dtypes[1:]]

    @property
    def ngroups(self) -> int:
        return (self.pairs[-1] if self.pairs else self.tables[0]).ngroups

    def encode(self, arrays: list[np.ndarray]) -> np.ndarray:
        """The group number of each row (-1: a NaT key dropped)."""
        n = len(arrays[0])
        codes = []
        for table, dt, arr in zip(self.tables, self.dtypes, arrays):
            out = np.empty(n, np.int64)
            valid = None
            if dt.kind in "SU":
                table.factorize(arr, out)
            else:
                if dt.kind in "mM" and self.dropna:
                    valid = (~np.isnat(arr)).view(np.uint8)
                table.factorize(_as_int64(arr), out, valid)
            codes.append(out)
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
        per_column = [_from_table(t, dt) for t, dt in zip(self.tables, self.dtypes)]
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


def _from_table(table: Any, dt: np.dtype) -> np.ndarray:
    keys = table.keys()
    if dt.kind in "SU":
        return np.ascontiguousarray(keys).view(dt).reshape(-1)
    if dt.kind in "mMu" and dt.itemsize == 8:
        return keys.view(dt)
    return keys.astype(dt)


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
        for name, (dt, init) in self.fields().items():
            have = self.acc.get(name)
            size = 0 if have is None else len(have)
            if have is not None and size >= ngroups:
                continue
            new = np.full(max(ngroups, 2 * size, 16), init, dtype=dt)
            if have is not None:
                new[:size] = have
            self.acc[name] = new

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


class _State:
    """One slot's groups and accumulators."""

    def __init__(self, key_dtypes: list[np.dtype], value_dtypes: dict[str, np.dtype],
                 funcs: dict[str, set[str]], dropna: bool):
        self.keys = _Keys(key_dtypes, dropna)
        self.columns = {n: _Column(value_dtypes[n], funcs[n]) for n in funcs}

    def add(self, keys: list[np.ndarray], values: dict[str, np.ndarray],
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
        For a key column of a kind that cannot be a key (floats, objects,
        multidimensional rows).
    ValueError
        For a bad condition.
    """
    key_cols = [table[k] for k in keys]
    for name, col in zip(keys, key_cols):
        if len(col.shape) != 1 or col.dtype.kind not in KEY_KINDS:
            raise TypeError(f"column {name!r} ({col.dtype}, shape {tuple(col.shape)}) cannot "
                            "be a key: keys are one-dimensional integers, bools, fixed-width "
                            "strings, datetimes or timedeltas")
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
    for c0 in range(0, nfull, batch):
        c1 = min(nfull, c0 + batch)
        entries = {n: engines[n].entries(c0, c1) for n in names}

        def job(state: _State, c0=c0, c1=c1, entries=entries) -> None:
            bufs = _buffers(state, engines)
            for i, c in enumerate(range(c0, c1)):
                for n in names:
                    engines[n].decode_chunk(entries[n][i], c, bufs[n])
                state.add([bufs[k] for k in keys], bufs, None, c * cl)
        runner.submit(job)
    # Rows past the full chunks every column has (the leftover, held in memory).
    start, length = nfull * cl, len(first)
    if start < length:
        rows = {n: engines[n].read(start, length) for n in names}
        runner.submit(lambda state: state.add([rows[k] for k in keys], rows, None, start))


def _buffers(state: _State, engines: dict) -> dict:
    """The slot's chunk buffers, one per column (made on first use, kept)."""
    bufs = getattr(state, "buffers", None)
    if bufs is None:
        bufs = state.buffers = {n: np.empty((e.chunklen,), e.dtype) for n, e in engines.items()}
    return bufs


def _by_rows(runner: _Runner, table: Columns, engines: dict, keys: list[str],
             values: list[str], where: Any, scope: Mapping[str, Any], vm: str | None,
             blen: int) -> None:
    names = list(engines)
    length = len(next(iter(engines.values())))
    if where is None:
        for lo in range(0, length, blen):
            hi = min(length, lo + blen)
            rows = {n: engines[n].read(lo, hi) for n in names}
            runner.submit(lambda state, rows=rows, lo=lo: state.add(
                [rows[k] for k in keys], rows, None, lo))
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
