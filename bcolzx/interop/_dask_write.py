"""Write a Dask array or dataframe into a new bcolzx dataset, in parallel.

How a dataset is written (docs/format/README.md, §3):

1. The dataset is created, empty, in a hidden sibling directory of
   `rootdir` (``.<name>.bcolzx-tmp-<random>``).
2. The Dask array is rechunked so that block `k` holds exactly the rows of
   superchunk `k` (chunks ``k*K .. (k+1)*K-1``).  Task `k` compresses them
   (special values and the byte-delta policy as any writer) into a new
   superchunk file of its own, written under a unique name, committed (index
   generation 2, fsynced) and renamed to ``data/__k.bin``; it returns the
   file's generation, compressed bytes and the per-chunk bounds of the zone
   map.  Tasks share nothing and take no lock: nobody else can see the
   directory.
3. When every task has succeeded, the caller's process writes
   ``meta/zonemap``, then ``meta/sizes`` (the commit point) once, and
   renames the directory to `rootdir`.  If a task fails, the hidden
   directory is removed and the error raised: nothing ever appears under
   `rootdir`.  (A process killed meanwhile leaves the hidden directory;
   delete it.)

A dataframe becomes a ctable: one such dataset per column, in the hidden
directory, with ``__rootdirs__`` and ``__attrs__`` (the pandas metadata of
:func:`bcolzx.interop.pandas.from_dataframe`); the whole table is renamed
into place at the end.  Its partitions are computed twice: once for their
lengths and what their string columns need (whether a value is missing;
for ``strings="fixed"``, the widest value), once to write (``persist()`` an
expensive frame first).  String columns (pandas ``str``, ``string[pyarrow]``,
object columns of ``str``) are stored variable-length, as NumPy StringDType
(``StringDType(na_object=nan)`` when a partition has a missing value), and
bytes as variable-length bytes, as :func:`~bcolzx.interop.pandas.from_dataframe`
stores them; ``strings="fixed"`` stores them fixed-width.  A Dask array of
StringDType or of variable-length bytes (``bcolzx.vlen_dtype(bytes)``) is
written the same way; arrays of other Python objects are refused (only the
public classes pickle).
"""

from __future__ import annotations

import operator
import os
import shutil
import uuid
from dataclasses import dataclass
from math import prod

import numpy as np

from bcolzx._format import jsonfile, layout
from bcolzx._format import strings as _strings
from bcolzx._storage import bulk
from bcolzx._storage.bulk import Target
from bcolzx.errors import ReadOnlyError
from bcolzx.interop._common import import_optional

__all__ = ["from_dask"]

_TMP_TAG = ".bcolzx-tmp-"




# -- planning and committing one dataset -----------------------------------------------


#: Bytes per superchunk file (and write task) when the input's blocks do not
#: set it: big enough for few files, small enough to balance the tasks.
WRITE_BLOCK_BYTES = 64 << 20


def _default_superchunk(chunklen: int, chunk_bytes: int, blocks: tuple) -> int:
    """Chunks per superchunk when the caller gives none.

    When the input's blocks along the rows are all of one size (the last may
    be shorter) and whole chunks, superchunks follow them: each write task
    then gets exactly one input block, with no rechunking (no copy, and no
    block moved between workers).  Otherwise about :data:`WRITE_BLOCK_BYTES`
    (at most 256 chunks, the format's default).
    """
    most = layout.DEFAULT_CHUNKS_PER_SUPERCHUNK
    size = blocks[0] if blocks else 0
    if size and size % chunklen == 0 and all(b == size for b in blocks[:-1]) \
            and blocks[-1] <= size:
        per_block = size // chunklen
        return max(d for d in range(1, min(per_block, most) + 1) if per_block % d == 0)
    return max(1, min(most, WRITE_BLOCK_BYTES // chunk_bytes))


def _create(rootdir, dtype: np.dtype, rowshape: tuple, length: int, options: dict,
            blocks: tuple = ()) -> Target:
    """Create the empty dataset `rootdir` (a path, or objects on object storage, where
    nothing is uploaded yet) as the carray constructor would, with the `options` it
    takes plus ``chunks_per_superchunk``; `blocks` are the row counts of the input's
    blocks."""
    from bcolzx.carray import carray

    options = dict(options)
    per_file = options.pop("chunks_per_superchunk", None)
    options.setdefault("expectedlen", length)
    remote = not isinstance(rootdir, str)
    ca = carray(np.empty((0, *rowshape), dtype), rootdir=None if remote else rootdir,
                mode="w", **options)
    storage = ca.engine.store.storage
    ca.close()  # nothing to flush; gives up the write lock
    item_bytes = layout.VLEN_GUESS_ITEM_BYTES if storage.vlen else storage.dtype.itemsize
    chunk_bytes = storage.chunklen * item_bytes * prod(rowshape)
    if per_file is None:
        per_file = _default_superchunk(storage.chunklen, chunk_bytes, blocks)
    if remote:
        return bulk.prepare_objects(rootdir, storage, tuple(rowshape), per_file)
    return bulk.prepare(rootdir, storage, tuple(rowshape), per_file)


def _plan(x, rootdir, options: dict, dtype: np.dtype | None = None
          ) -> tuple[Target, int, list]:
    """Create the dataset of Dask array `x` and the delayed tasks that fill it; its
    items are of `dtype` (default: ``x.dtype``; Dask drops the metadata of
    :data:`~bcolzx._format.strings.BYTES_DTYPE`)."""
    dtype = np.dtype(x.dtype) if dtype is None else dtype
    dask = import_optional("dask", "dask", "from_dask")
    if x.ndim == 0:
        raise ValueError("a 0-d array cannot be stored: bcolzx arrays have rows")
    if any(np.isnan(c) for dim in x.chunks for c in dim):
        raise ValueError("the array has unknown chunk sizes; call x.compute_chunk_sizes() "
                         "first")
    if dtype.hasobject and _strings.item_kind(dtype) not in ("utf8", "bytes"):
        raise TypeError(f"dtype {dtype} holds Python objects, which from_dask's parallel "
                        "tasks do not pickle (bcolzx.carray(x.compute(), allow_pickle=True, "
                        "...) does); strings (StringDType) and bytes (bcolzx.vlen_dtype("
                        "bytes)) are stored")
    if dtype.hasobject and x.ndim != 1:
        raise ValueError(f"an array of {dtype} has one item per row: it must be "
                         f"one-dimensional, not of shape {x.shape}")
    length, rowshape = int(x.shape[0]), tuple(int(d) for d in x.shape[1:])
    target = _create(rootdir, dtype, rowshape, length, options,
                     tuple(int(b) for b in x.chunks[0]))
    if not length:
        return target, 0, []
    per = target.rows_per_file
    rows = (*(per,) * (length // per), *((length % per,) if length % per else ()))
    # A no-op when the blocks already are the superchunks.
    blocks = x.rechunk((rows, *((d,) for d in rowshape))).to_delayed().ravel()
    task = dask.delayed(bulk.write_superchunk, pure=True)
    return target, length, [task(block, target, k, n)
                            for k, (block, n) in enumerate(zip(blocks, rows))]


# -- dataframes ----------------------------------------------------------------------


@dataclass(frozen=True)
class _FrameSpec:
    """How a partition becomes NumPy columns: the stored names, in order."""

    index: tuple        # (stored name, level number) of the index levels kept
    columns: tuple      # stored names of the frame's columns
    dtypes: dict        # stored name -> NumPy dtype (None: strings, to measure)
    strings: str = "vlen"  # text as variable-length ("vlen") or fixed-width items


def _values(df, spec: _FrameSpec, name: str):
    for stored, level in spec.index:
        if stored == name:
            return df.index.get_level_values(level)
    return df[name]


def _encode_column(df, spec: _FrameSpec, name: str) -> np.ndarray:
    pd = import_optional("pandas", "dask", "from_dask")
    from bcolzx.interop.pandas import _encode

    arr, _ = _encode(pd, name, _values(df, spec, name), mode=spec.strings)
    return arr


def _measure_partition(df, spec: _FrameSpec) -> tuple[int, dict]:
    """Rows of a partition, and per string column ``(kind, width)`` (fixed
    width), ``("T", has_missing)`` (StringDType) or ``("B", 0)`` (bytes), or
    None for a column of a partition without rows."""
    found: dict = {}
    for name, dtype in spec.dtypes.items():
        if dtype is None:
            arr = _encode_column(df, spec, name)
            if not len(arr):
                found[name] = None
            elif spec.strings == "fixed":
                found[name] = (arr.dtype.kind,
                               arr.dtype.itemsize // (4 if arr.dtype.kind == "U" else 1))
            elif _strings.is_string(arr.dtype):
                found[name] = ("T", hasattr(arr.dtype, "na_object"))
            else:
                found[name] = ("B", 0)
    return len(df), found


def _encode_partition(df, spec: _FrameSpec) -> dict[str, np.ndarray]:
    """The NumPy columns of a partition, in the dtypes chosen for the whole frame.

    Raises
    ------
    TypeError
        If a partition's column is of another kind than the frame's ``meta``
        says (e.g. floats where ``meta`` has integers): it is not converted.
    """
    out = {}
    for name, dtype in spec.dtypes.items():
        arr = _encode_column(df, spec, name)
        if not len(arr):  # its kind, guessed from no value, may be another
            out[name] = np.empty(0, dtype)
            continue
        try:
            out[name] = arr.astype(dtype, casting="same_kind", copy=False)
        except TypeError:
            raise TypeError(f"column {name!r} holds {arr.dtype} in a partition, where the "
                            f"frame's meta says {dtype}; fix the meta (astype)") from None
    return out


def _frame_spec(ddf, write_index: bool | None,
                strings: str = "vlen") -> tuple[_FrameSpec, dict]:
    """The stored columns of `ddf` and the attrs (pandas metadata) of its ctable."""
    pd = import_optional("pandas", "dask", "from_dask")
    from bcolzx.ctable import _check_name
    from bcolzx.interop.pandas import (
        INDEX_COLUMNS_KEY,
        INDEX_NAMES_KEY,
        _check_label,
        _encode,
        _index_levels,
    )

    meta = ddf._meta
    labels = [_check_label(label, "column name") for label in meta.columns]
    if len(set(labels)) != len(labels):
        raise ValueError(f"duplicate column names in {labels}")
    named = any(n is not None for n in meta.index.names)
    keep = named if write_index is None else bool(write_index)
    levels = (_index_levels(pd, meta) or [("index", None, meta.index)]) if keep else []
    index = tuple((stored, i) for i, (stored, _, _) in enumerate(levels))
    stored = [s for s, _ in index] + labels
    if len(set(stored)) != len(stored):
        raise ValueError(f"the index would be stored as column(s) {[s for s, _ in index]}, "
                         f"which clash with the columns {labels}; rename the index")
    dtypes, attrs = {}, {}
    for name in stored:
        _check_name(name)
        values = meta.index.get_level_values(dict(index)[name]) if name in dict(index) \
            else meta[name]
        if isinstance(values.dtype, pd.CategoricalDtype) and \
                "__UNKNOWN_CATEGORIES__" in values.dtype.categories:
            raise ValueError(f"column {name!r} is categorical with unknown categories; make "
                             f"them known first (ddf = ddf.categorize(columns=[{name!r}]))")
        arr, more = _encode(pd, name, values, mode=strings)
        attrs.update(more)
        text = arr.dtype.kind in "SU" or _strings.item_kind(arr.dtype) in ("utf8", "bytes")
        dtypes[name] = None if text else arr.dtype
    if index:
        attrs[INDEX_COLUMNS_KEY] = [s for s, _ in index]
        attrs[INDEX_NAMES_KEY] = [label for _, label, _ in levels]
    return _FrameSpec(index, tuple(labels), dtypes, strings), attrs


def _string_dtypes(names: list[str], measured: list[dict], strings: str
                   ) -> dict[str, np.dtype]:
    """The dtype of each string column, from what its partitions hold.

    Raises
    ------
    TypeError
        If a column holds str in some partitions and bytes in others.
    """
    out = {}
    for name in names:
        found = [m[name] for m in measured if m[name] is not None]
        kinds = {f[0] for f in found}
        if len(kinds) > 1:
            raise TypeError(f"column {name!r} holds str in some partitions and bytes in "
                            "others; convert it to one of them")
        if strings == "fixed":
            kind = kinds.pop() if kinds else "U"
            out[name] = np.dtype(f"{kind}{max([1, *(f[1] for f in found)])}")
        elif kinds == {"B"}:
            out[name] = _strings.BYTES_DTYPE
        else:  # a missing value in any partition: NaN as the missing value of all
            out[name] = _strings.string_dtype("nan" if any(f[1] for f in found) else None)
    return out


def _plan_frame(ddf, rootdir, options: dict, write_index: bool | None, strings: str):
    """Create the ctable of `ddf` (columns empty) and the tasks that fill its columns
    (`rootdir`: a hidden directory, or objects on object storage)."""
    dask = import_optional("dask", "dask", "from_dask")
    da = import_optional("dask.array", "dask", "from_dask")

    spec, attrs = _frame_spec(ddf, write_index, strings)
    parts = ddf.to_delayed()
    measure = dask.delayed(_measure_partition, pure=True)
    measured = dask.compute(*[measure(p, spec) for p in parts])
    lengths = [m[0] for m in measured]
    text = [n for n, d in spec.dtypes.items() if d is None]
    dtypes = {**spec.dtypes, **_string_dtypes(text, [m[1] for m in measured],
                                              spec.strings)}
    spec = _FrameSpec(spec.index, spec.columns, dtypes, spec.strings)
    encode = dask.delayed(_encode_partition, pure=True)
    encoded = [encode(p, spec) for p in parts]
    pick = dask.delayed(operator.getitem, pure=True)
    plans = []
    for name, dtype in dtypes.items():
        pieces = [da.from_delayed(pick(e, name), shape=(n,), dtype=dtype)
                  for e, n in zip(encoded, lengths)]
        column = da.concatenate(pieces) if pieces else da.empty((0,), dtype=dtype)
        where = os.path.join(rootdir, name) if isinstance(rootdir, str) else \
            rootdir.child(name)
        plans.append((name, *_plan(column, where, options, dtype)))
    if isinstance(rootdir, str):
        jsonfile.write_json(os.path.join(rootdir, layout.ATTRS_FILE), attrs)
    else:  # unseen until __rootdirs__, uploaded last
        rootdir.put({layout.ATTRS_FILE: jsonfile.dumps(attrs, layout.ATTRS_FILE)})
    return list(dtypes), plans


# -- the public function --------------------------------------------------------------


def _hidden_sibling(rootdir: str) -> str:
    parent, name = os.path.split(os.path.abspath(rootdir))
    os.makedirs(parent, exist_ok=True)
    return os.path.join(parent, f".{name}{_TMP_TAG}{uuid.uuid4().hex[:12]}")


def _lock_existing(rootdir: str):
    """The write lock of the dataset that mode 'w' replaces, held until it is replaced
    (None when there is none): a dataset another writer holds is never replaced."""
    from bcolzx._storage.lock import WriterLock

    if not os.path.isdir(rootdir):
        return None
    lock = WriterLock(rootdir)
    lock.acquire()
    return lock


def _discard(tmpdir: str) -> None:
    """Remove a hidden dataset whose write failed.

    Tasks of the failed computation may still be running (Dask does not stop
    them): renamed first, the directory can no longer be reached by the
    paths they hold, so nothing reappears while it is being removed.
    """
    trash = f"{tmpdir}-failed"
    try:
        os.rename(tmpdir, trash)
    except FileNotFoundError:
        return
    shutil.rmtree(trash, ignore_errors=True)


def _move_into_place(tmpdir: str, rootdir: str, mode: str) -> None:
    """Rename the finished dataset to `rootdir` (replacing it in mode 'w')."""
    old = None
    if os.path.lexists(rootdir):
        if mode != "w":
            raise FileExistsError(f"{rootdir} appeared while it was being written")
        old = _hidden_sibling(rootdir)
        os.rename(rootdir, old)
    os.rename(tmpdir, rootdir)
    jsonfile.fsync_dir(os.path.dirname(os.path.abspath(rootdir)))
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def from_dask(x, rootdir, mode: str = "a", *, chunklen: int | None = None, cparams=None,
              dflt=None, expectedlen: int | None = None,
              chunks_per_superchunk: int | None = None, write_index: bool | None = None,
              strings: str = "vlen", scheduler=None, storage_options: dict | None = None,
              filesystem=None):
    """Write a Dask array (a carray) or dataframe (a ctable) into a new dataset, in parallel.

    Each Dask task compresses the rows of one superchunk into a file of its
    own; the metadata is written once, by this process, when every task
    has succeeded, and the dataset appears under `rootdir` only then, by a
    rename.  A failed task leaves nothing under `rootdir`.  Works with every
    Dask scheduler (threads, processes, ``distributed``); with several
    machines, `rootdir` must be on a file system they all share, or on
    object storage (a URL): each task then uploads its superchunk as one
    object, and this process uploads ``meta/`` last, once every task has
    succeeded (docs/remote.md).

    Parameters
    ----------
    x : dask.array.Array or dask.dataframe.DataFrame
        The data: an array with known chunk sizes (rows along its first
        axis), or a dataframe, stored as :func:`~bcolzx.interop.pandas.from_dataframe`
        would store it.
    rootdir : str or os.PathLike
        The new dataset's directory, or its URL (``s3://bucket/key``...).
    mode : {'a', 'w'}
        'a' (default) refuses an existing `rootdir`; 'w' replaces it (once
        the new dataset is complete; on object storage, the old dataset's
        objects are deleted first, as objects cannot be renamed).
    chunklen, cparams, dflt, expectedlen
        As for :class:`~bcolzx.carray` (for every column of a dataframe).
    chunks_per_superchunk : int, optional
        Chunks per superchunk file, i.e. per task; a task holds one such block
        in memory.  Default: when the array's blocks along the rows are all of
        one size and whole chunks, superchunks follow them (at most 256
        chunks), so that no block is moved or copied; otherwise about
        :data:`WRITE_BLOCK_BYTES` (64 MiB) per file.
    write_index : bool, optional
        For a dataframe: store its index as column(s), placed first.  None
        (default) stores it when it has a name (e.g. after ``set_index``).
    strings : {'vlen', 'fixed'}
        For a dataframe: store its text columns variable-length (default:
        NumPy StringDType, variable-length bytes) or fixed-width (``U``/``S``
        items of the widest value, as legacy bcolz), as
        :func:`~bcolzx.interop.pandas.from_dataframe` does.
    scheduler : str or object, optional
        Passed to :func:`dask.compute` (default: Dask's current scheduler).
    storage_options : dict, optional
        For a URL: fsspec's options (credentials, endpoint).
    filesystem : fsspec.AbstractFileSystem, optional
        The filesystem `rootdir` is a path of.

    Returns
    -------
    carray or ctable
        The new dataset, opened in mode 'a'.

    Raises
    ------
    ImportError
        If Dask (or, for a dataframe, pandas) is not installed.
    TypeError
        If `x` is neither, or holds Python objects that cannot be stored.
    ValueError
        For unknown chunk sizes, a 0-d array, a bad mode or parameter, bad
        column names, missing values in fixed-width string columns (or
        object columns), unknown categories or a bad `strings`.
    FileExistsError
        If `rootdir` exists and `mode` is 'a'.
    LockedError
        In mode 'w', if another writer holds the dataset at `rootdir`.
    ReadOnlyError
        For mode 'r'.
    Exception
        Whatever a task raised; nothing is left under `rootdir`.

    Examples
    --------
    >>> import os, tempfile, dask.array as da, bcolzx
    >>> path = os.path.join(tempfile.mkdtemp(), "x")
    >>> ca = bcolzx.from_dask(da.arange(1000, chunks=300), path, chunklen=128)
    >>> len(ca), int(ca.sum())
    (1000, 499500)
    """
    if mode == "r":
        raise ReadOnlyError("from_dask writes a new dataset: mode 'r' is not allowed")
    if mode not in ("a", "w"):
        raise ValueError(f"mode must be 'a' or 'w', not {mode!r}")
    if strings not in ("vlen", "fixed"):
        raise ValueError(f"strings must be 'vlen' or 'fixed', not {strings!r}")
    from bcolzx._storage.objects import resolve

    where = resolve(rootdir, storage_options, filesystem)
    if not isinstance(where, str):
        return _from_dask_objects(x, where, mode, write_index, strings, scheduler,
                                  chunklen=chunklen,
                                  cparams=cparams, dflt=dflt, expectedlen=expectedlen,
                                  chunks_per_superchunk=chunks_per_superchunk)
    rootdir = where
    if mode == "a" and os.path.lexists(rootdir):
        raise FileExistsError(f"{rootdir} exists; open it with bcolzx.open() or use mode='w' "
                              "to replace it")
    options, frame = _options(x, chunklen=chunklen, cparams=cparams, dflt=dflt,
                              expectedlen=expectedlen,
                              chunks_per_superchunk=chunks_per_superchunk)
    held = _lock_existing(rootdir) if mode == "w" else None
    tmpdir = _hidden_sibling(rootdir)
    try:
        if frame:
            os.makedirs(tmpdir)
        names = _write_all(x, tmpdir, frame, options, write_index, strings, scheduler)
        if frame:
            jsonfile.write_json(os.path.join(tmpdir, layout.ROOTDIRS_FILE), {"names": names})
        _move_into_place(tmpdir, rootdir, mode)
    except BaseException:
        _discard(tmpdir)
        raise
    finally:
        if held is not None:
            held.release()
    from bcolzx.toplevel import open as _open

    return _open(rootdir, mode="a")


def _write_all(x, where, frame: bool, options: dict, write_index: bool | None,
               strings: str, scheduler) -> list[str] | None:
    """Run the tasks that write `x` at `where` (a hidden directory, or objects), then
    commit each dataset; a dataframe's column names."""
    dask = import_optional("dask", "dask", "from_dask")
    names = None
    if frame:
        names, plans = _plan_frame(x, where, options, write_index, strings)
    else:
        plans = [(None, *_plan(x, where, options))]
    tasks = [task for _, _, _, group in plans for task in group]
    written = iter(dask.compute(*tasks, scheduler=scheduler) if tasks else ())
    for _, target, length, group in plans:
        bulk.commit(target, length, [next(written) for _ in group])
    return names


def _options(x, chunks_per_superchunk, **given) -> tuple[dict, bool]:
    """The carray options of a write (those given), and whether `x` is a dataframe.

    Raises
    ------
    ValueError
        For a bad `chunks_per_superchunk`.
    TypeError
        If `x` is neither a Dask array nor a dataframe.
    """
    da = import_optional("dask.array", "dask", "from_dask")
    if chunks_per_superchunk is not None and (
            isinstance(chunks_per_superchunk, bool) or not isinstance(
                chunks_per_superchunk, (int, np.integer)) or
            not 1 <= chunks_per_superchunk <= 1 << 20):
        raise ValueError(f"chunks_per_superchunk must be in 1..2**20, not "
                         f"{chunks_per_superchunk!r}")
    given["chunks_per_superchunk"] = chunks_per_superchunk
    options = {k: v for k, v in given.items() if v is not None}
    frame = _is_frame(x)
    if not frame and not isinstance(x, da.Array):
        raise TypeError(f"from_dask needs a Dask array or dataframe, not {type(x).__name__}")
    return options, frame


def _from_dask_objects(x, objects, mode: str, write_index: bool | None, strings: str,
                       scheduler, **given):
    """:func:`from_dask` onto object storage: one object per task, ``meta/`` (and a
    table's ``__rootdirs__``) uploaded last; a failure deletes what was uploaded."""
    from bcolzx._storage import remote

    options, frame = _options(x, **given)
    kind, _ = remote.probe_published(objects)
    if kind is not None and mode == "a":
        raise FileExistsError(f"{objects.url} holds a {kind}; open it with bcolzx.open() or "
                              "use mode='w' to replace it")
    if mode == "w":  # objects cannot be renamed: the old dataset goes first
        objects.remove_all()
    try:
        names = _write_all(x, objects, frame, options, write_index, strings, scheduler)
        if frame:  # the table's publication
            objects.put({layout.ROOTDIRS_FILE: jsonfile.dumps({"names": names},
                                                              layout.ROOTDIRS_FILE)})
    except BaseException:
        try:
            objects.remove_all()
        except Exception:  # noqa: BLE001 - unpublished objects are invisible to readers
            pass
        raise
    from bcolzx.toplevel import open as _open

    return _open(objects, mode="a")


def _is_frame(x) -> bool:
    try:
        import dask.dataframe as dd
    except ImportError:
        return False
    return isinstance(x, dd.DataFrame)
