"""The read path of an array's chunks: size checks, decoding, reads by row range.

:class:`ChunkReader` is the base of :class:`~bcolzx._storage.engine.ChunkedArray`,
which holds the state (the store, the leftover, the decompressor, the chunk
cache, the zone map) and adds the write path.  Every chunk is verified by its
store (checksum) and checked against the metadata (its decoded size) before
it is decoded; whole chunks are decompressed straight into the caller's
array, runs of them on the pool's threads, and a partial chunk only in the
blocks that hold the rows asked for.
"""

from __future__ import annotations

import numpy as np

from bcolzx import _threads
from bcolzx._ext import codec
from bcolzx._ext.special import fill_special
from bcolzx._storage.base import Special
from bcolzx._storage.chunkcache import DECODED
from bcolzx._storage.zones import bounds
from bcolzx.errors import CorruptDataError, UnsafeFileError, UnsupportedFormatError

__all__ = ["ChunkReader"]

#: Bytes of output below which a run of chunks is decoded by one thread
#: (handing work to another thread costs tens of microseconds).
_BYTES_PER_THREAD = 1 << 20
#: Chunks fetched together by :meth:`ChunkReader.take_sorted` (bounds the memory
#: their compressed bytes hold).
_GATHER = 256


class ChunkReader:
    """Reading rows of an array stored in chunks (the base of ``ChunkedArray``).

    It uses, from the array: ``store``, ``chunklen``, ``rowshape``, ``dtype``,
    ``itemsize``, ``rowbytes``, ``chunk_bytes``, ``nfull``, ``nleft``,
    ``nthreads``, ``_leftover``, ``_leftover_stored``, ``_dec`` (its
    decompressor), ``_cache`` (:class:`~bcolzx._storage.chunkcache.ChunkCache`),
    ``_zones`` (:class:`~bcolzx._storage.zones.ZoneMap`), ``_items_per_row``
    and ``_owner`` (its key in the decompressed-chunk cache,
    :data:`~bcolzx._storage.chunkcache.DECODED`).

    :attr:`decoded_bytes` counts the uncompressed bytes of the stored rows
    that reads decompressed so far (the stored leftover once, when first
    used; rows held in memory or copied from the decompressed-chunk cache
    are not counted): what a query or a scan cost in decompression.
    """

    #: Uncompressed bytes of stored rows decoded by this reader (see above).
    decoded_bytes: int = 0

    def _entry(self, chunk: int):
        """The verified stored entry of `chunk`, through the cache of compressed chunks."""
        entry = self._cache.get(chunk)
        if entry is not None:
            return entry
        entry = self.store.get_one(chunk)
        self._check_full(entry, chunk)
        if self.store.rootdir is not None:  # in memory: the store is its own cache
            self._cache.put(chunk, entry)
        return entry

    def _check_full(self, entry, chunk: int) -> None:
        """Raise CorruptDataError unless `entry` decodes to a full chunk's bytes."""
        if not isinstance(entry, Special):
            self._decoded_size(entry, chunk, self.chunk_bytes)

    def _decoded_size(self, entry, chunk: int, low: int, high: int | None = None) -> int:
        """The uncompressed bytes of stored chunk `entry`, from its header: whole
        rows, from `low` to `high` (default: exactly `low`).

        The one check of a chunk's size against the metadata, before anything
        is decoded (C-Blosc2 would otherwise fill an output buffer partly).

        Raises
        ------
        CorruptDataError
            Naming this dataset and `chunk`.
        """
        nbytes = self._nbytes_of(entry, chunk)
        high = low if high is None else high
        if not low <= nbytes <= high or nbytes % self.rowbytes:
            want = low if low == high else f"{low} to {high}"
            raise CorruptDataError(f"chunk decodes to {nbytes} bytes, expected {want}",
                                   **self._where(chunk))
        return nbytes


    def chunk_stats(self) -> np.ndarray | None:
        """Bounds of the full chunks: a record array with ``min``, ``max`` (of the
        non-NaN values) and ``nan`` per chunk, or None when unknown.

        Raises
        ------
        CorruptDataError
            If the stored zone map is damaged.
        """
        self.settle()
        return self._zones.stats(self.nfull, self._stored_chunks())

    def exact_chunks(self) -> np.ndarray | None:
        """Per full chunk, whether its zone-map bounds (:meth:`chunk_stats`) are
        values it holds (then its min and max need no read); None without a
        zone map.  Chunks rewritten with other bounds, and zone maps written
        by older versions, are not exact.

        Raises
        ------
        CorruptDataError
            If the stored zone map is damaged.
        """
        self.settle()
        return self._zones.exact_flags(self.nfull, self._stored_chunks())


    def _decode_into(self, entry, out: np.ndarray, chunk: int, stored_rows: int) -> None:
        """Decode a stored chunk of `stored_rows` rows; its first ``len(out)`` rows go to `out`."""
        if isinstance(entry, Special):
            fill_special(out, entry.kind, self.itemsize, entry.value)
            return
        self._decoded_size(entry, chunk, stored_rows * self.rowbytes)
        try:
            if len(out) == stored_rows:
                self._dec.decompress(entry, out)
            else:
                tmp = np.empty((stored_rows, *self.rowshape), dtype=self.dtype)
                self._dec.decompress(entry, tmp)
                out[...] = tmp[: len(out)]
        except CorruptDataError as exc:
            raise self._located(exc, chunk) from None

    def _decode_hot(self, entry, chunk: int, epoch: int) -> np.ndarray:
        """Full stored chunk `chunk`, read a second time: decoded whole and kept in
        the decompressed-chunk cache (:data:`~bcolzx._storage.chunkcache.DECODED`)
        unless it changed since `epoch`."""
        rows = np.empty((self.chunklen, *self.rowshape), dtype=self.dtype)
        self._decode_into(entry, rows, chunk, self.chunklen)
        DECODED.put(self._owner, chunk, rows, epoch, own=True)
        return rows

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
        cl, stored_end = self.chunklen, self.nfull * self.chunklen
        if not 0 <= start <= stop <= stored_end + self.nleft:
            raise IndexError(f"rows {start}..{stop} outside 0..{len(self)}")
        if start < stored_end:
            c0 = start // cl
            if stop <= (c0 + 1) * cl:  # inside one stored chunk: a hot one is copied at once
                rows = DECODED.get(self._owner, c0)
                if rows is not None:
                    if out is None:
                        return rows[start - c0 * cl:stop - c0 * cl].copy()
                    out[...] = rows[start - c0 * cl:stop - c0 * cl]
                    return out
        if out is None:
            out = np.empty((stop - start, *self.rowshape), dtype=self.dtype)
        if start < stored_end:
            c0 = start // cl
            c1 = (min(stop, stored_end) + cl - 1) // cl
            epoch = DECODED.epoch(self._owner)
            hot = self._hot(c0, c1)
            self.decoded_bytes += self.rowbytes * sum(
                min(stop, (c + 1) * cl) - max(start, c * cl) for c in range(c0, c1)
                if c not in hot)
            admit = DECODED.admits((stop - start) * self.rowbytes)
            # The whole array, small enough: kept on its first read (a scan of a
            # larger one reads it in parts, which wait for their second read).
            whole = admit and start == 0 and stop == len(self)
            # One chunk (small reads): through the chunk cache; more: one read per
            # file, of the chunks the decompressed-chunk cache does not hold.
            entries = [self._entry(c0)] if c1 - c0 == 1 and not hot else \
                self._cold_entries(c0, c1, hot)
            kept = self._to_keep(range(c0, c1), entries, hot, admit, whole)
            # The full ones get their place in the cache now (copied in as decoded).
            offered = self._places(c for c in kept if start <= c * cl and (c + 1) * cl <= stop)
            run, run_at = [], 0
            for c, entry in zip(range(c0, c1), entries):
                a, b = max(start, c * cl), min(stop, (c + 1) * cl)
                dest = out[a - start:b - start]
                if c in hot:  # read before: copied from the decompressed-chunk cache
                    self._flush_run(run, out, run_at, c, offered, epoch)
                    run = []
                    dest[...] = hot[c][a - c * cl:b - c * cl]
                    continue
                if c in kept and c not in offered:  # a part of a chunk to keep
                    self._flush_run(run, out, run_at, c, offered, epoch)
                    run = []
                    dest[...] = self._decode_hot(entry, c, epoch)[a - c * cl:b - c * cl]
                    continue
                if b - a == cl and not isinstance(entry, Special):
                    if not run:  # its size is checked by the decoder, from its header
                        run_at = a - start
                    run.append(entry)
                    continue
                self._flush_run(run, out, run_at, c, offered, epoch)
                run = []
                if b - a == cl:
                    self._decode_into(entry, dest, c, cl)
                else:
                    self._decode_part(entry, dest, c, a - c * cl)
            self._flush_run(run, out, run_at, c1, offered, epoch)
        if stop > stored_end:
            lo = max(start, stored_end)
            out[lo - start:] = self._leftover[lo - stored_end:stop - stored_end]
        return out

    def _to_keep(self, chunks, entries: list, hot: dict, admit: bool,
                 whole: bool = False) -> set:
        """Those of `chunks` (their `entries`) that a read admitted by the cache
        (`admit`) keeps decompressed: stored, not special, not in `hot`, read
        before (or read by a read of the whole array, `whole`)."""
        if not admit:
            return set()
        return {c for c, entry in zip(chunks, entries)
                if c not in hot and not isinstance(entry, Special)
                and (whole or DECODED.hot(self._owner, c))}

    def _places(self, chunks) -> dict[int, np.ndarray]:
        """New rows for each of `chunks`, to be kept decompressed, by chunk number
        (one array each: the cache counts and frees them one by one)."""
        shape = (self.chunklen, *self.rowshape)
        return {c: np.empty(shape, dtype=self.dtype) for c in chunks}

    def _hot(self, c0: int, c1: int) -> dict[int, np.ndarray]:
        """The rows of the chunks of ``c0 .. c1-1`` held by the decompressed-chunk
        cache, by chunk number (held here: an eviction meanwhile does not matter)."""
        return {c: rows for c in range(c0, c1)
                if (rows := DECODED.get(self._owner, c)) is not None}

    def _cold_entries(self, c0: int, c1: int, hot: dict) -> list:
        """The stored entries of full chunks ``c0 .. c1-1``, None for those in
        `hot`: the others are read from the store, one read per run of them
        (a repeated scan of cached chunks reads no file)."""
        entries: list = []
        c = c0
        while c < c1:
            if c in hot:
                entries.append(None)
                c += 1
                continue
            end = c + 1
            while end < c1 and end not in hot:
                end += 1
            entries.extend(self.store.get(c, end))
            c = end
        return entries

    def _flush_run(self, run: list, out: np.ndarray, at: int, next_chunk: int,
                   offered: dict, epoch: int) -> None:
        """Decode `run`, consecutive full chunks ending before `next_chunk`, into
        `out` from row `at`: contiguous parts of it on the pool's threads (each
        with a single-threaded context of its own), straight into place.  The
        chunks of `offered` (chunk number: its new rows) are then copied to
        their rows and kept in the decompressed-chunk cache by the thread that
        decoded them (while they are in its cache), unless the array changed
        since `epoch`."""
        if not run:
            return
        first, cl = next_chunk - len(run), self.chunklen
        nparts = min(self.nthreads, len(run),
                     max(1, len(run) * self.chunk_bytes // _BYTES_PER_THREAD))
        bounds_ = [len(run) * w // nparts for w in range(nparts + 1)]

        def part(w: int) -> None:
            a, b = bounds_[w], bounds_[w + 1]
            region = out[at + a * cl:at + b * cl]
            try:
                if b - a == 1:  # one chunk: C-Blosc2's own threads split its blocks
                    self._dec.decompress(run[a], region, exact=True)
                else:  # this thread's single-threaded context, one chunk after another
                    _threads.decompressor().decompress_many(run[a:b], region,
                                                            chunk_nbytes=self.chunk_bytes)
            except CorruptDataError as exc:
                chunk = first + a + exc.chunk if exc.chunk is not None else None
                raise CorruptDataError(str(exc), **self._where(chunk)) from None
            for k in range(a, b):
                place = offered.get(first + k)
                if place is not None:
                    place[...] = region[(k - a) * cl:(k - a + 1) * cl]
                    DECODED.put(self._owner, first + k, place, epoch, own=True)

        for _ in _threads.map_ordered(part, range(nparts), nparts):
            pass

    def take_sorted(self, sidx: np.ndarray) -> np.ndarray:
        """Rows at the sorted positions `sidx` (in range), for stores that fetch
        scattered chunks together (object storage): the chunks they fall in
        are requested in batches, each row decoded alone when its chunk holds
        at most two of them.

        Raises
        ------
        CorruptDataError, ChecksumError
            If a chunk is damaged.
        """
        out = np.empty((len(sidx), *self.rowshape), dtype=self.dtype)
        cl = self.chunklen
        stored = int(np.searchsorted(sidx, self.nfull * cl))
        chunks = sidx[:stored] // cl
        wanted = np.unique(chunks).tolist()
        for b in range(0, len(wanted), _GATHER):
            batch = wanted[b:b + _GATHER]
            for c, entry in zip(batch, self.store.get_many(batch)):
                self._check_full(entry, c)
                lo, hi = np.searchsorted(chunks, [c, c + 1])
                rows = sidx[lo:hi] - c * cl
                if len(rows) > 2 or isinstance(entry, Special) or self.itemsize > 255:
                    tmp = np.empty((cl, *self.rowshape), dtype=self.dtype)
                    self._decode_into(entry, tmp, c, cl)
                    out[lo:hi] = tmp[rows]
                    continue
                for k, r in enumerate(rows.tolist()):
                    self._getitem(entry, c, r, out[lo + k:lo + k + 1])
        if stored < len(sidx):
            out[stored:] = self._leftover[sidx[stored:] - self.nfull * cl]
        return out

    def map_chunks(self, fn, batch: int = 64) -> list:
        """``fn(rows)`` on every chunk's rows, in order (the leftover last).

        Full chunks are decoded on ``nthreads`` threads, each into a scratch
        buffer of its own that `fn` reduces while it is still in cache: the
        whole array is never materialised (a chunk read before, to be kept
        decompressed, is decoded into its place in that cache instead).  A
        batch of chunks all held by the decompressed-chunk cache is reduced on
        the calling thread (memory-speed work, which a hand-off to the pool
        would slow).  `rows` is valid only during the call (`fn` must not keep
        it) and may be read-only (a chunk of the decompressed-chunk cache, for
        arrays read more than once).

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
        admit = DECODED.admits(self.nfull * self.chunk_bytes)
        epoch = DECODED.epoch(self._owner)

        def one(job):  # (fn's result, whether the chunk was decompressed)
            c, entry, cached, place = job
            if cached is not None:
                return fn(cached), False
            if place is not None:  # a chunk read before: decoded into its place in the cache
                self.decode_chunk(entry, c, place)
                DECODED.put(self._owner, c, place, epoch, own=True)
                return fn(place), True
            rows = _threads.buffer(self.chunk_bytes).view(self.dtype).reshape(shape)
            self.decode_chunk(entry, c, rows)
            return fn(rows), True

        results = []
        for c0 in range(0, self.nfull, batch):
            c1 = min(self.nfull, c0 + batch)
            hot = self._hot(c0, c1)  # only the other chunks are read from the store
            cold = self._cold_entries(c0, c1, hot)
            places = self._places(self._to_keep(range(c0, c1), cold, hot, admit))
            jobs = zip(range(c0, c1), cold, [hot.get(c) for c in range(c0, c1)],
                       [places.get(c) for c in range(c0, c1)])
            # Chunks all in the cache: memory-speed work that a hand-off to
            # another thread would cost more than it saves.
            nthreads = 1 if len(hot) == c1 - c0 else self.nthreads
            for result, decoded in _threads.map_ordered(one, jobs, nthreads):
                results.append(result)
                self.decoded_bytes += self.chunk_bytes if decoded else 0
        if self.nleft:
            results.append(fn(self._leftover[:self.nleft]))
        return results

    def entries(self, c0: int, c1: int) -> list:
        """The stored entries of full chunks ``c0 .. c1-1``, verified (checksums),
        for :meth:`decode_chunk`: read on the calling thread (stores are
        read from one thread), decoded on others.  Counted in
        :attr:`decoded_bytes`.

        Raises
        ------
        IndexError
            If the chunks are not full chunks of the array.
        CorruptDataError, ChecksumError
            If a chunk is damaged.
        """
        if not 0 <= c0 <= c1 <= self.nfull:
            raise IndexError(f"chunks {c0}..{c1} outside the full chunks 0..{self.nfull}")
        self.decoded_bytes += (c1 - c0) * self.chunk_bytes
        return self.store.get(c0, c1)

    def decode_chunk(self, entry, chunk: int, out: np.ndarray) -> None:
        """Decode `entry` (from :meth:`entries`), full chunk number `chunk`, into
        `out` (``chunklen`` rows), with the calling thread's single-threaded
        decompressor: safe on any thread of the pool.

        Raises
        ------
        CorruptDataError
            If the chunk does not decode to a full chunk (naming it).
        """
        if isinstance(entry, Special):
            fill_special(out, entry.kind, self.itemsize, entry.value)
            return
        self._check_full(entry, chunk)
        try:
            _threads.decompressor().decompress(entry, out)
        except CorruptDataError as exc:
            raise self._located(exc, chunk) from None

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
        epoch = DECODED.epoch(self._owner)  # before the look-up (see DecodedCache.put)
        rows = DECODED.get(self._owner, c)
        if rows is not None:
            return rows[r].copy()
        entry = self._entry(c)
        if not isinstance(entry, Special) and DECODED.admits(self.chunk_bytes) and \
                DECODED.hot(self._owner, c):
            self.decoded_bytes += self.chunk_bytes
            return self._decode_hot(entry, c, epoch)[r].copy()
        self.decoded_bytes += self.rowbytes
        out = np.empty((1, *self.rowshape), dtype=self.dtype)
        if isinstance(entry, Special) or self.itemsize > 255:
            self._decode_part(entry, out, c, r)
        else:
            self._getitem(entry, c, r, out)
        return out[0]

    def read_item(self, i: int):
        """Row `i` of a one-dimensional array as NumPy's Python scalar (``.item()``
        of :meth:`read_row`, which says what it raises); from a chunk held
        decompressed, without an array in between."""
        c, r = divmod(i, self.chunklen)
        if i >= 0 and c < self.nfull:
            rows = DECODED.get(self._owner, c)
            if rows is not None:
                return rows.item(r)
        return self.read_row(i).item()

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
        list of CorruptDataError, UnsupportedFormatError or UnsafeFileError
            The problems found, each naming its file and chunk; empty when
            the data is sound (a damaged chunk header may name a codec that
            does not exist: UnsupportedFormatError; a FIFO or a device in
            place of a file: UnsafeFileError).  Damage never raises from here.
        """
        problems: list[CorruptDataError] = []
        stats = None
        try:
            stats = self.chunk_stats()
        except CorruptDataError as exc:
            problems.append(exc)
        buf = np.empty((self.chunklen, *self.rowshape), dtype=self.dtype)
        stored = self.nfull + (1 if self.nleft and self._leftover_stored else 0)
        # A store with a file per chunk (legacy v1) says how many its files can
        # hold at most: a length forged to 2**62 rows is one problem, not a
        # loop over every chunk it claims.
        present = getattr(self.store, "present_chunks", None)
        if present is not None and present() < stored:
            limit = present()
            problems.append(CorruptDataError(
                f"the metadata counts {stored} stored chunks, but the files of the highest "
                f"numbers hold at most {limit}: chunks {limit} to {stored - 1} are missing",
                path=self.store.rootdir))
            stored = limit
        # Chunks per file: the other chunks of a file that failed as a whole
        # (missing, no valid index) are not tried one by one.
        geometry = getattr(self.store, "geometry", None)
        per_file = geometry.nslots if geometry is not None else 1
        c = -1
        while c + 1 < stored:
            c += 1
            rows = self.chunklen if c < self.nfull else self.nleft
            try:
                entry = self.store.get_one(c)
                if isinstance(entry, Special):
                    fill_special(buf[:rows], entry.kind, self.itemsize, entry.value)
                else:
                    # A last chunk may hold more rows than the metadata counts
                    # (a crash between its write and meta/sizes): readers cut it.
                    nbytes = self._decoded_size(entry, c, rows * self.rowbytes, self.chunk_bytes)
                    self._decode_into(entry, buf[:nbytes // self.rowbytes], c,
                                      nbytes // self.rowbytes)
                if stats is not None and c < len(stats) and rows:
                    lo, hi, nan = bounds(buf[:rows])
                    zlo, zhi, znan = stats[c]
                    if (nan and not znan) or (lo == lo and not (zlo <= lo and hi <= zhi)):
                        raise CorruptDataError(
                            f"zone map bounds ({zlo}, {zhi}, nan={znan}) do not cover the "
                            f"chunk's values ({lo}, {hi}, nan={nan})", **self._where(c))
            except (CorruptDataError, UnsupportedFormatError, UnsafeFileError) as exc:
                # A damaged chunk header can name a codec that does not exist.
                # A problem of a whole file (missing, bad index) is reported once.
                whole_file = getattr(exc, "chunk", None) is None
                if not (whole_file and any(type(p) is type(exc) and str(p) == str(exc)
                                           for p in problems)):
                    problems.append(exc)
                if whole_file and per_file > 1:
                    last = min(stored, (c // per_file + 1) * per_file) - 1
                    rows += sum(self.chunklen if k < self.nfull else self.nleft
                                for k in range(c + 1, last + 1)) if last > c else 0
                    c = last
            if progress is not None:
                progress(rows * self.rowbytes)
        return problems


    def _where(self, chunk: int) -> dict:
        return {"path": self.store.rootdir, "chunk": chunk}
