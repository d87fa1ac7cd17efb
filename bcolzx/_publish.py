"""Where a copy or an export goes: a new directory, or new objects published last.

:func:`bcolzx.convert` (and :func:`bcolzx.compact` with a destination) plan
a copy in :mod:`bcolzx.convert`; this module writes it where it goes.  On
disk, beside the target and renamed into place (``convert._write_local``).
On object storage, where nothing can be renamed, at the destination itself:
each carray through an :class:`~bcolzx._storage.remote.ObjectStore` whose
commit holds ``meta/sizes`` back (:attr:`~bcolzx._storage.remote.ObjectStore.hold`),
verified by reading back what was uploaded, then published -- for a
ctable, its columns, its ``__attrs__``, and ``__rootdirs__`` last -- so that
no reader ever finds a half-written or unverified dataset (docs/remote.md).

An export to another format (``ctable.to_parquet``, ``carray.to_zarr``...,
and ``bcolzx export``, which calls them) at a URL goes through
:func:`export_place` (:func:`export_target`, then :func:`publish_export`):
written to a local temporary directory by the format's own writer, then
uploaded (:func:`bcolzx._storage.objects.upload`: a file as one object, a
Zarr store with its metadata documents last), so that a reader finds nothing
at the URL until it is complete and a failure publishes nothing.
"""

from __future__ import annotations

import errno
import os
import tempfile
from collections.abc import Callable
from typing import Any

from bcolzx._format import layout
from bcolzx._format.jsonfile import dumps
from bcolzx._storage.objects import FsspecObjects, Objects, is_url
from bcolzx.convert import _local_target, _verify_carray, _write_carray, _write_local
from bcolzx.errors import AppendOnlyError, RemoteError

__all__ = ["check_destination", "write_plan", "export_target", "publish_export",
           "export_place"]


def check_destination(source: str | Objects, target: str | Objects | None) -> None:
    """Refuse, before anything is read, a copy of `source` to `target` that cannot be.

    Raises
    ------
    AppendOnlyError
        If `target` is None (in place) and `source` is on object storage.
    FileNotFoundError
        If `source` is a path and not a directory.
    FileExistsError
        If something is stored at `target`.
    """
    if target is None:
        if isinstance(source, Objects):
            raise AppendOnlyError(
                f"cannot convert {source.url} in place: objects on object storage cannot be "
                "replaced atomically; convert it to a new location (bcolzx.convert(src, "
                "dst), 'bcolzx convert SRC DST'), then use that one")
        return
    if isinstance(source, str) and not os.path.isdir(source):
        raise FileNotFoundError(errno.ENOENT, "no dataset directory at", source)
    if isinstance(target, Objects) and target.occupied():
        raise FileExistsError(errno.EEXIST, "the destination exists (objects are stored "
                              "under it)", target.url)
    if isinstance(target, str) and os.path.lexists(target):
        raise FileExistsError(errno.EEXIST, "the destination exists", target)


def write_plan(plan, source: str | Objects, target: str | Objects, dst_given, verify: bool,
               progress) -> str:
    """Write the converted dataset of `plan` (from :func:`_plan` of `source`) to
    `target`, a new directory or new objects; return where, as given."""
    if isinstance(target, str):
        real_src = os.path.realpath(source) if isinstance(source, str) else None
        _write_local(plan, _local_target(target, real_src), verify, progress)
        return target if is_url(dst_given) else os.fspath(dst_given)
    _write_objects(plan, target, verify, progress)
    return dst_given if isinstance(dst_given, str) else target.url


def _write_objects(plan, target: Objects, verify: bool, progress) -> None:
    """Build the converted dataset of `plan` at `target` (no object there), verify it
    from what was uploaded, then publish it: each carray's ``meta/sizes``, then for
    a ctable its ``__attrs__`` and, last, ``__rootdirs__``.  Whatever fails,
    nothing was published and what was uploaded is deleted (best effort).
    """
    from bcolzx._storage import remote

    kind, dataset, columns = plan
    try:
        if kind == "carray":
            places = [target]
        else:
            places = [target.child(col.relpath) for col in columns]
        stores = [_write_carray(col, where, progress) for col, where in zip(columns, places)]
        if verify:
            for col, where, store in zip(columns, places, stores):
                _verify_carray(col, where, progress, held=store.held_files())
        for store in stores:
            store.publish()
        if kind == "ctable":
            target.put({remote.ATTRS: dumps(dataset.attrs.getall(), layout.ATTRS_FILE)})
            target.put({remote.ROOTDIRS: dumps({"names": dataset.names},
                                               layout.ROOTDIRS_FILE)})
    except BaseException:
        target.discard()
        raise


# -- exports to other formats ------------------------------------------------------------


def export_target(path: Any, storage_options: dict | None) -> Any:
    """Where an export to `path` goes: :class:`FsspecObjects` for a URL of object
    storage, else a local path (a ``file://`` URL made one) or, unchanged, what is
    neither a string nor a path (a Zarr store object).

    Raises
    ------
    ValueError
        For `storage_options` with a local path.
    ImportError
        If fsspec, or the filesystem of the URL, is not installed.
    """
    from bcolzx._storage.objects import resolve

    if storage_options is None and not is_url(path):
        return os.fspath(path) if isinstance(path, os.PathLike) else path
    return resolve(path, storage_options)


#: The modes of :func:`publish_export`, and what each does with something already there.
EXPORT_MODES = ("w", "x", "a", "r+")


def publish_export(target: FsspecObjects, mode: str, write: Callable[[str], None], *,
                   what: str, suffix: str, directory: bool = False) -> None:
    """Export to `target` on object storage: `write(local)` writes the export to a new
    local path (in a temporary directory under ``$TMPDIR``), which is then uploaded,
    a file as one object and a directory with its metadata last
    (:func:`bcolzx._storage.objects.upload`).  Nothing is at `target` for a reader
    until the upload is complete; if `write` or the upload fails, nothing new is
    (what was there before stays, a directory's partial upload is deleted).

    Parameters
    ----------
    target : FsspecObjects
        Where the export goes.
    mode : {'w', 'x', 'a', 'r+'}
        With something already at `target`: 'w' replaces it (a file only),
        'x' refuses to, 'a' and 'r+' (adding to a file, as HDF5 does) refuse
        to change it in place.  Without: 'r+' refuses, the others write.
    write : callable
        Writes the export, complete, at the local path it is given.
    what : str
        The export's kind, for messages (``"Parquet file"``).
    suffix : str
        The local file's extension, which some writers look at.
    directory : bool
        Whether the export is a directory of objects (a Zarr store).

    Raises
    ------
    FileExistsError
        With mode 'x' when something is at `target`.
    FileNotFoundError
        With mode 'r+' when nothing is.
    AppendOnlyError
        With mode 'a' or 'r+' when something is at `target`, or mode 'w' for
        a directory when one is there: objects cannot be changed in place,
        nor several replaced at once.
    RemoteError
        For an HTTP(S) URL (read-only), or if the store fails.
    ValueError
        For another `mode`.
    """
    if mode not in EXPORT_MODES:
        raise ValueError(f"mode must be one of {EXPORT_MODES}, not {mode!r}")
    from bcolzx._storage.objects import exists, upload

    url = target.url
    protocols = target.fs.protocol if isinstance(target.fs.protocol, (tuple, list)) \
        else (target.fs.protocol,)
    if {"http", "https"} & set(protocols):
        raise RemoteError(f"cannot export to {url}: bcolzx reads over HTTP(S) but never "
                          "writes; export to object storage (s3://..., gs://...) or to a "
                          "local file", url=url)
    if exists(target):
        if mode == "x":
            raise FileExistsError(errno.EEXIST, "the destination exists (mode 'x'; mode "
                                  "'w', on the command line --force, replaces a file)", url)
        if mode in ("a", "r+"):
            raise AppendOnlyError(
                f"cannot add to the {what} at {url}: an object on object storage is "
                "written whole, never changed in place; write the whole file again "
                "(mode='w', on the command line --force, replaces it), or download it, add "
                "to it locally and upload it")
        if directory:
            raise AppendOnlyError(
                f"cannot replace the {what} at {url}: its objects would not all change "
                "at once, and a reader could find old and new ones mixed; delete it first "
                "(fsspec: fs.rm(url, recursive=True)), or export to a new URL")
    elif mode == "r+":
        raise FileNotFoundError(errno.ENOENT, f"no {what} to add to (mode 'r+')", url)
    with tempfile.TemporaryDirectory(prefix=".bcolzx-export-") as tmp:
        local = os.path.join(tmp, f"export{suffix}")
        write(local)
        upload(local, target)


def export_place(path: Any, storage_options: dict | None, mode: str,
                 write: Callable[[str], None], *, what: str, suffix: str,
                 directory: bool = False) -> Any:
    """What a format's exporter writes to, given its `path` and `storage_options`: the
    local path (or store object) of :func:`export_target`; or, for a URL of object
    storage, None once the export is published there (`write` and the other
    arguments as for :func:`publish_export`): nothing is left to write.

    Raises
    ------
    As :func:`export_target` and :func:`publish_export`.
    """
    where = export_target(path, storage_options)
    if not isinstance(where, FsspecObjects):
        return where
    publish_export(where, mode, write, what=what, suffix=suffix, directory=directory)
    return None
