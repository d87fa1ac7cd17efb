"""One superchunk file ``data/__N.bin`` (docs/format/superchunk.md).

:class:`SuperchunkFile` keeps the file's header fields and current index in
memory and opens the file only for the duration of a call, so an idle
dataset holds no file descriptor.  Writes follow the spec's order: chunk bytes
after all live data, fsync, then the *other* index copy with the next
generation, fsync.
"""

from __future__ import annotations

import errno
import os
import secrets
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from bcolzx._ext import index as _index
from bcolzx._ext import writeback
from bcolzx._format import files as _files
from bcolzx._format.jsonfile import fsync_dir
from bcolzx.errors import CorruptDataError, TruncatedDataError

#: What a special-value chunk (no data stored) counts for in ``cbytes``: the
#: 16 bytes of its index entry, so that ``nbytes / cbytes`` stays finite.
SPECIAL_CBYTES = 16
#: Written bytes gathered before the kernel is asked to start writing them to
#: the device (fewer, larger requests; small appends would otherwise ask per chunk).
WRITEBACK_BYTES = 8 << 20


@dataclass(frozen=True)
class Special:
    """A chunk stored as a constant (kind as in the spec, value for kind 3)."""

    kind: int
    value: bytes | None = None


class Geometry(NamedTuple):
    """What every superchunk of a dataset shares (from ``meta/storage``; an
    immutable record, made at every open: a named tuple is made fastest)."""

    nslots: int          # K
    chunk_size: int      # uncompressed bytes of a full chunk
    typesize: int        # item size of the dtype
    checksum_type: int   # index.CHECKSUM_*

    @property
    def header_typesize(self) -> int:
        return self.typesize if self.typesize <= 255 else 0

    @property
    def checksum_size(self) -> int:
        return _index.checksum_size(self.checksum_type)


def first_generation() -> int:
    """The generation of a new file's index copy A: random in 1 .. 2**31."""
    return 1 + secrets.randbelow(1 << 31)


def _discard(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


#: Buffers one ``pwritev`` of :meth:`SuperchunkFile.write` takes at most (IOV_MAX is 1024).
_IOV_PARTS = 512


def _pwrite_all(fd: int, parts: list, offset: int, total: int) -> None:
    """Write `parts` (buffers, `total` bytes) at `offset`, resuming after short writes.

    A file system that fills up writes what fits, then refuses the rest with
    its own error (ENOSPC, EDQUOT...), which is raised.
    """
    done = os.pwritev(fd, parts, offset)
    if done == total:
        return
    rest = memoryview(b"".join(bytes(p) for p in parts))[done:]
    while rest:
        n = os.pwrite(fd, rest, offset + done)
        if n <= 0:  # pragma: no cover - pwrite raises rather than return 0
            raise OSError(errno.EIO, "write returned 0 bytes")
        done += n
        rest = rest[n:]


def _pread_exact(fd: int, n: int, offset: int, path: str) -> bytes:
    data = os.pread(fd, n, offset)
    if len(data) != n:
        raise TruncatedDataError(f"file ends at byte {offset + len(data)}, {n} bytes needed "
                                 f"from {offset}", path=path)
    return data


#: Runs of chunks at least this long are read into a NumPy buffer: NumPy asks the
#: kernel for transparent huge pages for large allocations (madvise), so a run of
#: tens of MB costs a few dozen page faults instead of one per 4 KiB page, which
#: on a VM were most of a full read of data that does not compress.
_LARGE_RUN = 4 << 20


def _pread_run(fd: int, n: int, offset: int, path: str) -> memoryview:
    """:func:`_pread_exact` of a run of chunks, as a memoryview."""
    if n < _LARGE_RUN:
        return memoryview(_pread_exact(fd, n, offset, path))
    buf = np.empty(n, dtype=np.uint8)
    got = os.preadv(fd, [buf], offset)
    while 0 < got < n:  # a short read from a regular file: only at its end, or a signal
        more = os.preadv(fd, [buf[got:]], offset + got)
        if more <= 0:
            break
        got += more
    if got != n:
        raise TruncatedDataError(f"file ends at byte {offset + max(got, 0)}, {n} bytes needed "
                                 f"from {offset}", path=path)
    return memoryview(buf)


def read_head(path: str, geometry: Geometry) -> tuple[int, bytes]:
    """(size of the superchunk file `path`, its header and both index copies).

    Raises
    ------
    TruncatedDataError
        If the file is missing or shorter than its header and indexes.
    """
    try:
        fd = os.open(path, _files.READ_FLAGS)
    except FileNotFoundError:
        raise TruncatedDataError("superchunk file is missing", path=path) from None
    try:
        size = _files.check_regular(fd, path).st_size
        start = _index.data_start(geometry.nslots)
        if size < start:
            raise TruncatedDataError(f"superchunk file has {size} bytes, fewer than its header "
                                     f"and indexes ({start})", path=path)
        return size, _pread_exact(fd, start, 0, path)
    finally:
        os.close(fd)


def header_mismatch(head: dict, number: int, geometry: Geometry) -> str | None:
    """Why a decoded header is not that of superchunk `number` of a dataset of
    `geometry` (a file renamed, swapped or of another dataset), or None."""
    g = geometry
    expected = {"superchunk_number": number, "nslots": g.nslots, "chunk_size": g.chunk_size,
                "checksum_type": g.checksum_type, "typesize": g.header_typesize}
    wrong = {k: (head[k], v) for k, v in expected.items() if head[k] != v}
    if not wrong:
        return None
    return "superchunk header does not match the dataset's metadata: " + ", ".join(
        f"{k} is {got}, expected {want}" for k, (got, want) in wrong.items())


def check_header(head, number: int, geometry: Geometry, path: str | None) -> None:
    """Check the 32-byte header of superchunk `number` against the dataset's `geometry`.

    Raises
    ------
    CorruptDataError
        If the header is damaged or does not match.
    UnsupportedFormatError
        If it is of a newer format version.
    """
    wrong = header_mismatch(_index.decode_header(head, path), number, geometry)
    if wrong:
        raise CorruptDataError(wrong, path=path)


def select_copy(copies, geometry: Geometry, size: int, generation: int | None,
                path: str | None) -> tuple[_index.Index, int]:
    """The committed index of a superchunk file from its two copies (`copies`, the
    bytes after the header) and which copy it is (0: A, 1: B).

    `generation` is the one ``meta/sizes`` records: the copy with it is the
    committed one, whatever the other holds.  Without it, the valid copy with
    the higher generation.  `size` is the file's size (entries must lie inside).

    Raises
    ------
    CorruptDataError
        If no copy is valid, or none has `generation`.
    """
    g = geometry
    isize = _index.index_size(g.nslots)
    if generation is None:
        idx = _index.select(copies[:isize], copies[isize:], g.nslots, size, g.checksum_size,
                            g.header_typesize, path=path, chunk_size=g.chunk_size)
        if idx.copy is None:  # both copies never written: a crash inside create()
            raise CorruptDataError("superchunk file was never initialised", path=path)
        return idx, idx.copy
    problems = []
    for which in (0, 1):
        buf = copies[which * isize:(which + 1) * isize]
        try:
            idx = _index.Index.decode(buf, g.nslots, size, g.checksum_size, g.header_typesize,
                                      path=path, chunk_size=g.chunk_size)
        except CorruptDataError as exc:
            problems.append(f"copy {'AB'[which]}: {exc}")
            continue
        if idx.generation == generation:
            return idx, which
        problems.append(f"copy {'AB'[which]} has generation {idx.generation}")
    raise CorruptDataError(f"no valid index copy of generation {generation}, the one "
                           "meta/sizes records (" + "; ".join(problems) + ")", path=path)


class SuperchunkFile:
    """A superchunk file: its geometry, its current index, its write state.

    Use :meth:`create` or :meth:`load`; the constructor is internal.
    """

    def __init__(self, path: str, number: int, geometry: Geometry, index: _index.Index,
                 current_copy: int):
        self.path = path
        self.number = number
        self.geometry = geometry
        self.index = index
        self._current = current_copy
        # Never write below the end of the file: bytes once written are never
        # written over (a reader of an older commit may still read them), not
        # even after a truncation freed them (docs/format/README.md §3).
        self._floor = index.data_extent(geometry.checksum_size)
        #: A descriptor of the file as loaded, read through instead of opening
        #: `path` (``load(keep_open=True)``); None: each read opens `path`.
        self.fd: int | None = None
        self._dirty = False       # index changed since the last commit
        self._unsynced = False    # data written since the last fsync
        self._wb = (0, 0)         # bytes written whose write-back is not started yet
        #: Slots a damaged index could not prove ({slot: reason}), see :meth:`salvage`.
        self.lost: dict[int, str] = {}
        #: How a damaged index was rebuilt ("" for an intact file).
        self.salvaged = ""

    # -- opening ---------------------------------------------------------------

    @classmethod
    def create(cls, path: str, number: int, geometry: Geometry, *,
               keep_open: bool = False, durable: bool = True) -> "SuperchunkFile":
        """Write a new, empty superchunk file (replacing any stale one) and return it.

        Copy A is written empty with a random generation (1 to 2**31) and
        copy B empty with generation 0, as the spec requires; the file is fsynced and renamed
        into place, so a crash leaves either no file or a complete one.
        `keep_open` as in :meth:`load`.  Without `durable`, neither the file
        nor its directory is fsynced: the caller fsyncs both (the file with its
        first commit, ``commit(durable=False)`` then an fsync) before any
        ``meta/sizes`` names it; until then a crash may leave a file that no
        commit names, which the next writer replaces.

        Raises
        ------
        OSError
            If the file system refuses.
        """
        g = geometry
        header = _index.encode_header(g.checksum_type, g.header_typesize, g.chunk_size,
                                      g.nslots, number)
        a = _index.Index(g.nslots)
        # A random first generation: a file of another dataset (another column
        # of a ctable) put in this one's place does not carry the generation
        # its meta/sizes names, and is refused (docs/format/superchunk.md §3).
        a.generation = first_generation()
        b = _index.Index(g.nslots)
        tmp = path + ".tmp"
        _files.check_own_dir(tmp)
        # Never through a link planted at the temporary name (files.py).
        fd = _files.create_temp(tmp, read=keep_open)
        try:
            with os.fdopen(fd, "wb", closefd=False) as f:
                f.write(header + a.encode() + b.encode())
                f.flush()
                if durable:
                    os.fsync(f.fileno())
            os.replace(tmp, path)
        except BaseException:
            os.close(fd)
            _discard(tmp)  # a full disk keeps no half-written file
            raise
        sc = cls(path, number, g, a, 0)
        sc._floor = _index.data_start(g.nslots)
        if keep_open:
            sc.fd = fd
        else:
            os.close(fd)
        if durable:
            fsync_dir(os.path.dirname(path))
        return sc

    @classmethod
    def load(cls, path: str, number: int, geometry: Geometry,
             generation: int | None = None, *, keep_open: bool = False,
             past_end: bool = True) -> "SuperchunkFile":
        """Open an existing superchunk file: check its header, select its index.

        `generation` is the index generation ``meta/sizes`` recorded for this
        file: the copy with that generation is the committed one, whatever
        the other copy holds (a newer, uncommitted generation, or an older
        one).  Without it, the valid copy with the higher generation is used.

        With `keep_open`, the descriptor the file was loaded through stays
        open (attribute ``fd``) and every read goes through it: the object
        reads the very file it loaded, even once another one was renamed over
        it or it was removed (bytes once written are never written over,
        docs/format/README.md §3), until :meth:`close`.

        With `past_end` (the default), new chunks are written past the end
        of the file, never into space at its end that no index references
        any more: a truncation may have freed it while a reader of an older
        commit still reads it.  Without it (a dataset that was never
        truncated, where no commit ever referenced such space: the bytes of
        a write that failed), they are written right after the data the
        index references.

        Raises
        ------
        TruncatedDataError
            If the file is missing or shorter than its header and indexes.
        CorruptDataError
            If the header is damaged or does not match `number` and
            `geometry`, or no index copy is valid.
        UnsupportedFormatError
            If the file is of a newer format version.
        """
        g = geometry
        isize = _index.index_size(g.nslots)
        try:
            fd = os.open(path, _files.READ_FLAGS)
        except FileNotFoundError:
            raise TruncatedDataError("superchunk file is missing", path=path) from None
        keep = False
        try:
            size = _files.check_regular(fd, path).st_size
            if size < _index.data_start(g.nslots):
                raise TruncatedDataError(
                    f"superchunk file has {size} bytes, fewer than its header and indexes "
                    f"({_index.data_start(g.nslots)})", path=path)
            check_header(_pread_exact(fd, _index.HEADER_SIZE, 0, path), number, g, path)
            copies = _pread_exact(fd, 2 * isize, _index.HEADER_SIZE, path)
            sc = cls._select(path, number, g, copies, size, generation)
            if past_end:
                sc._floor = max(sc._floor, size)
            if keep_open:
                sc.fd, keep = fd, True
            return sc
        finally:
            if not keep:
                os.close(fd)

    @classmethod
    def _select(cls, path: str, number: int, g: Geometry, copies: bytes, size: int,
                generation: int | None) -> "SuperchunkFile":
        """The file with the index copy :meth:`load` selects (see there)."""
        idx, which = select_copy(copies, g, size, generation, path)
        return cls(path, number, g, idx, which)

    @classmethod
    def salvage(cls, path: str, number: int, geometry: Geometry, generation: int,
                needed: int, last_size: int) -> "SuperchunkFile":
        """Open a file whose committed index copy (or header) is damaged.

        The index is rebuilt from what can be proved (:mod:`bcolzx._format.salvage`,
        docs/format/superchunk.md §6); the chunks of the slots in ``lost``
        raise :class:`CorruptDataError` when read, the others read normally.
        Call it only when :meth:`load` failed and no writer explains it.  A
        file with lost slots refuses every write (repair it first).

        Raises
        ------
        CorruptDataError, TruncatedDataError
            If nothing can be proved (a file of another dataset or number,
            one cut inside its indexes, no copy of the named generation).
        """
        from bcolzx._format.salvage import salvage

        got = salvage(path, number, geometry, generation, needed, last_size)
        sc = cls(path, number, geometry, got.index, got.copy)
        sc.lost = dict(got.lost)
        for slot in range(needed):
            if slot not in sc.lost and got.index.kind(slot) == "empty":
                sc.lost[slot] = "its entry is empty"
        sc.salvaged = got.how or "damaged"
        return sc

    @classmethod
    def rebuild(cls, path: str, number: int, geometry: Geometry, chunks: dict,
                needed: int, last_size: int) -> "SuperchunkFile":
        """A new file at `path` (replacing any there) whose committed index holds
        `chunks` (``{slot: compressed chunk bytes or Special}``) in their slots and
        leaves the other slots below `needed` empty: their chunks raise when read.

        What ``bcolzx repair`` reads a damaged file through, in a private copy of
        the dataset: once both its index copies are destroyed
        (:func:`bcolzx._format.salvage.scan` found `chunks`), or with the chunks
        a reader loses that :func:`bcolzx._format.salvage.recover` found; the
        checksums are computed again for the slots, so every chunk is verified
        once more when it is read.

        Raises
        ------
        OSError
            If the file system refuses.
        ValueError
            If a slot is outside ``0 .. needed - 1``.
        """
        sc = cls.create(path, number, geometry)
        idx, g = sc.index, geometry
        if any(not 0 <= slot < needed for slot in chunks):
            raise ValueError(f"slots {sorted(chunks)} outside 0..{needed - 1}")
        for slot in range(needed):
            size = last_size if slot == needed - 1 else g.chunk_size
            if slot in chunks:
                sc.write([(slot, chunks[slot], size)])
            else:  # lost: an empty entry below nchunks (format §3)
                idx.nchunks = slot + 1
                idx.last_chunk_size = size
                sc._dirty = True
        sc.commit()
        return sc

    def _refuse_if_lost(self) -> None:
        if self.lost:
            raise CorruptDataError(
                f"the index of this file is damaged and chunks {self.lost_chunks()} cannot be "
                "proved: it is read-only until `bcolzx repair` rebuilds the dataset",
                path=self.path)

    def lost_chunks(self) -> list[int]:
        """Global numbers of the chunks a damaged index could not prove."""
        return [self.global_number(s) for s in sorted(self.lost)]

    # -- the descriptor a loaded file keeps --------------------------------------

    def close(self) -> None:
        """Close the descriptor kept by ``load(keep_open=True)``, if any.

        Only when nothing reads through it any more: by its last user, or
        the garbage collector.
        """
        fd, self.fd = self.fd, None
        if fd is not None:
            os.close(fd)

    def __del__(self) -> None:
        if getattr(self, "fd", None) is not None:
            self.close()

    def _reading(self) -> int:
        """A descriptor to read through: the one kept, or `path` opened now."""
        return self.fd if self.fd is not None else os.open(self.path, _files.READ_FLAGS)

    def _done(self, fd: int) -> None:
        if fd != self.fd:
            os.close(fd)

    # -- reading ---------------------------------------------------------------

    def global_number(self, slot: int) -> int:
        return self.number * self.geometry.nslots + slot

    def chunk_size_of(self, slot: int) -> int:
        """Uncompressed bytes of the chunk in `slot`."""
        if slot == self.index.nchunks - 1:
            return self.index.last_chunk_size
        return self.geometry.chunk_size

    def read_one(self, slot: int):
        """The stored entry of one slot: verified chunk bytes or :class:`Special`.

        The short path of :meth:`read` for single-item and small reads.

        Raises
        ------
        CorruptDataError, ChecksumError, TruncatedDataError
            As :meth:`read`.
        """
        idx = self.index
        if slot >= idx.nchunks or idx.kind(slot) != "data":
            return self.read([slot])[0]
        off, nb = idx.entry(slot)
        g = self.geometry
        csize = g.checksum_size
        fd = self._reading()
        try:
            blob = _pread_exact(fd, nb + csize, off, self.path)
        finally:
            self._done(fd)
        if not csize:
            return blob
        view = memoryview(blob)
        _index.verify_chunk(g.checksum_type, self.global_number(slot), view[:nb], view[nb:],
                            path=self.path)
        return view[:nb]

    def read(self, slots: list[int]) -> list:
        """The stored entries of `slots`: verified chunk bytes or :class:`Special`.

        Data entries that lie next to each other in the file are read with
        one ``pread``; each chunk's checksum is verified before it is returned.

        Raises
        ------
        CorruptDataError
            If a slot is empty or beyond the index's chunks.
        ChecksumError
            If a chunk fails its checksum.
        TruncatedDataError
            If the file is shorter than the index says.
        """
        idx, g = self.index, self.geometry
        out: list = [None] * len(slots)
        wanted = []  # (offset, nbytes, position in out, slot)
        for pos, slot in enumerate(slots):
            if slot >= idx.nchunks:
                raise CorruptDataError(f"slot {slot} is beyond the {idx.nchunks} chunks the "
                                       "index holds", path=self.path,
                                       chunk=self.global_number(slot))
            kind = idx.kind(slot)
            if kind == "special":
                k, value = idx.special(slot, min(max(g.typesize, 1), 8))
                out[pos] = Special(k, value if k == _index.KIND_VALUE else None)
            elif kind == "data":
                off, nb = idx.entry(slot)
                wanted.append((off, nb, pos, slot))
            elif slot in self.lost:
                raise CorruptDataError(f"chunk lost: the file's index is damaged and "
                                       f"{self.lost[slot]} ({self.salvaged})", path=self.path,
                                       chunk=self.global_number(slot))
            else:
                raise CorruptDataError("chunk slot is empty", path=self.path,
                                       chunk=self.global_number(slot))
        if not wanted:
            return out
        csize = g.checksum_size
        wanted.sort()
        fd = self._reading()
        try:
            i = 0
            while i < len(wanted):
                j = i + 1  # extend the run while chunks are adjacent in the file
                while j < len(wanted) and \
                        wanted[j][0] == wanted[j - 1][0] + wanted[j - 1][1] + csize:
                    j += 1
                start = wanted[i][0]
                end = wanted[j - 1][0] + wanted[j - 1][1] + csize
                blob = _pread_run(fd, end - start, start, self.path)
                for off, nb, pos, slot in wanted[i:j]:
                    chunk = blob[off - start: off - start + nb]
                    if csize:
                        _index.verify_chunk(g.checksum_type, self.global_number(slot), chunk,
                                            blob[off - start + nb: off - start + nb + csize],
                                            path=self.path)
                    out[pos] = chunk
                i = j
        finally:
            self._done(fd)
        return out

    # -- writing ---------------------------------------------------------------

    def stored_nbytes(self, slot: int) -> int:
        """Bytes the chunk in `slot` costs: its compressed bytes, SPECIAL_CBYTES
        for a special-value chunk (its index entry), 0 for an empty slot."""
        if slot < self.index.nchunks:
            kind = self.index.kind(slot)
            if kind == "data":
                return self.index.entry(slot)[1]
            if kind != "empty":
                return SPECIAL_CBYTES
        return 0

    def write(self, items: list[tuple[int, object, int]]) -> None:
        """Store chunks: ``(slot, entry, uncompressed size)`` for each.

        `entry` is compressed chunk bytes or a :class:`Special`.  Chunk bytes
        and their checksums go after all live data (never over bytes the
        durable index references); the index changes in memory until
        :meth:`commit`.

        Raises
        ------
        ValueError
            If a slot would leave a gap, or a chunk is larger than allowed.
        OSError
            If the file system refuses.
        """
        self._refuse_if_lost()
        idx, g = self.index, self.geometry
        csize = g.checksum_size
        fd = None
        lo, hi = self._wb  # the bytes written and not yet handed to the device
        run: list = []  # chunks (and checksums) that follow each other: one pwritev
        at = length = 0
        try:
            for slot, entry, size in items:
                if not 0 <= slot <= idx.nchunks or slot >= g.nslots:
                    raise ValueError(f"slot {slot} would leave a gap after {idx.nchunks} chunks")
                if not 0 < size <= g.chunk_size:
                    raise ValueError(f"chunk of {size} bytes, chunk size is {g.chunk_size}")
                if isinstance(entry, Special):
                    idx.set_special(slot, entry.kind, entry.value, g.header_typesize)
                else:
                    if fd is None:
                        fd = _files.open_own(self.path, os.O_WRONLY)
                    offset = max(self._floor, idx.data_extent(csize))
                    if run and (offset != at + length or len(run) >= _IOV_PARTS):
                        parts, run = run, []
                        _pwrite_all(fd, parts, at, length)
                    if not run:
                        length = 0
                        at = offset
                    run.append(entry)
                    if csize:
                        crc = _index.chunk_checksum(g.checksum_type, self.global_number(slot),
                                                    entry)
                        run.append(crc.to_bytes(4, "little"))
                    total = len(entry) + csize
                    length += total
                    lo, hi = (offset, offset + total) if lo == hi else \
                        (min(lo, offset), max(hi, offset + total))
                    idx.set_data(slot, offset, len(entry))
                    self._floor = offset + total
                    self._unsynced = True
                if slot == idx.nchunks:
                    idx.nchunks = slot + 1
                if slot == idx.nchunks - 1:
                    idx.last_chunk_size = size
                elif size != g.chunk_size:
                    raise ValueError(f"only the last chunk may be short (slot {slot})")
                self._dirty = True
        finally:
            try:
                if run:  # what the index already references, even when an item was refused
                    parts, run = run, []
                    _pwrite_all(fd, parts, at, length)
                if fd is not None and hi - lo >= WRITEBACK_BYTES:
                    writeback.start(fd, lo, hi - lo)  # the device starts while more are made
                    lo = hi = 0
            finally:
                self._wb = (lo, hi)
                if fd is not None:
                    os.close(fd)

    def truncate(self, nchunks: int, last_size: int) -> None:
        """Keep only the first `nchunks` slots (in memory until :meth:`commit`)."""
        idx = self.index
        if nchunks >= idx.nchunks:
            return
        for slot in range(nchunks, idx.nchunks):
            idx.set_empty(slot)
        idx.nchunks = nchunks
        idx.last_chunk_size = last_size if nchunks else 0
        self._dirty = True

    @property
    def dirty(self) -> bool:
        return self._dirty

    def commit(self, *, durable: bool = True) -> None:
        """Make the in-memory index the file's current one.

        Writes the index copy that is not current with the next generation,
        then fsyncs the file once (chunk data and that copy together).  One
        sync is enough: until ``meta/sizes`` names the new generation, which
        happens only after this returns, readers use the current copy, which
        is untouched and references only data that was already durable.

        Raises
        ------
        OSError
            If the file system refuses; the previous index stays current.
        """
        if not self._dirty:
            return
        self._refuse_if_lost()
        idx = self.index
        target = 1 - self._current
        fd = _files.open_own(self.path, os.O_WRONLY)
        try:
            idx.generation = idx.generation + 1
            data = idx.encode()
            _pwrite_all(fd, [data], _index.index_offset(self.geometry.nslots, target),
                        len(data))
            if durable:
                os.fdatasync(fd)
        finally:
            os.close(fd)
        self._current = target
        self._floor = max(self._floor, idx.data_extent(self.geometry.checksum_size))
        self._dirty = self._unsynced = False
        self._wb = (0, 0)

    def live_extent(self) -> int:
        """Size of this file once compacted: header, indexes and the live chunks.

        ``os.path.getsize(path) - live_extent()`` is what :meth:`compact`
        would reclaim; only the in-memory index is read.
        """
        idx, csize = self.index, self.geometry.checksum_size
        return _index.data_start(self.geometry.nslots) + sum(
            idx.entry(slot)[1] + csize for slot in range(idx.nchunks)
            if idx.kind(slot) == "data")

    def compact(self) -> int:
        """Rewrite the file with only its live chunks, back to back.

        The new file is written beside the old one and renamed over it, so a
        crash leaves one or the other.  Call :meth:`commit` first.

        Returns
        -------
        int
            Bytes reclaimed.

        Raises
        ------
        ValueError
            If the index has uncommitted changes.
        """
        if self._dirty:
            raise ValueError("commit before compacting")
        self._refuse_if_lost()
        g, idx = self.geometry, self.index
        csize = g.checksum_size
        old_size = os.path.getsize(self.path)
        new = _index.Index(g.nslots)
        new.generation = idx.generation  # meta/sizes names it: the content is the same
        new.nchunks = idx.nchunks
        new.last_chunk_size = idx.last_chunk_size
        pos = _index.data_start(g.nslots)
        header = _index.encode_header(g.checksum_type, g.header_typesize, g.chunk_size,
                                      g.nslots, self.number)
        tmp = self.path + ".compact"
        _files.check_own_dir(tmp)
        src = self._reading()
        # Never through a link planted at the temporary name (files.py); kept
        # open to read the new file through, when this object keeps one.
        out = _files.create_temp(tmp, read=True)
        try:
            with os.fdopen(out, "r+b", closefd=False) as f:
                f.seek(pos)
                for slot in range(idx.nchunks):
                    kind = idx.kind(slot)
                    if kind == "special":
                        k, value = idx.special(slot, min(max(g.typesize, 1), 8))
                        new.set_special(slot, k, value if k == _index.KIND_VALUE else None,
                                        g.header_typesize)
                    elif kind == "data":
                        off, nb = idx.entry(slot)
                        f.write(_pread_exact(src, nb + csize, off, self.path))
                        new.set_data(slot, pos, nb)
                        pos += nb + csize
                f.seek(0)
                f.write(header + new.encode() + _index.Index(g.nslots).encode())
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            os.close(out)
            _discard(tmp)  # the old file stays, whole; a full disk keeps no partial copy
            raise
        finally:
            self._done(src)
        if self.fd is not None:  # read the new file from now on
            self.close()
            self.fd = out
        else:
            os.close(out)
        fsync_dir(os.path.dirname(self.path))
        self.index, self._current = new, 0
        self._floor = pos
        return old_size - pos
