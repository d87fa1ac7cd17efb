"""``carray``: a compressed, chunked, optionally persistent NumPy array (bcolz 1.2 API).

The class is thin: it validates arguments and translates NumPy-style keys into
row ranges; the chunked-array engine (:mod:`bcolzx._storage`) does the work
over a memory or directory store.
"""

from __future__ import annotations

import math
import os
import shutil
from collections.abc import Iterator
from typing import Any

import numpy as np

from bcolzx import attrs as _attrs
from bcolzx._analytics.methods import Reductions
from bcolzx._format import layout, pickles, strings
from bcolzx._format.meta import CParams, Storage, check_item_kind, dflt_to_json
from bcolzx._storage import DirectoryStore, MemoryStore, engine_for, writer
from bcolzx._storage.encoding import quantize
from bcolzx._storage.legacy import LegacyStore
from bcolzx._storage.lock import WriterLock
from bcolzx._storage.objects import Objects, resolve
from bcolzx._storage.opening import open_store, seal_of
from bcolzx.defaults import defaults
from bcolzx.errors import LegacyFormatError, MaskLengthError, ReadOnlyError
from bcolzx.params import cparams as _cparams

__all__ = ["carray"]

_MODES = ("r", "a", "w")
#: The codec of strings and bytes carrays created without `cparams`.
STRINGS_CODEC = "zstd"


def _is_sequence(value) -> bool:
    """Whether `value` holds several objects (for object carrays): a list, a tuple,
    a range, an array of at least one dimension or a carray; anything else
    (a str, a dict, a number...) is one object."""
    return isinstance(value, (list, tuple, range, carray)) or \
        (isinstance(value, np.ndarray) and value.ndim >= 1)


def as_objects(values) -> np.ndarray:
    """`values` as a 1-D object array, split along the first axis only.

    A sequence (see :func:`_is_sequence`) gives one object per element, so
    that a list of lists or tuples gives a list or tuple per row (as legacy
    bcolz); a 1-D array of another dtype gives Python scalars (tuples for a
    structured dtype), as ``astype(object)``; anything else is one object.
    """
    if isinstance(values, carray):
        values = values[:]
    if isinstance(values, np.ndarray) and values.ndim >= 1:
        if values.ndim == 1:
            return values if values.dtype == object else values.astype(object)
        out = np.empty(len(values), dtype=object)
        for i in range(len(values)):
            out[i] = values[i]
        return out
    if isinstance(values, (list, tuple, range)):
        out = np.empty(len(values), dtype=object)
        for i, value in enumerate(values):
            out[i] = value
        return out
    out = np.empty(1, dtype=object)
    out[0] = values
    return out


def _item_size(data: np.ndarray, kind: str, sample: int = 64) -> float | None:
    """Mean stored size of the first `sample` items of `data` (None if empty):
    their pickles, UTF-8 or bytes, as `kind` says."""
    if kind == "pickle":
        return _pickled_size(data, sample)
    head = data[:sample]
    if not len(head):
        return None
    if kind == "utf8":
        return sum(len(s.encode("utf-8")) for s in head.tolist() if isinstance(s, str)) / len(head)
    return sum(len(b) for b in head.tolist()) / len(head)


def as_bytes(values, dtype: np.dtype = strings.BYTES_DTYPE) -> np.ndarray:
    """`values` as a 1-D array of `dtype` (object declared as bytes) holding
    ``bytes``: a sequence gives one item per element, anything else one item.

    Raises
    ------
    TypeError
        For an item that is not bytes-like (a str is not: encode it first).
    """
    if isinstance(values, (bytes, bytearray, memoryview)) or not _is_sequence(values):
        values = [values]
    objs = values.tolist() if isinstance(values, np.ndarray) else list(values)
    out = np.empty(len(objs), dtype=dtype)
    for i, v in enumerate(objs):
        if isinstance(v, bytes):
            out[i] = v
        elif isinstance(v, (bytearray, memoryview, np.bytes_)):
            out[i] = bytes(v)
        else:
            raise TypeError(f"item {i} of a bytes column is {type(v).__name__}, not bytes "
                            "(encode text first, or use a StringDType column)")
    return out


def _pickled_size(data: np.ndarray, sample: int = 64) -> float | None:
    """Mean size of the pickles of the first `sample` objects of `data` (None if empty)."""
    if not len(data):
        return None
    head = data[:sample]
    return sum(len(pickles.dump_one(v)) for v in head) / len(head)


def _as_cparams(value) -> _cparams:
    if value is None:
        return _cparams()
    if isinstance(value, _cparams):
        return value
    if isinstance(value, dict):
        return _cparams(**value)
    raise TypeError(f"cparams must be a bcolzx.cparams or a dict, not {type(value).__name__}")


def conversion_error(exc: Exception, what: str) -> Exception:
    """NumPy's conversion failure `exc` as its builtin class (``ValueError`` or
    ``TypeError``, as legacy bcolz let through), with `what` failed in front.

    Not ``type(exc)``: NumPy may raise subclasses whose constructors take
    other arguments (``UnicodeEncodeError``, its ufunc errors).
    """
    cls = ValueError if isinstance(exc, ValueError) else TypeError
    return cls(f"{what}: {exc}")


class carray(Reductions):
    """A compressed and chunked array, in memory or on disk (bcolz 1.2 ``carray``).

    Parameters
    ----------
    array : array_like, optional
        Initial data; a scalar becomes one element.
    cparams : cparams or dict, optional
        Compression parameters (default: ``bcolzx.defaults.cparams``; for
        strings and bytes, its level with the zstd codec and automatic
        block sizes).
    dtype : numpy.dtype, optional
        Force this dtype (default: the data's, or float64 when empty).
    dflt : scalar, optional
        Value of the rows added by :meth:`resize` (default zero).
    expectedlen : int, optional
        Expected final length: picks the chunk length when `chunklen` is not given.
    chunklen : int, optional
        Rows per chunk.
    rootdir : str, optional
        Directory to persist to; None keeps the data in memory.  A URL
        (``s3://bucket/key``, ``gs://...``, ``https://...``, any fsspec URL)
        puts it on object storage: see docs/remote.md (a ``file://`` URL is
        the local directory).
    safe : bool
        Check and convert the dtype of data appended (legacy; always on here,
        kept for compatibility).
    mode : {'r', 'a', 'w'}
        With `rootdir`: read-only, append (open existing or create) or write
        (replace).
    lock_timeout : float, optional
        Seconds to wait when another writer holds the dataset (default
        ``bcolzx.defaults.lock_timeout``, 0: raise at once; ``math.inf``
        waits for ever).  In modes 'a' and 'w' the dataset's write lock is
        taken at the first change (creating counts) and kept until
        :meth:`close`; readers never take it (docs/reliability-concurrency.md).
    allow_pickle : bool, optional
        Allow object dtype: each value is stored with :mod:`pickle`, and
        reading unpickles, which runs whatever code the data names.  None
        (default) follows ``bcolzx.defaults.allow_pickle`` (False unless
        set) at each operation.  Without it an object carray can be opened
        (its length, dtype and attributes read, and it can be trimmed), but
        its values cannot be read or written.  Object carrays are
        one-dimensional: a list of lists gives one list per row.
    storage_options : dict, optional
        With a URL `rootdir`: options of its fsspec filesystem (endpoint,
        credentials, timeouts), e.g. ``{"endpoint_url": "http://127.0.0.1:9000"}``
        for s3fs.
    filesystem : fsspec.AbstractFileSystem, optional
        The filesystem `rootdir` (then a path in it) is on.

    Raises
    ------
    PickleNotAllowedError
        (a ``TypeError`` and a ``ValueError``) when creating a carray of
        object dtype, or reading or writing its values, without
        `allow_pickle`; nothing is pickled or unpickled then.
    ValueError
        For a bad mode or parameter.
    LockedError
        (an ``IOError``) when creating or replacing a dataset another writer
        holds; later, at the first change, when another writer holds it.
    TypeError
        For data that cannot be converted to the dtype, or a structured dtype
        holding objects.
    FileExistsError
        (an ``IOError``) when creating over an existing `rootdir` in mode 'a'.
    FileNotFoundError
        When opening a `rootdir` that does not exist in mode 'r'.
    ReadOnlyError
        When writing data in mode 'r'.
    AppendOnlyError
        (a ReadOnlyError) On object storage, for a rewrite of stored rows or a
        truncation.
    RemoteError
        (an ``OSError``) On object storage, when the store fails a request.
    """

    def __init__(self, array=None, cparams=None, dtype=None, dflt=None, expectedlen=None,
                 chunklen=None, rootdir=None, safe=True, mode="a", *, lock_timeout=None,
                 allow_pickle=None, storage_options=None, filesystem=None, _v1=False,
                 _fetched=None, _publish=True):
        if mode not in _MODES:
            raise ValueError(f"mode must be one of {_MODES}, not {mode!r}")
        self._mode = mode
        self._allow_pickle = defaults.resolve_allow_pickle(allow_pickle)
        self._lock_timeout = defaults.resolve_lock_timeout(lock_timeout)
        self._safe = bool(safe)
        where = resolve(rootdir, storage_options, filesystem) if rootdir is not None else None
        self._remote = where if isinstance(where, Objects) else None
        self._rootdir = where.url if isinstance(where, Objects) else where
        if self._rootdir is not None and array is None and mode != "w":
            self._open(self._rootdir, mode, _fetched)
            return
        if mode == "w" and array is None and dtype is None and self._rootdir is not None \
                and self._exists():
            # Legacy: mode 'w' over an existing carray empties it, keeping its kind.
            old = carray(rootdir=self._remote or self._rootdir, mode="r")
            array = np.empty((0, *old.shape[1:]), dtype=old.dtype)
            cparams = old.cparams if cparams is None else cparams
            dflt = old.dflt if dflt is None else dflt
            chunklen = old.chunklen if chunklen is None else chunklen
            del old
        if mode == "r":
            raise ReadOnlyError("cannot create a carray in mode 'r'")
        if array is None:
            data = np.empty(0, dtype=np.dtype(dtype) if dtype is not None else np.float64)
        else:
            data = self._convert(array, dtype)
        if data.ndim == 0:
            data = data.reshape(1)
        # Variable-length items: pickles (object dtype), strings (StringDType)
        # or bytes (object declared as bytes), docs/format/strings.md.
        kind = strings.item_kind(data.dtype)
        objects = kind == "pickle"
        if data.dtype.hasobject:
            check_item_kind(data.dtype, kind)  # TypeError for objects in a structured dtype
        if kind in ("utf8", "bytes"):
            if data.ndim != 1:
                raise ValueError(f"a carray of {data.dtype} is one-dimensional, not of shape "
                                 f"{data.shape}")
            if _v1:
                raise LegacyFormatError(
                    f"a legacy bcolz (v1) directory cannot hold variable-length "
                    f"{'strings' if kind == 'utf8' else 'bytes'} ({data.dtype}): store them "
                    "fixed-width (dtype 'U' or 'S'), or in a bcolzx-format table")
        if objects:
            # Before anything is written or pickled.
            pickles.require(self._pickle_ok(), "creating a carray of object dtype",
                            self._rootdir)
        cp = _as_cparams(cparams)
        if cparams is None and kind in ("utf8", "bytes"):
            # Text and bytes: an entropy coder stores short, repetitive items (tickers,
            # codes) 1.5-2x smaller than lz4, and more so with blocks as large as the
            # chunk, which is always decoded whole (benchmarks/bench_strings.py).
            cp = _cparams(clevel=cp.clevel, shuffle=cp.shuffle, cname=STRINGS_CODEC,
                          quantize=0, blocksize=0, bytedelta="off")
        rowshape = data.shape[1:]
        rowbytes = data.dtype.itemsize * math.prod(rowshape)
        if rowbytes == 0:
            raise ValueError(f"rows of dtype {data.dtype} and shape {rowshape} hold no bytes")
        if expectedlen is not None and (not isinstance(expectedlen, (int, np.integer))
                                        or expectedlen < 0):
            raise ValueError(f"expectedlen must be an int >= 0, not {expectedlen!r}")
        if chunklen is None:
            chunklen = layout.vlen_chunklen(_item_size(data, kind), kind) if kind and not _v1 else \
                layout.default_chunklen(rowbytes, int(expectedlen or len(data)) or None)
        elif not isinstance(chunklen, (int, np.integer)) or chunklen < 1:
            raise ValueError(f"chunklen must be a positive int, not {chunklen!r}")
        elif not kind and chunklen * rowbytes >= layout.MAX_CHUNK_BYTES:  # before any write
            raise ValueError(f"chunklen {chunklen} makes chunks of {chunklen * rowbytes} bytes; "
                             f"a chunk holds less than {layout.MAX_CHUNK_BYTES} bytes (chunklen "
                             f"< {layout.MAX_CHUNK_BYTES // rowbytes} for rows of {rowbytes} "
                             "bytes)")
        dflt_arr = self._dflt(dflt, data.dtype)
        if objects and _v1:
            chunklen = 1  # legacy bcolz: one object per chunk file
        storage = Storage(dtype=data.dtype, chunklen=int(chunklen),
                          cparams=CParams(cp.clevel, cp.shuffle, cp.cname, cp.quantize),
                          expectedlen=int(expectedlen or len(data)), dflt=dflt_arr,
                          blocksize=cp.blocksize,
                          bytedelta="off" if kind else cp.bytedelta, vlen=kind)
        if self._rootdir is None:
            store = MemoryStore(storage, rowshape)
            self._attrs: _attrs.attrs | None = _attrs.attrs(None)
        elif self._remote is not None:
            store = self._create_remote(storage, rowshape, mode, _v1)
        else:
            if os.path.exists(self._rootdir) and mode == "a":
                raise FileExistsError(
                    f"{self._rootdir} exists; open it with carray(rootdir=...) or use "
                    "mode='w' to replace it")
            # _v1: a new column of a legacy (v1) ctable is itself v1.  The write
            # lock comes first: a dataset another writer holds is never replaced.
            store_class = LegacyStore if _v1 else DirectoryStore
            store = writer.create(self._rootdir,
                                  lambda: store_class.create(self._rootdir, storage, rowshape),
                                  replace=(mode == "w"), timeout=self._lock_timeout)
            self._attrs = _attrs.attrs(self._rootdir, mode)
        self._engine = engine_for(store, nthreads=defaults.nthreads)
        if kind:  # as stored (no byte-delta for variable-length items), so as reopened
            cp = _cparams(clevel=cp.clevel, shuffle=cp.shuffle, cname=cp.cname,
                          quantize=cp.quantize, blocksize=cp.blocksize, bytedelta="off")
        self._cparams = cp
        try:
            if len(data):
                self.append(data)
            # On object storage a caller that fills the dataset next (fromiter, copy)
            # publishes it with its own flush: readers never see it empty meanwhile.
            if self._rootdir is not None and (_publish or len(data)):
                self.flush()
        except BaseException:
            if self._remote is not None and store.unpublished:
                self._discard_remote()  # nothing was published: leave nothing behind
            raise

    def _exists(self) -> bool:
        """Whether a carray is stored at this carray's rootdir (one small read)."""
        if self._remote is not None:
            from bcolzx._storage import remote

            return self._remote.exists(remote.STORAGE)
        return self._rootdir is not None and \
            os.path.isfile(layout.meta_path(self._rootdir, layout.STORAGE_FILE))

    def _create_remote(self, storage: Storage, rowshape: tuple, mode: str, v1: bool):
        """The store of a new dataset on object storage, published by its first flush."""
        from bcolzx._format.seal import Seal
        from bcolzx._storage import remote

        objects = self._remote
        assert objects is not None
        if v1:
            raise ValueError("legacy bcolz (v1) datasets are not written to object storage")
        kind, _ = remote.probe_published(objects)
        if kind is not None and mode == "a":
            raise FileExistsError(f"{self._rootdir} holds a {kind}; open it with "
                                  "bcolzx.open() or use mode='w' to replace it")
        if mode == "w":  # objects left by a replaced or failed write go first
            objects.remove_all()
        store = remote.ObjectStore.create(objects, storage, rowshape)
        self._attrs = _attrs.attrs(None, mode, _new=True, _seal=Seal(storage.sealed,
                                                                      storage.uid),
                                   _io=remote.AttrsIO(objects, None, store))
        return store

    def _discard_remote(self) -> None:
        """Remove what a failed creation uploaded (best effort: the store may be down)."""
        try:
            if self._remote is not None:
                self._remote.remove_all()
        except Exception:  # noqa: BLE001 - unpublished objects are invisible to readers anyway
            pass

    def _open(self, rootdir: str, mode: str, fetched: dict | None = None) -> None:
        if self._remote is not None:
            from bcolzx._storage import remote

            store = remote.open_store(self._remote, readonly=(mode == "r"), fetched=fetched)
            io = remote.AttrsIO(self._remote, store._fetched.get(remote.ATTRS),  # type: ignore[attr-defined]
                                store if isinstance(store, remote.ObjectStore) else None)
        else:
            store = open_store(rootdir, readonly=(mode == "r"))  # meta/storage read once
            if mode != "r":  # taken at the first change (_storage/writer.py)
                store.lock = WriterLock(rootdir, self._lock_timeout)
            io = None
        st = store.storage
        self._engine = engine_for(store, nthreads=defaults.nthreads)
        self._cparams = _cparams(clevel=st.cparams.clevel, shuffle=st.cparams.shuffle,
                                 cname=st.cparams.cname, quantize=st.cparams.quantize,
                                 blocksize=st.blocksize, bytedelta=st.bytedelta)
        if io is not None:  # object storage: __attrs__ came with the batch that opened it
            self._attrs = _attrs.attrs(None, mode, _seal=seal_of(store), _io=io)
        elif mode == "r":  # read on first use: most readers never look
            self._attrs = None
            self._attrs_of = (rootdir, seal_of(store))
        else:  # a missing legacy __attrs__ is written at opening, as legacy does
            self._attrs = _attrs.attrs(rootdir, mode, _seal=seal_of(store))

    # -- conversions -------------------------------------------------------------

    @staticmethod
    def _convert(array, dtype) -> np.ndarray:
        want = np.dtype(dtype) if dtype is not None else None
        if want is not None and want.hasobject:
            # TypeError for objects in structured/sub-arrays
            check_item_kind(want, strings.item_kind(want))
        if strings.is_bytes(want) or (want is None and
                                      strings.is_bytes(getattr(array, "dtype", None))):
            return as_bytes(array[:] if isinstance(array, carray) else array)
        objects = np.dtype(object)
        if want == objects or (want is None and getattr(array, "dtype", None) == objects):
            return as_objects(array)
        if isinstance(array, carray):
            array = array[:]
        try:
            data = np.ascontiguousarray(array, dtype=want)
        except (TypeError, ValueError) as exc:  # NumPy's class, as append (and legacy)
            raise conversion_error(exc, f"cannot make an array of dtype {dtype} from the "
                                        "data") from None
        if data.dtype == object and data.ndim > 1:  # NumPy's guess: rows are the objects
            return as_objects(array)
        return data

    @staticmethod
    def _dflt(dflt, dtype: np.dtype) -> np.ndarray:
        if isinstance(dflt, np.ndarray) and dflt.shape == () and \
                strings.item_kind(dtype) in ("utf8", "bytes"):
            dflt = dflt[()]
        if strings.is_bytes(dtype):
            return as_bytes(b"" if dflt is None else [dflt], dtype).reshape(())
        if strings.is_string(dtype) and dflt is None:
            return np.array("", dtype=dtype)
        if dtype == np.dtype(object):
            if isinstance(dflt, np.ndarray) and dflt.shape == ():
                dflt = dflt[()]
            out = np.empty((), dtype=object)  # None unless given
            out[()] = dflt
            dflt_to_json(out)  # ValueError unless a JSON scalar: it goes to meta/storage
            return out
        if dflt is None:
            return np.zeros((), dtype=dtype)
        try:
            return np.array(dflt, dtype=dtype).reshape(())
        except (TypeError, ValueError) as exc:
            raise ValueError(f"dflt {dflt!r} is not a value of dtype {dtype}: {exc}") from None

    # -- objects (pickled) -----------------------------------------------------------

    @property
    def _objects(self) -> bool:
        """Whether this carray holds Python objects (object dtype, pickled)."""
        return self._engine.store.storage.vlen == "pickle"

    @property
    def _texts(self) -> bool:
        """Whether this carray holds strings or bytes (StringDType, bytes), never pickled."""
        return self._engine.store.storage.vlen in ("utf8", "bytes")

    def _pickle_ok(self) -> bool:
        """This carray's ``allow_pickle``, or the global default when not given."""
        return defaults.allow_pickle if self._allow_pickle is None else self._allow_pickle

    def _pickles_refused(self) -> bool:
        """Whether this carray holds objects whose values may not be read now."""
        return self._objects and not self._pickle_ok()

    def _require_pickle(self, action: str) -> None:
        pickles.require(self._pickle_ok(), f"{action} of an object carray", self._rootdir)

    def _protocol(self) -> int:
        return pickles.PROTOCOL if self._engine.store.native else pickles.LEGACY_PROTOCOL

    def _object_rows(self, values, n: int | None, single: bool) -> np.ndarray:
        """The pickles of `values`, as engine rows (an object array of bytes).

        `single`: `values` is one object (``c[i] = v``).  Else a sequence gives
        one row per element (exactly `n` when given) and anything else one
        row (broadcast to `n` rows).
        """
        self._require_pickle("storing the values")
        protocol = self._protocol()
        if single or (n is not None and not _is_sequence(values)):
            item = pickles.dump_one(values, protocol)
            out = np.empty(1 if n is None else n, dtype=object)
            out.fill(item)
            return out
        objs = as_objects(values)
        if n is not None and len(objs) != n:
            raise ValueError(f"cannot put {len(objs)} values into {n} rows (wrap a sequence "
                             "meant as one object in a list of one)")
        return pickles.dumps(objs, protocol)

    def _out(self, rows: np.ndarray) -> np.ndarray:
        """Engine rows as values: the objects unpickled (with consent), else `rows`."""
        if not self._objects:
            return rows
        self._require_pickle("reading the values")
        return pickles.loads(rows)

    def _fill_value(self, growing: bool = True):
        """What the engine fills new rows with: ``dflt``, pickled for objects."""
        if not self._objects or not growing:
            return self.dflt
        self._require_pickle("enlarging")
        return pickles.dump_one(self.dflt[()], self._protocol())

    def _rows(self, values, n: int | None = None, single: bool = False) -> np.ndarray:
        """`values` as rows of this array (converted, broadcast to `n` rows if given);
        for objects, their pickles (`single`: `values` is one object)."""
        eng = self._engine
        if self._objects:
            return self._object_rows(values, n, single)
        if strings.is_bytes(eng.dtype):
            arr = as_bytes([values] if single else values, eng.dtype)
            if n is not None and len(arr) != n:
                if len(arr) != 1:
                    raise ValueError(f"cannot put {len(arr)} values into {n} rows")
                arr = np.repeat(arr, n).astype(eng.dtype)
            return arr
        try:
            arr = np.asarray(values, dtype=eng.dtype)
        except (TypeError, ValueError) as exc:  # the same class as legacy bcolz's
            raise conversion_error(exc, f"cannot convert to {eng.dtype}") from None
        if n is None:
            if arr.shape == eng.rowshape:
                arr = arr.reshape((1, *eng.rowshape))
            elif arr.shape[1:] != eng.rowshape:
                raise ValueError(f"data of shape {arr.shape} does not fit rows of shape "
                                 f"{eng.rowshape}")
        else:
            try:
                arr = np.broadcast_to(arr, (n, *eng.rowshape))
            except ValueError:
                raise ValueError(f"cannot put values of shape {arr.shape} into {n} rows of "
                                 f"shape {eng.rowshape}") from None
        q = self._cparams.quantize
        if q:  # floats only: TypeError otherwise, as legacy bcolz
            arr = quantize(arr, q).astype(eng.dtype, copy=False)
        return np.ascontiguousarray(arr)

    # -- properties ----------------------------------------------------------------

    @property
    def engine(self):
        """The low-level handle: this carray's :class:`bcolzx._storage.ChunkedArray`.

        As h5py's ``Dataset.id``: the one object through which bcolzx's other
        modules (queries, interop, verify, compact) reach the rows and chunks
        of a carray.  Its documented methods (docs/architecture.md) are the
        interface; its private attributes are not.
        """
        return self._engine

    @property
    def attrs(self) -> _attrs.attrs:
        """User attributes (persisted in ``__attrs__`` on disk)."""
        if self._attrs is None:
            rootdir, seal = self._attrs_of
            self._attrs = _attrs.attrs(rootdir, "r", _seal=seal)
        return self._attrs

    @property
    def chunklen(self) -> int:
        """Rows per chunk."""
        return self._engine.chunklen

    @property
    def cparams(self) -> _cparams:
        """The compression parameters (:class:`~bcolzx.cparams`)."""
        return self._cparams

    @property
    def dflt(self) -> Any:
        """The value of the rows :meth:`resize` adds, as a 0-d array of the dtype."""
        return self._engine.store.storage.dflt

    @property
    def dtype(self) -> np.dtype:
        """The dtype of the items."""
        return self._engine.dtype

    @property
    def itemsize(self) -> int:
        """Bytes of one item of the dtype."""
        return self._engine.dtype.itemsize

    @property
    def atomsize(self) -> int:
        """Bytes of one row (item size times the trailing dimensions)."""
        return self.itemsize * math.prod(self._engine.rowshape)

    @property
    def len(self) -> int:
        """Number of rows (as ``len(c)``)."""
        return len(self._engine)

    def __len__(self) -> int:
        return len(self._engine)

    @property
    def shape(self) -> tuple:
        """Rows, then the trailing dimensions of a row."""
        return (len(self._engine), *self._engine.rowshape)

    @property
    def ndim(self) -> int:
        """Number of dimensions."""
        return 1 + len(self._engine.rowshape)

    @property
    def size(self) -> int:
        """Number of items, as a Python int."""
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        """Uncompressed bytes."""
        return self._engine.nbytes

    @property
    def cbytes(self) -> int:
        """Compressed bytes: the stored chunks, plus the leftover rows not
        stored yet as they will be once compressed (the same before and after
        :meth:`flush`)."""
        eng = self._engine
        return eng.cbytes + eng.leftover_cbytes()

    @property
    def nchunks(self) -> int:
        """Full chunks (the leftover rows are not counted)."""
        return self._engine.nfull

    @property
    def nleftover(self) -> int:
        """Rows in the partial last chunk (the *leftover*)."""
        return self._engine.nleft

    @property
    def leftover_array(self) -> np.ndarray:
        """The leftover rows, as a NumPy array (a copy: the buffer behind it is
        reused, by this array or another, once a later append fills it)."""
        return self._out(self._engine.leftover.copy())

    @property
    def leftover_bytes(self) -> int:
        """Bytes of the leftover rows (uncompressed)."""
        return self._engine.nleft * self._engine.rowbytes

    @property
    def leftover_elements(self) -> int:
        """Number of leftover rows (as :attr:`nleftover`)."""
        return self._engine.nleft

    @property
    def leftover_ptr(self) -> int:
        """Address of the first leftover row in memory (legacy bcolz's raw pointer).

        Valid only until the next change of this carray (an append may hand
        the buffer on and start another); read it with ``ctypes`` at once,
        never keep it.  :attr:`leftover_array` is the safe way.
        """
        return self._engine.leftover.ctypes.data

    @property
    def partitions(self) -> list[tuple[int, int]]:
        """``(start, stop)`` rows of each chunk, the leftover included."""
        cl, n = self.chunklen, len(self)
        return [(s, min(s + cl, n)) for s in range(0, n, cl)]

    @property
    def chunks(self) -> "_Chunks":
        """The full chunks, as a sequence of decompressed NumPy arrays."""
        return _Chunks(self)

    @property
    def mode(self) -> str:
        """The mode: ``'r'``, ``'a'`` or ``'w'``."""
        return self._mode

    @property
    def rootdir(self) -> str | None:
        """The directory of a persistent carray; None in memory."""
        return self._rootdir

    @property
    def safe(self) -> bool:
        """The `safe` argument (appended data are checked whatever its value)."""
        return self._safe

    @property
    def expectedlen(self) -> int:
        """The expected length given at creation (it chose the chunk length)."""
        return self._engine.store.storage.expectedlen

    # -- writing -------------------------------------------------------------------

    def _sync_threads(self) -> None:
        """Follow ``set_nthreads``/``defaults.nthreads`` changed after opening."""
        nthreads = defaults.nthreads
        if nthreads != self._engine.nthreads:
            self._engine.set_nthreads(nthreads)

    def _check_writable(self) -> None:
        if self._mode == "r":
            raise ReadOnlyError(f"{self._rootdir} is opened in mode 'r'")

    def _check_rewritable(self, what: str) -> None:
        """Refuse `what` (a rewrite, a truncation) on a store that takes appends only."""
        if self._engine.store.append_only:
            from bcolzx._storage.remote import append_only

            raise append_only(what, self._rootdir)

    def append(self, array) -> None:
        """Append rows at the end.

        Parameters
        ----------
        array : array_like
            One row or several (shape ``(n, *shape[1:])``).  For object
            dtype: a list, tuple, array or carray appends one row per
            element, anything else one row (append ``[x]`` to store a list
            ``x`` as one row).

        Raises
        ------
        ReadOnlyError
            In mode 'r'.
        TypeError, ValueError
            If the data cannot be converted to the dtype or rows.
        PickleNotAllowedError
            For object dtype without ``allow_pickle``.
        """
        self._check_writable()
        self._sync_threads()
        if isinstance(array, carray):
            for block in iterblocks(array):
                self._engine.append(self._rows(block))
            return
        self._engine.append(self._rows(array))

    def trim(self, nitems: int) -> None:
        """Remove the last `nitems` rows (a negative `nitems` enlarges by
        ``-nitems`` rows of ``dflt``, as legacy bcolz).

        Raises
        ------
        ValueError
            If `nitems` is larger than the length.
        ReadOnlyError
            In mode 'r'.
        """
        self._check_writable()
        nitems = int(nitems)
        if nitems < 0:
            self.resize(len(self) - nitems)
            return
        if nitems > len(self):
            raise ValueError(f"cannot trim {nitems} rows from {len(self)} (at most {len(self)})")
        if nitems:
            self._check_rewritable("trim")
        self._engine.resize(len(self) - nitems)  # shrinking pickles nothing

    def resize(self, nitems: int) -> None:
        """Grow (with ``dflt``) or shrink to `nitems` rows.

        Raises
        ------
        ValueError
            If `nitems` is negative.
        ReadOnlyError
            In mode 'r'.
        PickleNotAllowedError
            When enlarging an object carray without ``allow_pickle``.
        """
        self._check_writable()
        nitems = int(nitems)
        if nitems < 0:
            raise ValueError(f"nitems must be >= 0, not {nitems}")
        if nitems < len(self):
            self._check_rewritable("shorten")
        self._engine.resize(nitems, self._fill_value(nitems > len(self)))

    def delete(self, indices) -> int:
        """Delete the rows at `indices`, durably, as one commit.

        Only the chunks from the first deleted row on are rewritten (see
        :meth:`bcolzx._storage.ChunkedArray.delete`): a crash at any instant
        leaves the old rows or the new ones.

        Parameters
        ----------
        indices : int, array of ints or boolean mask
            The rows (negative from the end; repeats count once).

        Returns
        -------
        int
            Rows deleted.

        Raises
        ------
        ReadOnlyError
            In mode 'r'.
        AppendOnlyError
            (a ReadOnlyError) On object storage, whose objects are never
            rewritten.
        IndexError
            For an index out of range.
        ValueError
            For a legacy bcolz (v1) dataset, which cannot delete atomically.

        Examples
        --------
        >>> import numpy as np, bcolzx
        >>> c = bcolzx.carray(np.arange(8))
        >>> c.delete([0, -1]), c[:]
        (2, array([1, 2, 3, 4, 5, 6]))
        """
        from bcolzx._analytics.delete import positions_of

        self._check_writable()
        self._check_rewritable("delete rows of")
        pos = positions_of(len(self), indices)
        self._engine.delete(pos)
        return len(pos)

    def flush(self) -> None:
        """Make appended and changed data durable (on disk; no-op in memory).

        Raises
        ------
        OSError
            If the file system refuses.
        """
        if self._mode != "r":
            self._engine.flush(journal=True)

    def compact(self) -> int:
        """Flush, then reclaim the space rewrites left in the files (see :func:`bcolzx.compact`).

        Returns
        -------
        int
            Bytes reclaimed (0 in memory).

        Raises
        ------
        ReadOnlyError
            In mode 'r'.
        UnsupportedFormatError
            For a legacy bcolz (v1) directory, which has no dead space.
        """
        from bcolzx.compact import compact_carray

        return compact_carray(self)

    def purge(self) -> None:
        """Delete the data on disk (a persistent carray is unusable afterwards).

        Raises
        ------
        ReadOnlyError
            In mode 'r'.
        LockedError
            If another writer holds the dataset (nothing is deleted).
        """
        self._check_writable()
        if self._remote is not None:
            try:
                self._remote.remove_all()
            finally:
                self._engine.close(flush=False)
            return
        if self._rootdir is not None:
            lock = self._engine.store.lock
            if lock is not None:
                lock.acquire()  # never delete a dataset another writer holds
            try:
                shutil.rmtree(self._rootdir)
            finally:
                self._engine.close(flush=False)
                if lock is not None:
                    lock.release()

    def close(self) -> None:
        """Flush, then give up the dataset's write lock (no-op in memory and in mode 'r').

        Unlike a file, a closed carray stays usable: reads go on, and a later
        change takes the lock again, re-reading the dataset first (another
        writer may have changed it meanwhile).  The end of a ``with`` block
        closes; so does garbage collection.

        Raises
        ------
        OSError
            If the flush fails (the lock is given up all the same).
        """
        if self._rootdir is not None:
            writer.release_engine(self._engine)

    def free_cachemem(self) -> None:
        """Release cached decompressed and compressed data."""
        self._engine.free_cache()

    def reshape(self, newshape) -> "carray":
        """A new carray with the same data in a new shape (chunked along the first axis).

        Raises
        ------
        ValueError
            If the total size changes.
        """
        newshape = (newshape,) if isinstance(newshape, (int, np.integer)) else tuple(newshape)
        if (self._objects or self._texts) and newshape not in ((len(self),), (-1,)):
            raise ValueError(f"object, string and bytes carrays are one-dimensional: cannot "
                             f"reshape {self.shape} into {newshape}")
        if -1 in newshape:
            known = math.prod(x for x in newshape if x != -1)
            newshape = tuple(self.size // known if x == -1 else x for x in newshape)
        if math.prod(newshape) != self.size:
            raise ValueError(f"cannot reshape {self.shape} into {newshape}")
        if self._objects or self._texts:
            return self.copy(chunklen=None, expectedlen=None)
        return carray(self[:].reshape(newshape), cparams=self._cparams, dflt=self.dflt)

    def copy(self, **kwargs) -> "carray":
        """A copy, in memory or (with ``rootdir=``) on disk; kwargs as the constructor's.

        As in legacy bcolz, the copy is compressed with the current defaults
        (``bcolzx.defaults.cparams``) unless `cparams` is given, and its chunk
        length follows from `expectedlen` (default: this length) unless
        `chunklen` is given.  Unlike legacy bcolz, ``dflt`` is kept.  An object
        carray's copy takes its ``allow_pickle`` (unless given) and its pickles
        as they are: nothing is unpickled.

        Raises
        ------
        ValueError, TypeError, FileExistsError
            As the constructor.
        PickleNotAllowedError
            For object dtype without ``allow_pickle``.
        """
        kwargs.setdefault("dflt", self.dflt)
        kwargs.setdefault("expectedlen", len(self))
        if self._objects:
            kwargs.setdefault("allow_pickle", self._allow_pickle)
        out = carray(np.empty((0, *self.shape[1:]), self.dtype), _publish=False, **kwargs)
        if self._objects:  # the pickles themselves (any protocol reads back)
            blen = max(out.chunklen, 1024)
            for lo in range(0, len(self), blen):
                out._engine.append(self._engine.read(lo, min(len(self), lo + blen)))
            if out.rootdir is not None:
                out.flush()
            return out
        for block in iterblocks(self):
            out._engine.append(out._rows(block))
        if out.rootdir is not None:
            out.flush()
        return out

    def view(self) -> "carray":
        """A new carray sharing this one's data, with a length of its own.

        As in legacy bcolz, what is appended to or changed through the view
        stays in the view: it keeps its changes in memory (copy on write)
        and shares this carray's chunks as they were stored when it was
        made.  A view of a persistent carray is an in-memory carray.

        Returns
        -------
        carray
        """
        new = object.__new__(carray)
        new.__dict__.update(self.__dict__)
        new.__dict__.pop("_cursor", None)  # a view starts no iteration of its own
        new.__dict__.pop("_is_iterator", None)
        new._engine = self._engine.view()
        new._rootdir, new._mode = None, "a"
        new._attrs = _attrs.attrs(None)
        for name, value in self.attrs.getall().items():
            new._attrs[name] = value
        return new

    def _alias(self) -> "carray":
        """Another carray object over this one's data (iterators are such)."""
        new = object.__new__(carray)
        new.__dict__.update(self.__dict__)
        new.__dict__.pop("_cursor", None)
        new.__dict__.pop("_is_iterator", None)
        return new

    # -- interop -------------------------------------------------------------------

    def tohdf5(self, filepath, nodepath: str = "/carray", mode: str = "w", cparams=None,
               compression=None, *, progress=None) -> None:
        """Write this array to an HDF5 dataset with h5py, chunk by chunk.

        See :func:`bcolzx.interop.h5py.to_hdf5` (the dtype, ``dflt`` and attrs
        are carried; Blosc2 filter when hdf5plugin is installed).

        Raises
        ------
        ImportError
            If h5py is not installed.
        ValueError
            For a bad `mode` or `nodepath`, or an existing node at `nodepath`.
        TypeError
            For a dtype HDF5 cannot hold.
        """
        from bcolzx.interop.h5py import to_hdf5

        to_hdf5(self, filepath, nodepath=nodepath, mode=mode, cparams=cparams,
                compression=compression, progress=progress)

    def to_b2frame(self, path, layout: str = "auto", mode: str = "w", *,
                   progress=None) -> None:
        """Write this array to a Blosc2 contiguous frame without compressing it again.

        See :func:`bcolzx.interop.b2frame.to_b2frame`; ``blosc2.open(path)``
        gives an NDArray (or an SChunk, see `layout`) with the same content.

        Raises
        ------
        ImportError
            If python-blosc2 is not installed.
        ValueError
            For a bad `layout` or `mode`.
        FileExistsError
            With ``mode='x'`` when `path` exists.
        """
        from bcolzx.interop.b2frame import to_b2frame

        to_b2frame(self, path, layout=layout, mode=mode, progress=progress)

    def to_zarr(self, store, chunks=None, shards=None, mode: str = "w", cparams=None, *,
                progress=None):
        """Write this array to a Zarr v3 array, block by block.

        See :func:`bcolzx.interop.zarr.to_zarr`.

        Returns
        -------
        zarr.Array

        Raises
        ------
        ImportError
            If zarr is not installed.
        ValueError
            For bad `chunks`, `shards` or `mode`.
        TypeError
            For a dtype Zarr cannot hold.
        """
        from bcolzx.interop.zarr import to_zarr

        return to_zarr(self, store, chunks=chunks, shards=shards, mode=mode, cparams=cparams,
                       progress=progress)

    def to_dask(self, chunks: int | None = None):
        """A Dask array over this carray; see :func:`bcolzx.interop.dask.to_dask_array`.

        On disk, each task reads its rows straight from the files (the graph
        holds no data).  ``dask.array.from_array(c, chunks=...)`` works too,
        with explicit `chunks` (``c.chunks`` keeps its legacy meaning).

        Returns
        -------
        dask.array.Array

        Raises
        ------
        ImportError
            If Dask is not installed.
        ValueError
            For a non-positive `chunks`.
        """
        from bcolzx.interop.dask import to_dask_array

        return to_dask_array(self, chunks=chunks)

    def __dask_tokenize__(self) -> str:
        """Dask's token: path and committed state on disk, never the data
        (see :func:`bcolzx.interop.dask.tokenize`)."""
        from bcolzx.interop.dask import tokenize

        return tokenize(self)

    # -- reading -------------------------------------------------------------------

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
        cl = self.chunklen
        order = np.argsort(idx, kind="stable")
        sidx = idx[order]
        if self._engine.store.gathers:  # object storage: the chunks requested together
            out[order] = self._engine.take_sorted(sidx)
            return out
        chunks = sidx // cl
        bounds = np.flatnonzero(np.diff(chunks)) + 1
        for group in np.split(np.arange(len(sidx)), bounds):
            rows = sidx[group]
            if len(rows) <= 2:
                for g, r in zip(group, rows):
                    out[order[g]] = self._engine.read_row(int(r))
                continue
            c = int(chunks[group[0]])
            block = self._engine.read(c * cl, min((c + 1) * cl, len(self)))
            out[order[group]] = block[rows - c * cl]
        return out

    def _mask(self, key) -> np.ndarray:
        mask = key[:] if isinstance(key, carray) else np.asarray(key)
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
                return pickles.load_one(self._engine.read_row(self._index(key)))
            return self._out(self._get_rows(key))
        return self._get_rows(key)

    def _get_rows(self, key):
        """``self[key]`` as engine rows (pickles for object dtype)."""
        if isinstance(key, (int, np.integer)):
            row = self._engine.read_row(self._index(key))
            if self._texts:  # a str, bytes or the missing value
                return row
            return row.item() if self.ndim == 1 else row
        if isinstance(key, slice):
            self._sync_threads()
            start, stop, step = key.indices(len(self))
            if step == 1:
                return self._engine.read(start, max(start, stop))
            if step > 0:
                if stop <= start:
                    return np.empty((0, *self.shape[1:]), self.dtype)
                return self._engine.read(start, stop)[::step].copy()
            lo = stop + 1
            if start < lo:
                return np.empty((0, *self.shape[1:]), self.dtype)
            return self._engine.read(lo, start + 1)[::-1][::-step].copy()
        if isinstance(key, tuple):
            if not key:
                return self._get_rows(slice(None))
            first, rest = key[0], key[1:]
            if isinstance(first, (int, np.integer)):
                return np.asarray(self[first])[rest] if rest else self[first]
            return self[first][(slice(None),) + tuple(rest)]
        if isinstance(key, str):
            return self._take_rows(np.flatnonzero(self._condition(key, 3)))
        if isinstance(key, (carray, list, np.ndarray)):
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
        arr = key[:] if isinstance(key, carray) else np.asarray(key)
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
        eng = self._engine
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
        pos = self._positions(key)
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
            block = self._engine.read(lo, hi)
            block[pos[sel] - lo] = rows[sel]
            self._engine.write(lo, block)

    # -- iteration -----------------------------------------------------------------
    #
    # As in legacy bcolz, iter(), where() and wheretrue() return a carray: a
    # view of this one's data that is also an iterator (so next(c.iter()),
    # c.iter(3).iter(5) and c.wheretrue().sum() work).  Each call makes a new
    # view with its own position, so iterations never disturb each other or
    # the carray they came from.

    _cursor: Iterator | None = None  # the position of an iteration, if any
    _is_iterator = False  # made by iter()/where()/wheretrue()

    def _iterating(self, items: Iterator) -> "carray":
        it = self._alias()
        it._cursor, it._is_iterator = items, True
        return it

    def __iter__(self) -> "carray":
        return self if self._is_iterator else self.iter()

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
            block = self._engine.read(lo, hi)
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
        if not isinstance(boolarr, carray):
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
                    rows = self._out(self._engine.read(lo, hi)[hits])
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
            for lo, block in _blocks(self, self.chunklen, 0, len(self)):
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

    def sum(self, dtype=None, axis=None, *, where=None, user_dict=None, vm=None):
        """Sum of the items (``numpy.sum``: integers widen to the platform
        integer), as a NumPy scalar (an array for an `axis` that leaves some).

        Parameters
        ----------
        dtype : numpy.dtype, optional
            The accumulator and result dtype (legacy bcolz's first argument).
        axis : None, int or tuple of ints
            As NumPy.
        where : str or boolean array/carray, optional
            Only the rows where this holds (a condition's names are looked
            up in `user_dict`, then the caller's variables).

        Raises
        ------
        TypeError
            If the dtype cannot be summed.

        Examples
        --------
        >>> import numpy as np, bcolzx
        >>> c = bcolzx.carray(np.arange(10, dtype=np.int8))
        >>> c.sum(), c.sum(where="c % 2 == 1")
        (np.int64(45), np.int64(25))
        """
        if self._objects:  # Python's +, as NumPy sums object arrays
            if axis is not None or where is not None:
                raise TypeError("sum of an object carray takes neither axis nor where")
            total = None
            for block in iterblocks(self):
                if len(block):
                    part = np.sum(block, dtype=dtype)
                    total = part if total is None else total + part
            return 0 if total is None else total
        return self._reduce("sum", axis=axis, dtype=dtype, where=where, user_dict=user_dict,
                            vm=vm)

    def _check_reducible(self) -> None:
        """Reductions compute on fixed-size values: not on pickles."""
        if self._objects:
            raise TypeError("reductions other than sum() need values of a fixed-size dtype, "
                            "not Python objects (reduce c[:] with NumPy)")
        self._sync_threads()

    def __array__(self, dtype=None, copy=None):
        out = self[:]
        return out if dtype is None else out.astype(dtype, copy=False)

    # -- protocol ------------------------------------------------------------------

    def __reduce__(self):
        # On disk: pending writes are flushed and the copy reopens the files
        # read-only (a worker process never becomes a second writer).
        if self._rootdir is not None:
            self.flush()
            where = self._remote or self._rootdir  # object storage: its filesystem travels
            if self._allow_pickle is not None:  # the switch travels with the copy
                return (_reopen, (where, "r", self._allow_pickle))
            return (_reopen, (where, "r"))
        if self._objects:
            # The values travel unpickled by the receiver's own pickle.loads: its consent.
            return (_rebuild, (self[:], self._cparams.to_dict(), self.chunklen, self.dflt[()],
                               self.expectedlen, True))
        return (_rebuild, (self[:], self._cparams.to_dict(), self.chunklen, self.dflt[()],
                           self.expectedlen))

    def __enter__(self) -> "carray":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __sizeof__(self) -> int:
        # Legacy bcolz: the compressed size (sys.getsizeof(c) < c.nbytes
        # tells that the data compress).
        return self.cbytes

    def __repr__(self) -> str:
        nb, cb = self.nbytes, self.cbytes
        ratio = nb / cb if cb else (math.nan if not nb else 0)
        lines = [f"carray({self.shape}, {self.dtype})",
                 f"  nbytes := {_human(nb)}; cbytes := {_human(cb)}; ratio: {ratio:.2f}",
                 f"  cparams := {self._cparams!r}",
                 f"  chunklen := {self.chunklen}; chunksize: {self.chunklen * self.atomsize}; "
                 f"blocksize: {self._engine.store.storage.blocksize}"]
        if self._rootdir is not None:
            lines.append(f"  rootdir := {self._rootdir!r}")
            lines.append(f"  mode    := {self._mode!r}")
        return "\n".join(lines) + "\n" + str(self)

    def __str__(self) -> str:
        n = len(self)
        if self._objects and not self._pickle_ok():  # printing must not raise nor unpickle
            return f"[{n} pickled objects, not read: allow_pickle is off]"
        if n > 1000:
            return _summary(self[:3], self[n - 3:])
        return np.array2string(self[:])


def _summary(head: np.ndarray, tail: np.ndarray) -> str:
    h = np.array2string(head)[:-1]
    t = np.array2string(tail)[1:]
    return f"{h} ... {t}"


def _human(nbytes: int) -> str:
    n = float(nbytes)
    for unit in ("bytes", "KB", "MB", "GB", "TB"):
        if n < 1024 or unit == "TB":
            return f"{nbytes}" if unit == "bytes" else f"{n:.2f} {unit}"
        n /= 1024
    return str(n)


class _Chunks:
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
        return self._ca._out(self._ca._engine.read(i * cl, (i + 1) * cl))


def _blocks(ca: carray, blen: int, start: int, stop: int):
    ca._sync_threads()
    if ca._objects:
        ca._require_pickle("reading the values")
    for lo in range(start, stop, blen):
        yield lo, ca._out(ca._engine.read(lo, min(stop, lo + blen)))


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
    if not isinstance(cobj, carray):  # a ctable: structured blocks
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
    for _, block in _blocks(cobj, blen, start, stop):
        yield block


def _reopen(rootdir: str, mode: str, allow_pickle: bool | None = None) -> carray:
    return carray(rootdir=rootdir, mode=mode, allow_pickle=allow_pickle)


def _rebuild(data, cparams, chunklen, dflt, expectedlen, allow_pickle=None) -> carray:
    return carray(data, cparams=cparams, chunklen=chunklen, dflt=dflt, expectedlen=expectedlen,
                  allow_pickle=allow_pickle)
