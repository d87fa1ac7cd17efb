"""Datasets on object storage (S3, GCS, HTTP... through fsspec): reads by ranges, immutable writes.

Reading (:class:`ObjectStore`, :class:`LegacyObjectStore`)
    Opening reads the dataset's small files in one batch of concurrent
    requests (:func:`probe`): ``meta/storage``, ``meta/sizes``, ``__attrs__``,
    ``meta/zonemap``, ``meta/journal`` (and ``__rootdirs__``, to tell a
    ctable); each is read once.  A read of chunks then needs, per superchunk
    object, its head (header and index copies: one ranged request, cached for
    the life of the store) and one ranged request per run of chunks that lie
    next to each other in the object (or less than :data:`MAX_GAP` apart); an
    object all of whose chunks are wanted is fetched whole, head included, in
    one request.  The requests of
    one read go out together (:class:`~bcolzx._storage.objects.Objects`), and
    every chunk's checksum is verified as on disk.  Objects never change once
    written, so a reader needs no retries: what its ``meta/sizes`` names stays
    as it was.

Writing (docs/format/README.md §5)
    Objects cannot be changed in place, so chunks are gathered in memory per
    superchunk and each superchunk is uploaded whole, once its last slot holds
    a full chunk or at the commit.  A commit uploads what is left, then the
    zone map, ``__attrs__`` and ``meta/storage`` (for a new dataset), then
    ``meta/sizes``, last: the dataset exists for readers only from then on,
    and each later commit replaces ``meta/sizes`` whole, so a reader sees
    one commit or the next.  Appends to a dataset that has a superchunk
    object already go into new *part* objects (the old ones are never
    rewritten).  A rewrite of stored rows, a truncation, compaction and the
    append journal are not possible: :class:`~bcolzx.errors.AppendOnlyError`.
    Object stores have no lock: one writer at a time is the caller's
    business; a commit checks first that ``meta/sizes`` is still the one it
    read, and otherwise publishes nothing
    (:class:`~bcolzx.errors.ConcurrentModificationError`).
"""

from __future__ import annotations

import json
from dataclasses import replace
from math import ceil

from bcolzx._ext import index as _index
from bcolzx._format import journal, layout, parts, zonemap
from bcolzx._format import legacy as v1
from bcolzx._format.jsonfile import dumps, loads_sealed
from bcolzx._format.meta import Sizes, Storage, sizes_from_sealed, storage_from_sealed
from bcolzx._format.seal import Seal
from bcolzx._format.superchunk import SPECIAL_CBYTES, Special
from bcolzx._storage.base import ChunkStore
from bcolzx._storage.directory import geometry_of
from bcolzx._storage.objects import Objects
from bcolzx.errors import (
    AppendOnlyError,
    ConcurrentModificationError,
    CorruptDataError,
    DatasetNotFoundError,
    ReadOnlyError,
    TruncatedDataError,
)

__all__ = ["ObjectStore", "LegacyObjectStore", "probe", "open_store", "AttrsIO",
           "read_rootdirs", "CARRAY_KEYS"]

STORAGE = f"{layout.META_DIR}/{layout.STORAGE_FILE}"
SIZES = f"{layout.META_DIR}/{layout.SIZES_FILE}"
ZONEMAP = f"{layout.META_DIR}/{layout.ZONEMAP_FILE}"
JOURNAL = f"{layout.META_DIR}/{layout.JOURNAL_FILE}"
ATTRS = layout.ATTRS_FILE
ROOTDIRS = layout.ROOTDIRS_FILE
#: The small files of a carray, read together when it is opened.
CARRAY_KEYS = (STORAGE, SIZES, ATTRS, ZONEMAP, JOURNAL)

#: Bytes between two wanted chunks of an object below which one request fetches
#: both, gap included: a request costs about as much as a megabyte of transfer.
MAX_GAP = 1 << 20

_IMMUTABLE = ("objects on object storage are never changed in place, so a dataset there "
              "takes appends only")
_INSTEAD = ("copy it to a local directory (bcolzx.open(url).copy(rootdir=path)), change it "
            "there, and write the result back (copy(rootdir=new_url))")


def append_only(what: str, url: str | None) -> AppendOnlyError:
    """The error for `what` (a rewrite, a truncation...) of the dataset at `url`."""
    return AppendOnlyError(f"cannot {what} {url}: {_IMMUTABLE}; to change it, {_INSTEAD}")


# -- opening ----------------------------------------------------------------------------


def probe(objects: Objects) -> tuple[str | None, dict]:
    """What is at `objects`: ``('ctable' | 'carray' | None, the files read)``.

    One batch: ``__rootdirs__`` and a carray's small files (:data:`CARRAY_KEYS`);
    missing ones are None.  A carray is there once ``meta/sizes`` is (a
    dataset being written has none yet).
    """
    keys = [ROOTDIRS, *CARRAY_KEYS]
    fetched = dict(zip(keys, objects.fetch(keys)))
    if fetched[ROOTDIRS] is not None:
        return "ctable", fetched
    if fetched[STORAGE] is not None and fetched[SIZES] is not None:
        return "carray", fetched
    return None, fetched


def probe_published(objects: Objects) -> tuple[str | None, dict]:
    """Whether a dataset is published at `objects`: ``('ctable' | 'carray' | None,
    the files read)``, from its ``__rootdirs__`` and ``meta/sizes`` (one batch)."""
    keys = [ROOTDIRS, SIZES]
    fetched = dict(zip(keys, objects.fetch(keys)))
    kind = "ctable" if fetched[ROOTDIRS] is not None else \
        "carray" if fetched[SIZES] is not None else None
    return kind, fetched


def open_store(objects: Objects, readonly: bool, fetched: dict | None = None) -> ChunkStore:
    """The store of the carray at `objects` (its small files already `fetched`, or read
    now in one batch).

    Raises
    ------
    DatasetNotFoundError
        (a FileNotFoundError) If there is no dataset, or one not yet published.
    CorruptDataError, UnsupportedFormatError
        If its metadata is damaged, or of a format or version bcolzx cannot read.
    """
    if fetched is None or any(k not in fetched for k in CARRAY_KEYS):
        fetched = dict(zip(CARRAY_KEYS, objects.fetch(list(CARRAY_KEYS))))
    raw = fetched.get(STORAGE)
    if raw is None:
        raise DatasetNotFoundError(f"no bcolzx carray at {objects.url} (no {STORAGE})")
    if fetched.get(SIZES) is None:
        raise DatasetNotFoundError(f"no bcolzx carray at {objects.url}: {SIZES} is missing "
                                   "(a dataset being written is published by its last step, "
                                   "that file)")
    spath = objects.url_of(STORAGE)
    obj, seal = loads_sealed(raw, layout.STORAGE_FILE, spath)
    if "format" not in obj:
        storage = v1.storage_from_json(obj, spath)
        zpath = objects.url_of(SIZES)
        sizes = v1.sizes_from_json(_plain_json(fetched[SIZES], zpath), zpath)
        return LegacyObjectStore(objects, storage, sizes, readonly, fetched)
    storage = storage_from_sealed(objects.url, obj, seal)
    zpath = objects.url_of(SIZES)
    sobj, sseal = loads_sealed(fetched[SIZES], layout.SIZES_FILE, zpath)
    sizes = sizes_from_sealed(sobj, sseal, storage, zpath)
    return ObjectStore(objects, storage, sizes, readonly, fetched=fetched)


def _plain_json(raw: bytes, path: str) -> dict:
    try:
        obj = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise CorruptDataError(f"invalid JSON: {exc}", path=path) from None
    if not isinstance(obj, dict):
        raise CorruptDataError("expected a JSON object", path=path)
    return obj


def read_rootdirs(objects: Objects, raw: bytes) -> tuple[list[str], Seal]:
    """The column names and seal of a ctable's ``__rootdirs__`` (its bytes, `raw`).

    Raises
    ------
    CorruptDataError
        If the file is damaged.
    """
    path = objects.url_of(ROOTDIRS)
    meta, seal = loads_sealed(raw, ROOTDIRS, path)
    return layout.column_names(meta, path), seal


class AttrsIO:
    """Where the ``__attrs__`` of a dataset on object storage is read and written.

    Read from the bytes fetched when the dataset was opened; written whole
    (objects are replaced atomically), or, while the dataset is not yet
    published, with its first commit (through `store`).
    """

    def __init__(self, objects: Objects, raw: bytes | None, store=None):
        self.objects, self._raw, self._store = objects, raw, store
        self.url = objects.url
        self.path = objects.url_of(ATTRS)

    def read(self):
        """``(object, Seal)``, or None when there is no ``__attrs__``."""
        if self._raw is None:
            return None
        return loads_sealed(self._raw, ATTRS, self.path, kind=dict)

    def write(self, obj: dict, seal: Seal) -> None:
        data = dumps(obj, ATTRS, seal=seal.sealed, uid=seal.uid)
        store = self._store
        if store is not None and store.unpublished:
            store.stage(ATTRS, data)
        else:
            self.objects.put({ATTRS: data})
        self._raw = data


# -- bcolzx format -------------------------------------------------------------------------


class _Building:
    """The chunks of a superchunk gathered since the last commit, not yet uploaded."""

    __slots__ = ("number", "first", "entries")

    def __init__(self, number: int, first: int):
        self.number, self.first = number, first
        self.entries: list[tuple[object, int]] = []  # (entry, size) of slots first, first+1...

    @property
    def end(self) -> int:
        return self.first + len(self.entries)

    def get(self, slot: int):
        return self.entries[slot - self.first][0] if self.first <= slot < self.end else None


class ObjectStore(ChunkStore):
    """A :class:`ChunkStore` over a bcolzx-format dataset on object storage.

    Use :func:`open_store` or :meth:`create`.

    Parameters
    ----------
    objects : Objects
        The dataset's objects.
    storage, sizes : Storage, Sizes
        Its ``meta/storage`` and committed ``meta/sizes``.
    readonly : bool
        Refuse every write with :class:`ReadOnlyError`.
    fetched : dict, optional
        Its small files as read when opened (zone map, journal).
    published : bool
        False for a dataset being created: its first commit publishes it.
    """

    #: Reads of many scattered chunks go out together (:meth:`get_many`).
    gathers = True
    append_only = True
    #: Set by a writer that checks a new dataset before readers may see it
    #: (:func:`bcolzx.convert`): a commit then uploads everything but
    #: ``meta/sizes``, which it keeps in :attr:`held` until :meth:`publish`.
    hold = False
    held: bytes | None = None

    def __init__(self, objects: Objects, storage: Storage, sizes: Sizes, readonly: bool, *,
                 fetched: dict | None = None, published: bool = True):
        self.objects = objects
        self.rootdir = objects.url
        self.storage = storage
        self.rowshape = tuple(sizes.shape[1:])
        self.geometry, self._rowbytes = geometry_of(storage, self.rowshape, self.rootdir)
        self.chunk_bytes = self.geometry.chunk_size
        self._readonly = readonly
        self._fetched = fetched or {}
        self._heads: dict[str, _index.Index] = {}
        self._building: dict[int, _Building] = {}
        self._staged: dict[str, bytes] = {}
        self.unpublished = not published
        self.length = sizes.shape[0]
        self._committed(sizes)
        nfiles = ceil(self.nchunks / self.geometry.nslots)
        if len(sizes.generations) != nfiles and self.nchunks:
            raise CorruptDataError(f"meta/sizes names {len(sizes.generations)} superchunk "
                                   f"generations, the length needs {nfiles}",
                                   path=objects.url_of(SIZES))

    def _committed(self, sizes: Sizes) -> None:
        """Take `sizes` as the last commit."""
        self._sizes = sizes
        cl = self.storage.chunklen
        length = sizes.shape[0]
        self.nchunks = ceil(length / cl)
        self._last_size = (length - (self.nchunks - 1) * cl) * self._rowbytes \
            if self.nchunks else 0
        self.cbytes = sizes.cbytes
        self._pieces = parts.pieces_of(sizes.generations, sizes.parts)
        self._base_files = len(sizes.generations)
        self._stored = self.nchunks  # chunks in objects already uploaded

    @classmethod
    def create(cls, objects: Objects, storage: Storage, rowshape: tuple = ()
               ) -> "ObjectStore":
        """A new, empty dataset at `objects`, published by its first commit."""
        store = cls(objects, storage, Sizes((0, *rowshape), 0, 0), readonly=False,
                    published=False)
        store.stage(STORAGE, dumps(storage.to_json(), layout.STORAGE_FILE, seal=storage.sealed,
                                   uid=storage.uid))
        return store

    @property
    def readonly(self) -> bool:
        return self._readonly

    @property
    def sizes(self) -> Sizes:
        """The ``meta/sizes`` of the last commit (generations and parts included)."""
        return self._sizes

    def stage(self, key: str, data: bytes) -> None:
        """Upload the small file `key` with the next commit (before ``meta/sizes``)."""
        self._staged[key] = data

    def reopen(self) -> "ObjectStore":
        """A store over the dataset as its last commit left it (reads its files again;
        a dataset not yet published starts empty again)."""
        if self.unpublished:
            fresh = ObjectStore.create(self.objects, self.storage, self.rowshape)
            fresh._staged.update(self._staged)
            return fresh
        return open_store(self.objects, self._readonly)  # type: ignore[return-value]

    # -- reading ---------------------------------------------------------------

    def _span(self, number: int, piece: parts.Piece) -> range:
        """The slots of superchunk `number` that the metadata has `piece` hold."""
        k = self.geometry.nslots
        needed = max(0, min(k, self._stored - number * k))
        later = [p.first for p in self._pieces[number] if p.first > piece.first]
        return range(piece.first, min([needed, *later]))

    def get(self, first: int, stop: int) -> list:
        if not 0 <= first <= stop <= self.nchunks:
            raise IndexError(f"chunks {first}..{stop} outside 0..{self.nchunks}")
        return self.get_many(range(first, stop))

    def get_one(self, i: int):
        if not 0 <= i < self.nchunks:
            raise IndexError(f"chunk {i} outside 0..{self.nchunks}")
        return self.get_many([i])[0]

    def get_many(self, chunks) -> list:
        """Verified entries of `chunks` (chunk numbers, any order), their requests
        issued together.

        Raises
        ------
        IndexError
            If a number is not a chunk.
        CorruptDataError, ChecksumError, TruncatedDataError
            If an object is missing, short or damaged (naming its URL).
        RemoteError
            If the store fails.
        """
        chunks = list(chunks)
        k = self.geometry.nslots
        out: list = [None] * len(chunks)
        wanted: dict[str, tuple[parts.Piece, int, list]] = {}
        for pos, i in enumerate(chunks):
            if not 0 <= i < self.nchunks:
                raise IndexError(f"chunk {i} outside 0..{self.nchunks}")
            number, slot = divmod(i, k)
            building = self._building.get(number)
            if building is not None and building.get(slot) is not None:
                out[pos] = building.get(slot)
                continue
            piece = parts.owner(self._pieces[number], slot)
            wanted.setdefault(piece.key, (piece, number, []))[2].append((slot, pos))
        whole = self._load_heads(wanted)
        runs = []
        for key, (_, number, slots) in wanted.items():
            runs += self._entries(key, number, slots, out, whole.get(key))
        blobs = self.objects.fetch_ranges([(key, a, b) for key, a, b, _ in runs])
        for (key, a, _, members), blob in zip(runs, blobs):
            view = memoryview(blob)
            for off, nb, pos, chunk in members:
                out[pos] = self._verified(view, off - a, nb, chunk, key)
        return out

    def _load_heads(self, wanted: dict) -> dict[str, memoryview]:
        """Fetch the heads of the objects in `wanted` not read yet, in one batch:
        whole objects when every chunk they hold is wanted.  Returns those."""
        hsize = parts.head_size(self.geometry)
        requests, whole = [], []
        for key, (piece, number, slots) in wanted.items():
            if key in self._heads:
                continue
            span = self._span(number, piece)
            full = len(span) > 0 and len({s for s, _ in slots}) == len(span)
            requests.append((key, 0, None if full else hsize))
            whole.append(full)
        if not requests:
            return {}
        blobs = self.objects.fetch_ranges(requests)
        out = {}
        for (key, _, _), full, blob in zip(requests, whole, blobs):
            piece, number, _ = wanted[key]
            self._heads[key] = parts.decode_head(
                blob, number, self.geometry, piece.generation, self.objects.url_of(key),
                len(blob) if full else parts.UNKNOWN_SIZE)
            if full:
                out[key] = memoryview(blob)
        return out

    def _entries(self, key: str, number: int, slots: list, out: list,
                 blob: memoryview | None) -> list:
        """Fill `out` with the specials of `slots` (and their chunks, from `blob`);
        return the runs of chunks to fetch: ``(key, start, end, members)``."""
        idx, g = self._heads[key], self.geometry
        url = self.objects.url_of(key)
        k = g.nslots
        data = []
        for slot, pos in slots:
            chunk = number * k + slot
            if slot >= idx.nchunks:
                raise TruncatedDataError(f"the index holds {idx.nchunks} chunks, the metadata "
                                         f"needs slot {slot}", path=url, chunk=chunk)
            kind = idx.kind(slot)
            if kind == "special":
                kd, value = idx.special(slot, min(max(g.typesize, 1), 8))
                out[pos] = Special(kd, value if kd == _index.KIND_VALUE else None)
            elif kind == "data":
                off, nb = idx.entry(slot)
                if blob is not None:
                    if off + nb + g.checksum_size > len(blob):
                        raise TruncatedDataError(f"object ends at byte {len(blob)}, chunk "
                                                 f"needs {off + nb + g.checksum_size}",
                                                 path=url, chunk=chunk)
                    out[pos] = self._verified(blob, off, nb, chunk, key)
                else:
                    data.append((off, nb, pos, chunk))
            else:
                raise CorruptDataError("chunk slot is empty", path=url, chunk=chunk)
        data.sort()
        runs = []
        csize = g.checksum_size
        i = 0
        while i < len(data):  # runs of chunks next to each other, or nearly (MAX_GAP)
            j = i + 1
            while j < len(data) and \
                    data[j][0] <= data[j - 1][0] + data[j - 1][1] + csize + MAX_GAP:
                j += 1
            start, end = data[i][0], data[j - 1][0] + data[j - 1][1] + csize
            runs.append((key, start, end, data[i:j]))
            i = j
        return runs

    def _verified(self, view: memoryview, at: int, nb: int, chunk: int, key: str):
        """The chunk of `nb` bytes at `at` in `view`, its checksum verified."""
        g = self.geometry
        body = view[at:at + nb]
        if g.checksum_size:
            _index.verify_chunk(g.checksum_type, chunk, body,
                                view[at + nb:at + nb + g.checksum_size],
                                path=self.objects.url_of(key))
        return body

    def _stored_nbytes(self, i: int) -> int:
        """What stored chunk `i` counts in ``cbytes`` (reading its object's head)."""
        number, slot = divmod(i, self.geometry.nslots)
        piece = parts.owner(self._pieces[number], slot)
        self._load_heads({piece.key: (piece, number, [(slot, 0)])})
        idx = self._heads[piece.key]
        if slot >= idx.nchunks:
            return 0
        kind = idx.kind(slot)
        return idx.entry(slot)[1] if kind == "data" else SPECIAL_CBYTES if kind == "special" \
            else 0

    # -- the zone map and the journal, as read when opened -----------------------

    def load_zonemap(self, dtype):
        raw = self._fetched.get(ZONEMAP)
        if raw is None:
            return None, None
        path = self.objects.url_of(ZONEMAP)
        obj, found = loads_sealed(raw, layout.ZONEMAP_FILE, path)
        return zonemap.from_json(obj, found, dtype, self.storage, path)

    def save_zonemap(self, stats, exact=None, staged: bool = False) -> None:
        st = self.storage
        data = dumps(zonemap.to_json(stats, exact), layout.ZONEMAP_FILE, seal=st.sealed,
                     uid=st.uid)
        self.stage(ZONEMAP, data)
        self._fetched[ZONEMAP] = data

    @property
    def journaling(self) -> bool:  # type: ignore[override]
        """A journal written by a local writer before the upload is replayed (it
        is never written here: appends commit)."""
        return self._fetched.get(JOURNAL) is not None and not self.storage.vlen

    def journal_rows(self, max_rows: int) -> bytes:
        raw = self._fetched.get(JOURNAL)
        if raw is None:
            return b""
        base = journal.make_header(self._rowbytes, self._sizes.shape[0],
                                   journal.base_id(self._sizes.to_json()), self.storage.uid)
        return journal.parse(raw, base, max_rows)[0]

    def journal_append(self, first: int, rows: bytes) -> None:
        raise append_only("journal rows of", self.rootdir)

    # -- writing ---------------------------------------------------------------

    def _check_writable(self) -> None:
        if self._readonly:
            raise ReadOnlyError(f"{self.rootdir} is opened read-only (mode 'r')")
        if self.lock is not None:
            self.lock.check()

    def put(self, items: list[tuple[int, object, int]]) -> None:
        self._check_writable()
        k = self.geometry.nslots
        last_stored = self._stored - 1
        for i, _, _ in items:  # refused before anything changes
            if i < last_stored or (i == last_stored and self._last_stored_full()):
                raise append_only(f"rewrite chunk {i} of", self.rootdir)
        for i, entry, size in items:
            if not 0 <= i <= self.nchunks:
                raise IndexError(f"chunk {i} would leave a gap after {self.nchunks}")
            number, slot = divmod(i, k)
            building = self._building.get(number)
            if building is None:
                building = self._building[number] = _Building(number, slot)
            if not building.first <= slot <= building.end:
                raise append_only(f"rewrite chunk {i} of", self.rootdir)
            if slot < building.end:
                old = building.entries[slot - building.first][0]
                self.cbytes -= SPECIAL_CBYTES if isinstance(old, Special) else len(old)
                building.entries[slot - building.first] = (entry, size)
            else:
                if i < self._stored:  # the short last chunk, stored: its bytes go dead
                    self.cbytes -= self._stored_nbytes(i)
                building.entries.append((entry, size))
            self.cbytes += SPECIAL_CBYTES if isinstance(entry, Special) else len(entry)
            if i == self.nchunks:
                self.nchunks += 1
            if i == self.nchunks - 1:
                self._last_size = size
            if building.end == k and size == self.chunk_bytes:
                self._upload([building])  # a whole superchunk: it cannot change any more

    def _last_stored_full(self) -> bool:
        return self._stored == self.nchunks and self._last_size == self.chunk_bytes or \
            self._stored < self.nchunks

    def _upload(self, buildings: list[_Building]) -> None:
        """Upload the objects of `buildings` (together), then forget their chunks."""
        uploads, made = {}, []
        for b in buildings:
            body, idx = parts.encode(b.number, self.geometry,
                                     [(b.first + n, e, s) for n, (e, s) in enumerate(b.entries)])
            if b.number in self._pieces:  # the superchunk has an object: a part continues it
                piece = parts.Piece(parts.part_key(b.number, idx.generation), b.first,
                                    idx.generation)
            else:
                piece = parts.Piece(parts.base_key(b.number), 0, idx.generation)
            uploads[piece.key] = b"".join(bytes(x) if not isinstance(x, bytes) else x
                                          for x in body)
            made.append((b, piece, idx))
        self.objects.put(uploads)
        k = self.geometry.nslots
        for b, piece, idx in made:
            self._pieces[b.number] = parts.trim_shadowed(
                [*self._pieces.get(b.number, []), piece])
            self._heads[piece.key] = idx
            self._stored = max(self._stored, b.number * k + b.end)
            del self._building[b.number]

    def commit(self, sizes: Sizes) -> None:
        """Upload what is gathered, the staged small files, then ``meta/sizes``.

        Raises
        ------
        ConcurrentModificationError
            If ``meta/sizes`` changed since this store read it (another writer):
            nothing is published.
        RemoteError
            If the store fails; the last commit stays as it was.
        """
        self._check_writable()
        self._upload(list(self._building.values()))
        nfiles = ceil(self.nchunks / self.geometry.nslots)
        gens, extra = [], []
        for n in range(nfiles):
            pieces = self._pieces[n]
            gens.append(pieces[0].generation)
            extra += [(n, p.first, p.generation) for p in pieces[1:]]
        storage = self.storage
        if extra and not storage.parted:  # readers of format version 2 must refuse it
            storage = storage.replace(parted=True)
            self.stage(STORAGE, dumps(storage.to_json(), layout.STORAGE_FILE,
                                      seal=storage.sealed, uid=storage.uid))
        committed = replace(sizes, cbytes=self.cbytes, generations=tuple(gens),
                            parts=tuple(extra))
        self.objects.put(self._staged)
        self._staged = {}
        if not self.unpublished:
            self._check_unchanged()
        data = dumps(committed.to_json(), layout.SIZES_FILE, seal=storage.sealed,
                     uid=storage.uid)
        if self.hold and self.unpublished:  # everything is stored; readers see nothing yet
            self.held, self.storage = data, storage
            self._committed(committed)
            return
        self.objects.put({SIZES: data})
        self.storage, self.unpublished = storage, False
        self._fetched[SIZES] = data
        self._committed(committed)

    def replace_storage(self, storage: Storage) -> None:
        """Give the dataset, not yet published, the ``meta/storage`` `storage` (same
        layout; e.g. the ``quantize`` later appends apply), uploaded with the next commit.

        Raises
        ------
        ValueError
            If the dataset is published already (its ``meta/storage`` is fixed).
        """
        if not self.unpublished:
            raise ValueError(f"{self.rootdir} is published: its meta/storage is fixed")
        self.storage = storage
        self.stage(STORAGE, dumps(storage.to_json(), layout.STORAGE_FILE, seal=storage.sealed,
                                  uid=storage.uid))

    def held_files(self) -> dict:
        """The small files of the dataset as a reader would fetch them once it is
        published: read back from the store, with the held ``meta/sizes`` (for a
        check of what was uploaded before :meth:`publish`)."""
        if self.held is None:
            raise ValueError(f"{self.rootdir} has no held commit")
        fetched = dict(zip(CARRAY_KEYS, self.objects.fetch(list(CARRAY_KEYS))))
        fetched[SIZES] = self.held
        return fetched

    def publish(self) -> None:
        """Upload the ``meta/sizes`` a held commit kept back (see :attr:`hold`): the
        dataset exists for readers from then on.

        Raises
        ------
        FileExistsError
            If a dataset was published at the URL meanwhile (by another writer):
            nothing is published.
        RemoteError
            If the store fails; nothing is published.
        """
        if self.held is None:
            raise ValueError(f"{self.rootdir} has no held commit to publish")
        if self.objects.fetch([SIZES])[0] is not None:
            raise FileExistsError(f"{self.rootdir}: another writer published a dataset "
                                  "there meanwhile; nothing was published")
        data, self.held, self.hold = self.held, None, False
        self.objects.put({SIZES: data})
        self.unpublished = False
        self._fetched[SIZES] = data

    def _check_unchanged(self) -> None:
        (now,) = self.objects.fetch([SIZES])
        if now != self._fetched.get(SIZES):
            raise ConcurrentModificationError(
                f"{self.rootdir} was changed by another writer since it was opened here "
                "(its meta/sizes is not the one read): nothing was published; open it again "
                "(object stores have no lock: write from one place at a time)")

    def unchanged(self) -> bool:
        return not self.unpublished and self.objects.fetch([SIZES])[0] == \
            self._fetched.get(SIZES)

    def truncate(self, nchunks: int, last_size: int, sizes: Sizes) -> None:
        raise append_only("shorten", self.rootdir)

    def compact(self, progress=None) -> int:
        raise append_only("compact", self.rootdir)

    def close(self) -> None:
        self._heads.clear()


# -- legacy bcolz (format v1), read-only ---------------------------------------------------


class LegacyObjectStore(ChunkStore):
    """A legacy bcolz (v1) dataset on object storage: read-only (one object per chunk).

    Raises
    ------
    ReadOnlyError
        On any write: legacy directories are changed in place, chunk file by
        chunk file; convert the dataset (to a local directory) first.
    """

    native = False
    gathers = True

    def __init__(self, objects: Objects, storage: Storage, sizes: Sizes, readonly: bool,
                 fetched: dict | None = None):
        self.objects = objects
        self.rootdir = objects.url
        self.storage = storage
        self.rowshape = tuple(sizes.shape[1:])
        self.chunk_bytes = storage.chunklen * storage.row_unit(self.rowshape)
        if not 0 < self.chunk_bytes < 2**31 - 64:
            raise CorruptDataError(f"chunks of {self.chunk_bytes} bytes are not supported "
                                   "(1 byte to 2 GiB)", path=self.rootdir)
        self.length = sizes.shape[0]
        self.nchunks = ceil(self.length / storage.chunklen)
        buffer = 0 if storage.vlen else self.chunk_bytes
        self.cbytes = max(0, sizes.cbytes - buffer)
        self._fetched = fetched or {}

    @property
    def readonly(self) -> bool:
        return True

    def reopen(self) -> "LegacyObjectStore":
        return open_store(self.objects, True)  # type: ignore[return-value]

    def get(self, first: int, stop: int) -> list:
        if not 0 <= first <= stop <= self.nchunks:
            raise IndexError(f"chunks {first}..{stop} outside 0..{self.nchunks}")
        return self.get_many(range(first, stop))

    def get_many(self, chunks) -> list:
        chunks = list(chunks)
        keys = [f"{layout.DATA_DIR}/__{i}.blp" for i in chunks]
        out = []
        for i, key, data in zip(chunks, keys, self.objects.fetch(keys)):
            url = self.objects.url_of(key)
            if data is None:
                raise CorruptDataError("chunk file missing", path=url, chunk=i)
            out.append(v1.unpack_chunk(data, url, i))
        return out

    def _refuse(self):
        raise ReadOnlyError(f"{self.rootdir} is a legacy bcolz dataset on object storage, "
                            "which bcolzx reads but does not change (its chunks are files "
                            "rewritten in place); bcolzx.convert a local copy instead")

    def put(self, items: list[tuple[int, object, int]]) -> None:
        self._refuse()

    def truncate(self, nchunks: int, last_size: int, sizes: Sizes) -> None:
        self._refuse()

    def commit(self, sizes: Sizes) -> None:
        self._refuse()

    def load_zonemap(self, dtype):
        return None, None
