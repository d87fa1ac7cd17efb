"""Reductions over a chunked column: NumPy's results, chunk by chunk, memory flat.

Each reduction is a *partial* computed on every chunk (on the pool's threads,
while the chunk is in cache: :meth:`ChunkReader.map_chunks`) or on every
block of rows a ``where=`` condition keeps, then the partials are *merged*
in chunk order:

* ``sum``, ``prod``, ``min``, ``max``, ``any``, ``all``, ``count`` and their
  ``nan`` forms: the same NumPy reduction of the partials (so the result
  dtype, NaN/NaT propagation and integer wrap-around are NumPy's);
* ``mean``: a sum in NumPy's accumulator dtype divided by the count;
* ``var``/``std``: per chunk the count, mean and sum of squared deviations
  (two passes over a chunk in cache: stable), merged with Chan's formula,
  so the whole column is read once;
* ``argmin``/``argmax``: per chunk the first extreme and its position; the
  first chunk holding the overall extreme wins, as NumPy's first index.

An empty selection gives what NumPy gives for an empty array (an error for
``min``, NaN and a warning for ``mean``...).  ``min``/``max`` of a 1-D column
without a condition read the zone maps first: a full chunk whose bounds are
exact (``engine.exact_chunks()``) is answered from them, and only chunks that
could hold a better value and whose bounds are not exact are read.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from bcolzx._analytics import Columns, selection

__all__ = ["OPS", "reduce_column"]


@dataclass(frozen=True)
class _Op:
    """A reduction: its NumPy function and how partials are made and merged."""

    name: str
    numpy: Callable[..., Any]
    family: str  # "fold", "mean", "var", "arg", "count"
    nan: bool = False
    takes_dtype: bool = False
    takes_ddof: bool = False


OPS: dict[str, _Op] = {op.name: op for op in (
    _Op("sum", np.sum, "fold", takes_dtype=True),
    _Op("nansum", np.nansum, "fold", nan=True, takes_dtype=True),
    _Op("prod", np.prod, "fold", takes_dtype=True),
    _Op("nanprod", np.nanprod, "fold", nan=True, takes_dtype=True),
    _Op("min", np.min, "fold"),
    _Op("max", np.max, "fold"),
    _Op("nanmin", np.nanmin, "fold", nan=True),
    _Op("nanmax", np.nanmax, "fold", nan=True),
    _Op("any", np.any, "fold"),
    _Op("all", np.all, "fold"),
    _Op("count", lambda x, axis=None: _np_count(x, axis), "count"),
    _Op("mean", np.mean, "mean", takes_dtype=True),
    _Op("nanmean", np.nanmean, "mean", nan=True, takes_dtype=True),
    _Op("var", np.var, "var", takes_dtype=True, takes_ddof=True),
    _Op("nanvar", np.nanvar, "var", nan=True, takes_dtype=True, takes_ddof=True),
    _Op("std", np.std, "var", takes_dtype=True, takes_ddof=True),
    _Op("nanstd", np.nanstd, "var", nan=True, takes_dtype=True, takes_ddof=True),
    _Op("argmin", np.argmin, "arg"),
    _Op("argmax", np.argmax, "arg"),
    _Op("nanargmin", np.nanargmin, "arg", nan=True),
    _Op("nanargmax", np.nanargmax, "arg", nan=True),
)}

#: How the folds merge their partials (the NumPy reduction of the partials).
_MERGE = {"sum": np.sum, "nansum": np.sum, "prod": np.prod, "nanprod": np.prod,
          "min": np.min, "max": np.max, "nanmin": np.nanmin, "nanmax": np.nanmax,
          "any": np.any, "all": np.all}


def _missing(x: np.ndarray) -> np.ndarray | None:
    """Where `x` is NaN (NaT); None for dtypes that have none."""
    if x.dtype.kind in "fc":
        return np.isnan(x)
    if x.dtype.kind in "mM":
        return np.isnat(x)
    return None


def _np_count(x: np.ndarray, axis: Any = None) -> Any:
    """Values of `x` that are not NaN/NaT over `axis` (pandas' ``count``)."""
    return _count(np.asarray(x), _normalize_axis(axis, np.ndim(x)))


def _count(x: np.ndarray, axes: tuple) -> Any:
    """Values of `x` that are not NaN/NaT, over `axes` (pandas' ``count``)."""
    miss = _missing(x)
    if miss is None:
        n = int(np.prod([x.shape[a] for a in axes], dtype=np.int64))
        shape = tuple(s for i, s in enumerate(x.shape) if i not in axes)
        return np.full(shape, n, dtype=np.intp) if shape else np.intp(n)
    return np.sum(~miss, axis=axes, dtype=np.intp)


def _ufunc_dtype(dtype: np.dtype) -> np.dtype | None:
    """`dtype` as a ufunc's ``dtype=`` (None for datetimes and timedeltas, whose
    unit a ufunc's dtype cannot carry: NumPy keeps the input's)."""
    return None if dtype.kind in "mM" else dtype


def _normalize_axis(axis: Any, ndim: int) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(ndim))
    axes = axis if isinstance(axis, tuple) else (axis,)
    out = []
    for a in axes:
        if isinstance(a, bool) or not isinstance(a, (int, np.integer)):
            raise TypeError(f"axis must be None, an int or a tuple of ints, not {axis!r}")
        if not -ndim <= a < ndim:
            raise np.exceptions.AxisError(int(a), ndim)
        out.append(int(a) % ndim)
    if len(set(out)) != len(out):
        raise ValueError(f"repeated axis in {axis!r}")
    return tuple(sorted(out))


def _kwargs(op: _Op, dtype: Any, ddof: Any) -> dict:
    kw: dict = {}
    if op.takes_dtype and dtype is not None:
        kw["dtype"] = dtype
    if op.takes_ddof:
        kw["ddof"] = ddof
    return kw


class _Reducer:
    """One reduction of one column: the partial of a block, the merge of them."""

    def __init__(self, op: _Op, dtype: np.dtype, rowshape: tuple, axis: Any,
                 out_dtype: Any, ddof: Any):
        self.op = op
        self.dtype = np.dtype(dtype)
        self.ndim = 1 + len(rowshape)
        self.rowshape = rowshape
        self.items_per_row = int(np.prod(rowshape, dtype=np.int64))
        self.axis = axis
        self.axes = _normalize_axis(axis, self.ndim)
        if op.family == "arg" and axis is not None and self.axes != (0,):
            if 0 in self.axes or isinstance(axis, tuple):
                raise ValueError(f"{op.name} takes axis=None or one axis")
        self.kw = _kwargs(op, out_dtype, ddof)
        self.ddof = ddof
        # NumPy's result dtype, and its errors for dtypes it cannot reduce,
        # from two rows of zeros (before anything is read).
        probe = np.zeros((2, *rowshape), dtype=dtype)
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            sample = np.asarray(op.numpy(probe, axis=axis, **self.kw))
        self.result_dtype = sample.dtype
        self.shift: Any = 0
        #: Whether blocks reduce to per-row results (axis 0 not reduced).
        self.rowwise = 0 not in self.axes
        if op.family in ("mean", "var"):
            user = self.kw.get("dtype")
            kind = np.dtype(dtype).kind
            if user is not None:
                self.acc = np.dtype(user)
            elif kind in "biu":
                self.acc = np.dtype(np.float64)
            elif np.dtype(dtype) == np.float16:
                self.acc = np.dtype(np.float32)
            else:
                self.acc = np.dtype(dtype)
            if op.family == "var":  # deviations in double precision at least
                self.acc = np.result_type(self.acc, np.float64)

    # -- partials ----------------------------------------------------------------

    def partial(self, x: np.ndarray, start: Any) -> Any:
        """The partial of rows `x` (valid only during the call: the result
        never refers to it); `start` is its first row number (an int) or the
        row number of each row (an array).

        Called on pool threads, it never touches the process's warning
        filters (``warnings.catch_warnings`` is not thread-safe: threads
        entering and leaving it at once can leave a filter behind for good);
        the caller silences RuntimeWarnings around all the partials, once, on
        its own thread (:func:`_quietly`)."""
        op, axes = self.op, self.axes
        if self.rowwise:
            return np.array(self._rowwise(x))
        if op.family == "fold":
            return np.array(op.numpy(x, axis=axes, **self.kw))
        if op.family == "count":
            return _count(x, axes)
        if op.family == "mean":
            return self._moments(x, with_m2=False)
        if op.family == "var":
            return self._moments(x, with_m2=True)
        return self._arg(x, start)

    def _rowwise(self, x: np.ndarray) -> Any:
        if self.op.family == "count":
            return _count(x, self.axes)
        axis = self.axis if self.op.family == "arg" else self.axes
        return self.op.numpy(x, axis=axis, **self.kw)

    def _moments(self, x: np.ndarray, with_m2: bool) -> tuple:
        axes, acc = self.axes, self.acc
        # NumPy's nan* functions skip NaN only in floats (not NaT).
        miss = _missing(x) if self.op.nan and x.dtype.kind in "fc" else None
        if miss is not None and miss.any():
            keep = ~miss
            n = np.sum(keep, axis=axes, dtype=np.int64)
            s = np.sum(np.where(keep, x, 0), axis=axes, dtype=_ufunc_dtype(acc))
        else:
            keep = None
            shape = tuple(d for i, d in enumerate(x.shape) if i not in axes)
            n = np.full(shape, np.prod([x.shape[a] for a in axes], dtype=np.int64),
                        dtype=np.int64)
            s = np.sum(x, axis=axes, dtype=_ufunc_dtype(acc))
        if not with_m2:
            return n, s
        # About the shift (a value of the data): deviations and their mean
        # keep their precision when the values sit far from zero.
        y = np.asarray(x, dtype=acc) - self.shift
        s = np.sum(y if keep is None else np.where(keep, y, 0), axis=axes)
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = np.true_divide(s, np.maximum(n, 1))
        dev = y - np.expand_dims(mean, axes)
        sq = (dev * dev.conj()).real if dev.dtype.kind == "c" else dev * dev
        if keep is not None:
            sq = np.where(keep, sq, 0)
        return n, mean, np.sum(sq, axis=axes)

    def set_shift(self, sample: np.ndarray) -> None:
        """Take a finite value of `sample` (rows of the data) as the shift of the
        variances' partials (0 when it has none)."""
        values = np.asarray(sample).reshape(-1)
        if values.dtype.kind in "fc":
            values = values[np.isfinite(values)]
        self.shift = np.asarray(values[0] if len(values) else 0, dtype=self.acc)[()] \
            if self.op.family == "var" else 0

    def _arg(self, x: np.ndarray, start: Any) -> tuple:
        flat = self.axis is None
        y = x.reshape(-1) if flat else x
        if self.op.nan and y.dtype.kind in "fc":  # NaT is not skipped (as NumPy)
            best = (np.fmin if self.op.name == "nanargmin" else np.fmax).reduce(y, axis=0)
            hit = y == best
            local = np.argmax(hit, axis=0)  # all NaN: best is NaN, ignored by the merge
        else:
            local = self.op.numpy(y, axis=0)
            best = np.take_along_axis(y, np.expand_dims(local, 0), 0)[0] if not flat \
                else y[local]
        if flat:
            row, within = divmod(int(local), self.items_per_row)
            first = start + row if isinstance(start, int) else int(start[row])
            return np.array(best), np.int64(first * self.items_per_row + within)
        rows = np.asarray(local) + start if isinstance(start, int) else np.asarray(start)[local]
        return np.array(best), np.asarray(rows, dtype=np.int64)

    # -- merging -----------------------------------------------------------------

    def empty(self) -> Any:
        """NumPy's own result for no rows (or its error)."""
        return self.op.numpy(np.empty((0, *self.rowshape), self.dtype), axis=self.axis,
                             **self.kw)

    def merge(self, parts: list) -> Any:
        op = self.op
        if self.rowwise:
            return np.concatenate([np.atleast_1d(p) for p in parts])
        if op.family == "fold":
            stack = np.stack(parts)
            return self._scalar(_MERGE[op.name](stack, axis=0, **(
                {"dtype": _ufunc_dtype(self.result_dtype)} if op.takes_dtype else {})))
        if op.family == "count":
            return self._scalar(np.sum(np.stack(parts), axis=0, dtype=np.intp))
        if op.family == "mean":
            n = np.sum(np.stack([p[0] for p in parts]), axis=0)
            s = np.sum(np.stack([p[1] for p in parts]), axis=0, dtype=_ufunc_dtype(self.acc))
            if np.any(n == 0):
                warnings.warn("Mean of empty slice", RuntimeWarning, stacklevel=4)
            with np.errstate(invalid="ignore", divide="ignore"):
                out = np.true_divide(s, n)
            return self._scalar(np.asarray(out).astype(self.result_dtype))
        if op.family == "var":
            return self._var(parts)
        return self._arg_merge(parts)

    def _var(self, parts: list) -> Any:
        ns = np.stack([p[0] for p in parts]).astype(np.float64)
        means = np.stack([p[1] for p in parts])
        m2s = np.stack([p[2] for p in parts])
        n = ns.sum(axis=0)
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = (ns * means).sum(axis=0) / n  # about the shift: only deviations matter
            dev = means - mean
            sq = (dev * dev.conj()).real if dev.dtype.kind == "c" else dev * dev
            m2 = m2s.sum(axis=0) + (np.where(ns > 0, ns * sq, 0)).sum(axis=0)
            dof = np.maximum(n - self.ddof, 0)
            if np.any(dof <= 0):
                warnings.warn("Degrees of freedom <= 0 for slice", RuntimeWarning,
                              stacklevel=4)
            var = m2 / dof
        out = np.sqrt(var) if self.op.name.endswith("std") else var
        return self._scalar(np.asarray(out).astype(self.result_dtype))

    def _arg_merge(self, parts: list) -> Any:
        values = np.stack([p[0] for p in parts])
        where = np.stack([p[1] for p in parts])
        k = self.op.numpy(values, axis=0)  # NumPy's choice among the blocks' extremes
        if self.axis is None:
            return np.intp(where[int(k)])
        return np.take_along_axis(where, np.expand_dims(k, 0), 0)[0].astype(np.intp)

    def _scalar(self, value: Any) -> Any:
        arr = np.asarray(value)
        return arr[()] if arr.ndim == 0 else arr


#: dtype kinds the chunked reductions handle (not strings, bytes or objects).
_REDUCIBLE = "biufcmM"


def reduce_column(column: Any, name: str, *, axis: Any = None, dtype: Any = None,
                  ddof: Any = 0, where: Any = None, table: Columns | None = None,
                  column_name: str = selection.SELF, scope: Mapping[str, Any] | None = None,
                  vm: str | None = None) -> Any:
    """Reduction `name` (a key of :data:`OPS`) of a carray, NumPy's result.

    Parameters
    ----------
    column : carray
        The column (its ``engine`` is read).
    name : str
        The reduction.
    axis, dtype, ddof
        As NumPy's function of that name (``dtype`` for sums, means and
        variances, ``ddof`` for variances).
    where : str or boolean array-like, optional
        Only the rows where this holds (see :mod:`~bcolzx._analytics.selection`).
    table : mapping, optional
        The columns a condition names (default ``{SELF: column}``).
    column_name : str
        The column's name in `table` (rows the condition read are reused).
    scope : mapping, optional
        Where other names of the condition get their values.
    vm : str, optional
        The condition's virtual machine.

    Returns
    -------
    NumPy scalar or array

    Raises
    ------
    ValueError
        For an unknown reduction, an empty selection where NumPy raises
        (``min`` of nothing), a bad `axis` or a bad condition.
    TypeError
        For a dtype NumPy cannot reduce so (NumPy's own error).
    """
    try:
        op = OPS[name]
    except KeyError:
        raise ValueError(f"unknown reduction {name!r}; known: {', '.join(OPS)}") from None
    engine = column.engine
    if engine.dtype.kind not in _REDUCIBLE:
        raise TypeError(f"{name}() of a {engine.dtype} column: bcolzx reduces numeric, "
                        f"boolean and datetime columns chunk by chunk; for strings read "
                        f"them first (np.{name.removeprefix('nan')}(c[:]))")
    red = _Reducer(op, engine.dtype, tuple(engine.rowshape), axis, dtype, ddof)
    if where is None:
        if op.name in _ZONED and engine.rowshape == () and red.axes == (0,):
            found = _from_zones(engine, op)
            if found is not None:
                return found
        if op.family == "var":
            red.set_shift(engine.read(0, min(1, len(engine))))
        with _quietly():
            parts = _chunk_partials(engine, red)
    else:
        table = {selection.SELF: column} if table is None else table
        parts = []
        for lo, pos, have in selection.blocks(where, table, scope or {}, vm):
            rows = selection.values_at(column, lo, pos, have, column_name)
            if not parts and op.family == "var":
                red.set_shift(rows[:1])
            with _quietly():
                parts.append(red.partial(rows, pos))
    if not parts:
        return red.empty()
    return red.merge(parts)


@contextlib.contextmanager
def _quietly():
    """NumPy's RuntimeWarnings of partials (an all-NaN chunk's nanmax, say)
    silenced: entered on the calling thread only, around every pool task of
    one reduction, so that no two threads enter and leave the process-wide
    warning filters at once."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


def _chunk_partials(engine: Any, red: _Reducer) -> list:
    """The partial of every chunk (the leftover last), chunk-parallel."""
    cl = engine.chunklen
    starts = iter(range(0, len(engine) + cl, cl))

    if red.op.family == "arg" and not red.rowwise:  # positions from the chunk's first row
        out = []
        results = engine.map_chunks(lambda rows: red.partial(rows, 0))
        for part, start in zip(results, starts):
            out.append(_shift(part, start, red))
        return out
    return engine.map_chunks(lambda rows: red.partial(rows, 0))


def _shift(part: tuple, start: int, red: _Reducer) -> tuple:
    value, where = part
    return value, where + (start * red.items_per_row if red.axis is None else start)


# -- min and max from the zone maps ------------------------------------------------------

_ZONED = {"min", "max", "nanmin", "nanmax"}


def _from_zones(engine: Any, op: _Op) -> Any:
    """``min``/``max`` (``nanmin``/``nanmax``) of a 1-D column from its zone map,
    reading only chunks that may hold a better value and whose bounds are
    not exact; None when the column has no zone map."""
    stats = engine.chunk_stats()
    if stats is None or not len(stats):
        return None
    exact = engine.exact_chunks()
    if exact is None:
        exact = np.zeros(len(stats), dtype=bool)
    high = op.name.endswith("max")
    pick = np.fmax if high else np.fmin
    nan_kind = engine.dtype.kind in "fcmM"
    cl = engine.chunklen

    def chunk(c: int) -> np.ndarray:
        return engine.read(c * cl, (c + 1) * cl)

    leftover = engine.leftover
    if not op.nan and nan_kind:
        # NaN/NaT wins: an exact chunk flagged, else a flagged chunk that holds one.
        if _missing(leftover) is not None and _missing(leftover).any():
            return _nan_of(leftover)
        flagged = np.flatnonzero(stats["nan"])
        for c in sorted(flagged, key=lambda c: not exact[c]):
            rows = chunk(int(c)) if not exact[c] else None
            if rows is None or _missing(rows).any():
                return _nan_of(leftover if rows is None else rows, engine.dtype)
    bound = stats["max" if high else "min"]
    best = None
    if len(leftover):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            best = pick.reduce(leftover)
    order = np.argsort(bound, kind="stable")  # NaN (all-NaN chunks) sort last
    present = order[~_isnan_any(bound[order])]
    if high:
        present = present[::-1]
    for c in present:
        c = int(c)
        if best is not None and not _isnan_any(np.asarray(best)) and \
                not (bound[c] > best if high else bound[c] < best):
            break
        if exact[c]:
            value = bound[c]
        else:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                value = pick.reduce(chunk(c))
        best = value if best is None else pick(best, value)
        if exact[c]:
            break
    if best is None or _isnan_any(np.asarray(best)):
        # Every value NaN: NumPy's own answer (and warning) for all-NaN data.
        probe = np.array([np.nan if engine.dtype.kind in "fc" else "NaT"], engine.dtype)
        return op.numpy(probe)
    return engine.dtype.type(best) if engine.dtype.kind not in "mM" else \
        np.asarray(best, engine.dtype)[()]


def _isnan_any(values: np.ndarray) -> Any:
    miss = _missing(np.asarray(values))
    return np.zeros(np.shape(values), bool) if miss is None else miss


def _nan_of(rows: np.ndarray, dtype: np.dtype | None = None) -> Any:
    dtype = rows.dtype if dtype is None else dtype
    return np.array(np.nan if dtype.kind in "fc" else "NaT", dtype)[()]
