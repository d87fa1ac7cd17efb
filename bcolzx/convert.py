"""Upgrade a legacy bcolz ("format v1") carray or ctable directory to the bcolzx format.

bcolzx reads legacy directories and even modifies them in place, keeping them
v1 (docs/format/legacy-v1.md); :func:`convert` is the one-way road to the
bcolzx format: C-Blosc2 chunks in superchunk files with checksums, a zone
map, and chunks sized for bcolzx rather than legacy bcolz's tiny ones.  Given
new ``cparams`` or ``chunklen``, it also rewrites a bcolzx-format dataset
with them (recompression), the same way.

How a conversion runs:

1. *Plan*: the source is opened read-only and everything that can be
   checked is checked (kind, format, dtype, parameters, destination) before
   anything is written.
2. *Build*: the converted dataset is written, streamed block by block, into
   a hidden temporary directory next to the target (same parent directory,
   hence the same file system, so the final rename is atomic).
3. *Verify* (``verify=True``): the new dataset is reopened and every row is
   compared byte for byte with the source, and so are dtype, shape, default
   value, compression parameters, attributes and column order.
4. *Install*: with a `dst`, the temporary directory is renamed to `dst`;
   in place, it is swapped with the source in one atomic
   ``renameat2(RENAME_EXCHANGE)`` and the old copy is then removed.

If anything fails before the install, the source was never written to and
the temporary directory is removed.

On object storage (a URL, docs/remote.md) there is no rename: the converted
dataset is built at `dst` itself with its ``meta/sizes`` held back
(:attr:`bcolzx._storage.remote.ObjectStore.hold`), verified from what was
uploaded, and only then published (a ctable's ``__rootdirs__`` last), so
that no reader ever sees it before it is complete and checked; a failure
deletes what was uploaded (:mod:`bcolzx._publish`).  A dataset on object
storage is never converted in place (its objects cannot be replaced
atomically): it needs a `dst`.
"""

from __future__ import annotations

import ctypes
import dataclasses
import errno
import json
import os
import secrets
import shutil
import warnings

import numpy as np

from bcolzx._ext import codec as _codec
from bcolzx._format import layout, legacy, pickles
from bcolzx._format.jsonfile import fsync_dir, read_json, write_json
from bcolzx._format.meta import read_storage, write_storage
from bcolzx._format.strings import encode_rows, item_kind
from bcolzx._storage import writer
from bcolzx._storage.objects import Objects, is_url, resolve
from bcolzx.carray import carray as _carray
from bcolzx.carray import iterblocks
from bcolzx.defaults import defaults
from bcolzx.errors import CorruptDataError, UnsupportedFormatError
from bcolzx.params import cparams as _cparams
from bcolzx.toplevel import open as _open

__all__ = ["convert"]

#: Uncompressed bytes copied (and compared) per block, rounded to whole chunks.
BLOCK_BYTES = 8 << 20

#: ``renameat2`` flags (linux/fs.h) and the "current directory" descriptor.
RENAME_NOREPLACE = 1
RENAME_EXCHANGE = 2
_AT_FDCWD = -100
#: errno values meaning "this kernel, libc or file system cannot do that rename".
_UNSUPPORTED = frozenset({errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP, errno.ENOTSUP})

_TMP_TAG = ".bcolzx-convert-"
_CPARAMS_KEYS = ("clevel", "shuffle", "cname", "quantize", "blocksize", "bytedelta")


# -- atomic renames ------------------------------------------------------------------


_libc_renameat2 = None
_libc_loaded = False


def _load_renameat2():
    """libc's ``renameat2``, or None where there is none (non-Linux, glibc < 2.28)."""
    global _libc_renameat2, _libc_loaded
    if not _libc_loaded:
        _libc_loaded = True
        try:
            fn = ctypes.CDLL(None, use_errno=True).renameat2
        except (OSError, AttributeError, TypeError):
            fn = None
        if fn is not None:
            fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p,
                           ctypes.c_uint]
            fn.restype = ctypes.c_int
        _libc_renameat2 = fn
    return _libc_renameat2


def _renameat2(old: str, new: str, flags: int) -> None:
    """Linux ``renameat2(AT_FDCWD, old, AT_FDCWD, new, flags)``.

    Parameters
    ----------
    old, new : str
        The paths.
    flags : int
        ``RENAME_EXCHANGE`` (swap two existing paths) or ``RENAME_NOREPLACE``
        (fail with EEXIST when `new` exists).

    Raises
    ------
    OSError
        With the call's errno; ``errno.ENOSYS`` where the function does not
        exist.  Callers fall back to :func:`os.rename` for the errnos of
        ``_UNSUPPORTED``.
    """
    fn = _load_renameat2()
    if fn is None:
        raise OSError(errno.ENOSYS, "renameat2 is not available on this system", old,
                      None, new)
    if fn(_AT_FDCWD, os.fsencode(old), _AT_FDCWD, os.fsencode(new), flags) != 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code), old, None, new)


def _install_new(tmp: str, dst: str) -> None:
    """Rename the complete dataset `tmp` to `dst`, which must not exist.

    Uses ``RENAME_NOREPLACE`` so that a `dst` created meanwhile is never
    replaced; without it, checks then renames (a `dst` appearing between the
    two steps as an *empty* directory would be replaced).

    Raises
    ------
    FileExistsError
        If `dst` exists.
    OSError
        If the rename fails.
    """
    try:
        _renameat2(tmp, dst, RENAME_NOREPLACE)
        return
    except OSError as exc:
        if exc.errno not in _UNSUPPORTED:
            raise
    if os.path.lexists(dst):
        raise FileExistsError(errno.EEXIST, "the destination exists", dst)
    os.rename(tmp, dst)


def _swap_in(tmp: str, target: str) -> str:
    """Put the dataset `tmp` at `target`; return where the old `target` now is.

    With ``renameat2(RENAME_EXCHANGE)`` the two directories trade names in
    one atomic step: `target` names the old, then the new dataset, never
    nothing, and the old one ends up at `tmp`.  Where the exchange is not
    supported (errno ENOSYS, EINVAL, EOPNOTSUPP: non-Linux systems, old
    kernels or libcs, some network file systems) it takes two renames,
    `target` to a backup name and `tmp` to `target`: between them, for the
    duration of one rename, `target` does not exist.  If the second rename
    fails, the first is undone.

    Raises
    ------
    OSError
        If the exchange (or both renames) fails: `target` then still holds
        the old dataset.
    """
    try:
        _renameat2(tmp, target, RENAME_EXCHANGE)
        return tmp
    except OSError as exc:
        if exc.errno not in _UNSUPPORTED:
            raise
    parent, base = os.path.split(target)
    backup = os.path.join(parent, f".{base}{_TMP_TAG}old-{secrets.token_hex(6)}")
    os.rename(target, backup)
    try:
        os.rename(tmp, target)
    except BaseException:
        os.rename(backup, target)
        raise
    return backup


def _install(tmp: str, target: str, *, in_place: bool) -> str | None:
    """Put the complete dataset `tmp` at `target`: traded with the dataset there
    (`in_place`; returns where that one is now, :func:`_swap_in`) or renamed to a
    `target` that must not exist (returns None, :func:`_install_new`)."""
    if in_place:
        return _swap_in(tmp, target)
    _install_new(tmp, target)
    return None


# -- planning ------------------------------------------------------------------------


@dataclasses.dataclass
class _Column:
    """One carray to convert: its source, its place in the output, its parameters."""

    source: _carray
    relpath: str  # '' for a lone carray, the column name in a ctable
    cparams: _cparams  # what the converted dataset stores (quantize included)
    chunklen: int | None  # None: bcolzx's default for the length


def _target_cparams(src: _carray, override) -> _cparams:
    """The compression parameters of the converted copy of `src`.

    A legacy dataset keeps clevel, shuffle, cname and quantize and gets
    bcolzx's defaults for blocksize and bytedelta; a bcolzx-format column (of
    a partly converted ctable) keeps all six.  A dict `override` replaces the
    keys it names, a :class:`cparams` replaces everything.
    """
    cp = src.cparams
    params = cp.to_dict()
    if _is_legacy(src):  # no such knobs in legacy bcolz: bcolzx's defaults
        params.update(blocksize=layout.DEFAULT_BLOCKSIZE, bytedelta=layout.DEFAULT_BYTEDELTA)
    else:
        params.update(blocksize=cp.blocksize, bytedelta=cp.bytedelta)
    if isinstance(override, _cparams):
        params = override.to_dict()
        params.update(blocksize=override.blocksize, bytedelta=override.bytedelta)
    elif override:
        unknown = set(override) - set(_CPARAMS_KEYS)
        if unknown:
            raise TypeError(f"unknown cparams keys {sorted(unknown)}; known: "
                            f"{list(_CPARAMS_KEYS)}")
        params.update(override)
    if item_kind(src.dtype) is not None:  # pickles, strings, bytes: typesize 1, no
        params["bytedelta"] = "off"        # byte-delta (format §2d, strings.md)
    elif params["blocksize"] == layout.DEFAULT_BLOCKSIZE:
        params["blocksize"] = _whole_items(params["blocksize"], src.dtype.itemsize)
    return _cparams(**params)


def _target_chunklen(src: _carray, chunklen: int | None) -> int | None:
    """The chunklen of the converted copy of `src`: `chunklen` when given; else
    a bcolzx-format column keeps its own, a legacy one gets bcolzx's default
    (None)."""
    if chunklen is None and not _is_legacy(src):
        return src.chunklen
    return chunklen


def _is_legacy(src: _carray) -> bool:
    """Whether `src` is stored in the legacy bcolz format (on disk or on object storage)."""
    return not src.engine.store.native


def _whole_items(blocksize: int, itemsize: int) -> int:
    """`blocksize` rounded down to whole items of the C-Blosc2 typesize bcolzx uses.

    Works around a C-Blosc2 behaviour (as called by bcolzx's codec): a forced
    block size that is not a multiple of the typesize (32 KiB for ``S10``,
    ``U6``... items) gives chunks that compress without error and then fail
    to decompress ("Invalid data").  Verification would refuse such a copy;
    this keeps the default block size usable for every item size.
    """
    typesize = max(1, min(itemsize, 255))
    return max(typesize, blocksize - blocksize % typesize)


def _check_chunklen(chunklen) -> int | None:
    if chunklen is None:
        return None
    if isinstance(chunklen, (bool, np.bool_)) or not isinstance(chunklen, (int, np.integer)) \
            or chunklen < 1:
        raise ValueError(f"chunklen must be a positive int or None, not {chunklen!r}")
    return int(chunklen)


def _check_readable(path: str) -> None:
    """Refuse a legacy carray whose chunks C-Blosc2 cannot decode (snappy).

    Raises
    ------
    UnsupportedFormatError
        For a codec C-Blosc2 lacks, or object dtype.
    """
    if legacy.is_legacy(path):
        storage, _ = legacy.read(path)
        cname = storage.cparams.cname
        if cname not in _codec.CODECS:
            raise UnsupportedFormatError(
                f"{path}: the chunks are compressed with {cname!r}, which C-Blosc2 (hence "
                f"bcolzx) cannot decode (it knows {', '.join(_codec.CODECS)}); recompress the "
                "dataset with legacy bcolz first")


def _plan(src: str | Objects, cparams, chunklen, allow_pickle=None, *, rewrite: bool = False
          ) -> tuple[str, object, list[_Column]]:
    """Open `src` (a local path, or the objects of a dataset on object storage)
    read-only and decide everything; nothing is written.  With `rewrite`, a
    dataset in the bcolzx format is accepted without new `cparams` or `chunklen`
    (it is copied with its own: :func:`bcolzx.compact` to a new place).

    Returns
    -------
    kind : {'carray', 'ctable'}
    dataset : carray or ctable
        `src` opened in mode 'r'.
    columns : list of _Column

    Raises
    ------
    FileNotFoundError, UnsupportedFormatError, CorruptDataError, ValueError, TypeError
        As :func:`convert`.
    """
    if cparams is not None and not isinstance(cparams, (dict, _cparams)):
        raise TypeError(f"cparams must be a bcolzx.cparams, a dict or None, not "
                        f"{type(cparams).__name__}")
    chunklen = _check_chunklen(chunklen)
    if isinstance(src, Objects):
        return _plan_objects(src, cparams, chunklen, allow_pickle, rewrite)
    if os.path.isfile(os.path.join(src, layout.ROOTDIRS_FILE)):
        kind = "ctable"
    elif os.path.isfile(layout.meta_path(src, layout.STORAGE_FILE)):
        kind = "carray"
    else:
        raise FileNotFoundError(errno.ENOENT, "no carray or ctable (neither "
                                f"{layout.ROOTDIRS_FILE} nor meta/storage) in", src)
    recompress = cparams is not None or chunklen is not None or rewrite
    if kind == "carray" and not legacy.is_legacy(src) and not recompress:
        raise UnsupportedFormatError(
            f"{src} is already in the bcolzx format: there is nothing to convert (give "
            "cparams or chunklen to rewrite it with other ones)")
    if kind == "carray":
        _check_readable(src)
    else:
        names = read_json(os.path.join(src, layout.ROOTDIRS_FILE)).get("names")
        if isinstance(names, list) and all(isinstance(n, str) and os.sep not in n
                                           for n in names):  # else opening says what is wrong
            for n in names:
                _check_readable(os.path.join(src, n))
    dataset = _open(src, mode="r", allow_pickle=allow_pickle)
    return _columns(kind, dataset, src, cparams, chunklen, allow_pickle, recompress)


def _plan_objects(src: Objects, cparams, chunklen, allow_pickle, rewrite: bool
                  ) -> tuple[str, object, list[_Column]]:
    """:func:`_plan` of a dataset on object storage: opened (one batch of small
    reads), then checked as a local one."""
    from bcolzx.ctable import ctable as _ctable

    dataset = _open(src, mode="r", allow_pickle=allow_pickle)  # DatasetNotFoundError
    kind = "ctable" if isinstance(dataset, _ctable) else "carray"
    sources = [dataset] if kind == "carray" else list(dataset.cols.values())
    for c in sources:
        cname = c.cparams.cname
        if _is_legacy(c) and cname not in _codec.CODECS:
            raise UnsupportedFormatError(
                f"{c.rootdir}: the chunks are compressed with {cname!r}, which C-Blosc2 "
                f"(hence bcolzx) cannot decode (it knows {', '.join(_codec.CODECS)}); "
                "recompress the dataset with legacy bcolz first")
    recompress = cparams is not None or chunklen is not None or rewrite
    if not recompress and not any(_is_legacy(c) for c in sources):
        raise UnsupportedFormatError(
            f"{src.url} is already in the bcolzx format: there is nothing to convert (give "
            "cparams or chunklen to rewrite it with other ones)")
    return _columns(kind, dataset, src.url, cparams, chunklen, allow_pickle, recompress)


def _columns(kind: str, dataset, src: str, cparams, chunklen, allow_pickle, recompress: bool
             ) -> tuple[str, object, list[_Column]]:
    """The carrays of the opened `dataset` to convert, their parameters decided."""
    sources = [dataset] if kind == "carray" else list(dataset.cols.values())
    if any(item_kind(c.dtype) == "pickle" for c in sources):
        allowed = defaults.allow_pickle if allow_pickle is None else allow_pickle
        pickles.require(allowed, "converting a dataset of object dtype", src)
    if kind == "carray":
        return kind, dataset, [_Column(dataset, "", _target_cparams(dataset, cparams),
                                       _target_chunklen(dataset, chunklen))]
    names = dataset.names
    if not recompress and not any(_is_legacy(dataset.cols[n]) for n in names):
        raise UnsupportedFormatError(
            f"{src} is already in the bcolzx format (a ctable with no legacy column): there "
            "is nothing to convert (give cparams or chunklen to rewrite it with other ones)")
    columns = [_Column(dataset.cols[n], n,
                       _target_cparams(dataset.cols[n], cparams),
                       _target_chunklen(dataset.cols[n], chunklen)) for n in names]
    return kind, dataset, columns


# -- building --------------------------------------------------------------------------


def _write_carray(col: _Column, rootdir: str | Objects, progress=None):
    """Write the bcolzx-format copy of `col.source` at `rootdir` (which must not exist).

    The rows are copied as stored, block by block, never quantized again: the
    dataset is created with ``quantize=0`` and the wanted ``quantize`` is
    written into ``meta/storage`` once the data is in, so that later appends
    are quantized as legacy bcolz did.

    On object storage (`rootdir` an :class:`Objects`) the attributes and the
    ``quantize`` go up with the one commit, which holds ``meta/sizes`` back:
    returns the store, to :meth:`~bcolzx._storage.remote.ObjectStore.publish`
    once checked (None on disk).
    """
    src, cp = col.source, col.cparams
    write_cp = _cparams(clevel=cp.clevel, shuffle=cp.shuffle, cname=cp.cname, quantize=0,
                        blocksize=cp.blocksize, bytedelta=cp.bytedelta)
    n = len(src)
    objects = item_kind(src.dtype) == "pickle"
    chunklen = col.chunklen
    if objects and chunklen is None:  # sized from the pickles (legacy: one per chunk)
        sample = src.engine.read(0, min(n, 64))
        chunklen = layout.vlen_chunklen(sum(map(len, sample)) / len(sample) if n else None)
    remote = isinstance(rootdir, Objects)
    out = _carray(np.empty((0, *src.shape[1:]), src.dtype), rootdir=rootdir, mode="w",
                  cparams=write_cp, chunklen=chunklen, dflt=src.dflt,
                  expectedlen=n or None, allow_pickle=True if objects else None,
                  _publish=not remote)
    store = None
    if remote:
        from bcolzx._storage.remote import ObjectStore

        store = out.engine.store
        assert isinstance(store, ObjectStore)
        store.hold = True
    try:
        if objects:  # the pickles as they are: nothing is unpickled
            blen = max(out.chunklen, 1024)
            for lo in range(0, n, blen):
                items = src.engine.read(lo, min(n, lo + blen))
                out.engine.append(items)
                if progress is not None:
                    progress(len(items) * layout.VLEN_ROW_NBYTES)
        else:
            chunk_bytes = out.chunklen * out.atomsize
            blen = out.chunklen * max(1, BLOCK_BYTES // chunk_bytes)
            for block in iterblocks(src, blen):
                out.append(block)
                if progress is not None:
                    progress(block.nbytes)
        if store is not None:  # staged, uploaded by the (held) commit
            for name, value in src.attrs:
                out.attrs[name] = value
            if cp.quantize:
                store.replace_storage(_quantized(store.storage, cp.quantize))
        out.flush()
        if store is None:
            for name, value in src.attrs:
                out.attrs[name] = value
    except BaseException:
        try:
            out.purge()  # drops unflushed rows: nothing is flushed at garbage collection
        except Exception:  # pragma: no cover - the caller removes the directory anyway
            pass
        raise
    del out
    if store is None and cp.quantize:
        assert isinstance(rootdir, str)
        write_storage(rootdir, _quantized(read_storage(rootdir), cp.quantize))
    return store


def _quantized(storage, quantize: int):
    """`storage` with `quantize` in its cparams."""
    return storage.replace(cparams=dataclasses.replace(storage.cparams, quantize=quantize))


def _build(kind: str, dataset, columns: list[_Column], tmp: str, progress=None) -> None:
    """Write the converted dataset at `tmp` (an empty directory, or absent for a carray)."""
    if kind == "carray":
        # mode 'w' replaces the empty reserved directory
        _write_carray(columns[0], tmp, progress)
        return
    for col in columns:
        _write_carray(col, os.path.join(tmp, col.relpath), progress)
    write_json(os.path.join(tmp, layout.ATTRS_FILE), dataset.attrs.getall())
    # Last, as bcolzx's ctable does: a directory without it was never complete.
    write_json(os.path.join(tmp, layout.ROOTDIRS_FILE), {"names": dataset.names})
    fsync_dir(tmp)


# -- verifying -------------------------------------------------------------------------


def _attrs_json(a) -> str:
    # JSON text compares NaN equal to NaN and checks the order of the names.
    return json.dumps(list(a), allow_nan=True)


def _as_bytes(block: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(block).reshape(-1).view(np.uint8)


def _same_dflt(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether two defaults are equal: byte for byte, or (objects: JSON scalars) by
    type and value."""
    if a.dtype.hasobject or b.dtype.hasobject:  # objects, strings, bytes
        x, y = a[()], b[()]
        return a.dtype == b.dtype and type(x) is type(y) and repr(x) == repr(y)
    return np.asarray(a).tobytes() == np.asarray(b).tobytes()


def _verify_objects(new: _carray, src: _carray, fail, progress=None) -> None:
    """Compare the pickles of two object carrays (never unpickled)."""
    blen = max(new.chunklen, 1024)
    for lo in range(0, len(src), blen):
        hi = min(len(src), lo + blen)
        got, want = new.engine.read(lo, hi), src.engine.read(lo, hi)
        for i, (a, b) in enumerate(zip(got, want)):
            if a != b:
                fail(f"row {lo + i} differs from the source's (pickles compared)")
        if progress is not None:
            progress((hi - lo) * layout.VLEN_ROW_NBYTES)


def _verify_carray(col: _Column, path: str | Objects, progress=None, *, held=None) -> None:
    """Compare the converted carray at `path` with `col.source` (on object storage,
    read through the small files `held`, its ``meta/sizes`` not yet published).

    Raises
    ------
    CorruptDataError
        At the first difference.
    """
    src = col.source
    label = path.url if isinstance(path, Objects) else path

    def fail(what: str):
        raise CorruptDataError(f"verification of the converted dataset failed: {what}",
                               path=label)

    if isinstance(path, str) and legacy.is_legacy(path):
        fail("it is not in the bcolzx format")
    new = _carray(rootdir=path, mode="r", allow_pickle=src._allow_pickle, _fetched=held)
    if _is_legacy(new):
        fail("it is not in the bcolzx format")
    if new.dtype != src.dtype:
        fail(f"dtype {new.dtype}, the source has {src.dtype}")
    if new.shape != src.shape:
        fail(f"shape {new.shape}, the source has {src.shape}")
    if not _same_dflt(new.dflt, src.dflt):
        fail(f"dflt {new.dflt!r}, the source has {src.dflt!r}")
    if new.cparams != col.cparams:
        fail(f"cparams {new.cparams!r}, expected {col.cparams!r}")
    if col.chunklen is not None and new.chunklen != col.chunklen:
        fail(f"chunklen {new.chunklen}, expected {col.chunklen}")
    if _attrs_json(new.attrs) != _attrs_json(src.attrs):
        fail(f"attrs {new.attrs.getall()!r}, the source has {src.attrs.getall()!r}")
    kind = item_kind(src.dtype)
    if kind in ("pickle", "bytes"):
        _verify_objects(new, src, fail, progress)
        return
    if kind == "utf8":  # the chunks' UTF-8 and lengths (missing values included)
        blen = max(new.chunklen, 1024)
        for lo in range(0, len(src), blen):
            hi = min(len(src), lo + blen)
            if encode_rows(new[lo:hi], kind) != encode_rows(src[lo:hi], kind):
                fail(f"rows {lo}..{hi - 1} differ from the source's (UTF-8 compared)")
            if progress is not None:
                progress((hi - lo) * layout.VLEN_ROW_NBYTES)
        return
    blen = new.chunklen * max(1, BLOCK_BYTES // (new.chunklen * new.atomsize))
    start = 0
    for got, want in zip(iterblocks(new, blen), iterblocks(src, blen)):
        a, b = _as_bytes(got), _as_bytes(want)
        if len(a) != len(b) or not np.array_equal(a, b):
            rows = min(len(got), len(want))
            diff = np.any(a[: len(b)].reshape(rows, -1) != b[: len(a)].reshape(rows, -1), axis=1)
            bad = start + (int(np.argmax(diff)) if diff.any() else rows)
            fail(f"row {bad} differs from the source's (bytes compared)")
        start += len(got)
        if progress is not None:
            progress(got.nbytes)
    if start != len(src):  # pragma: no cover - the shapes were compared
        fail(f"{start} rows compared of {len(src)}")


def _verify(kind: str, dataset, columns: list[_Column], tmp: str, progress=None) -> None:
    """Compare the converted dataset at `tmp` with the source `dataset`.

    Raises
    ------
    CorruptDataError
        At the first difference.
    """
    if kind == "ctable":
        new = _open(tmp, mode="r")
        if new.names != dataset.names:
            raise CorruptDataError(f"verification of the converted dataset failed: columns "
                                   f"{new.names}, the source has {dataset.names}", path=tmp)
        if _attrs_json(new.attrs) != _attrs_json(dataset.attrs):
            raise CorruptDataError("verification of the converted dataset failed: the "
                                   "table attrs differ", path=tmp)
    for col in columns:
        _verify_carray(col, os.path.join(tmp, col.relpath) if col.relpath else tmp, progress)


# -- the public function ---------------------------------------------------------------


def _reserve(parent: str, base: str, tag: str = _TMP_TAG) -> str:
    """Create and return a new empty hidden directory ``parent/.base.bcolzx-convert-XXXX``
    (another `tag` for another tool's temporary directories)."""
    while True:
        path = os.path.join(parent, f".{base}{tag}{secrets.token_hex(6)}")
        try:
            os.mkdir(path)
            return path
        except FileExistsError:  # pragma: no cover - 48 random bits
            continue


def _remove(path: str) -> None:
    """Remove a temporary directory, if it exists, ignoring errors."""
    if os.path.lexists(path):
        shutil.rmtree(path, ignore_errors=True)


def convert(src, dst=None, *, verify=True, cparams=None, chunklen=None,
            progress=None, allow_pickle=None, storage_options=None) -> str:
    """Convert a legacy bcolz (format v1) carray or ctable directory to the bcolzx format.

    Parameters
    ----------
    src : str or os.PathLike
        The directory of a legacy carray, or of a ctable with at least one
        legacy column (a ctable that bcolzx extended with
        :meth:`ctable.addcol` mixes both formats; all its columns are
        rewritten).  With `cparams` or `chunklen` given, also a dataset
        already in the bcolzx format: it is rewritten with them
        (recompressed), in the same way.  Or its URL on object storage
        (``s3://...``, any fsspec URL, or an fsspec mapper; docs/remote.md).
    dst : str or os.PathLike, optional
        Where to write the converted dataset; it must not exist, its parent
        directory must.  `src` is then left untouched.  None (default)
        converts in place: `src` is replaced, atomically, by its converted
        copy (see Notes).  A URL (or fsspec mapper) writes it to object
        storage: nothing may be stored under it yet, and the dataset is
        published only once complete and verified.  A `src` on object
        storage needs a `dst` (local or remote).
    verify : bool, optional
        Reopen the converted dataset and compare it with `src` before it is
        installed: every row byte for byte (so NaN payloads and signed zeros
        count), dtype, shape, ``dflt``, ``cparams``, attributes (of the
        carray, of the ctable and of each column) and column order.  Default
        True; it reads the source twice.
    cparams : bcolzx.cparams or dict, optional
        Compression parameters of the converted dataset.  Default: the
        source's ``clevel``, ``shuffle``, ``cname`` and ``quantize``, with
        bcolzx's defaults for ``blocksize`` and ``bytedelta`` (which legacy
        bcolz does not have); a bcolzx-format source keeps all six.  A dict
        changes only the keys it names (e.g.
        ``{'cname': 'zstd'}`` keeps the source's quantize); a
        :class:`bcolzx.cparams` is used as it is, for every column.
    chunklen : int, optional
        Rows per chunk of every converted carray.  Default: a bcolzx-format
        source keeps its own; for a legacy one, what bcolzx
        chooses for a new dataset of that length and row size (chunks of
        16 KiB to 1 MiB), not the legacy chunk length, which is usually far
        smaller.
    progress : callable, optional
        Called as the work advances with the uncompressed bytes just written
        (then, with `verify`, just compared): the calls add up to the
        dataset's ``nbytes``, twice with `verify`.
    allow_pickle : bool, optional
        Convert object-dtype data (legacy bcolz's pickled objects, one file
        per value) too; default ``bcolzx.defaults.allow_pickle``.  The
        pickles are copied and compared as they are, never unpickled; the
        switch is asked for because the result is a dataset of pickles.
    storage_options : dict, optional
        The options of the fsspec filesystem of `src` or `dst` when it is a
        URL (endpoint, credentials...), for both when both are.

    Returns
    -------
    str
        The path of the converted dataset: `dst`, or `src` when converting
        in place (as given).  Open it with :func:`bcolzx.open`.

    Raises
    ------
    FileNotFoundError
        If `src` is not a directory or holds no carray or ctable, or the
        parent directory of `dst` does not exist.
    FileExistsError
        If `dst` exists.
    UnsupportedFormatError
        (a ValueError) If `src` is already in the bcolzx format (a carray,
        or a ctable with no legacy column) and neither `cparams` nor
        `chunklen` is given, or holds data bcolzx cannot
        decode (the ``snappy`` codec).  Nothing is written.
    PickleNotAllowedError
        (an UnsupportedFormatError) If `src` holds object dtype and
        `allow_pickle` is not given.  Nothing is written.
    CorruptDataError
        (a ValueError) If `src` is damaged, or if verification finds a
        difference; the converted copy is then discarded.
    ValueError
        For a bad `chunklen` or `cparams` value, or a `dst` inside `src`.
    TypeError
        For `cparams` of the wrong type or with unknown keys.
    LockedError
        (an ``IOError``) Converting in place, if a writer holds `src` or one of
        its columns; nothing is written.
    AppendOnlyError
        (a ``PermissionError``) If `src` is on object storage and `dst` is
        not given: nothing is written.
    RemoteError
        (an ``OSError``) If the object store fails a request; nothing is
        published at `dst`.
    OSError
        If the file system refuses.

    Notes
    -----
    Whatever fails, `src` is never modified before the last step, and the
    temporary directory (a hidden sibling ``.<name>.bcolzx-convert-<hex>``
    of the target) is removed.

    *In place* (``dst=None``) the converted copy is built and verified next
    to `src`, then the two directories trade names with Linux's
    ``renameat2(RENAME_EXCHANGE)``, so that `src` always names a complete
    dataset, old or new; the old copy is removed afterwards (if that fails,
    a :class:`RuntimeWarning` names what is left).  Where the exchange is
    unavailable (other systems, kernels before 3.15, glibc before 2.28,
    some network file systems) two renames are used instead: `src` to a
    backup name, then the new copy to `src`.  Between these two renames `src`
    does not exist for a moment, and a crash there leaves the old dataset
    under the backup name ``.<name>.bcolzx-convert-old-<hex>``.  A symbolic
    link `src` is followed: the directory it points to is converted.

    *To object storage* there is no rename: the dataset is uploaded at `dst`
    with its commit point (``meta/sizes``) held back, verified by reading back
    what was uploaded, and published only then (a ctable's columns, its
    ``__attrs__``, and ``__rootdirs__`` last).  Until that last upload no
    reader finds a dataset at `dst`; a failure (the server gone, a
    verification error, Ctrl-C) deletes what was uploaded, and if even that
    fails the objects left name no dataset (a later write to `dst` in mode
    ``'w'`` deletes them).

    Quantize: legacy ``quantize`` was applied when the values were written,
    so the stored values are copied exactly as they are, never quantized a
    second time; ``quantize`` stays in the stored ``cparams``, so that rows
    appended later are quantized as before.  (The public carray quantizes on
    every append, so the copy is written with ``quantize=0`` and the value is
    then written into the new ``meta/storage``.)

    Block size: where bcolzx's default 32 KiB block size is not a multiple
    of the item size (``S10``, ``U6``, ...), it is rounded down to whole
    items, because C-Blosc2 writes chunks it cannot read back otherwise.

    Other notes: ``expectedlen`` becomes the dataset's length; in place, the
    source's write locks (its columns' too) are held during the conversion,
    so that a bcolzx writer elsewhere gets :class:`~bcolzx.LockedError` (or
    waits ``bcolzx.defaults.lock_timeout``) rather than write rows the swap
    would lose (legacy bcolz takes no lock: keep it away), while a copy to
    `dst` reads the source as one commit left it; the converted directory
    gets default permissions, not the source's.

    Examples
    --------
    >>> import bcolzx
    >>> bcolzx.convert("/data/legacy/prices")  # doctest: +SKIP
    '/data/legacy/prices'
    >>> bcolzx.convert("/data/legacy/prices", "/data/new/prices", cparams={"cname": "zstd"})
    ... # doctest: +SKIP
    '/data/new/prices'

    A dataset written by bcolzx needs no conversion:

    >>> import os, tempfile
    >>> d = os.path.join(tempfile.mkdtemp(), "a")
    >>> _ = bcolzx.arange(5, rootdir=d)
    >>> try:
    ...     bcolzx.convert(d)
    ... except bcolzx.UnsupportedFormatError:
    ...     print("nothing to convert")
    nothing to convert
    """
    source, target = _locate(src, dst, storage_options)
    if isinstance(source, Objects) or isinstance(target, Objects):
        from bcolzx._publish import check_destination, write_plan

        check_destination(source, target)  # AppendOnlyError for a URL in place
        assert target is not None
        plan = _plan(source, cparams, chunklen, allow_pickle)
        return write_plan(plan, source, target, dst, verify, progress)
    return _convert_paths(source, target, verify, cparams, chunklen, progress, allow_pickle)


def _locate(src, dst, storage_options) -> tuple[str | Objects, str | Objects | None]:
    """Where `src` and `dst` are: local paths, or objects (URLs, with the
    `storage_options` of their filesystem; fsspec mappers).

    Raises
    ------
    ValueError
        For `storage_options` when neither is a URL.
    """
    if storage_options and not any(is_url(x) for x in (src, dst)):
        raise ValueError("storage_options go with a URL (s3://..., gs://...); neither "
                         f"{os.fspath(src)!r} nor {dst!r} is one")

    def where(x):
        return resolve(x, storage_options if is_url(x) else None)

    return where(src), None if dst is None else where(dst)


def _convert_paths(src_given: str, dst, verify, cparams, chunklen, progress,
                   allow_pickle) -> str:
    """:func:`convert` from a local directory to another (or in place)."""
    if not os.path.isdir(src_given):
        raise FileNotFoundError(errno.ENOENT, "no dataset directory at", src_given)
    # In place, nobody may write the source meanwhile: the swap would lose its rows.
    # (A copy elsewhere reads the source as one commit left it, as any reader.)
    locks = []
    if dst is None:
        # A wrong call is refused before any lock.
        _plan(src_given, cparams, chunklen, allow_pickle)
        locks = writer.lock_tree(src_given, defaults.lock_timeout)
    try:
        return _convert_locked(src_given, dst, verify, cparams, chunklen, progress,
                               allow_pickle)
    finally:
        writer.release_all(locks)


def _local_target(dst_given: str, real_src: str | None) -> str:
    """The real path where a converted copy goes on disk: `dst_given`, which must not
    exist, in a directory that does (and not inside the source, `real_src`).

    Raises
    ------
    FileExistsError, FileNotFoundError, ValueError
        As :func:`convert`.
    """
    if os.path.lexists(dst_given):
        raise FileExistsError(errno.EEXIST, "the destination exists", dst_given)
    parent, base = os.path.split(os.path.abspath(dst_given))
    real_parent = os.path.realpath(parent)
    if real_src is not None and (real_parent == real_src or
                                 real_parent.startswith(real_src + os.sep)):
        raise ValueError(f"the destination {dst_given} is inside the source {real_src}")
    if not os.path.isdir(real_parent):
        raise FileNotFoundError(errno.ENOENT, "the destination's directory does not exist",
                                parent)
    return os.path.join(real_parent, base)


def _convert_locked(src_given: str, dst, verify, cparams, chunklen, progress,
                    allow_pickle=None) -> str:
    """:func:`convert`, the source's write locks held (in place): planned again under them."""
    plan = _plan(src_given, cparams, chunklen, allow_pickle)
    real_src = os.path.realpath(src_given)
    if dst is None:
        _write_local(plan, real_src, verify, progress, in_place=True, src_given=src_given)
        return src_given
    dst_given = os.fspath(dst)
    _write_local(plan, _local_target(dst_given, real_src), verify, progress)
    return dst_given


def _write_local(plan, target: str, verify: bool, progress, *, in_place: bool = False,
                 src_given: str = "") -> None:
    """Build the converted dataset of `plan` beside `target`, verify it and install it."""
    kind, dataset, columns = plan
    parent, base = os.path.split(target)
    tmp = _reserve(parent, base)
    try:
        _build(kind, dataset, columns, tmp, progress)
        if verify:
            _verify(kind, dataset, columns, tmp, progress)
        old = _install(tmp, target, in_place=in_place)
    except BaseException:
        _remove(tmp)
        raise
    fsync_dir(parent)
    if old is not None:
        try:
            shutil.rmtree(old)
        except OSError as exc:
            warnings.warn(f"{src_given} was converted, but its old copy could not be removed "
                          f"from {old}: {exc}", RuntimeWarning, stacklevel=3)
