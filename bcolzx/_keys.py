"""A carray's keys: NumPy-style indexing (``c[key]``, ``c[key] = value``) as rows read or written.

An int, a slice, a tuple (a row, then its items), a list or array of
positions, a boolean mask or a condition string becomes row positions
(:class:`Keys` is a mixin of :class:`bcolzx.carray`); the rows are read and
written through the engine a chunk at a time, in the order of the chunks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from bcolzx._format import pickles
from bcolzx._values import is_carray
from bcolzx.errors import MaskLengthError

if TYPE_CHECKING:
    from bcolzx._hosts import ArrayHost
else:
    ArrayHost = object

__all__ = ["Keys"]


class Keys(ArrayHost):
    """``__getitem__`` and ``__setitem__`` of a carray, and the row positions of its keys."""

    def _index(self, i) -> int:
        n = len(self)
        key = i = int(i)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(f"index {key} out of range for length {n} (valid: {-n} to {n - 1})")
        return i

    def _take(self, idx: np.ndarray) -> np.ndarray:
        """Rows at integer positions `idx` (already in range), in that order."""
        if self._objects:
            self._require_pickle("reading the values")
        return self._out(self._take_rows(idx))

    def _take_rows(self, idx: np.ndarray) -> np.ndarray:
        """Engine rows at integer positions `idx` (already in range), in that order."""
        out = np.empty((len(idx), *self.shape[1:]), dtype=self.dtype)
        if not len(idx):
            return out
        cl, eng = self.chunklen, self.engine
        order = np.argsort(idx, kind="stable")
        sidx = idx[order]
        if eng.store.gathers:  # object storage: the chunks requested together
            out[order] = eng.take_sorted(sidx)
            return out
        chunks = sidx // cl
        bounds = np.flatnonzero(np.diff(chunks)) + 1
        for group in np.split(np.arange(len(sidx)), bounds):
            rows = sidx[group]
            if len(rows) <= 2:
                for g, r in zip(group, rows):
                    out[order[g]] = eng.read_row(int(r))
                continue
            c = int(chunks[group[0]])
            block = eng.read(c * cl, min((c + 1) * cl, len(self)))
            out[order[group]] = block[rows - c * cl]
        return out

    def _mask(self, key) -> np.ndarray:
        mask = key[:] if is_carray(key) else np.asarray(key)
        if mask.shape != (len(self),):
            raise MaskLengthError(f"boolean mask of shape {mask.shape} for length {len(self)}")
        return mask

    def __getitem__(self, key):
        if self._objects:
            self._require_pickle("reading the values")
            if isinstance(key, tuple):
                if len(key) > 1:
                    raise IndexError(f"too many indices for a one-dimensional object carray: "
                                     f"{key!r}")
                key = key[0] if key else slice(None)
            if isinstance(key, (int, np.integer)):
                return pickles.load_one(self.engine.read_row(self._index(key)))
            return self._out(self._get_rows(key))
        return self._get_rows(key)

    def _get_rows(self, key):
        """``self[key]`` as engine rows (pickles for object dtype)."""
        if isinstance(key, (int, np.integer)):
            if self._texts:  # a str, bytes or the missing value
                return self.engine.read_row(self._index(key))
            if self.ndim == 1:  # NumPy's Python scalar
                return self.engine.read_item(self._index(key))
            return self.engine.read_row(self._index(key))
        if isinstance(key, slice):
            self._sync_threads()
            start, stop, step = key.indices(len(self))
            if step == 1:
                return self.engine.read(start, max(start, stop))
            if step > 0:
                if stop <= start:
                    return np.empty((0, *self.shape[1:]), self.dtype)
                return self.engine.read(start, stop)[::step].copy()
            lo = stop + 1
            if start < lo:
                return np.empty((0, *self.shape[1:]), self.dtype)
            return self.engine.read(lo, start + 1)[::-1][::-step].copy()
        if isinstance(key, tuple):
            if not key:
                return self._get_rows(slice(None))
            first, rest = key[0], key[1:]
            if isinstance(first, (int, np.integer)):
                return np.asarray(self[first])[rest] if rest else self[first]
            return self[first][(slice(None),) + tuple(rest)]
        if isinstance(key, str):
            return self._take_rows(np.flatnonzero(self._condition(key, 3)))
        if isinstance(key, (list, np.ndarray)) or is_carray(key):
            return self._take_rows(self._positions(key))
        raise IndexError(f"unsupported key type {type(key).__name__}: index with an int, a "
                         "slice, a list or array of ints or booleans, or a condition string")

    def _condition(self, expression: str, depth: int = 2) -> np.ndarray:
        """The boolean mask of a string key, evaluated in the user's scope.

        Names are looked up as for :func:`bcolzx.eval`, from the frame that
        indexed this carray (`depth` levels up: ``__getitem__`` and
        ``_get_rows`` are three, ``__setitem__`` two).
        """
        from bcolzx._query.evaluate import mask
        from bcolzx._query.scope import caller_scope

        return mask(expression, caller_scope(None, depth), len(self))

    def _positions(self, key) -> np.ndarray:
        """Integer row positions selected by a slice, a mask or an index array/list.

        A list is a list of indices, as in legacy bcolz: its items are
        converted to integers (``[True, False]`` selects rows 1 and 0,
        ``[1.7]`` row 1); a boolean mask is a NumPy array or a carray.
        """
        n = len(self)
        if isinstance(key, slice):
            return np.arange(n)[key]
        if isinstance(key, list):
            try:
                key = np.array(key, dtype=np.intp) if key else np.empty(0, np.intp)
            except (TypeError, ValueError, OverflowError):
                raise IndexError(f"the list {key!r} cannot be converted to row "
                                 "indices") from None
            if key.ndim != 1:
                raise IndexError(f"a list of indices must be flat, not of shape {key.shape}")
        arr = key[:] if is_carray(key) else np.asarray(key)
        if arr.dtype == np.bool_:
            return np.flatnonzero(self._mask(arr))
        if arr.size == 0:
            return np.empty(0, dtype=np.int64)
        if arr.dtype.kind not in "iu" or arr.ndim != 1:
            raise IndexError("index arrays must be one-dimensional, of integer or boolean "
                             f"type, not {arr.dtype} of shape {arr.shape}")
        # Range checks and the shift of negative indices in int64, never in the key's own
        # dtype (a uint8 key on 300 rows: arr + n would overflow, or wrap around).
        if arr.dtype.kind == "u" and arr.max() >= n:
            raise IndexError(f"index out of range for length {n}")
        idx = arr.astype(np.int64)
        idx[idx < 0] += n
        if idx.min() < 0 or idx.max() >= n:
            raise IndexError(f"index out of range for length {n}")
        return idx

    def __setitem__(self, key, value) -> None:
        self._check_writable()
        self._check_rewritable("rewrite rows of")
        eng = self.engine
        if self._objects:
            self._require_pickle("storing the values")
            if isinstance(key, tuple):
                if len(key) != 1:
                    raise IndexError(f"a one-dimensional object carray takes one index, not "
                                     f"{key!r}")
                key = key[0]
        if isinstance(key, (int, np.integer)):
            eng.write(self._index(key), self._rows(value, 1, single=True))
            return
        if isinstance(key, tuple):
            if len(key) <= 1:  # c[()] = v assigns every row, as NumPy (and c[()] reads them)
                self[key[0] if key else slice(None)] = value
                return
            first, rest = key[0], key[1:]
            if isinstance(first, (int, np.integer)):
                row = np.array(self[first])
                row[rest] = value
                self[first] = row
                return
            pos = self._positions(first if not isinstance(first, slice) else first)
            block = self._take(pos)
            block[(slice(None),) + tuple(rest)] = value
            self._write_positions(pos, block)
            return
        if isinstance(key, str):
            pos = np.flatnonzero(self._condition(key))
            self._write_positions(pos, self._rows(value, len(pos)))
            return
        if isinstance(key, slice) and key.indices(len(self))[2] == 1:
            start, stop, _ = key.indices(len(self))
            if stop > start:
                eng.write(start, self._rows(value, stop - start))
            return
        try:
            pos = self._positions(key)
        except IndexError:
            if isinstance(key, list) or (isinstance(key, np.ndarray) and key.dtype.kind in "iu"):
                # NumPy (and legacy bcolz) check the number of values before the
                # indices: too many or too few values is a ValueError even when an
                # index is also out of range.
                self._rows(value, len(key))
            raise
        self._write_positions(pos, self._rows(value, len(pos)))

    def _write_positions(self, pos: np.ndarray, rows: np.ndarray) -> None:
        """Write `rows` at positions `pos`, chunk by chunk (later repeats win, as NumPy)."""
        if not len(pos):
            return
        cl = self.chunklen
        chunks = pos // cl
        for c in np.unique(chunks):
            c = int(c)
            sel = chunks == c
            lo, hi = c * cl, min((c + 1) * cl, len(self))
            block = self.engine.read(lo, hi)
            block[pos[sel] - lo] = rows[sel]
            self.engine.write(lo, block)
