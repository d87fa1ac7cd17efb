"""Rows of variable-length items: the engine of object, string and bytes datasets.

:class:`VlenArray` is a :class:`~bcolzx._storage.engine.ChunkedArray` whose
rows are items of any length, of one of three kinds (``storage.vlen``):

``"pickle"`` and ``"bytes"``
    Rows held in one-dimensional object arrays of ``bytes``: pickles of
    Python objects, which the public classes make and open
    (:mod:`bcolzx._format.pickles`), so that this engine can neither pickle
    nor unpickle anything; or the bytes of a bytes column themselves.
``"utf8"``
    Rows held in NumPy ``StringDType`` arrays, stored as UTF-8
    (:mod:`bcolzx._format.strings`): chunks are decoded into the output
    array by a kernel, with the GIL released, and have a zone map of
    prefix-bounded strings.

A chunk is encoded by :mod:`bcolzx._format.vlen` (a table locating the items,
then the items) and compressed as one C-Blosc2 chunk of typesize 1 with the
dataset's codec, then stored, checksummed, like any chunk
(docs/format/README.md §2d, docs/format/strings.md).  In a legacy bcolz
directory (pickles only) a chunk is one item, stored as legacy bcolz did: its
bytes alone in a C-Blosc 1.x chunk file (docs/format/legacy-v1.md).  Sizes in
the stores count rows (``rowbytes`` is 1); no special values are ever
written or used.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import numpy as np

from bcolzx import _threads
from bcolzx._ext import codec
from bcolzx._format import layout, pickles, strings, vlen
from bcolzx._storage.base import ChunkStore, Special
from bcolzx._storage.chunkcache import DECODED
from bcolzx._storage.engine import ChunkedArray
from bcolzx._storage.zones import bounds
from bcolzx.errors import CorruptDataError, UnsupportedFormatError

__all__ = ["VlenArray"]


class _Held(np.ndarray):
    """A decoded chunk of variable-length items as the decompressed-chunk cache
    keeps it: its bytes, with where its items lie (``located``), counted in
    :attr:`nbytes` too."""

    located: vlen.Located

    @classmethod
    def of(cls, buf, located: vlen.Located) -> "_Held":
        held = np.frombuffer(buf, dtype=np.uint8).view(cls)
        held.located = located
        return held

    @property
    def nbytes(self) -> int:  # type: ignore[override]
        extra = getattr(self, "located", None)
        if extra is None:
            return super().nbytes
        return super().nbytes + extra.offsets.nbytes + \
            (0 if extra.na is None else extra.na.nbytes)


class VlenArray(ChunkedArray):
    """A growable sequence of variable-length items, in chunks.

    Rows given to and returned by :meth:`append`, :meth:`write` and
    :meth:`read` are 1-D arrays of the dataset's dtype: object arrays of
    ``bytes`` (pickles, bytes) or StringDType arrays (strings);
    :meth:`read_row` returns one item (``bytes``, or a ``str`` or the
    missing value).

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
    _tail_with_chunks = False  # its own _encode_full

    def __init__(self, store: ChunkStore, nthreads: int = 1):
        if not store.storage.vlen:
            raise ValueError("VlenArray needs a store of variable-length items")
        #: The kind of items (``storage.vlen``), the layout of their chunks,
        #: and whether rows may be missing (a StringDType with an na_object).
        self.kind = store.storage.vlen
        self._layout = vlen.LAYOUTS[self.kind]
        self._na_ok = hasattr(store.storage.dtype, "na_object")
        # The last chunk decompressed: (chunk, bytes, located), for reads of
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
        self.nthreads = nthreads
        # Both made on first use, with this count: the compressor at the first
        # write (:attr:`_comp`; readers never need one), the decompressor at
        # the first read (ChunkedArray._dec).
        self._compressor: codec.Compressor | None = None
        self._decoder = None

    @property
    def _comp(self):
        """The compressor of this array's chunks: one pipeline, items are bytes
        (typesize 1), no byte-delta; made at the first write."""
        own = self._compressor
        if own is None:  # two first writers at once make one each: either is right
            own = self.store.encoder(self.nthreads)
            if own is None:
                st = self.store.storage
                cp = st.cparams
                # A byte shuffle of typesize 1 leaves the bytes as they are, but
                # C-Blosc2 still copies every block through it both ways: no
                # shuffle stores the same bytes without the copies (the bit
                # shuffle does change them and is kept).
                shuffle = codec.NOSHUFFLE if cp.shuffle == codec.SHUFFLE else cp.shuffle
                own = codec.Compressor(cp.cname, cp.clevel, shuffle, 1, st.blocksize,
                                       self.nthreads, split=False)
            self._compressor = own
        return own

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
        if self.kind != "pickle":
            blob = strings.encode_rows(rows, self.kind)
        elif self._store.native:
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
        parts = [rows[k:k + cl] for k in range(0, len(rows), cl)]
        like = self._comp
        want_bounds = self._zones.active(self._stored_chunks())
        if len(parts) > 1 and self.nthreads > 1 and isinstance(like, codec.Compressor):
            # Several chunks: compressed on the pool, each thread with its own
            # single-threaded copy of this array's compressor, and their
            # zone-map bounds found there too.
            def encode(part: np.ndarray):
                blob = np.frombuffer(self._blob(part), dtype=np.uint8)
                return _threads.compressor(like).compress(blob), \
                    bounds(part) if want_bounds else None

            done = list(_threads.map_ordered(encode, parts, self.nthreads))
        else:
            done = [(self._encode(part), None) for part in parts]
        for part, (entry, found) in zip(parts, done):
            items.append((self.nfull, entry, self.chunk_bytes))
            self._note(self.nfull, part, found)
            self.nfull += 1
        return items

    def _decompress(self, entry, chunk: int, dec: codec.Decompressor | None = None,
                    scratch: bool = False) -> np.ndarray:
        """The decompressed bytes of a stored chunk, by `dec` (default: this
        array's), into this thread's scratch buffer when `scratch` (valid until
        its next use).

        Raises
        ------
        CorruptDataError
            If it cannot be decompressed.
        """
        if isinstance(entry, Special):
            raise CorruptDataError("a chunk of variable-length items is stored as a constant",
                                   **self._where(chunk))
        nbytes = self._nbytes_of(entry, chunk)
        buf = _threads.buffer(nbytes) if scratch else np.empty(nbytes, dtype=np.uint8)
        try:
            (self._dec if dec is None else dec).decompress(entry, buf)
        except CorruptDataError as exc:
            raise self._located(exc, chunk) from None
        return buf

    def _decode(self, entry, chunk: int, nitems: int | None,
                dec: codec.Decompressor | None = None,
                scratch: bool = False) -> tuple[memoryview, vlen.Located]:
        """``(bytes, located)`` of a stored chunk (`nitems` items, or any number),
        decompressed by `dec` (default: this array's), into this thread's
        scratch buffer when `scratch` (valid until its next use).

        Raises
        ------
        CorruptDataError
            If it cannot be decompressed, its table is damaged or its item
            count is not `nitems`.
        """
        buf = self._decompress(entry, chunk, dec, scratch)
        nbytes = len(buf)
        try:
            if self._store.native:
                located = vlen.locate(buf, nitems, self._layout, self._na_ok)
            else:
                if nitems not in (None, 1):
                    raise CorruptDataError(f"a legacy chunk holds 1 object, not {nitems}")
                located = vlen.Located(np.array([0, nbytes], dtype=np.int64), None)
        except CorruptDataError as exc:
            raise self._located(exc, chunk) from None
        return memoryview(buf), located

    def _fill(self, buf: memoryview, located: vlen.Located, out: np.ndarray, first: int,
              chunk: int) -> None:
        """Items ``first .. first + len(out) - 1`` of a decoded chunk into `out`.

        Raises
        ------
        CorruptDataError
            If a string is not well-formed UTF-8.
        """
        if self.kind == "utf8":
            try:
                strings.pack_rows(buf, located, out, first)
            except CorruptDataError as exc:
                raise self._located(exc, chunk) from None
            return
        offsets = located.offsets[first:first + len(out) + 1].tolist()
        for r in range(len(out)):
            out[r] = bytes(buf[offsets[r]:offsets[r + 1]])

    def _item(self, buf: memoryview, located: vlen.Located, r: int, chunk: int):
        """Item `r` of a decoded chunk: bytes, or (strings) a str or the missing value."""
        a, b = int(located.offsets[r]), int(located.offsets[r + 1])
        if self.kind != "utf8":
            return bytes(buf[a:b])
        if located.na is not None and located.na[r]:
            return self.dtype.na_object
        try:
            return str(buf[a:b], "utf-8")
        except UnicodeDecodeError:
            raise CorruptDataError(f"row {r} of a chunk of strings is not well-formed UTF-8",
                                   **self._where(chunk)) from None

    def _check_full(self, entry, chunk: int) -> None:
        pass  # the item count is checked when the chunk is decoded

    def _decode_into(self, entry, out: np.ndarray, chunk: int, stored_rows: int) -> None:
        buf, located = self._decode(entry, chunk, stored_rows)
        self._fill(buf, located, out, 0, chunk)

    def decode_chunk(self, entry, chunk: int, out: np.ndarray) -> None:
        """Decode `entry` (from :meth:`entries`), full chunk number `chunk`, into
        `out` (``chunklen`` rows of the dtype), with the calling thread's
        decompressor and scratch buffer: safe on any thread of the pool.

        Raises
        ------
        CorruptDataError
            If the chunk is damaged or does not hold ``chunklen`` items.
        """
        buf, located = self._decode(entry, chunk, self.chunklen, _threads.decompressor(),
                                    scratch=True)
        self._fill(buf, located, out, 0, chunk)

    def decode_items(self, entry, chunk: int) -> tuple[np.ndarray, vlen.Located]:
        """The decompressed bytes of full chunk `chunk` (`entry`, from
        :meth:`entries`) and where its items lie, in a new buffer, with the
        calling thread's decompressor: safe on any thread of the pool.  Each
        string is checked to be well-formed UTF-8, as :meth:`decode_chunk`
        checks it, but none is built.

        Raises
        ------
        CorruptDataError
            If the chunk is damaged, does not hold ``chunklen`` items, or a
            string is not well-formed UTF-8.
        """
        buf, located = self._decode(entry, chunk, self.chunklen, _threads.decompressor())
        if self.kind == "utf8":
            try:
                strings.check_rows(buf, located)
            except CorruptDataError as exc:
                raise self._located(exc, chunk) from None
        return np.frombuffer(buf, dtype=np.uint8), located

    def _items(self, chunk: int) -> tuple[memoryview, vlen.Located]:
        """``(bytes, located)`` of full stored chunk `chunk`: the last one
        decoded, or a chunk read before kept by the process-wide
        decompressed-chunk cache (as the fixed-size engine's chunks: admitted
        on its second read, dropped by every write of it), or decoded now."""
        cached = self._decoded
        if cached is not None and cached[0] == chunk:
            return cached[1], cached[2]
        held = DECODED.get(self._owner, chunk)
        if held is not None:
            buf, located = memoryview(held), held.located
        else:
            epoch = DECODED.epoch(self._owner)
            buf, located = self._decode(self._entry(chunk), chunk, self.chunklen)
            if DECODED.hot(self._owner, chunk):
                DECODED.put(self._owner, chunk, _Held.of(buf, located), epoch, own=True)
        with self._decoded_lock:
            self._decoded = (chunk, buf, located)
        return buf, located

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
        buf, located = self._decode(entry, self.nfull, None)
        if len(located.offsets) - 1 < len(out):
            raise CorruptDataError(f"last chunk holds {len(located.offsets) - 1} items, "
                                   f"expected at least {len(out)}", **self._where(self.nfull))
        self._fill(buf, located, out, 0, self.nfull)
        self._stored_part(entry)

    # -- sizes -------------------------------------------------------------------

    @property
    def nbytes(self) -> int:
        """NumPy's ``nbytes`` of these rows as an object array (8 per row)."""
        return len(self) * layout.VLEN_ROW_NBYTES

    # -- reading -----------------------------------------------------------------

    def read(self, start: int, stop: int, out: np.ndarray | None = None) -> np.ndarray:
        """Items ``start .. stop-1`` into `out` (a new array of the dtype by default).

        One chunk goes through the one-chunk cache; more are decoded on the
        pool's threads, each straight into its part of `out`.

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
            out = np.empty(stop - start, dtype=self.dtype)
        cl, stored_end = self.chunklen, self.nfull * self.chunklen
        if start < stored_end:
            c0, c1 = start // cl, (min(stop, stored_end) + cl - 1) // cl

            def one(job) -> None:
                c, entry = job
                a, b = max(start, c * cl), min(stop, (c + 1) * cl)
                if entry is None:
                    buf, located = self._items(c)
                else:
                    buf, located = self._decode(entry, c, cl, _threads.decompressor(),
                                                scratch=True)
                self._fill(buf, located, out[a - start:b - start], a - c * cl, c)

            if c1 - c0 == 1:
                one((c0, None))
            else:
                jobs = zip(range(c0, c1), self.store.get(c0, c1))
                for _ in _threads.map_ordered(one, jobs, self.nthreads):
                    pass
        if stop > stored_end:
            lo = max(start, stored_end)
            out[lo - start:] = self._leftover[lo - stored_end:stop - stored_end]
        return out

    def string_matcher(self, start: int, stop: int, op: str, needle: bytes,
                       na_result: bool) -> Callable[[], np.ndarray]:
        """Whether each of rows ``start .. stop-1`` of strings passes a test
        against the UTF-8 string `needle` (``row <op> needle`` for the
        comparisons, ``op(row, needle)`` for ``startswith``, ``endswith`` and
        ``contains``; a missing row gives `na_result`), computed from the
        chunks' bytes without building strings
        (:func:`bcolzx._format.strings.match_rows`).

        The stored chunks are read here, on the calling thread, as
        :meth:`read` reads them; the function returned decompresses and
        tests them, with its own thread's decompressor and scratch buffer:
        safe to call on any thread of the pool, once.

        Returns
        -------
        callable
            Taking nothing, returning ``stop - start`` booleans.

        Raises
        ------
        IndexError
            If the range is not inside the array.
        ValueError
            If the array does not hold strings, or for an unknown `op`.
        CorruptDataError, ChecksumError
            If a chunk is damaged (when read here, or when the function runs).
        """
        if self.kind != "utf8":
            raise ValueError(f"rows of {self.kind} are not strings")
        if not 0 <= start <= stop <= len(self):
            raise IndexError(f"rows {start}..{stop} outside 0..{len(self)}")
        cl, stored_end = self.chunklen, self.nfull * self.chunklen
        jobs: list = []
        if start < stored_end:
            c0, c1 = start // cl, (min(stop, stored_end) + cl - 1) // cl
            entries = [self._entry(c0)] if c1 - c0 == 1 else self.store.get(c0, c1)
            jobs = list(zip(range(c0, c1), entries))
        lo = max(start, stored_end)
        tail = None
        if stop > lo and self._left_buf is None and self._left_to_load:
            # The last rows, not decoded yet: tested in their stored chunk.
            jobs.append((self.nfull, self.store.get(self.nfull, self.nfull + 1)[0]))
        elif stop > lo:  # rows in memory: tested in a chunk made of them
            tail = strings.encode_rows(self._leftover[lo - stored_end:stop - stored_end],
                                       self.kind)

        def run() -> np.ndarray:
            out = np.empty(stop - start, dtype=np.bool_)
            for c, entry in jobs:
                a, b = max(start, c * cl), min(stop, (c + 1) * cl)
                buf = self._decompress(entry, c, _threads.decompressor(), scratch=True)
                try:
                    strings.match_rows(buf, cl if c < self.nfull else None, self._na_ok, op,
                                       needle, na_result, out[a - start:b - start], a - c * cl)
                except CorruptDataError as exc:
                    raise self._located(exc, c) from None
            if tail is not None:
                strings.match_rows(tail, stop - lo, self._na_ok, op, needle, na_result,
                                   out[lo - start:], 0)
            return out

        return run

    def read_row(self, i: int):
        """Item `i`: bytes, or (strings) a str or the missing value.

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
        buf, located = self._items(c)
        return self._item(buf, located, r, c)

    def map_chunks(self, fn, batch: int = 64) -> list:
        """``fn(items)`` on every chunk's items (an array of the dtype), in order.

        Raises
        ------
        CorruptDataError, ChecksumError
            If a chunk is damaged.
        """
        cl, results = self.chunklen, []
        for c in range(self.nfull):
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
        table validated and its item count compared with the metadata; each
        pickle is parsed (not executed) to check that it is complete, each
        string checked to be UTF-8 and within its chunk's zone-map bounds.

        `progress`, when given, is called after each chunk with the ``nbytes``
        of its rows.

        Returns
        -------
        list of CorruptDataError or UnsupportedFormatError
            The problems found, each naming its file and chunk.
        """
        problems: list = []
        stats = None
        if self.kind == "utf8":
            try:
                stats = self.chunk_stats()
            except CorruptDataError as exc:
                problems.append(exc)
        stored = self.nfull + (1 if self.nleft and self._leftover_stored else 0)
        check = pickles.check_item if self.kind == "pickle" else None
        for c in range(stored):
            rows = self.chunklen if c < self.nfull else self.nleft
            try:
                buf, located = self._decode(self.store.get_one(c), c, None)
                n = len(located.offsets) - 1
                if n != self.chunklen if c < self.nfull else n < rows:
                    raise CorruptDataError(f"chunk holds {n} items, the metadata calls for "
                                           f"{rows}", **self._where(c))
                if check is not None:
                    offsets = located.offsets.tolist()
                    for r in range(rows):
                        try:
                            check(buf[offsets[r]:offsets[r + 1]])
                        except CorruptDataError as exc:
                            raise CorruptDataError(f"row {c * self.chunklen + r}: {exc}",
                                                   **self._where(c)) from None
                if self.kind == "utf8":
                    values = np.empty(rows, dtype=self.dtype)
                    self._fill(buf, located, values, 0, c)  # UTF-8 checked
                    if stats is not None and c < len(stats) and rows:
                        self._check_bounds(values, stats[c], c)
            except (CorruptDataError, UnsupportedFormatError) as exc:
                problems.append(exc)
            if progress is not None:
                progress(rows * layout.VLEN_ROW_NBYTES)
        return problems

    def _check_bounds(self, values: np.ndarray, stat, chunk: int) -> None:
        """Raise CorruptDataError unless zone-map entry `stat` bounds `values`."""
        lo, hi, na = strings.exact_bounds(values)
        zlo, zhi, zna = stat
        if (na and not zna) or (lo is not None and (zlo is None or zhi is None or
                                                    not zlo <= lo or not hi <= zhi)):
            raise CorruptDataError(f"zone map bounds ({zlo!r}, {zhi!r}, na={zna}) do not "
                                   f"cover the chunk's strings ({lo!r}, {hi!r}, na={na})",
                                   **self._where(chunk))
