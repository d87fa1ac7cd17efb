"""Chunks in a dataset directory: ``meta/`` JSON files and superchunk files."""

from __future__ import annotations

import os
import sys
from dataclasses import replace
from functools import partial
from math import ceil, prod

from bcolzx import _threads
from bcolzx._format import files as _files
from bcolzx._format import journal, layout, zonemap
from bcolzx._format.jsonfile import Staged, fsync_dir, make_dirs, write_json
from bcolzx._format.meta import (
    Sizes,
    Storage,
    read_sizes,
    read_storage,
    stage_sizes,
    write_sizes,
    write_storage,
)
from bcolzx._format.superchunk import SPECIAL_CBYTES, Geometry, SuperchunkFile
from bcolzx._storage import pins, snapshot
from bcolzx._storage.base import ChunkStore, Special
from bcolzx.defaults import defaults
from bcolzx.errors import CorruptDataError, ReadOnlyError

#: At most this many fsyncs of one commit run at once (they overlap in the
#: file system's journal: a commit waits for about one, not for each).
SYNC_THREADS = 8


def sync_all(paths: list[str], fds: list[int] = ()) -> None:
    """fsync every file or directory of `paths` and every descriptor of `fds`,
    several at once (on the pool, unless ``bcolzx.set_nthreads(1)``); every
    one is done before the first failure is raised."""
    jobs = [("path", p) for p in dict.fromkeys(paths)] + [("fd", fd) for fd in fds]
    try:
        _threads.run_waiting(_sync_one, jobs,
                             min(len(jobs), SYNC_THREADS) if defaults.nthreads > 1 else 1)
    except RuntimeError:  # at interpreter exit the pool takes no more work (an fsync
        for job in jobs:  # never raises RuntimeError): all of them here, again
            _sync_one(job)


def _sync_one(job: tuple) -> None:
    kind, what = job
    if kind == "fd":
        os.fsync(what)
        return
    fd = os.open(what, os.O_RDONLY | _files.CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def geometry_of(storage: Storage, rowshape: tuple, path: str | None) -> tuple[Geometry, int]:
    """The superchunk geometry of a dataset of `storage` and rows of `rowshape`, and
    what one row counts in sizes (its bytes, or 1 for variable-length items, §2d).

    Raises
    ------
    CorruptDataError
        If a chunk would hold no byte or 2 GiB or more.
    """
    rowbytes = storage.row_unit(rowshape)
    chunk_bytes = storage.chunklen * rowbytes
    if not 0 < chunk_bytes < 2**31 - 64:
        raise CorruptDataError(f"chunks of {chunk_bytes} bytes are not supported "
                               "(1 byte to 2 GiB)", path=path)
    typesize = 1 if storage.vlen else storage.dtype.itemsize
    return _make_geometry((storage.chunks_per_superchunk, chunk_bytes, typesize,
                           layout.CHECKSUMS[storage.checksum])), rowbytes


#: ``Geometry(*fields)`` without the named tuple's ``__new__`` (a Python function).
_make_geometry = partial(tuple.__new__, Geometry)


def _check_sizes(rootdir: str, storage: Storage, sizes: Sizes) -> None:
    """Check ``meta/sizes`` against ``meta/storage`` before anything is sized by it.

    Its byte count follows from its shape, and it names one index generation
    per superchunk file its length needs: a length that no file backs (a
    forged or damaged shape of 2**62 rows) is refused here, before a reader
    allocates or loops over it.

    Raises
    ------
    CorruptDataError
        If the numbers do not agree.
    """
    rows = sizes.shape[0]
    nchunks = -(-rows // storage.chunklen)  # exact for any length (no float)
    per_row = layout.VLEN_ROW_NBYTES if storage.vlen else \
        storage.dtype.itemsize * prod(sizes.shape[1:])
    if sizes.nbytes != rows * per_row:
        raise CorruptDataError(f"nbytes is {sizes.nbytes}, but {rows} rows of {per_row} bytes "
                               f"hold {rows * per_row}",
                               path=layout.meta_path(rootdir, layout.SIZES_FILE))
    nfiles = -(-nchunks // storage.chunks_per_superchunk)
    # One more when a stored last chunk holds rows past the length (a shrink
    # inside it keeps the chunk, format §1).
    if not nfiles <= len(sizes.generations) <= nfiles + 1:
        raise CorruptDataError(
            f"{rows} rows need {nfiles} superchunk files, but the file names the index "
            f"generations of {len(sizes.generations)}",
            path=layout.meta_path(rootdir, layout.SIZES_FILE))


class DirectoryStore(ChunkStore):
    """A :class:`ChunkStore` over a dataset directory in the bcolzx format.

    Use :meth:`create` or :meth:`open`.  Superchunk files are opened only
    inside calls; their indexes are cached once read.

    Parameters
    ----------
    rootdir : str
        The dataset directory.
    storage : Storage
        Its ``meta/storage``.
    sizes : Sizes
        Its ``meta/sizes`` when opened.
    readonly : bool
        Refuse every write with :class:`ReadOnlyError`.
    """

    def __init__(self, rootdir: str, storage: Storage, sizes: Sizes, readonly: bool):
        self.rootdir = os.fspath(rootdir)
        self.storage = storage
        self.rowshape = tuple(sizes.shape[1:])
        self.geometry, rowbytes = geometry_of(storage, self.rowshape, self.rootdir)
        self.chunk_bytes = self.geometry.chunk_size
        self.length = length = sizes.shape[0]
        self.nchunks = -(-length // storage.chunklen)  # exact for any length (no float)
        self._last_size = (length - (self.nchunks - 1) * storage.chunklen) * rowbytes \
            if self.nchunks else 0
        self.cbytes = sizes.cbytes
        self._generations = list(sizes.generations)
        # Truncations so far, and the rows the latest one kept (snapshot.py);
        # the rows of the last commit.
        self.epoch, self.cut = sizes.epoch, sizes.cut
        self._rows = length
        #: The first chunk holding rows that a writer may have removed since
        #: this store's snapshot, as far as it learned (snapshot.note_cuts).
        self.lost_chunk = sys.maxsize
        self._readonly = readonly
        self._files: dict[int, SuperchunkFile] = {}
        self._rowbytes = rowbytes
        # The header this commit's journal records carry (journal.make_header),
        # made when the journal is first read or written: most opens never do.
        self._journal_sizes = sizes
        self._journal_header: bytes | None = None
        self._journal_fd: int | None = None
        self._journal_end = 0  # where the valid records end; 0: no valid journal
        # The state this store last knew: its commit and its journal file, to
        # tell whether another writer changed the dataset since (unchanged()).
        self._known_sizes = sizes
        self._journal_file = layout.meta_path(self.rootdir, layout.JOURNAL_FILE)
        self._known_journal = self._journal_stat()
        #: Files and directories written but not yet fsynced, which the next
        #: commit fsyncs before its ``meta/sizes`` (a new superchunk file's
        #: directory; for a new dataset, everything created so far).
        self._unsynced: list[str] = []
        #: The zone map staged for the next commit (:meth:`save_zonemap`).
        self._staged_zonemap: Staged | None = None
        #: Superchunk files created since the last commit (removed if it fails).
        self._created: list[str] = []

    # -- opening ---------------------------------------------------------------

    @classmethod
    def create(cls, rootdir: str, storage: Storage, rowshape: tuple = (),
               attrs: dict | None = None, unsynced: list | None = None) -> "DirectoryStore":
        """Create an empty dataset directory.

        ``meta/sizes`` is written last: a directory without it was never
        completely created.  With `unsynced` (a list: the directories the
        caller created without an fsync, :func:`~bcolzx._format.jsonfile.make_dirs`),
        nothing is fsynced and ``meta/sizes`` is not written: the store is
        :attr:`unpublished` until its first :meth:`commit`, which fsyncs all
        of it at once before it writes ``meta/sizes`` (the dataset's
        creation then completes with that commit).

        Raises
        ------
        FileExistsError
            If `rootdir` exists and is not empty.
        OSError
            If the file system refuses.
        """
        rootdir = os.fspath(rootdir)
        if os.path.exists(rootdir) and set(os.listdir(rootdir)) - {layout.LOCK_FILE}:
            raise FileExistsError(f"{rootdir} exists and is not empty")
        later = unsynced is not None
        make_dirs(rootdir, unsynced)  # its name made durable in its parent (meta/, data/: below)
        meta = os.path.join(rootdir, layout.META_DIR)
        data = os.path.join(rootdir, layout.DATA_DIR)
        os.makedirs(meta, exist_ok=True)
        os.makedirs(data, exist_ok=True)
        attrs_path = os.path.join(rootdir, layout.ATTRS_FILE)
        write_storage(rootdir, storage, durable=not later)
        write_json(attrs_path, attrs or {}, seal=storage.sealed, uid=storage.uid,
                   durable=not later)
        sizes = Sizes((0, *rowshape), 0, 0)
        if not later:
            write_sizes(rootdir, sizes, storage)
            fsync_dir(rootdir)
        store = cls(rootdir, storage, sizes, readonly=False)
        if later:
            store._unsynced = [*unsynced, layout.meta_path(rootdir, layout.STORAGE_FILE),
                               attrs_path, meta, data, rootdir]
            store.unpublished = True
        return store

    @classmethod
    def open(cls, rootdir: str, readonly: bool = False, storage: Storage | None = None,
             sizes: Sizes | None = None) -> "DirectoryStore":
        """Open an existing dataset directory (its `storage` metadata, and `sizes`
        checked against it, when already read).

        Raises
        ------
        FileNotFoundError
            If `rootdir` or its metadata does not exist.
        CorruptDataError, UnsupportedFormatError
            If its metadata is damaged or of another format.
        """
        rootdir = os.fspath(rootdir)
        if storage is None:
            if not os.path.isdir(rootdir):
                raise FileNotFoundError(f"no dataset directory at {rootdir}")
            storage = read_storage(rootdir)
        if sizes is None:
            sizes = read_sizes(rootdir, storage)
        if sizes.parts:  # superchunks continued in parts (docs/format §5): immutable objects
            from bcolzx._storage import remote
            from bcolzx._storage.objects import LocalObjects

            return remote.open_store(LocalObjects(rootdir), readonly)  # type: ignore[return-value]
        _check_sizes(rootdir, storage, sizes)
        return cls(rootdir, storage, sizes, readonly)

    @property
    def readonly(self) -> bool:
        return self._readonly

    @property
    def generations(self) -> tuple[int, ...]:
        """The index generation of each superchunk file, as last committed."""
        return tuple(self._generations)

    def _check_writable(self) -> None:
        if self._readonly:
            raise ReadOnlyError(f"{self.rootdir} is opened read-only (mode 'r')")
        if self.lock is not None:
            self.lock.check()

    # -- superchunk files ------------------------------------------------------

    def _needed(self, number: int) -> tuple[int, int]:
        """(slots the metadata needs in superchunk `number`, size of its last one)."""
        k = self.geometry.nslots
        n = max(0, min(k, self.nchunks - number * k))
        last = self._last_size if number * k + n == self.nchunks else self.chunk_bytes
        return n, (last if n else 0)

    def _file(self, number: int, *, create: bool = False) -> SuperchunkFile:
        sc = self._files.get(number)
        if sc is not None:
            return sc
        path = layout.data_path(self.rootdir, number)
        if create:  # fsynced, with its directory, by the commit that first names it
            sc = SuperchunkFile.create(path, number, self.geometry, keep_open=pins.enabled(),
                                       durable=False)
            self._unsynced.append(os.path.dirname(path))
            self._created.append(path)
        else:  # the committed index, kept to this store's rows (snapshot.py)
            sc = snapshot.load_file(self, number)
        self._files[number] = sc
        if sc.fd is not None:
            pins.keep(self, number, sc)
        return sc

    def forget_file(self, number: int, sc: SuperchunkFile) -> None:
        """Drop the cached index of superchunk `number` if it is `sc` and it is
        exactly what ``meta/sizes`` last recorded (no uncommitted change, no
        commit of its index still to be recorded): the budget of kept
        descriptors (pins.py).  It is loaded again when needed; its
        descriptor closes once no read uses it.  Any thread may call this."""
        gens = self._generations
        if sc.dirty or number >= len(gens) or gens[number] != sc.index.generation:
            return
        if self._files.get(number) is sc:
            self._files.pop(number, None)

    def files(self) -> list[str]:
        """Paths of the superchunk files the metadata calls for."""
        k = self.geometry.nslots
        return [layout.data_path(self.rootdir, n) for n in range(ceil(self.nchunks / k))]

    # -- the interface ---------------------------------------------------------

    def get(self, first: int, stop: int) -> list:
        if not 0 <= first <= stop <= self.nchunks:
            raise IndexError(f"chunks {first}..{stop} outside 0..{self.nchunks}")
        k = self.geometry.nslots
        out = []
        i = first
        while i < stop:
            number, slot = divmod(i, k)
            end = min(stop, (number + 1) * k)
            slots = list(range(slot, slot + end - i))
            out.extend(snapshot.read(self, number, lambda sc, slots=slots: sc.read(slots), end))
            i = end
        return out

    def get_one(self, i: int):
        if not 0 <= i < self.nchunks:
            raise IndexError(f"chunk {i} outside 0..{self.nchunks}")
        number, slot = divmod(i, self.geometry.nslots)
        return snapshot.read(self, number, lambda sc: sc.read_one(slot), i + 1)

    def put(self, items: list[tuple[int, object, int]]) -> None:
        self._check_writable()
        k = self.geometry.nslots
        groups: dict[int, list] = {}
        expect = self.nchunks
        for i, entry, size in items:
            if not 0 <= i <= expect:
                raise IndexError(f"chunk {i} would leave a gap after {expect}")
            expect = max(expect, i + 1)
            groups.setdefault(i // k, []).append((i % k, entry, size))
        for number, group in groups.items():
            new = number * k >= self.nchunks and number not in self._files
            sc = self._file(number, create=new)
            for slot, entry, _ in group:
                self.cbytes -= sc.stored_nbytes(slot)
                self.cbytes += SPECIAL_CBYTES if isinstance(entry, Special) else len(entry)
            sc.write(group)
            self._files[number] = sc  # what commit() records, whatever the budget did
            self.nchunks = max(self.nchunks, number * k + sc.index.nchunks)
        last_i, _, last_size = max(items, key=lambda t: t[0]) if items else (None, None, None)
        if last_i is not None and last_i == self.nchunks - 1:
            self._last_size = last_size

    # -- the append journal (docs/format/README.md §3b) ----------------------------

    @property
    def journaling(self) -> bool:  # type: ignore[override]
        """Fixed-size rows only: variable-length items are committed, never journaled."""
        return not self.storage.vlen

    @property
    def _journal_base(self) -> bytes:
        if self._journal_header is None:
            sizes = self._journal_sizes
            self._journal_header = journal.make_header(
                self._rowbytes, sizes.shape[0], journal.base_id(sizes.to_json()),
                self.storage.uid)
        return self._journal_header

    def _journal_stat(self) -> tuple | None:
        st = _files.stat_file(self._journal_file)
        return None if st is None else st[1:]  # (st_ino, st_size, st_mtime_ns)

    def journal_rows(self, max_rows: int) -> bytes:
        if self._known_journal is None:  # none when this store read its commit: none since
            return b""
        try:
            data, st = _files.read_regular(self._journal_file)
        except FileNotFoundError:
            self._known_journal = None
            return b""
        self._known_journal = st.st_ino, len(data), st.st_mtime_ns
        rows, self._journal_end = journal.parse(data, self._journal_base, max_rows)
        return rows

    def journal_append(self, first: int, rows: bytes) -> None:
        """Write one record, without an fsync: it survives a crash of this
        process, and the next commit (which empties the journal) makes its
        rows durable.

        Raises
        ------
        ReadOnlyError, LockedError
            Without the write lock.
        OSError
            If the file system refuses.
        """
        self._check_writable()
        head = journal.header(self._journal_base)
        if self._journal_fd is None:
            fd = _files.open_own(self._journal_file, os.O_RDWR | os.O_CREAT)  # never a link
            try:
                if self._journal_end < journal.HEADER_SIZE:  # none, or another commit's
                    os.ftruncate(fd, 0)
                    os.pwrite(fd, head, 0)
                    self._journal_end = len(head)
                else:  # a torn tail after the valid records is dropped
                    os.ftruncate(fd, self._journal_end)
            except BaseException:
                os.close(fd)
                raise
            self._journal_fd = fd
        data = journal.record(head, first, rows, self._rowbytes)
        written = os.pwrite(self._journal_fd, data, self._journal_end)
        if written != len(data):
            raise OSError(f"short write to {self._journal_file} ({written} of {len(data)} "
                          "bytes)")
        self._journal_end += len(data)
        st = os.fstat(self._journal_fd)
        self._known_journal = st.st_ino, st.st_size, st.st_mtime_ns

    def journal_bytes(self) -> int:
        return max(0, self._journal_end - journal.HEADER_SIZE)

    def _journal_clear(self, sizes: Sizes) -> None:
        """After a commit: the journal's rows are committed; the journal goes."""
        self._journal_sizes, self._journal_header = sizes, None
        if self._journal_fd is not None:
            os.close(self._journal_fd)
            self._journal_fd = None
        if self._journal_end:
            try:
                os.unlink(self._journal_file)
            except FileNotFoundError:
                pass
            self._journal_end = 0
        self._known_journal = None

    def save_zonemap(self, stats, exact=None, staged: bool = False) -> None:
        """Store the zone map; `staged`: for the next :meth:`commit` or
        :meth:`truncate`, which fsyncs it with the data and makes its rename
        durable before it writes ``meta/sizes``."""
        if not staged:
            super().save_zonemap(stats, exact)
            return
        new = zonemap.stage(self.rootdir, stats, storage=self.storage, exact=exact)
        if self._staged_zonemap is not None:
            self._staged_zonemap.discard()
        self._staged_zonemap = new

    def _record(self, sizes: Sizes, synced: list[str] = ()) -> None:
        """Write ``meta/sizes``: the commit point, naming each file's index generation.

        First, all at once: the superchunk files of `synced` (their index
        copies written, :meth:`SuperchunkFile.commit` without an fsync), what
        is still unsynced, the staged zone map and the new ``meta/sizes``
        under its temporary name are fsynced.  Then the zone map is renamed
        into place and ``meta/`` fsynced (the zone map is durable before any
        commit that needs it), then ``meta/sizes`` is renamed and ``meta/``
        fsynced again.
        """
        nfiles = ceil(self.nchunks / self.geometry.nslots)
        gens = self._generations[:nfiles]
        for number, sc in list(self._files.items()):  # pins.py may forget one meanwhile
            if number < nfiles:
                gens += [0] * (number + 1 - len(gens))
                gens[number] = sc.index.generation
        if 0 in gens:
            raise AssertionError(f"superchunks without a generation: {gens}")
        if sizes.shape[0] < self._rows:
            # Fewer rows: a new epoch (a reader of an older one may count rows
            # that are gone, and whose chunk numbers new rows will reuse).
            self.epoch, self.cut = self.epoch + 1, sizes.shape[0]
        self._rows = sizes.shape[0]
        committed = replace(sizes, cbytes=self.cbytes, generations=tuple(gens),
                            epoch=self.epoch, cut=self.cut)
        self._publish(committed, synced)
        self._generations = gens
        self._known_sizes = committed
        self._journal_clear(committed)

    def _publish(self, committed: Sizes, synced: list[str]) -> None:
        """The file-system side of :meth:`_record` (see there)."""
        meta = os.path.join(self.rootdir, layout.META_DIR)
        staged, self._staged_zonemap = self._staged_zonemap, None
        new = None
        # A new dataset (no meta/sizes yet): the zone map's name is made durable
        # with the rest, meta/ being among the unsynced directories.
        early = self.unpublished and staged is not None
        try:
            new = stage_sizes(self.rootdir, committed, self.storage)
            if early:
                staged.rename()
            fds = [s.fd for s in (staged, new) if s is not None]
            sync_all([*synced, *self._unsynced], fds)
            self._unsynced = []
            if staged is not None:
                staged.publish()
                staged = None
                if not early:
                    fsync_dir(meta)
            new.publish()
            new = None
        except BaseException:
            # No commit names the files created since the last one: a failed
            # commit (a full disk at the fsync) leaves none of them behind.
            for path in self._created:
                try:
                    os.unlink(path)
                except OSError:
                    pass
            raise
        finally:
            for left in (staged, new):
                if left is not None:
                    left.discard()
        self._created = []
        fsync_dir(meta)
        self.unpublished = False

    def unchanged(self) -> bool:
        """Whether the dataset is still as this store last knew it: the same
        commit (``meta/sizes``) and the same journal.  One small read and a stat."""
        try:
            sizes = read_sizes(self.rootdir, self.storage)
        except (OSError, ValueError):
            return False
        return sizes == self._known_sizes and \
            self._journal_stat() == self._known_journal

    def commit(self, sizes: Sizes) -> None:
        self._check_writable()
        synced = []
        try:
            for sc in list(self._files.values()):
                if sc.dirty:
                    sc.commit(durable=False)  # fsynced by _record, with everything else
                    synced.append(sc.path)
        except BaseException:
            self.discard_staged()
            raise
        self._record(sizes, synced)

    def discard_staged(self) -> None:
        """Drop the zone map staged for a commit that did not happen."""
        if self._staged_zonemap is not None:
            self._staged_zonemap.discard()
            self._staged_zonemap = None

    def truncate(self, nchunks: int, last_size: int, sizes: Sizes) -> None:
        self._check_writable()
        if nchunks > self.nchunks:
            raise IndexError(f"cannot truncate {self.nchunks} chunks to {nchunks}")
        k = self.geometry.nslots
        for sc in list(self._files.values()):  # pending writes first
            sc.commit()
        nfiles = ceil(nchunks / k)
        for number in range(nfiles - 1 if nfiles else 0, ceil(self.nchunks / k)):
            sc = self._file(number)
            for slot in range(max(0, nchunks - number * k), sc.index.nchunks):
                self.cbytes -= sc.stored_nbytes(slot)
        # Metadata first: from here on the dataset is the shorter one ...
        self.nchunks, self._last_size = nchunks, last_size
        self._record(sizes)
        # ... then free what it no longer uses, and record the new index.
        if nfiles:
            sc = self._file(nfiles - 1)
            sc.truncate(nchunks - (nfiles - 1) * k, last_size)
            sc.commit()
            self._files[nfiles - 1] = sc
            self._record(sizes)
        self._remove_files_from(nfiles)

    def _remove_files_from(self, first: int) -> None:
        data = os.path.join(self.rootdir, layout.DATA_DIR)
        for name in os.listdir(data):
            number = layout.superchunk_number(name)
            if number is not None and number >= first:
                os.unlink(os.path.join(data, name))
                self._files.pop(number, None)
        fsync_dir(data)

    def compact(self, progress=None) -> int:
        self._check_writable()
        files = [self._file(n) for n in range(ceil(self.nchunks / self.geometry.nslots))]
        if any(sc.dirty for sc in files):
            # Loading applied in memory the end of a truncation that a crash cut
            # short (meta/sizes already describes it): commit it, and record the
            # new index generations, before the files are rewritten with them.
            self.commit(read_sizes(self.rootdir))
        reclaimed = 0
        for sc in files:
            reclaimed += sc.compact()
            if progress is not None:
                progress(1)
        self._remove_files_from(ceil(self.nchunks / self.geometry.nslots))
        return reclaimed

    def dead_bytes(self) -> int:
        dead = 0
        for number in range(ceil(self.nchunks / self.geometry.nslots)):
            sc = self._file(number)
            if sc.lost:  # where the lost chunks lie is not known
                raise CorruptDataError(f"dead space unknown: chunks {sc.lost_chunks()} are "
                                       f"lost ({sc.salvaged})", path=sc.path)
            dead += os.path.getsize(sc.path) - sc.live_extent()
        return dead

    def close(self) -> None:
        self._files.clear()
        if self._journal_fd is not None:
            os.close(self._journal_fd)
            self._journal_fd = None
