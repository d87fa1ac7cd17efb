"""Rows of variable-length items: the engine of object-dtype (pickled) datasets.

:class:`VlenArray` is a :class:`~bcolzx._storage.engine.ChunkedArray` whose
rows are byte strings of any length, held in one-dimensional object arrays
(``rows[i]`` is a ``bytes``).  It never looks inside an item: the public
classes turn Python objects into pickles before they reach it and back after
(:mod:`bcolzx._format.pickles`), so the engine can neither pickle nor
unpickle anything.

A chunk is encoded by :mod:`bcolzx._format.vlen` (offsets, then the items)
and compressed as one C-Blosc2 chunk of typesize 1 with the dataset's
codec, then stored, checksummed, like any chunk (docs/format/README.md §2d).
In a legacy bcolz directory a chunk is one item, stored as legacy bcolz did:
its bytes alone in a C-Blosc 1.x chunk file (docs/format/legacy-v1.md).
Sizes in the stores count rows (``rowbytes`` is 1); no special values and no
zone map are ever written or used.
"""

from __future__ import annotations

import threading

import numpy as np

from bcolzx._ext import codec
from bcolzx._format import layout, pickles, vlen
from bcolzx._storage.base import ChunkStore, Special
from bcolzx._storage.engine import ChunkedArray
from bcolzx.errors import CorruptDataError, UnsupportedFormatError

__all__ = ["VlenArray"]


class VlenArray(ChunkedArray):
    """A growable sequence of variable-length items (bytes), in chunks.

    Rows given to and returned by :meth:`append`, :meth:`write` and
    :meth:`read` are 1-D object arrays of ``bytes``; :meth:`read_row`
    returns one ``bytes``.

    Parameters
    ----------
    store : ChunkStore
        A store whose storage has ``vlen`` set.
    nthreads : int
        Threads for compression and decompression.

    Raises
    ------
    ValueError
        If the store does not hold variable-length items.
    CorruptDataError
        If the stored leftover chunk is damaged.
    """

    _vlen_items = True

    def __init__(self, store: ChunkStore, nthreads: int = 1):
        if not store.storage.vlen:
            raise ValueError("VlenArray needs a store of variable-length items")
        # The last chunk decompressed: (chunk, bytes, offsets), for reads of
        # single rows; dropped whenever that chunk is rewritten.
        self._decoded: tuple | None = None
        self._decoded_lock = threading.Lock()
        super().__init__(store, nthreads)

    # -- codecs ------------------------------------------------------------------

    def set_nthreads(self, nthreads: int) -> None:
        """Use `nthreads` threads for compression and decompression from now on.

        Raises
        ------
        ValueError
            If `nthreads` is out of range.
        """
        if nthreads == self.nthreads:
            return
        self.settle()
        self._window = 0  # nothing is handed to pool threads (_hand_off)
        own = self.store.encoder(nthreads)
        if own is None:
            st = self.store.storage
            cp = st.cparams
            own = codec.Compressor(cp.cname, cp.clevel, cp.shuffle, 1, st.blocksize, nthreads,
                                   split=False)
        self._comp = own  # one pipeline: items are bytes (typesize 1), no byte-delta
        self._dec = codec.Decompressor(nthreads)
        self.nthreads = nthreads

    def _hand_off(self) -> bool:
        return False  # chunks are encoded on the appending thread

    def leftover_cbytes(self) -> int:
        """As :meth:`ChunkedArray.leftover_cbytes`, for items (measured once per change)."""
        if not self.nleft or self._leftover_stored:
            return 0
        if self._left_cbytes is None:
            self._left_cbytes = len(self._encode(self._leftover[: self.nleft])) \
                - self._stale_cbytes()
        return self._left_cbytes

    def flush_appends(self) -> None:
        """Object datasets keep no append journal (docs/format §3b): commit."""
        self.flush()

    def _blob(self, rows: np.ndarray) -> bytes:
        """The uncompressed chunk holding the items `rows`."""
        if self._store.native:
            blob = vlen.encode(rows)
        else:  # legacy bcolz: one item per chunk file, as it is
            if len(rows) != 1:  # pragma: no cover - legacy stores have chunklen 1
                raise AssertionError(f"a legacy chunk of {len(rows)} items")
            blob = bytes(rows[0])
            if not blob:
                raise ValueError("an empty item cannot be stored in a legacy bcolz directory")
        if len(blob) > codec.MAX_BUFFERSIZE:
            raise ValueError(f"{len(rows)} items take {len(blob)} bytes, more than a chunk can "
                             f"hold ({codec.MAX_BUFFERSIZE}); use a smaller chunklen")
        return blob

    def _encode(self, rows: np.ndarray):
        return self._comp.compress(np.frombuffer(self._blob(rows), dtype=np.uint8))

    def _encode_full(self, rows: np.ndarray) -> list:
        cl, items = self.chunklen, []
        for k in range(0, len(rows), cl):
            items.append((self.nfull, self._encode(rows[k:k + cl]), self.chunk_bytes))
            self.nfull += 1
        return items

    def _decode(self, entry, chunk: int, nitems: int | None) -> tuple[memoryview, list]:
        """``(bytes, offsets)`` of a stored chunk (`nitems` items, or any number).

        Raises
        ------
        CorruptDataError
            If it cannot be decompressed, its offsets are damaged or its item
            count is not `nitems`.
        """
        where = self._where(chunk)
        if isinstance(entry, Special):
            raise CorruptDataError("a chunk of variable-length items is stored as a constant",
                                   **where)
        nbytes = self._nbytes_of(entry, chunk)
        buf = np.empty(nbytes, dtype=np.uint8)
        try:
            self._dec.decompress(entry, buf)
            if self._store.native:
                offsets = vlen.decode(buf, nitems).tolist()
            else:
                if nitems not in (None, 1):
                    raise CorruptDataError(f"a legacy chunk holds 1 object, not {nitems}")
                offsets = [0, nbytes]
        except CorruptDataError as exc:
            raise self._located(exc, chunk) from None
        return memoryview(buf), offsets

    def _check_full(self, entry, chunk: int) -> None:
        pass  # the item count is checked when the chunk is decoded

    def _decode_into(self, entry, out: np.ndarray, chunk: int, stored_rows: int) -> None:
        buf, offsets = self._decode(entry, chunk, stored_rows)
        for r in range(len(out)):
            out[r] = bytes(buf[offsets[r]:offsets[r + 1]])

    def _items(self, chunk: int) -> tuple[memoryview, list]:
        """``(bytes, offsets)`` of full stored chunk `chunk`, through a one-chunk cache."""
        cached = self._decoded
        if cached is not None and cached[0] == chunk:
            return cached[1], cached[2]
        buf, offsets = self._decode(self._entry(chunk), chunk, self.chunklen)
        with self._decoded_lock:
            self._decoded = (chunk, buf, offsets)
        return buf, offsets

    def _uncache(self, chunk: int) -> None:
        super()._uncache(chunk)
        with self._decoded_lock:
            if self._decoded is not None and self._decoded[0] == chunk:
                self._decoded = None

    def free_cache(self) -> None:
        """Forget the cached chunks."""
        super().free_cache()
        with self._decoded_lock:
            self._decoded = None

    def _load_leftover(self, out: np.ndarray) -> None:
        (entry,) = self.store.get(self.nfull, self.nfull + 1)
        # A crash after an index write but before meta/sizes can leave this
        # chunk holding more items than the metadata counts: keep the first.
        buf, offsets = self._decode(entry, self.nfull, None)
        if len(offsets) - 1 < len(out):
            raise CorruptDataError(f"last chunk holds {len(offsets) - 1} items, expected at "
                                   f"least {len(out)}", **self._where(self.nfull))
        for r in range(len(out)):
            out[r] = bytes(buf[offsets[r]:offsets[r + 1]])
        self._stored_part(entry)

    # -- sizes -------------------------------------------------------------------

    @property
    def nbytes(self) -> int:
        """NumPy's ``nbytes`` of these rows as an object array (8 per row)."""
        return len(self) * layout.VLEN_ROW_NBYTES

    # -- reading -----------------------------------------------------------------

    def read(self, start: int, stop: int, out: np.ndarray | None = None) -> np.ndarray:
        """Items ``start .. stop-1`` into `out` (a new object array by default).

        Raises
        ------
        IndexError
            If the range is not inside the array.
        CorruptDataError, ChecksumError
            If a chunk is damaged.
        """
        if not 0 <= start <= stop <= len(self):
            raise IndexError(f"rows {start}..{stop} outside 0..{len(self)}")
        if out is None:
            out = np.empty(stop - start, dtype=object)
        cl, stored_end = self.chunklen, self.nfull * self.chunklen
        if start < stored_end:
            c0, c1 = start // cl, (min(stop, stored_end) + cl - 1) // cl
            if c1 - c0 == 1:
                decoded = [self._items(c0)]
            else:
                decoded = (self._decode(entry, c, cl)
                           for c, entry in zip(range(c0, c1), self.store.get(c0, c1)))
            for c, (buf, offsets) in zip(range(c0, c1), decoded):
                a, b = max(start, c * cl), min(stop, (c + 1) * cl)
                for row in range(a, b):
                    r = row - c * cl
                    out[row - start] = bytes(buf[offsets[r]:offsets[r + 1]])
        if stop > stored_end:
            lo = max(start, stored_end)
            out[lo - start:] = self._leftover[lo - stored_end:stop - stored_end]
        return out

    def read_row(self, i: int) -> bytes:
        """Item `i`, as bytes.

        Raises
        ------
        IndexError
            If `i` is not a row.
        CorruptDataError, ChecksumError
            If its chunk is damaged.
        """
        if not 0 <= i < len(self):
            raise IndexError(f"row {i} outside 0..{len(self)}")
        c, r = divmod(i, self.chunklen)
        if c >= self.nfull:
            return self._leftover[r]
        buf, offsets = self._items(c)
        return bytes(buf[offsets[r]:offsets[r + 1]])

    def map_chunks(self, fn, batch: int = 64) -> list:
        """``fn(items)`` on every chunk's items (an object array of bytes), in order.

        Raises
        ------
        CorruptDataError, ChecksumError
            If a chunk is damaged.
        """
        cl, results = self.chunklen, []
        for c0 in range(0, self.nfull, batch):
            c1 = min(self.nfull, c0 + batch)
            for c in range(c0, c1):
                results.append(fn(self.read(c * cl, (c + 1) * cl)))
        if self.nleft:
            results.append(fn(self._leftover[:self.nleft]))
        return results

    def append_chunk(self, entry, rows: np.ndarray) -> None:
        """Not for variable-length items (their chunks are encoded here only).

        Raises
        ------
        ValueError
            Always.
        """
        raise ValueError("encoded chunks cannot be appended to a dataset of variable-length "
                         "items")

    def verify(self, progress=None) -> list[CorruptDataError]:
        """Check every stored chunk without trusting any cache, never unpickling.

        Each chunk is read as stored (its checksum checked), decompressed, its
        offsets validated and its item count compared with the metadata; each
        pickle is parsed (not executed) to check that it is complete.

        `progress`, when given, is called after each chunk with the ``nbytes``
        of its rows.

        Returns
        -------
        list of CorruptDataError or UnsupportedFormatError
            The problems found, each naming its file and chunk.
        """
        problems: list = []
        stored = self.nfull + (1 if self.nleft and self._leftover_stored else 0)
        check = pickles.check_item if self._store.storage.vlen == "pickle" else None
        for c in range(stored):
            rows = self.chunklen if c < self.nfull else self.nleft
            try:
                buf, offsets = self._decode(self.store.get_one(c), c, None)
                n = len(offsets) - 1
                if n != self.chunklen if c < self.nfull else n < rows:
                    raise CorruptDataError(f"chunk holds {n} items, the metadata calls for "
                                           f"{rows}", **self._where(c))
                if check is not None:
                    for r in range(rows):
                        try:
                            check(buf[offsets[r]:offsets[r + 1]])
                        except CorruptDataError as exc:
                            raise CorruptDataError(f"row {c * self.chunklen + r}: {exc}",
                                                   **self._where(c)) from None
            except (CorruptDataError, UnsupportedFormatError) as exc:
                problems.append(exc)
            if progress is not None:
                progress(rows * layout.VLEN_ROW_NBYTES)
        return problems
