"""Rows over chunks: the leftover, chunk encoding, reads and writes by row range.

:class:`ChunkedArray` is the one code path between the public containers and
a :class:`~bcolzx._storage.base.ChunkStore`.  Full chunks live in the store;
the partial last chunk (the *leftover*) lives in memory and is stored as a
short chunk on :meth:`flush`.
"""

from __future__ import annotations

import atexit
import os
import threading
import warnings
import weakref
from collections import OrderedDict, deque
from concurrent.futures import wait
from math import prod

import numpy as np

from bcolzx._ext import codec
from bcolzx._ext.special import (SPECIAL_NAN, SPECIAL_VALUE, SPECIAL_ZERO, fill_special,
                                 special_value)
from bcolzx._format import layout
from bcolzx._format import zonemap
from bcolzx._query.zonemap import bounds_of
from bcolzx._format.meta import Sizes
from bcolzx._format.superchunk import SPECIAL_CBYTES
from bcolzx import _threads as parallel
from bcolzx._storage import writer
from bcolzx._storage.base import ChunkStore, Special
from bcolzx.errors import CorruptDataError, ReadOnlyError, UnsupportedFormatError

_SPECIAL_IN_INDEX = (SPECIAL_ZERO, SPECIAL_NAN)
#: Compressed bytes of verified stored chunks kept for small reads.  A chunk
#: compresses to a few KiB to 1 MiB, so this keeps the most recently read
#: 32 to thousands of chunks; random single items then cost one block.
CACHE_BYTES = 32 << 20
#: Uncompressed bytes of the chunks a large append encodes before storing them
#: (on disk: one group is written while the next is compressed).
PUT_BYTES = 16 << 20
#: Uncompressed bytes of the chunks appends may have in flight (handed to
#: pool threads by :meth:`ChunkedArray._hand_off`, not yet stored), all arrays
#: together; an array also keeps at most 8 more than its thread count.
FLIGHT_BYTES = 16 << 20
#: Journal bytes past which an append is saved by a commit instead (which
#: empties the journal): recovery never replays more than this.
JOURNAL_BYTES = 4 << 20
_flight_lock = threading.Lock()
_flight_bytes = 0
#: Arrays with chunks in flight.
_busy: weakref.WeakSet = weakref.WeakSet()


def _fly(nbytes: int) -> bool:
    """Count `nbytes` more in flight, if :data:`FLIGHT_BYTES` allow (or
    nothing else is in flight)."""
    global _flight_bytes
    with _flight_lock:
        if _flight_bytes and _flight_bytes + nbytes > FLIGHT_BYTES:
            return False
        _flight_bytes += nbytes
        return True


def _land(nbytes: int) -> None:
    global _flight_bytes
    with _flight_lock:
        _flight_bytes -= nbytes


def _settle_before_fork() -> None:
    # A child must neither wait for a pool thread it does not have nor store
    # chunks into files its parent writes: everything in flight is stored here.
    for engine in list(_busy):
        try:
            engine.settle()
        except BaseException as exc:  # pragma: no cover - nothing to raise into
            warnings.warn(f"bcolzx could not store an appended chunk before fork(): "
                          f"{exc!r}", ResourceWarning, stacklevel=1)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_settle_before_fork)

#: Arrays on disk that may be written to (flushed at interpreter exit).
_on_disk: weakref.WeakSet = weakref.WeakSet()


@atexit.register
def _flush_at_exit() -> None:
    # Garbage collection at the very end of the interpreter cannot import or
    # start threads any more: unsaved rows are stored while it still can.
    for engine in list(_on_disk):
        if engine.dirty and not engine._closed:
            try:
                engine.flush()
            except Exception as exc:  # pragma: no cover - nothing to raise into
                warnings.warn(f"bcolzx could not flush {engine._store.rootdir} at exit: "
                              f"{exc!r}", ResourceWarning, stacklevel=1)


class ChunkedArray:
    """A growable 1-D sequence of rows (each ``rowshape`` items of ``dtype``) in chunks.

    Parameters
    ----------
    store : ChunkStore
        Where full chunks (and the flushed leftover) are kept; its ``rowshape``
        and ``length`` (rows stored when it was opened) set the array's.
    nthreads : int
        Threads for compression and decompression.

    Raises
    ------
    ValueError
        If the chunk geometry is unusable.
    TypeError
        For a store of variable-length items (object dtype).
    CorruptDataError
        If the stored leftover chunk cannot be read back.
    """

    #: Whether this engine reads variable-length items (only VlenArray does:
    #: decoding their chunks as fixed-size items would read pickles as pointers).
    _vlen_items = False

    def __init__(self, store: ChunkStore, nthreads: int = 1):
        st = store.storage
        if (st.vlen is not None or st.dtype.hasobject) and not self._vlen_items:
            raise TypeError(f"{type(self).__name__} stores fixed-size items, not {st.dtype} "
                            "(variable-length items need bcolzx._storage.engine_for)")
        self._store = store
        # Full chunks an append completed may still be on their way to the
        # store from pool threads (:meth:`_hand_off`): every access to the
        # store through :attr:`store` waits for them first.
        self._pending: deque = deque()
        self._settle_lock = threading.RLock()
        self._window = 0
        writer.bind(self)  # its lock (if any) may pass on while this holds nothing unsaved
        if store.rootdir is not None and not store.readonly:
            _on_disk.add(self)
        self.dtype = st.dtype
        self.rowshape = tuple(int(x) for x in store.rowshape)
        length = store.length
        self.chunklen = st.chunklen
        # Variable-length items (VlenArray) count one unit per row: their
        # chunks and indexes size them in rows (docs/format/README.md §2d).
        self.itemsize = 1 if st.vlen else self.dtype.itemsize
        self.rowbytes = st.row_unit(self.rowshape)
        self._items_per_row = prod(self.rowshape)
        self.chunk_bytes = self.chunklen * self.rowbytes
        if self.chunk_bytes > codec.MAX_BUFFERSIZE or self.rowbytes == 0:
            raise ValueError(f"chunks of {self.chunk_bytes} bytes are not supported "
                             f"(rows of {self.rowbytes} bytes, chunklen {self.chunklen})")
        self._until_trial = 0
        self.nthreads = 0
        self.set_nthreads(nthreads)
        self._leftover = np.empty((self.chunklen, *self.rowshape), dtype=self.dtype)
        self.nfull, self.nleft = divmod(length, self.chunklen)
        self._leftover_stored = False
        self._dirty = False
        self._closed = False
        self._cache: OrderedDict = OrderedDict()
        self._cache_bytes = 0
        # Readers may share this object across threads (e.g. Dask's from_array with
        # lock=False): the cache's bookkeeping is guarded, the reads are not.
        self._cache_lock = threading.Lock()
        # The zone map: per stored chunk (min, max, nan) lists, loaded on first
        # use; None when this dtype has none or the dataset's is unknown.
        self._zones: list | None = None
        self._zones_loaded = not (store.native and self.rowshape == ()
                                  and self.dtype.kind in zonemap.KINDS)
        self._zones_dirty = False
        if self.nleft:
            self._load_leftover()
        # The commit this array was read at, and the rows past it that are
        # safe against a crash of the process (the append journal).
        self._durable_len, self._durable_nfull = length, self.nfull
        self._journaled, self._append_only = length, True
        if store.journaling:
            self._replay_journal()
        if length == 0 and not self._zones_loaded:
            # Nothing stored yet: the zone map starts here, whatever the first
            # appends look like (a stale file is replaced on the first flush).
            self._zones, self._zones_loaded = [], True

    def set_nthreads(self, nthreads: int) -> None:
        """Use `nthreads` threads for compression and decompression from now on.

        Raises
        ------
        ValueError
            If `nthreads` is out of range.
        """
        if nthreads == self.nthreads:
            return
        self.settle()  # the chunks in flight were handed off under the old count
        self._window = nthreads + max(1, min(8, FLIGHT_BYTES // max(self.chunk_bytes, 1)))
        st = self.store.storage
        cp = st.cparams
        own = self.store.encoder(nthreads)
        if own is not None:
            self._comp, self._plain, self._delta = own, None, None
            self._dec = codec.Decompressor(nthreads)
            self.nthreads = nthreads
            return
        typesize = min(self.itemsize, 255) if self.itemsize else 1
        # One stream per block (no split): faster both ways and, after the
        # byte shuffle, as small or smaller (benchmarks/bench_codec.py).
        plain = codec.Compressor(cp.cname, cp.clevel, cp.shuffle, typesize, st.blocksize,
                                 nthreads, split=False)
        # Byte-delta after the byte shuffle: always, never, or (auto) chosen on
        # a sample of chunks; each chunk records its own filters, so readers
        # need not know.
        delta = None
        if st.bytedelta != "off" and cp.shuffle == codec.SHUFFLE and self.itemsize <= 255:
            delta = codec.Compressor(cp.cname, cp.clevel, cp.shuffle, typesize,
                                     st.blocksize, nthreads, bytedelta=True, split=False)
        using_delta = self.nthreads and self._comp is self._delta and delta is not None
        self._dec = codec.Decompressor(nthreads)
        if st.bytedelta == "on" and delta is not None:
            self._comp, self._plain, self._delta = delta, None, None
        elif delta is not None:
            self._plain, self._delta = plain, delta
            self._comp = delta if using_delta else plain
        else:
            self._comp, self._plain, self._delta = plain, None, None
        self.nthreads = nthreads

    # -- chunks stored in the background -----------------------------------------

    @property
    def store(self) -> ChunkStore:
        """The chunk store, holding every chunk counted in :attr:`nfull`."""
        if self._pending:
            self.settle()
        return self._store

    def settle(self) -> None:
        """Wait until the chunks handed to pool threads (if any) are stored.

        Raises
        ------
        OSError, BcolzxError
            If storing one failed: on disk the array is rolled back to its
            last flush, as after any failed write.
        """
        with self._settle_lock:
            if self._pending:
                self._store_done(everything=True)

    def _store_done(self, everything: bool) -> None:
        """Store the oldest chunk in flight, waiting for it, and those after
        it that are done (all of them when `everything`), in one put."""
        pending, done = self._pending, []
        while pending and (everything or not done or pending[0][0].done()):
            future, chunk, rows = pending[0]
            try:
                entry, bounds = future.result()
            except BaseException as exc:
                if not future.done():  # the wait was interrupted: still in flight
                    raise
                self._abandon()
                writer.roll_back(self, exc)
            pending.popleft()
            _land(self.chunk_bytes)
            done.append((chunk, entry, rows, bounds))
        try:
            self._put([(chunk, entry, self.chunk_bytes) for chunk, entry, _, _ in done])
        except BaseException as exc:
            self._abandon()
            writer.roll_back(self, exc)
        for chunk, _, rows, bounds in done:
            self._note(chunk, rows, bounds)
            parallel.recycle(rows)
        if not pending:
            _busy.discard(self)

    def _abandon(self) -> None:
        """Wait for the chunks in flight (if any) and forget them, whatever
        became of them (the array is about to be re-read or dropped)."""
        pending, self._pending = self._pending, deque()
        wait([job[0] for job in pending])
        _land(len(pending) * self.chunk_bytes)
        _busy.discard(self)

    def _hand_off(self) -> bool:
        """Have a pool thread encode the full leftover (and compute its
        bounds) as chunk :attr:`nfull`, and take a fresh buffer as the
        leftover; True if done, False when it must be encoded here.

        The caller goes on copying the next rows while the chunk compresses:
        up to :attr:`_window` chunks of an array are in flight (within
        :data:`FLIGHT_BYTES` for all arrays), each compressed on one thread.
        They are stored in order, on this thread, by :meth:`_store_done`:
        when the window is full, when the next chunks cannot be encoded in
        order any more, or when anything reads the store (:attr:`store`), so
        readers never miss a chunk.
        """
        if self.nthreads < 2 or not self._store.native or \
                (self._delta is not None and not self._until_trial):
            return False  # one thread asked for, a legacy store, or a byte-delta trial due
        nbytes = self.chunk_bytes
        with self._settle_lock:
            if len(self._pending) >= self._window:
                self._store_done(everything=False)
            if not _fly(nbytes):  # other arrays hold the budget: store ours, then retry
                if self._pending:
                    self._store_done(everything=True)
                if not _fly(nbytes):
                    return False
            if not self._zones_loaded:
                self._load_zones()
            rows, chunk = self._leftover, self.nfull
            try:
                future = parallel.pool(self.nthreads).submit(
                    _encode_in_pool, self._comp, self.itemsize, rows, self._zones is not None)
            except RuntimeError:  # interpreter shutdown: no new threads
                _land(nbytes)
                return False
            self._pending.append((future, chunk, rows))
            _busy.add(self)
            if self._delta is not None:
                self._until_trial -= 1  # one chunk between trials, special or not
            self._leftover = parallel.chunk_buffer(nbytes).view(self.dtype).reshape(rows.shape)
            self.nfull += 1
        return True

    def view(self) -> "ChunkedArray":
        """A new array with this one's rows, sharing its stored chunks: what the
        view writes stays in the view, in memory (copy on write)."""
        from bcolzx._storage.overlay import OverlayStore

        store = OverlayStore(self.store, self.nfull)  # .store: chunks in flight stored
        new = type(self)(store, self.nthreads)
        new._leftover[: self.nleft] = self._leftover[: self.nleft]
        new.nleft = self.nleft
        return new

    # -- sizes -----------------------------------------------------------------

    @property
    def _leftover_stored(self) -> bool:
        """Whether the leftover rows are stored as the last chunk (as they are)."""
        return self._stored_flag

    @_leftover_stored.setter
    def _leftover_stored(self, value: bool) -> None:
        # Set (to False) after every change of the leftover rows: the size
        # measured by leftover_cbytes() is then stale.
        self._stored_flag = value
        self._left_cbytes = None

    @property
    def leftover(self) -> np.ndarray:
        """The leftover rows (not in a full chunk), a view of the live buffer:
        valid until the next change of the array."""
        return self._leftover[: self.nleft]

    def leftover_cbytes(self) -> int:
        """Bytes the leftover rows take compressed when they are not stored
        (what a flush would add to the store's ``cbytes``); 0 when they are
        stored or there are none.  Measured once per change of the rows."""
        if not self.nleft or self._leftover_stored:
            return 0
        if self._left_cbytes is None:
            rows = self._leftover[: self.nleft]
            if self._store.native and _special(rows, self.itemsize) is not None:
                size = SPECIAL_CBYTES
            elif self._delta is None or self._until_trial:
                size = len(self._comp.compress(rows))
            else:  # the pipeline a byte-delta trial would choose (as _encode)
                plain, delta = len(self._plain.compress(rows)), len(self._delta.compress(rows))
                size = delta if delta * 10 <= plain * 9 else plain
            self._left_cbytes = size
        return self._left_cbytes

    def __len__(self) -> int:
        return self.nfull * self.chunklen + self.nleft

    @property
    def nbytes(self) -> int:
        return len(self) * self.rowbytes

    @property
    def cbytes(self) -> int:
        return self.store.cbytes

    @property
    def dirty(self) -> bool:
        return self._dirty

    def _sizes(self) -> Sizes:
        return Sizes((len(self), *self.rowshape), self.nbytes, self.store.cbytes)

    def _where(self, chunk: int) -> dict:
        return {"path": self.store.rootdir, "chunk": chunk}

    # -- the chunk cache ---------------------------------------------------------

    def _entry(self, chunk: int):
        """The verified stored entry of `chunk`, through an LRU cache of compressed chunks."""
        cache = self._cache
        with self._cache_lock:
            entry = cache.get(chunk)
            if entry is not None:
                cache.move_to_end(chunk)
                return entry
        entry = self.store.get_one(chunk)
        self._check_full(entry, chunk)
        if self.store.rootdir is None:  # in memory: the store is its own cache
            return entry
        with self._cache_lock:
            self._uncache_locked(chunk)  # another thread may have cached it meanwhile
            cache[chunk] = entry
            if not isinstance(entry, Special):
                self._cache_bytes += len(entry)
                while self._cache_bytes > CACHE_BYTES and len(cache) > 1:
                    old = cache.popitem(last=False)[1]
                    if not isinstance(old, Special):
                        self._cache_bytes -= len(old)
        return entry

    def _check_full(self, entry, chunk: int) -> None:
        """Raise CorruptDataError unless `entry` decodes to a full chunk's bytes."""
        if not isinstance(entry, Special):
            nbytes = self._nbytes_of(entry, chunk)
            if nbytes != self.chunk_bytes:
                raise CorruptDataError(f"chunk decodes to {nbytes} bytes, expected "
                                       f"{self.chunk_bytes}", **self._where(chunk))

    def _uncache(self, chunk: int) -> None:
        with self._cache_lock:
            self._uncache_locked(chunk)

    def _uncache_locked(self, chunk: int) -> None:
        old = self._cache.pop(chunk, None)
        if old is not None and not isinstance(old, Special):
            self._cache_bytes -= len(old)

    def _put_behind(self, writing, items: list):
        """Store `items` once the put `writing` (a future, or None) is done:
        on the writer thread when another compresses meanwhile (several
        threads), returning its future; else here, returning None.  Only
        stores on disk put in groups (:meth:`append`)."""
        if writing is not None:
            writing.result()
        if self.nthreads < 2:
            self._put(items)
            return None
        return parallel.writer().submit(self._put, items)

    def _put(self, items: list) -> None:
        for chunk, _, _ in items:
            self._uncache(chunk)
        self._store.put(items)

    def free_cache(self) -> None:
        """Forget the cached chunks."""
        with self._cache_lock:
            self._cache.clear()
            self._cache_bytes = 0

    # -- the zone map ------------------------------------------------------------

    def _stored_chunks(self) -> int:
        return self.nfull + (1 if self.nleft and self._leftover_stored else 0)

    def _load_zones(self) -> None:
        self._zones_loaded = True
        if self.store.rootdir is None:
            self._zones = None
            return
        stats = zonemap.read(self.store.rootdir, self.dtype, self.store.storage)
        if stats is None:
            # A dataset written without one (by an older version) has none.
            self._zones = None
        elif len(stats) < self._stored_chunks():
            self._zones = None
        else:
            self._zones = [tuple(r) for r in stats]

    def _note(self, chunk: int, rows: np.ndarray, bounds: tuple | None = None) -> None:
        """Record the bounds of `rows` (or `bounds`, already computed by
        :func:`_bounds`), now stored as `chunk` (widening, never narrowing)."""
        if not self._zones_loaded:
            self._load_zones()
        zones = self._zones
        if zones is None or not len(rows):
            return
        lo, hi, nan = _bounds(rows) if bounds is None else bounds
        if chunk < len(zones):
            olo, ohi, onan = zones[chunk]
            zones[chunk] = (_widen(olo, lo, min), _widen(ohi, hi, max), onan or nan)
        elif chunk == len(zones):
            zones.append((lo, hi, nan))
        else:  # pragma: no cover - chunks are stored in order
            self._zones = None
        self._zones_dirty = True

    def chunk_stats(self) -> np.ndarray | None:
        """Bounds of the full chunks: a record array with ``min``, ``max`` (of the
        non-NaN values) and ``nan`` per chunk, or None when unknown.

        Raises
        ------
        CorruptDataError
            If the stored zone map is damaged.
        """
        self.settle()
        if not self._zones_loaded:
            self._load_zones()
        if self._zones is None or len(self._zones) < self.nfull:
            return None
        return np.array(self._zones[: self.nfull], dtype=zonemap.stats_dtype(self.dtype))

    def _save_zones(self) -> None:
        if self._zones_dirty and self._zones is not None and self.store.rootdir is not None:
            zonemap.write(self.store.rootdir,
                          np.array(self._zones, dtype=zonemap.stats_dtype(self.dtype)),
                          storage=self.store.storage)
        self._zones_dirty = False

    # -- chunk encoding --------------------------------------------------------

    def _encode(self, rows: np.ndarray):
        """Compressed bytes of `rows`, or a Special when they are one constant."""
        if not self._store.native:
            return self._comp.compress(rows)
        special = _special(rows, self.itemsize)
        if special is not None:
            if self._until_trial:  # counts as a chunk between trials (as in _encode_full)
                self._until_trial -= 1
            return special
        if self._delta is None:
            return self._comp.compress(rows)
        if self._until_trial:
            self._until_trial -= 1
            return self._comp.compress(rows)
        # A trial: both pipelines; byte-delta stays while it saves >= 10%.
        plain, delta = self._plain.compress(rows), self._delta.compress(rows)
        self._until_trial = layout.BYTEDELTA_RETRIAL
        if len(delta) * 10 <= len(plain) * 9:
            self._comp = self._delta
            return delta
        self._comp = self._plain
        return plain

    def _encode_one(self, rows: np.ndarray) -> list:
        """As :meth:`_encode_full` for one chunk: its bounds are computed on
        another thread while this one compresses it (or a byte-delta trial
        runs while the chunks in flight are compressed; they are stored first)."""
        if not self._zones_loaded:
            self._load_zones()
        future = None
        if self.nthreads > 1 and self._zones is not None and not self._pending:
            future = parallel.pool(self.nthreads).submit(_bounds, rows)
        entry = self._encode(rows)
        self.settle()
        items = [(self.nfull, entry, self.chunk_bytes)]
        self._note(self.nfull, rows, None if future is None else future.result())
        self.nfull += 1
        return items

    def _encode_full(self, rows: np.ndarray) -> list:
        """Store-ready items ``(chunk, entry, nbytes)`` of `rows` (whole chunks,
        stored from chunk ``nfull`` on, which advances), their bounds noted.

        With several threads, several chunks and our own format, the chunks
        are shared out in contiguous runs among the threads, each with its
        own single-threaded compressor, computing the zone-map bounds while
        the chunk is in its cache: no per-chunk thread hand-off.  Byte-delta
        trials still run one chunk at a time, in order.
        """
        cl = self.chunklen
        parts = [rows[k:k + cl] for k in range(0, len(rows), cl)]
        if not self._zones_loaded:
            self._load_zones()
        want_bounds = self._zones is not None
        if self.nthreads > 1 and len(parts) > 1 and self.store.native:
            done, encoded = 0, []
            while done < len(parts):
                if self._delta is not None and not self._until_trial:
                    encoded.append((self._encode(parts[done]), None))  # picks the pipeline
                    done += 1
                    continue
                take = len(parts) - done
                if self._delta is not None:
                    take = min(take, self._until_trial)
                    self._until_trial -= take
                encoded.extend(_encode_runs(self._comp, self.itemsize, want_bounds,
                                            parts[done:done + take], self.nthreads))
                done += take
        else:
            encoded = [(self._encode(part), None) for part in parts]
        items = []
        for part, (entry, bounds) in zip(parts, encoded):
            items.append((self.nfull, entry, self.chunk_bytes))
            self._note(self.nfull, part, bounds)
            self.nfull += 1
        return items

    def _decode_into(self, entry, out: np.ndarray, chunk: int, stored_rows: int) -> None:
        """Decode a stored chunk of `stored_rows` rows; its first ``len(out)`` rows go to `out`."""
        if isinstance(entry, Special):
            fill_special(out, entry.kind, self.itemsize, entry.value)
            return
        nbytes = self._nbytes_of(entry, chunk)
        if nbytes != stored_rows * self.rowbytes:
            raise CorruptDataError(f"chunk decodes to {nbytes} bytes, expected "
                                   f"{stored_rows * self.rowbytes}", **self._where(chunk))
        try:
            if len(out) == stored_rows:
                self._dec.decompress(entry, out)
            else:
                tmp = np.empty((stored_rows, *self.rowshape), dtype=self.dtype)
                self._dec.decompress(entry, tmp)
                out[...] = tmp[: len(out)]
        except CorruptDataError as exc:
            raise self._located(exc, chunk) from None

    def _nbytes_of(self, entry, chunk: int) -> int:
        """Uncompressed bytes of a stored chunk, from its header."""
        try:
            return codec.chunk_sizes(entry)[0]
        except CorruptDataError as exc:
            raise self._located(exc, chunk) from None

    def _located(self, exc: CorruptDataError, chunk: int) -> CorruptDataError:
        """`exc` naming this dataset and `chunk` (C-Blosc2's errors name neither)."""
        if exc.path is not None:
            return exc
        return type(exc)(str(exc), **self._where(chunk), code=exc.code)

    def _decode_part(self, entry, out: np.ndarray, chunk: int, first: int) -> None:
        """Rows ``first .. first+len(out)-1`` of a full stored chunk (an entry from
        :meth:`_entry`, whose size is checked), decompressing only the blocks
        that hold them."""
        if isinstance(entry, Special) or self.itemsize > 255:
            tmp = np.empty((self.chunklen, *self.rowshape), dtype=self.dtype)
            self._decode_into(entry, tmp, chunk, self.chunklen)
            out[...] = tmp[first:first + len(out)]
            return
        self._getitem(entry, chunk, first, out)

    def _getitem(self, entry, chunk: int, first: int, out: np.ndarray) -> None:
        """Rows from `first` of a compressed chunk into `out`, by C-Blosc getitem."""
        per_row = self._items_per_row
        try:
            if self.store.native:
                self._dec.getitem(entry, first * per_row, len(out) * per_row,
                                  out.reshape(-1).view(np.uint8))
                return
            # Legacy chunks have their own typesize (1 for 'S', 4 for 'U').
            ts = codec.chunk_info(entry)["typesize"]  # raises located, below
            b0, nb = first * self.rowbytes, len(out) * self.rowbytes
            if b0 % ts or nb % ts:
                tmp = np.empty((self.chunklen, *self.rowshape), dtype=self.dtype)
                self._decode_into(entry, tmp, chunk, self.chunklen)
                out[...] = tmp[first:first + len(out)]
                return
            self._dec.getitem(entry, b0 // ts, nb // ts, out.reshape(-1).view(np.uint8))
        except CorruptDataError as exc:
            raise self._located(exc, chunk) from None

    def _replay_journal(self) -> None:
        """Add the rows the store's append journal holds past its commit (they
        fit in the leftover: a journal never completes a chunk)."""
        room = self.chunklen - 1 - self.nleft
        data = self._store.journal_rows(room) if room > 0 else b""
        n = len(data) // self.rowbytes
        if not n:
            return
        rows = np.frombuffer(data, dtype=self.dtype, count=n * self._items_per_row)
        self._leftover[self.nleft:self.nleft + n] = rows.reshape((n, *self.rowshape))
        self.nleft += n
        self._leftover_stored = False
        self._journaled = len(self)

    def _load_leftover(self) -> None:
        (entry,) = self.store.get(self.nfull, self.nfull + 1)
        out = self._leftover[: self.nleft]
        if isinstance(entry, Special):
            fill_special(out, entry.kind, self.itemsize, entry.value)
        else:
            # A crash after an index write but before meta/sizes can leave this
            # chunk holding more rows than the metadata counts: keep the prefix.
            nbytes = self._nbytes_of(entry, self.nfull)
            if nbytes < self.nleft * self.rowbytes or nbytes % self.rowbytes:
                raise CorruptDataError(f"last chunk decodes to {nbytes} bytes, expected at "
                                       f"least {self.nleft * self.rowbytes}",
                                       **self._where(self.nfull))
            self._decode_into(entry, out, self.nfull, nbytes // self.rowbytes)
        self._leftover_stored = True

    # -- writing ---------------------------------------------------------------

    def _check_writable(self) -> None:
        if self._closed:
            raise ValueError("the array is closed")
        if self._store.readonly:
            raise ReadOnlyError("the dataset is opened read-only (mode 'r')")
        lock = self._store.lock
        if lock is not None and not lock.acquired:
            writer.take(self)  # the first change: lock, then re-read the dataset

    @writer.guarded
    def append(self, rows: np.ndarray) -> None:
        """Append rows (an array of shape ``(n, *rowshape)`` and this dtype).

        Raises
        ------
        ReadOnlyError
            If the store is read-only.
        ValueError
            If `rows` has the wrong shape.
        """
        self._check_writable()
        rows = np.ascontiguousarray(rows, dtype=self.dtype)
        if rows.shape[1:] != self.rowshape:
            raise ValueError(f"rows of shape {rows.shape[1:]} cannot be appended to rows of "
                             f"shape {self.rowshape}")
        n, pos, items = len(rows), 0, []
        if n == 0:
            return
        cl = self.chunklen
        if self.nleft:
            take = min(cl - self.nleft, n)
            self._leftover[self.nleft:self.nleft + take] = rows[:take]
            self.nleft += take
            pos = take
            self._leftover_stored = False
            if self.nleft == cl:
                if not self._hand_off():
                    items.extend(self._encode_one(self._leftover))
                self.nleft = 0
        full = (n - pos) // cl
        # In memory a put only keeps the entries: no groups to store.
        group = max(1, PUT_BYTES // self.chunk_bytes) if self._store.rootdir else max(full, 1)
        if full:
            self.settle()  # chunks are encoded and stored in order
        writing = None  # the group the writer thread is storing
        try:
            while full:
                # Stored a group at a time, by another thread while the next
                # group is compressed (on disk, with threads); at most two
                # groups of compressed chunks are held here.
                take = min(full, group)
                items.extend(self._encode_full(rows[pos:pos + take * cl]))
                pos += take * cl
                full -= take
                if full:
                    writing = self._put_behind(writing, items)
                    items = []
        finally:
            if writing is not None:
                wait([writing])  # never leave a put running behind an exception
        if writing is not None:
            writing.result()
        if pos < n:
            self.nleft = n - pos
            self._leftover[: self.nleft] = rows[pos:]
            self._leftover_stored = False
        self._dirty = True
        if items:
            self._put(items)

    @writer.guarded
    def append_chunk(self, entry, rows: np.ndarray) -> None:
        """Append one chunk that is already encoded, without compressing it again.

        `entry` is a C-Blosc2 chunk of this format (it must decode to exactly
        `rows`: item size as typesize, ``len(rows) * rowbytes`` bytes) and
        `rows` its decoded rows, which feed the zone map.  Fewer than
        ``chunklen`` rows make it the stored last chunk.  The store adds its
        checksum, as for any chunk.

        Raises
        ------
        ValueError
            If the array has a leftover, `rows` is empty or longer than a
            chunk, or the store is legacy (its chunks are not C-Blosc2's).
        ReadOnlyError
            If the store is read-only.
        """
        self._check_writable()
        self._append_only = False
        n = len(rows)
        if self.nleft or not 0 < n <= self.chunklen or not self.store.native:
            raise ValueError(f"cannot append an encoded chunk of {n} rows here (leftover "
                             f"{self.nleft}, chunklen {self.chunklen}, native "
                             f"{self.store.native})")
        self._put([(self.nfull, entry, n * self.rowbytes)])
        self._note(self.nfull, rows)
        if n == self.chunklen:
            self.nfull += 1
        else:
            self.nleft = n
            self._leftover[:n] = rows
            self._leftover_stored = True
        self._dirty = True

    @writer.guarded
    def write(self, start: int, rows: np.ndarray) -> None:
        """Overwrite rows ``start .. start+len(rows)-1`` (all must exist).

        Raises
        ------
        IndexError
            If the range is not inside the array.
        ReadOnlyError
            If the store is read-only.
        """
        self._check_writable()
        self._append_only = False  # a rewrite: the next save is a commit
        rows = np.ascontiguousarray(rows, dtype=self.dtype).reshape((-1, *self.rowshape))
        stop = start + len(rows)
        if not 0 <= start <= stop <= len(self):
            raise IndexError(f"rows {start}..{stop} outside 0..{len(self)}")
        cl, stored_end, items = self.chunklen, self.nfull * self.chunklen, []
        if start < stored_end:
            self.settle()  # a chunk rewritten here may be in flight
        pos = start
        while pos < min(stop, stored_end):
            c = pos // cl
            a, b = pos - c * cl, min(stop, (c + 1) * cl) - c * cl
            if a == 0 and b == cl:
                chunk = rows[pos - start:pos - start + cl]
            else:
                chunk = np.empty((cl, *self.rowshape), dtype=self.dtype)
                self._decode_into(self._entry(c), chunk, c, cl)
                chunk[a:b] = rows[pos - start:pos - start + (b - a)]
            items.append((c, self._encode(chunk), self.chunk_bytes))
            self._note(c, chunk)
            pos = c * cl + b
        if items:
            self._put(items)
        if stop > stored_end:
            lo = max(start, stored_end)
            self._leftover[lo - stored_end:stop - stored_end] = rows[lo - start:]
            self._leftover_stored = False
        self._dirty = True

    @writer.guarded
    def resize(self, length: int, fill: np.ndarray | None = None) -> None:
        """Grow (with `fill`, default zeros) or shrink to `length` rows.

        Shrinking is durable at once, metadata first, then freed space.

        Raises
        ------
        ValueError
            If `length` is negative.
        ReadOnlyError
            If the store is read-only.
        """
        self._check_writable()
        if length < 0:
            raise ValueError(f"length must be >= 0, not {length}")
        layout.check_rows(length, self.rowbytes)
        self._append_only = False
        n = len(self)
        if length > n:
            row = np.zeros((), self.dtype) if fill is None else np.asarray(fill, self.dtype)
            batch = np.empty((min(length - n, max(self.chunklen, 1)), *self.rowshape), self.dtype)
            batch[...] = row
            while n < length:
                take = min(len(batch), length - n)
                self.append(batch[:take])
                n += take
            return
        if length == n:
            return
        self.flush()
        self.free_cache()
        stored_end = self.nfull * self.chunklen
        if length >= stored_end:  # only the leftover shrinks; its stored chunk keeps a prefix
            self.nleft = length - stored_end
            if self.store.native:
                self.store.commit(self._sizes())
            elif self.nleft:  # a legacy leftover file holds exactly its rows
                # The shorter length first (a longer leftover file is cut on
                # reading), then the leftover file: the other way round, a
                # crash between the two left a file shorter than meta/sizes.
                self.store.commit(self._sizes())
                self._leftover_stored, self._dirty = False, True
                self.flush()
            else:
                self.store.truncate(self.nfull, self.chunk_bytes if self.nfull else 0,
                                    self._sizes())
            self._committed()
            return
        old_nfull, old_nleft = self.nfull, self.nleft
        self.nfull, self.nleft = divmod(length, self.chunklen)
        keep = self.nfull
        last = 0
        if self.nleft:
            keep += 1
            stored_rows = self.chunklen if self.nfull < old_nfull else old_nleft
            last = stored_rows * self.rowbytes
            (entry,) = self.store.get(self.nfull, self.nfull + 1)
            self._decode_into(entry, self._leftover[: self.nleft], self.nfull, stored_rows)
        elif keep:
            last = self.chunk_bytes
        self.store.truncate(keep, last, self._sizes())
        if self._zones is not None:  # the kept leftover chunk keeps its (wider) bounds
            del self._zones[keep:]
        self._leftover_stored = True
        self._dirty = False
        self._committed()
        if self.nleft and not self.store.native:  # rewrite it holding exactly its rows
            self._leftover_stored, self._dirty = False, True
            self.flush()

    @writer.guarded
    def flush(self, journal: bool = False) -> None:
        """Store the leftover as a short chunk and make everything durable.

        Rows that this array's append journal held when it was opened are
        committed too when it holds the write lock, or when `journal` is
        True (taking the lock: an explicit ``flush()``); a reader that
        changed nothing never commits another writer's journal on its own.

        Raises
        ------
        OSError
            If the file system refuses; what was flushed before stays intact.
        LockedError
            With `journal`, if another writer holds the dataset.
        """
        if self.store.readonly or self._closed or \
                not (self._dirty or self._journal_pending(journal)):
            return
        if not self._dirty:  # journal rows replayed at opening: take the lock to commit them
            self._check_writable()
        if self.nleft and not self._leftover_stored:
            rows = self._leftover[: self.nleft]
            self._put([(self.nfull, self._encode(rows), self.nleft * self.rowbytes)])
            self._note(self.nfull, rows)
            self._leftover_stored = True
        self._save_zones()  # data first, then the zone map, then the commit point
        self.store.commit(self._sizes())  # which also empties the journal
        self._dirty = False
        self._committed()

    def _committed(self) -> None:
        """The store's last commit is this array as it is now."""
        self._durable_len = self._journaled = len(self)
        self._durable_nfull, self._append_only = self.nfull, True

    def _journal_pending(self, take: bool = False) -> bool:
        """Rows past the last commit that the journal holds, and this array is
        to commit them (it holds the write lock, has no lock to take, or is
        told to `take` it)."""
        if self._journaled <= self._durable_len:
            return False
        lock = self._store.lock
        return take or lock is None or lock.acquired

    @writer.guarded
    def flush_appends(self) -> None:
        """Make the rows appended since the last commit safe against a crash of
        this process, cheaply: into the append journal when only appends
        happened and no chunk was completed since the last commit (a small
        write, no fsync), otherwise by a commit (:meth:`flush`).

        Power loss may lose rows saved this way (never committed ones, never
        a wrong row); :meth:`flush` makes them durable.

        Raises
        ------
        OSError
            If the file system refuses (the array is rolled back to its last
            commit and journal).
        """
        if self.store.readonly or self._closed or not self._dirty:
            return
        cl = self.chunklen
        if not (self._store.journaling and self._append_only
                and self.nfull == self._durable_nfull and not self._pending
                and self._store.journal_bytes() < JOURNAL_BYTES):
            self.flush()
            return
        if len(self) > self._journaled:
            rows = self._leftover[self._journaled - self.nfull * cl:self.nleft]
            self._store.journal_append(self._journaled, rows.tobytes())
            self._journaled = len(self)

    @writer.guarded
    def compact(self, progress=None) -> int:
        """Flush, then reclaim the space of rewritten and truncated chunks.

        `progress`, when given, is called as the store's :meth:`compact` says.
        """
        self._check_writable()
        self.flush()
        return self.store.compact(progress)

    def clip(self, length: int) -> None:
        """Show only the first `length` rows of a read-only array, writing nothing.

        For a ctable column that a crash left longer than its table
        (:mod:`bcolzx._recovery`); a writable array is trimmed instead.

        Raises
        ------
        ValueError
            If the array is writable.
        CorruptDataError
            If the chunk that becomes the leftover is damaged.
        """
        if not self.store.readonly:
            raise ValueError("clip() is for read-only arrays; resize() a writable one")
        if length >= len(self):
            return
        self.free_cache()
        if length // self.chunklen == self.nfull:  # within the leftover held here
            self.nleft = length - self.nfull * self.chunklen
            return
        self.nfull, self.nleft = divmod(length, self.chunklen)
        self._leftover_stored = False
        if self.nleft:  # the chunk holds more rows than kept: its prefix is the leftover
            self._load_leftover()

    # -- reading ---------------------------------------------------------------

    def read(self, start: int, stop: int, out: np.ndarray | None = None) -> np.ndarray:
        """Rows ``start .. stop-1`` into `out` (a new array by default).

        Whole chunks are decompressed straight into `out`, runs of them in
        parallel; only the chunks that hold the rows are read.

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
            out = np.empty((stop - start, *self.rowshape), dtype=self.dtype)
        cl, stored_end = self.chunklen, self.nfull * self.chunklen
        if start < stored_end:
            c0, c1 = start // cl, (min(stop, stored_end) + cl - 1) // cl
            # One chunk (small reads): through the chunk cache; more: one read per file.
            entries = [self._entry(c0)] if c1 - c0 == 1 else self.store.get(c0, c1)
            run, run_at = [], 0
            for c, entry in zip(range(c0, c1), entries):
                a, b = max(start, c * cl), min(stop, (c + 1) * cl)
                dest = out[a - start:b - start]
                if b - a == cl and not isinstance(entry, Special):
                    nbytes = self._nbytes_of(entry, c)
                    if nbytes != self.chunk_bytes:
                        raise CorruptDataError(f"chunk decodes to {nbytes} bytes, expected "
                                               f"{self.chunk_bytes}", **self._where(c))
                    if not run:
                        run_at = a - start
                    run.append(entry)
                    continue
                self._flush_run(run, out, run_at, c)
                run = []
                if b - a == cl:
                    self._decode_into(entry, dest, c, cl)
                else:
                    self._decode_part(entry, dest, c, a - c * cl)
            self._flush_run(run, out, run_at, c1)
        if stop > stored_end:
            lo = max(start, stored_end)
            out[lo - start:] = self._leftover[lo - stored_end:stop - stored_end]
        return out

    def _flush_run(self, run: list, out: np.ndarray, at: int, next_chunk: int) -> None:
        if not run:
            return
        region = out[at:at + len(run) * self.chunklen]
        try:
            self._dec.decompress_many(run, region)
        except CorruptDataError as exc:
            first = next_chunk - len(run)
            raise CorruptDataError(str(exc), **self._where(
                first + exc.chunk if exc.chunk is not None else None)) from None

    def map_chunks(self, fn, batch: int = 64) -> list:
        """``fn(rows)`` on every chunk's rows, in order (the leftover last).

        Full chunks are decoded on ``nthreads`` threads, each into a scratch
        buffer of its own that `fn` reduces while it is still in cache: the
        whole array is never materialised.  `rows` is valid only during the
        call (`fn` must not keep it).

        Returns
        -------
        list
            The results of `fn`, one per chunk, in chunk order.

        Raises
        ------
        CorruptDataError, ChecksumError
            If a chunk is damaged (naming its file and position).
        """
        shape = (self.chunklen, *self.rowshape)

        def one(job):
            c, entry = job
            rows = parallel.buffer(self.chunk_bytes).view(self.dtype).reshape(shape)
            if isinstance(entry, Special):
                fill_special(rows, entry.kind, self.itemsize, entry.value)
                return fn(rows)
            nbytes = self._nbytes_of(entry, c)
            if nbytes != self.chunk_bytes:
                raise CorruptDataError(f"chunk decodes to {nbytes} bytes, expected "
                                       f"{self.chunk_bytes}", **self._where(c))
            try:
                parallel.decompressor().decompress(entry, rows)
            except CorruptDataError as exc:
                raise self._located(exc, c) from None
            return fn(rows)

        mapper = parallel.pool(self.nthreads).map if self.nthreads > 1 else map
        results = []
        for c0 in range(0, self.nfull, batch):
            c1 = min(self.nfull, c0 + batch)
            results.extend(mapper(one, zip(range(c0, c1), self.store.get(c0, c1))))
        if self.nleft:
            results.append(fn(self._leftover[:self.nleft]))
        return results

    def read_row(self, i: int) -> np.ndarray:
        """Row `i` (a 0-d or ``rowshape`` array), decompressing only its block.

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
            return self._leftover[r].copy()
        entry = self._entry(c)
        out = np.empty((1, *self.rowshape), dtype=self.dtype)
        if isinstance(entry, Special) or self.itemsize > 255:
            self._decode_part(entry, out, c, r)
        else:
            self._getitem(entry, c, r, out)
        return out[0]

    def verify(self, progress=None) -> list[CorruptDataError]:
        """Check every stored chunk without trusting any cache.

        Each chunk is read as stored (so its checksum is checked), its size
        compared with the metadata, decoded in full, and its values compared
        with the zone map's bounds (a zone map narrower than the data would
        make queries miss rows).

        `progress`, when given, is called after each chunk with the
        uncompressed bytes of its rows.

        Returns
        -------
        list of CorruptDataError or UnsupportedFormatError
            The problems found, each naming its file and chunk; empty when
            the data is sound (a damaged chunk header may name a codec that
            does not exist: UnsupportedFormatError).  Damage never raises
            from here.
        """
        problems: list[CorruptDataError] = []
        stats = None
        try:
            stats = self.chunk_stats()
        except CorruptDataError as exc:
            problems.append(exc)
        buf = np.empty((self.chunklen, *self.rowshape), dtype=self.dtype)
        stored = self.nfull + (1 if self.nleft and self._leftover_stored else 0)
        for c in range(stored):
            rows = self.chunklen if c < self.nfull else self.nleft
            try:
                entry = self.store.get_one(c)
                if isinstance(entry, Special):
                    fill_special(buf[:rows], entry.kind, self.itemsize, entry.value)
                else:
                    nbytes = self._nbytes_of(entry, c)
                    # A last chunk may hold more rows than the metadata counts
                    # (a crash between its write and meta/sizes): readers cut it.
                    if nbytes % self.rowbytes or not rows * self.rowbytes <= nbytes <= \
                            self.chunk_bytes:
                        raise CorruptDataError(f"chunk decodes to {nbytes} bytes, the metadata "
                                               f"calls for {rows * self.rowbytes}",
                                               **self._where(c))
                    self._decode_into(entry, buf[:nbytes // self.rowbytes], c,
                                      nbytes // self.rowbytes)
                if stats is not None and c < len(stats) and rows:
                    lo, hi, nan = bounds_of(buf[:rows])
                    zlo, zhi, znan = stats[c]
                    if (nan and not znan) or (lo == lo and not (zlo <= lo and hi <= zhi)):
                        raise CorruptDataError(
                            f"zone map bounds ({zlo}, {zhi}, nan={znan}) do not cover the "
                            f"chunk's values ({lo}, {hi}, nan={nan})", **self._where(c))
            except (CorruptDataError, UnsupportedFormatError) as exc:
                # A damaged chunk header can name a codec that does not exist.
                problems.append(exc)
            if progress is not None:
                progress(rows * self.rowbytes)
        return problems

    def close(self, flush: bool = True) -> None:
        """Flush (unless told not to) and release the store; the array is then closed.

        ``close(flush=False)`` drops what was not flushed: the dataset stays as
        the last flush left it, as after a crash.
        """
        if self._closed:
            return
        if flush:
            self.flush()
        else:
            self._abandon()
        self._closed = True
        self.store.close()
        if self.store.lock is not None:
            self.store.lock.release()

    def __enter__(self) -> "ChunkedArray":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self) -> None:
        # Forgetting flush() must not silently drop appended rows (on disk;
        # in memory there is nothing to flush to).
        if getattr(self, "_dirty", False) and not getattr(self, "_closed", True) \
                and getattr(self.store, "rootdir", None) is not None:
            try:
                self.flush()
            except Exception as exc:  # pragma: no cover - nothing to raise into
                warnings.warn(f"bcolzx could not flush at garbage collection: {exc!r}",
                              ResourceWarning, stacklevel=1)


def _widen(old, new, pick):
    """The wider of two bounds; a NaN bound (no non-NaN values) gives way."""
    if old != old:
        return new
    if new != new:
        return old
    return pick(old, new)


def _special(rows: np.ndarray, itemsize: int) -> Special | None:
    """`rows` as a special entry when they are one constant the index can hold, else None."""
    kind, value = special_value(rows, itemsize)
    if kind in _SPECIAL_IN_INDEX or (kind == SPECIAL_VALUE and itemsize <= 8):
        return Special(kind, value)
    return None


def _bounds(rows: np.ndarray) -> tuple:
    """Zone-map bounds ``(min, max, has_nan)`` of a non-empty run of rows."""
    lo, hi = rows.min(), rows.max()
    if lo != lo or hi != hi:  # NaN or NaT somewhere (min and max propagate them)
        return bounds_of(rows)
    return lo, hi, False


def _encode_chunk(comp: codec.Compressor, itemsize: int, rows: np.ndarray,
                  want_bounds: bool) -> tuple:
    """``(entry, bounds or None)`` of one chunk of `rows`, compressed by `comp`."""
    entry = _special(rows, itemsize)
    return (comp.compress(rows) if entry is None else entry,
            _bounds(rows) if want_bounds else None)


def _encode_in_pool(like: codec.Compressor, itemsize: int, rows: np.ndarray,
                    want_bounds: bool) -> tuple:
    # :func:`_encode_chunk` with this pool thread's single-threaded copy of `like`.
    return _encode_chunk(parallel.compressor(like), itemsize, rows, want_bounds)


def _encode_runs(like: codec.Compressor, itemsize: int, want_bounds: bool, parts: list,
                 nthreads: int) -> list:
    """``(entry, bounds or None)`` of each chunk of `parts`, in order, the
    chunks cut in `nthreads` contiguous runs encoded at once (this thread
    takes the first), each thread with a single-threaded copy of `like`."""

    def run(chunks):
        comp = parallel.compressor(like)
        return [_encode_chunk(comp, itemsize, rows, want_bounds) for rows in chunks]

    n = len(parts)
    runs = [parts[n * w // nthreads:n * (w + 1) // nthreads] for w in range(nthreads)]
    runs = [r for r in runs if r]
    futures = [parallel.pool(nthreads).submit(run, r) for r in runs[1:]]
    encoded = run(runs[0])
    for future in futures:
        encoded.extend(future.result())
    return encoded
