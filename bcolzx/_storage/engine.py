"""Rows over chunks: an array's state, and its write path (append, write, resize, flush).

:class:`ChunkedArray` is the one code path between the public containers and
a :class:`~bcolzx._storage.base.ChunkStore`.  Full chunks live in the store;
the partial last chunk (the *leftover*) lives in memory and is stored as a
short chunk on :meth:`flush`.  The read path is its base,
:class:`~bcolzx._storage.reader.ChunkReader`; chunks are compressed by an
:class:`~bcolzx._storage.encoding.Encoder`, cached by a
:class:`~bcolzx._storage.chunkcache.ChunkCache`, bounded by a
:class:`~bcolzx._storage.zones.ZoneMap`, and handed to pool threads within
the budget of :mod:`bcolzx._storage.flight`.
"""

from __future__ import annotations

import itertools
import warnings
from _thread import RLock as _RLock  # threading.RLock's C lock, without its wrapper
from collections import deque
from concurrent.futures import wait
from math import prod

import numpy as np

from bcolzx import _threads
from bcolzx._ext import codec
from bcolzx._ext.special import fill_special
from bcolzx._format import layout, zonemap
from bcolzx._format.meta import Sizes
from bcolzx._format.superchunk import SPECIAL_CBYTES
from bcolzx._storage import flight, writer
from bcolzx._storage.base import ChunkStore, Special
from bcolzx._storage.chunkcache import DECODED, ChunkCache
from bcolzx._storage.encoding import Encoder, encode_in_pool
from bcolzx._storage.reader import ChunkReader
from bcolzx._storage.zones import ZoneMap, bounds
from bcolzx.errors import ReadOnlyError

#: Uncompressed bytes of the chunks a large append encodes before storing them
#: (on disk: one group is written while the next is compressed).
PUT_BYTES = 16 << 20
#: Journal bytes past which an append is saved by a commit instead (which
#: empties the journal): recovery never replays more than this.
JOURNAL_BYTES = 4 << 20

_owners = itertools.count()


class ChunkedArray(ChunkReader):
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

    #: This state's key in the decompressed-chunk cache (set by the constructor).
    _owner: int | None = None

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
        self._settle_lock = _RLock()
        self._window = 0
        if store.lock is not None:  # it may pass on while this holds nothing unsaved
            writer.bind(self)
        if store.rootdir is not None and not store.readonly:
            flight.on_disk.add(self)
        self.dtype = st.dtype
        self.rowshape = tuple(map(int, store.rowshape))
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
        self._enc: Encoder | None = None
        self._decoder: codec.Decompressor | None = None
        self.nthreads = 0
        self.set_nthreads(nthreads)
        self.nfull, self.nleft = divmod(length, self.chunklen)
        # Compressed bytes of the short chunk stored as chunk `nfull`, which the
        # leftover replaces at the next flush (counted while the store has it;
        # known once the leftover is decoded, before any change of it).
        self._part_cbytes = 0
        # The leftover's buffer is made, and its stored rows decoded, on first
        # use (:attr:`_leftover`): opening reads no chunk.
        self._left_buf: np.ndarray | None = None
        self._left_to_load = bool(self.nleft)
        # (:attr:`_leftover_stored`, without its setter's call)
        self._stored_flag, self._left_cbytes = bool(self.nleft), None
        self._dirty = False
        self._closed = False
        self._cache = ChunkCache()
        if self._owner is not None:  # re-read (_storage/writer.py): the old state goes
            DECODED.drop_owner(self._owner, True)
        # This state's key in the decompressed-chunk cache: a new one each
        # time the array is (re)read, its entries dropped when it goes
        # (:meth:`__del__`).
        self._owner = next(_owners)
        # The zone map is made on first use (:attr:`_zones`), as it stands here.
        self._zonemap: ZoneMap | None = None
        self._zones_at_open = (length == 0, self.nfull if self.nleft else None)
        # The commit this array was read at, and the rows past it that are
        # safe against a crash of the process (the append journal).
        self._durable_len, self._durable_nfull = length, self.nfull
        self._journaled, self._append_only = length, True
        if store.journaling:
            self._replay_journal()

    def set_nthreads(self, nthreads: int) -> None:
        """Use `nthreads` threads for compression and decompression from now on.

        Raises
        ------
        ValueError
            If `nthreads` is out of range.
        """
        if nthreads == self.nthreads:
            return
        if self._pending:
            self.settle()  # the chunks in flight were handed off under the old count
        self._window = nthreads + max(1, min(8, flight.FLIGHT_BYTES // max(self.chunk_bytes, 1)))
        self.nthreads = nthreads
        if self._enc is not None:  # else made on first use: readers never need one
            self._enc = self._new_encoder(self._enc)
        self._decoder = None  # made on first use (:attr:`_dec`), with this count

    @property
    def _zones(self) -> ZoneMap:
        """The chunks' zone map, made on first use (most opens never query): as
        the constructor found the array, as every change since went through it."""
        zones = self._zonemap
        if zones is None:  # two first users at once make one each: either is right
            store = self._store
            empty, partial = self._zones_at_open
            zones = ZoneMap(store, self.dtype, store.native and self.rowshape == ()
                            and zonemap.has_zonemap(self.dtype), empty=empty)
            zones.partial = partial
            self._zonemap = zones
        return zones

    @property
    def _dec(self) -> codec.Decompressor:
        """The decompressor of this array's chunks, made on the first read (its
        C-Blosc2 contexts cost more than the rest of an open that reads none)."""
        dec = self._decoder
        if dec is None:  # two first readers at once make one each: either is right
            dec = self._decoder = codec.Decompressor(self.nthreads)
        return dec

    @_dec.setter
    def _dec(self, dec) -> None:  # (a test's counting wrapper)
        self._decoder = dec

    def _new_encoder(self, previous: Encoder | None) -> Encoder:
        return Encoder(self.store.storage, self.itemsize, self._store.native, self.nthreads,
                       own=self.store.encoder(self.nthreads), previous=previous)

    @property
    def _encoder(self) -> Encoder:
        """The compressor of this array's chunks (made on the first write)."""
        if self._enc is None:
            self._enc = self._new_encoder(None)
        return self._enc

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
            future, chunk, rows, batch = pending[0]
            try:
                entry, bounds = future.result()
                if entry is None:  # compressed into the batch made here
                    entry = batch.take(0)
            except BaseException as exc:
                if not future.done():  # the wait was interrupted: still in flight
                    raise
                self._abandon()
                writer.roll_back(self, exc)
            pending.popleft()
            flight.land(self.chunk_bytes)
            done.append((chunk, entry, rows, bounds))
        try:
            self._put([(chunk, entry, self.chunk_bytes) for chunk, entry, _, _ in done])
        except BaseException as exc:
            self._abandon()
            writer.roll_back(self, exc)
        for chunk, _, rows, computed in done:
            self._note(chunk, rows, computed)
            _threads.recycle(rows)
        if not pending:
            flight.busy.discard(self)

    def _abandon(self) -> None:
        """Wait for the chunks in flight (if any) and forget them, whatever
        became of them (the array is about to be re-read or dropped)."""
        pending, self._pending = self._pending, deque()
        wait([job[0] for job in pending])
        flight.land(len(pending) * self.chunk_bytes)
        flight.busy.discard(self)

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
        if self.nthreads < 2 or not self._store.native or self._encoder.trial_due or \
                _threads.in_worker():
            # One thread asked for, a legacy store, a byte-delta trial due, or
            # called from a pool thread (which must not wait for the pool).
            return False
        nbytes = self.chunk_bytes
        with self._settle_lock:
            if len(self._pending) >= self._window:
                self._store_done(everything=False)
            if not flight.fly(nbytes):  # other arrays hold the budget: store ours, then retry
                if self._pending:
                    self._store_done(everything=True)
                if not flight.fly(nbytes):
                    return False
            rows, chunk = self._leftover, self.nfull
            batch = codec.ChunkBatch([rows])  # its output made by this thread, which keeps it
            try:
                future = _threads.pool(self.nthreads).submit(
                    encode_in_pool, batch, self._encoder.comp, self.itemsize, rows,
                    self._zones.active(self._stored_chunks()))
            except RuntimeError:  # interpreter shutdown: no new threads
                flight.land(nbytes)
                return False
            self._pending.append((future, chunk, rows, batch))
            flight.busy.add(self)
            self._encoder.counted()  # one chunk between trials, special or not
            self._leftover = _threads.chunk_buffer(nbytes).view(self.dtype).reshape(rows.shape)
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
    def _leftover(self) -> np.ndarray:
        """The buffer of the rows past the full chunks (``nleft`` of them), one
        chunk long; the stored ones are decoded at the first use."""
        buf = self._left_buf
        if buf is None:
            with self._settle_lock:
                buf = self._left_buf
                if buf is None:
                    buf = np.empty((self.chunklen, *self.rowshape), dtype=self.dtype)
                    if self._left_to_load:
                        self._load_leftover(buf[: self.nleft])
                        self._left_to_load = False
                    self._left_buf = buf
        return buf

    @_leftover.setter
    def _leftover(self, buf: np.ndarray) -> None:
        self._left_buf = buf

    @property
    def leftover(self) -> np.ndarray:
        """The leftover rows (not in a full chunk), a view of the live buffer:
        valid until the next change of the array."""
        return self._leftover[: self.nleft]

    def leftover_cbytes(self) -> int:
        """What a flush would add to the store's ``cbytes``: the bytes the
        leftover rows take compressed when they are not stored, less those of
        the short chunk an earlier flush stored, which they replace; 0 when
        they are stored or there are none.  Measured once per change of the rows."""
        if not self.nleft or self._leftover_stored:
            return 0
        if self._left_cbytes is None:
            self._left_cbytes = self._encoder.encoded_size(self._leftover[: self.nleft]) \
                - self._stale_cbytes()
        return self._left_cbytes

    def _stale_cbytes(self) -> int:
        """Compressed bytes of the short chunk stored as chunk `nfull` (0 if none)."""
        return self._part_cbytes if self._store.nchunks > self.nfull else 0

    def _stored_part(self, entry) -> None:
        """`entry` is now the short chunk stored as chunk `nfull`."""
        self._part_cbytes = SPECIAL_CBYTES if isinstance(entry, Special) else len(entry)

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
        """Whether this array holds changes not committed yet."""
        return self._dirty

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._closed

    @property
    def rootdir(self) -> str | None:
        """The dataset's directory (None in memory)."""
        return self._store.rootdir

    def _sizes(self) -> Sizes:
        return Sizes((len(self), *self.rowshape), self.nbytes, self.store.cbytes)

    # -- the chunk cache ---------------------------------------------------------

    def _uncache(self, chunk: int) -> None:
        self._cache.drop(chunk)
        DECODED.drop(self._owner, chunk)

    def _put_behind(self, writing, items: list):
        """Store `items` once the put `writing` (a future, or None) is done:
        on the writer thread when another compresses meanwhile (several
        threads), returning its future; else here, returning None.  Only
        stores on disk put in groups (:meth:`append`)."""
        if writing is not None:
            writing.result()
        if self.nthreads < 2 or _threads.in_worker():
            self._put(items)
            return None
        return _threads.writer().submit(self._put, items)

    def _put(self, items: list) -> None:
        for chunk, _, _ in items:
            self._uncache(chunk)
        self._store.put(items)
        for chunk, _, _ in items:  # a reader on another thread may have cached it meanwhile
            DECODED.drop(self._owner, chunk)

    def free_cache(self) -> None:
        """Forget the cached chunks (compressed, and decompressed)."""
        self._cache.clear()
        DECODED.drop_owner(self._owner)

    # -- the zone map ------------------------------------------------------------

    def _stored_chunks(self) -> int:
        return self.nfull + (1 if self.nleft and self._leftover_stored else 0)

    def _note(self, chunk: int, rows: np.ndarray, computed: tuple | None = None) -> None:
        """Record the bounds of `rows` (or `computed`), now stored as `chunk`."""
        self._zones.note(chunk, rows, self._stored_chunks(), computed)

    # -- chunk encoding --------------------------------------------------------

    def _encode(self, rows: np.ndarray):
        """Compressed bytes of `rows`, or a Special when they are one constant."""
        return self._encoder.encode(rows)

    def _encode_one(self, rows: np.ndarray) -> list:
        """As :meth:`_encode_full` for one chunk: its bounds are computed on
        another thread while this one compresses it (or a byte-delta trial
        runs while the chunks in flight are compressed; they are stored first)."""
        future = None
        if self.nthreads > 1 and self._zones.active(self._stored_chunks()) and \
                not self._pending and not _threads.in_worker():
            future = _threads.pool(self.nthreads).submit(bounds, rows)
        entry = self._encode(rows)
        self.settle()
        items = [(self.nfull, entry, self.chunk_bytes)]
        self._note(self.nfull, rows, None if future is None else future.result())
        self.nfull += 1
        return items

    def _encode_full(self, rows: np.ndarray, tail: np.ndarray | None = None) -> list:
        """Store-ready items ``(chunk, entry, nbytes)`` of `rows` (whole chunks,
        stored from chunk ``nfull`` on, which advances), their bounds noted
        (see :meth:`Encoder.encode_parts`).  With `tail` (fewer rows than a
        chunk), it becomes the leftover, stored as the short last chunk (as
        :meth:`flush` stores it), encoded with the others."""
        cl = self.chunklen
        parts = [rows[k:k + cl] for k in range(0, len(rows), cl)]
        if tail is not None:
            parts.append(tail)
        want_bounds = self._zones.active(self._stored_chunks())
        encoded = self._encoder.encode_parts(parts, want_bounds, self.nthreads)
        items = []
        for part, (entry, computed) in zip(parts, encoded):
            if part is tail:
                self.nleft = len(tail)
                self._leftover[: self.nleft] = tail
                items.append((self.nfull, entry, self.nleft * self.rowbytes))
                self._stored_part(entry)
                self._note(self.nfull, tail, computed)
                self._leftover_stored = True
                break
            items.append((self.nfull, entry, self.chunk_bytes))
            self._note(self.nfull, part, computed)
            self.nfull += 1
        return items

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

    def _load_leftover(self, out: np.ndarray) -> None:
        """Decode the stored last chunk's first ``len(out)`` rows into `out`."""
        (entry,) = self.store.get(self.nfull, self.nfull + 1)
        if isinstance(entry, Special):
            fill_special(out, entry.kind, self.itemsize, entry.value)
        else:
            # A crash after an index write but before meta/sizes can leave this
            # chunk holding more rows than the metadata counts: keep the prefix.
            nbytes = self._decoded_size(entry, self.nfull, self.nleft * self.rowbytes,
                                        self.chunk_bytes)
            self._decode_into(entry, out, self.nfull, nbytes // self.rowbytes)
        self._stored_part(entry)
        self.decoded_bytes += len(out) * self.rowbytes  # stored rows, decoded at first use

    # -- writing ---------------------------------------------------------------

    def _check_writable(self) -> None:
        if self._closed:
            raise ValueError("the array is closed")
        if self._store.readonly:
            raise ReadOnlyError("the dataset is opened read-only (mode 'r')")
        lock = self._store.lock
        if lock is not None and not lock.acquired:
            writer.take(self)  # the first change: lock, then re-read the dataset
        if self._left_to_load:  # decoded before anything changes the counts
            self._leftover  # noqa: B018

    #: :meth:`append` may encode the last short chunk with the full ones (``last``).
    _tail_with_chunks = True

    @writer.guarded
    def append(self, rows: np.ndarray, last: bool = False) -> None:
        """Append rows (an array of shape ``(n, *rowshape)`` and this dtype).

        With `last` (a commit follows at once: a new dataset's rows), rows
        left after the last full chunk are encoded together with the full
        chunks, in the same parallel pass, and stored as the short last chunk
        the commit would store.

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
                part = rows[pos:pos + take * cl]
                pos += take * cl
                full -= take
                if not full and last and pos < n and self._tail_with_chunks:
                    items.extend(self._encode_full(part, tail=rows[pos:]))
                    pos = n
                else:
                    items.extend(self._encode_full(part))
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
            self._stored_part(entry)
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
            self._stored_part(entry)
        elif keep:
            last = self.chunk_bytes
        self.store.truncate(keep, last, self._sizes())
        # The kept leftover chunk keeps its (wider) bounds.
        self._zones.truncate(keep, partial=bool(self.nleft))
        self._leftover_stored = True
        self._dirty = False
        self._committed()
        if self.nleft and not self.store.native:  # rewrite it holding exactly its rows
            self._leftover_stored, self._dirty = False, True
            self.flush()

    @writer.guarded
    def delete(self, positions: np.ndarray) -> None:
        """Remove the rows at `positions` (sorted, distinct, within the array),
        durably, as one commit.

        Only the chunks from the first removed row on are rewritten: the
        rows kept are re-encoded into chunks from there (a chunk's rows read
        before the chunk is written over, so memory holds about two chunks),
        the store is cut to the new number of chunks, and the new last
        chunk holds the leftover.  Order (docs/format/README.md §3): the new
        chunks (after all committed data), the zone map with bounds covering
        old and new rows, then ``meta/sizes`` (the commit: a crash before it
        leaves the old rows, after it the new ones); then the zone map again
        with the rewritten chunks' exact bounds.

        Raises
        ------
        ValueError
            If `positions` are not sorted, distinct row numbers of the array,
            or the store is legacy (format v1 rewrites files in place: no
            commit point to make a deletion atomic).
        ReadOnlyError
            If the store is read-only.
        AppendOnlyError
            (a ReadOnlyError) If the store takes appends only (object storage).
        """
        self._check_writable()
        if self._store.append_only:
            from bcolzx._storage.remote import append_only

            raise append_only("delete rows of", self._store.rootdir)
        pos = np.asarray(positions, dtype=np.int64).reshape(-1)
        n = len(self)
        if len(pos) and (pos[0] < 0 or pos[-1] >= n or np.any(np.diff(pos) <= 0)):
            raise ValueError(f"positions must be sorted, distinct rows of 0..{n - 1}")
        if not self._store.native:
            raise ValueError("deleting rows needs the bcolzx format (a legacy bcolz v1 "
                             "dataset rewrites its files in place); convert it first")
        if not len(pos):
            return
        self.flush()  # what came before is one commit, the deletion the next
        self.free_cache()
        cl, old_nfull, old_nleft = self.chunklen, self.nfull, self.nleft
        old_chunks = self._stored_chunks()
        c0 = int(pos[0]) // cl
        keep = np.ones(cl, dtype=bool)
        pending = []  # kept rows not yet in a chunk, in order
        held = 0
        written, w = [], c0
        for c in range(c0, old_nfull + (1 if old_nleft else 0)):
            lo, hi = c * cl, min(n, (c + 1) * cl)
            rows = self.read(lo, hi)
            gone = pos[(pos >= lo) & (pos < hi)] - lo
            if len(gone):
                keep[:hi - lo] = True
                keep[gone] = False
                rows = rows[keep[:hi - lo]]
            pending.append(rows)
            held += len(rows)
            while held >= cl:  # a full chunk of kept rows: it replaces chunk w (<= c)
                block = np.concatenate(pending)
                chunk, rest = block[:cl], block[cl:]
                self._put([(w, self._encode(chunk), self.chunk_bytes)])
                self._note(w, chunk)
                written.append((w, chunk))
                pending, held, w = [rest], len(rest), w + 1
        tail = np.concatenate(pending) if pending else self._leftover[:0]
        length = n - len(pos)
        self.nfull, self.nleft = w, len(tail)
        nchunks = w + (1 if len(tail) else 0)
        if len(tail):
            # The new last chunk.  Only the last slot of a superchunk file may
            # hold a short chunk, and this one is not the last until the
            # commit: it is stored full, its first rows the leftover (a reader
            # uses the first rows of a longer last chunk, format §1), the rest
            # copies of its first row (bounds unchanged, compressed away).
            self._leftover[:len(tail)] = tail
            padded = np.empty((cl, *self.rowshape), dtype=self.dtype)
            padded[:len(tail)] = tail
            padded[len(tail):] = tail[0]
            self._put([(w, self._encode(padded), self.chunk_bytes)])
            self._note(w, tail)
            written.append((w, tail))
        elif w < old_chunks:
            self._zones.partial = None
        last = self.chunk_bytes if nchunks else 0
        # Bounds of old and new rows alike, every old chunk still described.
        self._zones.save(staged=True)
        self.store.truncate(nchunks, last, Sizes((length, *self.rowshape), length
                                                   * self.rowbytes, self.store.cbytes))
        self._zones.truncate(nchunks, partial=bool(len(tail)))
        self._leftover_stored = True
        self._dirty = False
        self._committed()
        self.free_cache()  # nothing read while rewriting outlives it (chunk numbers reused)
        # Committed: the rewritten chunks' bounds may narrow to their rows.
        for chunk, rows in written:
            self._zones.reset(chunk, rows)
        try:
            self._zones.save()
        except OSError:  # the wider bounds stay right; the next flush writes these
            self._zones.dirty = True

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
                not (self._dirty or self.store.unpublished or self._journal_pending(journal)):
            return
        if not self._dirty:  # journal rows replayed at opening: take the lock to commit them
            self._check_writable()
        if self.nleft and not self._leftover_stored:
            rows = self._leftover[: self.nleft]
            entry = self._encode(rows)
            self._put([(self.nfull, entry, self.nleft * self.rowbytes)])
            self._stored_part(entry)
            self._note(self.nfull, rows)
            self._leftover_stored = True
        self._zones.save(staged=True)  # data first, then the zone map, then the commit point
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
        (:mod:`bcolzx._table`); a writable array is trimmed instead.

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
        # The chunk holds more rows than kept: its prefix is the leftover, decoded on first use.
        self._left_buf, self._left_to_load = None, bool(self.nleft)
        self._leftover_stored = bool(self.nleft)

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
        DECODED.drop_owner(self._owner)
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
        owner = self._owner
        if owner is not None:  # its decompressed chunks go at the cache's next use
            DECODED.forget(owner)
