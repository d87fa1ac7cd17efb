"""What a dataset directory holds, from its metadata alone (no chunk is decompressed).

:func:`describe` reads ``meta/storage``, ``meta/sizes``, ``__attrs__``,
``__rootdirs__``, the superchunk indexes (for the dead space) and the
directory listing, so it costs the same on a kilobyte and on a terabyte of
data.  ``bcolzx info`` prints it; ``ls``, ``verify``, ``convert`` and
``compact`` use it for their listings and progress totals.
"""

from __future__ import annotations

import errno
import os
from math import ceil, prod

import numpy as np

from bcolzx._format import jsonfile, layout, legacy
from bcolzx._format.meta import read_sizes, read_storage
from bcolzx.errors import CorruptDataError

__all__ = ["dataset_kind", "describe", "describe_any", "disk_usage", "require_directory"]

_LEGACY_FORMAT = "legacy-v1"


def dataset_kind(path: str) -> str | None:
    """``'carray'``, ``'ctable'``, or None when `path` holds neither."""
    from bcolzx.toplevel import _kind

    return _kind(path)


def require_directory(path) -> None:
    """Stop unless `path` is a directory: the one wording of every command.

    Raises
    ------
    FileNotFoundError
        If nothing is at `path` ("no such directory").
    NotADirectoryError
        If something else than a directory is ("not a directory").
    """
    if os.path.isdir(path):
        return
    if os.path.lexists(path):
        raise NotADirectoryError(errno.ENOTDIR, "not a directory", os.fspath(path))
    raise FileNotFoundError(errno.ENOENT, "no such directory", os.fspath(path))


def disk_usage(path: str) -> tuple[int, int]:
    """(number of files, their bytes) under `path` (a directory or a file); symbolic
    links are not followed."""
    if not os.path.isdir(path):
        return 1, os.lstat(path).st_size
    files = size = 0
    for root, _dirs, names in os.walk(path):
        for name in names:
            try:
                st = os.lstat(os.path.join(root, name))
            except FileNotFoundError:  # removed meanwhile
                continue
            files += 1
            size += st.st_size
    return files, size


def _cparams(storage, native: bool) -> dict:
    cp = storage.cparams
    out = {"cname": cp.cname, "clevel": cp.clevel, "shuffle": cp.shuffle,
           "quantize": cp.quantize}
    if native:  # legacy bcolz has neither
        out.update(blocksize=storage.blocksize, bytedelta=storage.bytedelta)
    return out


def _dead_bytes(path: str) -> tuple[int | None, str | None]:
    """(bytes ``compact`` would reclaim, None) or (None, why it is unknown)."""
    from bcolzx._storage.directory import DirectoryStore

    try:
        return DirectoryStore.open(path, readonly=True).dead_bytes(), None
    except CorruptDataError as exc:
        return None, f"{type(exc).__name__}: {exc}"


def _describe_carray(path: str) -> tuple[dict, np.dtype]:
    """(the description of the carray at `path`, its dtype)."""
    native = not legacy.is_legacy(path)
    if native:
        storage, sizes = read_storage(path), read_sizes(path)
        cbytes = sizes.cbytes
    else:
        from bcolzx._storage.legacy import LegacyStore

        storage, sizes = legacy.read(path)
        # Not what legacy bcolz records (which counts an uncompressed chunk it kept in
        # memory): the compressed chunks, as carray.cbytes counts them.
        cbytes = LegacyStore(path, storage, sizes, readonly=True).cbytes
    rows, rowshape = sizes.shape[0], sizes.shape[1:]
    nbytes = rows * prod(rowshape) * storage.dtype.itemsize
    nchunks = ceil(rows / storage.chunklen)
    files, disk = disk_usage(path)
    info = {
        "path": path,
        "kind": "carray",
        "format": layout.FORMAT_NAME if native else _LEGACY_FORMAT,
        "shape": list(sizes.shape),
        "dtype": str(storage.dtype),
        "chunklen": storage.chunklen,
        "chunks": nchunks,
        "superchunks": ceil(nchunks / storage.chunks_per_superchunk) if native else None,
        "cparams": _cparams(storage, native),
        "checksum": storage.checksum if native else None,
        "nbytes": nbytes,
        "cbytes": cbytes,
        "ratio": round(nbytes / cbytes, 4) if cbytes else None,
        "dead_bytes": None,  # legacy: nothing to compact
        "files": files,
        "disk_bytes": disk,
    }
    if native:
        info["dead_bytes"], problem = _dead_bytes(path)
        if problem:
            info["warnings"] = [problem]
    return info, storage.dtype


def _read_names(rootdir: str) -> list[str]:
    path = os.path.join(rootdir, layout.ROOTDIRS_FILE)
    names = jsonfile.read_json(path).get("names")
    if not isinstance(names, list) or not all(isinstance(n, str) and n and os.sep not in n
                                              for n in names):
        raise CorruptDataError(f"{layout.ROOTDIRS_FILE} must hold {{'names': [...]}}",
                               path=path)
    return names


def _describe_ctable(rootdir: str) -> dict:
    names = _read_names(rootdir)
    columns, fields = {}, []
    for name in names:
        columns[name], dtype = _describe_carray(os.path.join(rootdir, name))
        fields.append((name, dtype, tuple(columns[name]["shape"][1:])))
    lengths = {name: c["shape"][0] for name, c in columns.items()}
    if len(set(lengths.values())) > 1:
        raise CorruptDataError(f"columns have different lengths {lengths}", path=rootdir)
    formats = {c["format"] for c in columns.values()}
    nbytes = sum(c["nbytes"] for c in columns.values())
    cbytes = sum(c["cbytes"] for c in columns.values())
    native = [c["dead_bytes"] for c in columns.values() if c["format"] != _LEGACY_FORMAT]
    dead = None if (columns and not native) or None in native else sum(native)
    files, disk = disk_usage(rootdir)
    info = {
        "path": rootdir,
        "kind": "ctable",
        "format": formats.pop() if len(formats) == 1 else ("mixed" if formats else
                                                           layout.FORMAT_NAME),
        "shape": [min(lengths.values(), default=0)],
        "dtype": str(np.dtype(fields)) if fields else None,
        "names": names,
        "nbytes": nbytes,
        "cbytes": cbytes,
        "ratio": round(nbytes / cbytes, 4) if cbytes else None,
        "dead_bytes": dead,
        "files": files,
        "disk_bytes": disk,
        "columns": columns,
    }
    warnings = [f"{name}: {w}" for name, c in columns.items() for w in c.get("warnings", ())]
    if warnings:
        info["warnings"] = warnings
    return info


def describe(rootdir) -> dict:
    """A JSON-able description of the carray or ctable at `rootdir`.

    Parameters
    ----------
    rootdir : str or os.PathLike
        The dataset directory.

    Returns
    -------
    dict
        ``path``, ``kind`` (``'carray'``/``'ctable'``), ``format``
        (``'bcolzx'``, ``'legacy-v1'``, or ``'mixed'`` for a ctable with
        columns of both), ``shape``, ``dtype``, ``nbytes``, ``cbytes`` (the
        compressed chunks as committed: ``meta/sizes``, or for legacy data
        what the chunk files hold, as ``carray.cbytes`` counts them),
        ``ratio`` (``nbytes / cbytes``), ``dead_bytes`` (what
        ``compact`` would reclaim; None when an index cannot be read),
        ``files`` and ``disk_bytes`` (everything under `rootdir`) and
        ``attrs``.  ``dead_bytes`` is None for legacy (v1) data too, which
        ``compact`` does not apply to.  A carray adds ``chunklen``, ``chunks``, ``superchunks``
        (None for legacy), ``cparams`` and ``checksum``; a ctable adds
        ``names`` and ``columns`` (a carray description per column).
        ``warnings`` lists what could not be read, if anything.

    Raises
    ------
    FileNotFoundError
        If `rootdir` does not exist, or holds no carray or ctable.
    NotADirectoryError
        If `rootdir` is not a directory.
    CorruptDataError, UnsupportedFormatError
        If the metadata is damaged or of an unknown format.
    """
    rootdir = os.fspath(rootdir)
    require_directory(rootdir)
    kind = dataset_kind(rootdir)
    if kind is None:
        raise FileNotFoundError(errno.ENOENT, "no carray or ctable (neither "
                                f"{layout.ROOTDIRS_FILE} nor meta/{layout.STORAGE_FILE}) in",
                                rootdir)
    info = _describe_carray(rootdir)[0] if kind == "carray" else _describe_ctable(rootdir)
    attrs_path = os.path.join(rootdir, layout.ATTRS_FILE)
    info["attrs"] = jsonfile.read_json(attrs_path) if os.path.isfile(attrs_path) else {}
    return info


def describe_any(path, storage_options: dict | None = None) -> dict:
    """:func:`describe` of a directory, or the same main keys for a dataset on
    object storage (:func:`describe_objects`)."""
    from bcolzx._storage.objects import Objects, is_url, resolve

    where = resolve(path, storage_options if is_url(path) else None)
    if isinstance(where, Objects):
        return describe_objects(where)
    return describe(where)


def describe_objects(objects) -> dict:
    """``path``, ``kind``, ``format``, ``shape``, ``nbytes``, ``cbytes``, ``ratio``,
    ``files`` (objects) and ``disk_bytes`` (their bytes) of the dataset at
    `objects` (an :class:`~bcolzx._storage.objects.Objects`): its metadata, read
    in one batch of small requests, and a listing.

    Raises
    ------
    DatasetNotFoundError
        (a FileNotFoundError) If no dataset is published there.
    RemoteError
        If the store fails.
    """
    from bcolzx.ctable import ctable
    from bcolzx.toplevel import open as _open

    ds = _open(objects, mode="r")
    kind = "ctable" if isinstance(ds, ctable) else "carray"
    parts = [ds] if kind == "carray" else [ds.cols[n] for n in ds.names]
    formats = {_LEGACY_FORMAT if not c.engine.store.native else layout.FORMAT_NAME
               for c in parts}
    files, size = objects.usage()
    nbytes, cbytes = int(ds.nbytes), int(ds.cbytes)
    return {"path": objects.url, "kind": kind,
            "format": formats.pop() if len(formats) == 1 else
            ("mixed" if formats else layout.FORMAT_NAME),
            "shape": list(ds.shape) if kind == "carray" else [len(ds)],
            "nbytes": nbytes, "cbytes": cbytes,
            "ratio": round(nbytes / cbytes, 4) if cbytes else None,
            "files": files, "disk_bytes": size}
