"""Iterating over a carray: ``iter``, ``where`` and ``wheretrue`` views, blocks and chunks.

As in legacy bcolz, :meth:`~Iteration.iter`, :meth:`~Iteration.where` and
:meth:`~Iteration.wheretrue` return a carray: a view of this one's data
that is also an iterator (so ``next(c.iter())``, ``c.iter(3).iter(5)`` and
``c.wheretrue().sum()`` work).  Each call makes a new view with its own
position, so iterations never disturb each other or the carray they came
from.  :func:`iterblocks` (``bcolzx.iterblocks``) reads a carray or a
ctable in NumPy blocks; ``carray.chunks`` is a :class:`Chunks`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, cast

import numpy as np

from bcolzx._values import is_carray

if TYPE_CHECKING:
    from bcolzx._hosts import ArrayHost
    from bcolzx.carray import carray
else:
    ArrayHost = object

__all__ = ["Chunks", "Iteration", "blocks", "iterblocks"]


class Iteration(ArrayHost):
    """The iteration methods of a carray (a mixin of :class:`bcolzx.carray`)."""

    _cursor: Iterator | None = None  # the position of an iteration, if any
    _is_iterator = False  # made by iter()/where()/wheretrue()

    def _iterating(self, items: Iterator) -> "carray":
        it = self._alias()
        it._cursor, it._is_iterator = items, True
        return it

    def __iter__(self) -> "carray":
        return cast("carray", self) if self._is_iterator else self.iter()

    def __next__(self):
        # next(c) on a plain carray iterates over it, as legacy bcolz did.
        if self._cursor is None:
            self._cursor = self._iter(range(len(self)))
        return next(self._cursor)

    def iter(self, start: int = 0, stop: int | None = None, step: int = 1,
             limit: int | None = None, skip: int = 0) -> "carray":
        """Iterate over rows ``start:stop:step``, skipping `skip`, yielding at most `limit`.

        Items of a 1-D carray come as Python scalars, rows of an N-D one as
        arrays.  A negative `step` iterates backwards (legacy bcolz refused
        it).

        Returns
        -------
        carray
            A view of this carray that is an iterator over those rows.

        Raises
        ------
        ValueError
            If `step` is 0.
        PickleNotAllowedError
            For object dtype without ``allow_pickle``.
        """
        if step == 0:
            raise ValueError("step cannot be 0 in iter()")
        if self._objects:
            self._require_pickle("reading the values")
        rows = range(*slice(start, stop, step).indices(len(self)))[skip:]
        if limit is not None:
            rows = rows[:max(0, limit)]
        return self._iterating(self._iter(rows))

    def _iter(self, rows: range) -> Iterator:
        """The rows at the positions of `rows`, read a chunk's worth at a time."""
        per = max(1, self.chunklen // abs(rows.step))
        for k in range(0, len(rows), per):
            part = rows[k:k + per]
            lo, hi = min(part[0], part[-1]), max(part[0], part[-1]) + 1
            block = self.engine.read(lo, hi)
            block = self._out(block[::part.step] if part.step > 0 else block[::-1][::-part.step])
            yield from (block.tolist() if self.ndim == 1 else block)

    def where(self, boolarr, limit: int | None = None, skip: int = 0) -> "carray":
        """Iterate over the values where `boolarr` (array or carray of this length) is True.

        Returns
        -------
        carray
            A view of this carray that is an iterator over those values.

        Rows of an N-D carray come as arrays (legacy bcolz refused N-D
        carrays here).

        Raises
        ------
        ValueError
            If `boolarr` is not a boolean array, list or carray of this length.
        NotImplementedError
            For a boolean mask of more than one dimension (as legacy bcolz).
        """
        if not is_carray(boolarr):
            # an empty list is an empty mask (NumPy would make it float64)
            boolarr = np.asarray(boolarr, dtype=bool if isinstance(boolarr, list) and
                                 not boolarr else None)
        if boolarr.dtype == np.bool_ and boolarr.ndim > 1:
            raise NotImplementedError(
                f"where() takes a one-dimensional mask of rows, not one of shape "
                f"{boolarr.shape} (legacy bcolz refused N-D where() too): for a selection of "
                "items use c[:][mask[:]]")
        if boolarr.dtype != np.bool_ or boolarr.ndim != 1:
            raise ValueError(f"boolarr must be a one-dimensional boolean array, not "
                             f"{boolarr.dtype} of shape {boolarr.shape}")
        if len(boolarr) != len(self):
            raise ValueError(f"boolarr has {len(boolarr)} values for {len(self)} rows")
        if self._objects:
            self._require_pickle("reading the values")

        def values():
            yielded, left = 0, skip
            for lo in range(0, len(self), self.chunklen):
                hi = min(len(self), lo + self.chunklen)
                hits = np.flatnonzero(np.asarray(boolarr[lo:hi]))
                if left:
                    drop = min(left, len(hits))
                    hits, left = hits[drop:], left - drop
                if limit is not None:
                    hits = hits[: max(0, limit - yielded)]
                if len(hits):
                    rows = self._out(self.engine.read(lo, hi)[hits])
                    yield from (rows.tolist() if self.ndim == 1 else rows)
                    yielded += len(hits)
                if limit is not None and yielded >= limit:
                    return
        return self._iterating(values())

    def wheretrue(self, limit: int | None = None, skip: int = 0) -> "carray":
        """Iterate over the indices of the True values of a boolean carray.

        Returns
        -------
        carray
            A view of this carray that is an iterator over the indices.

        Raises
        ------
        ValueError
            If the carray is not of boolean dtype.
        NotImplementedError
            If it has more than one dimension (as legacy bcolz).
        """
        if self.dtype != np.bool_:
            raise ValueError("wheretrue() needs a carray of boolean dtype")
        if self.ndim > 1:
            raise NotImplementedError(
                "wheretrue() gives the positions of the True items of a one-dimensional "
                f"carray (as legacy bcolz); this one has shape {self.shape}: use "
                "numpy.nonzero(c[:]) for N-D positions")

        def indices():
            seen = yielded = 0
            for lo, block in blocks(cast("carray", self), self.chunklen, 0, len(self)):
                hits = np.flatnonzero(block) + lo
                if seen + len(hits) <= skip:
                    seen += len(hits)
                    continue
                hits = hits[max(0, skip - seen):]
                seen = skip
                for h in hits.tolist():
                    if limit is not None and yielded >= limit:
                        return
                    yield h
                    yielded += 1
        return self._iterating(indices())


class Chunks:
    """Sequence view of the full chunks of a carray as decompressed arrays."""

    def __init__(self, ca: carray):
        self._ca = ca

    def __len__(self) -> int:
        return self._ca.nchunks

    def __getitem__(self, i: int) -> np.ndarray:
        n = len(self)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(f"chunk {i} out of range for {n} chunks")
        cl = self._ca.chunklen
        return self._ca._out(self._ca.engine.read(i * cl, (i + 1) * cl))


def blocks(ca: carray, blen: int, start: int, stop: int):
    ca._sync_threads()
    if ca._objects:
        ca._require_pickle("reading the values")
    for lo in range(start, stop, blen):
        yield lo, ca._out(ca.engine.read(lo, min(stop, lo + blen)))


def iterblocks(cobj, blen: int | None = None, start: int = 0, stop: int | None = None):
    """Iterate over a carray (or ctable) in NumPy blocks of `blen` rows.

    Parameters
    ----------
    cobj : carray or ctable
        The container (a ctable yields structured arrays).
    blen : int, optional
        Rows per block (default: the chunk length; for a ctable, its
        columns' shortest).
    start, stop : int, optional
        Row range.

    Yields
    ------
    numpy.ndarray

    Raises
    ------
    ValueError
        If `blen` is not positive.
    PickleNotAllowedError
        For object dtype (or an object column) without ``allow_pickle``.
    """
    if not is_carray(cobj):  # a ctable: structured blocks
        if blen is None:
            blen = min((c.chunklen for c in cobj.cols.values()), default=1)
        blen = int(blen)
        if blen <= 0:
            raise ValueError(f"blen must be positive, not {blen}")
        start, stop, _ = slice(start, stop).indices(len(cobj))
        for lo in range(start, stop, blen):
            yield cobj[lo:min(stop, lo + blen)]
        return
    blen = cobj.chunklen if blen is None else int(blen)
    if blen <= 0:
        raise ValueError(f"blen must be positive, not {blen}")
    start, stop, _ = slice(start, stop).indices(len(cobj))
    for _, block in blocks(cobj, blen, start, stop):
        yield block
