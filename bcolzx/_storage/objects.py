"""Where a dataset's objects live when they are not plain files: fsspec, and its failures.

An object store (S3, GCS, HTTP... through fsspec) holds whole objects: it
reads byte ranges of them, writes an object whole, and never changes one in
place.  :class:`Objects` is what the object store of
:mod:`bcolzx._storage.remote` needs from it, in batches so that independent
requests go out together:

* :class:`FsspecObjects`, over any fsspec filesystem: batches of ranges
  through fsspec's asynchronous ``cat_ranges`` when the filesystem is
  asynchronous (s3fs, gcsfs, HTTP), else on the shared pool
  (:mod:`bcolzx._threads`); every failure becomes an exception of
  :mod:`bcolzx.errors` naming the object's URL;
* :class:`LocalObjects`, over a local directory, for a dataset whose
  superchunks continue in part objects (docs/format/README.md §5) that
  was copied to a disk.

:func:`resolve` turns what a caller gave (a path, a URL with its
``storage_options``, an fsspec filesystem and a path, an fsspec mapper) into
a local path or an :class:`Objects`.  fsspec is imported only then, and only
for a URL or a filesystem: ``import bcolzx`` never imports it.
"""

from __future__ import annotations

import errno
import importlib
import os
from typing import Any

from bcolzx import _threads
from bcolzx._format.jsonfile import write_atomic
from bcolzx.errors import (
    BcolzxError,
    InvalidParameterError,
    RemoteError,
    RemoteTimeoutError,
    TruncatedDataError,
)

__all__ = ["Objects", "FsspecObjects", "LocalObjects", "resolve", "is_url", "upload", "exists"]

#: Requests one batch keeps in flight at most (fsspec's ``batch_size``).
MAX_IN_FLIGHT = 64


def _fsspec():
    try:
        return importlib.import_module("fsspec")
    except ImportError as exc:
        raise ImportError("datasets on object storage need fsspec (and s3fs, gcsfs... for "
                          "the store): pip install 'bcolzx[s3]'") from exc


def is_url(rootdir: Any) -> bool:
    """Whether `rootdir` is a URL with a scheme (``s3://...``, ``file://...``)."""
    return isinstance(rootdir, str) and "://" in rootdir and \
        rootdir.split("://", 1)[0].replace("+", "").replace("-", "").isalnum()


def _mapper(obj: Any) -> bool:
    """Whether `obj` is an fsspec mapper (``fsspec.get_mapper(url)``): a filesystem and a root."""
    return not isinstance(obj, (str, bytes, os.PathLike)) and hasattr(obj, "fs") and \
        hasattr(obj, "root")


def resolve(rootdir: Any, storage_options: dict | None = None,
            filesystem: Any = None) -> str | Objects:
    """The local path, or the :class:`Objects`, that `rootdir` names.

    Parameters
    ----------
    rootdir : str, os.PathLike, Objects or fsspec mapper
        A local path, a URL (``s3://bucket/key``, ``gs://...``,
        ``https://...``, ``memory://...``, ``file://...``), or with
        `filesystem`, a path inside it.
    storage_options : dict, optional
        Passed to fsspec for a URL (credentials, endpoint, timeouts).
    filesystem : fsspec.AbstractFileSystem, optional
        The filesystem `rootdir` is a path of.

    Returns
    -------
    str or Objects
        A local path for a plain path, a ``file://`` URL or fsspec's local
        filesystem (a local directory keeps every local feature: the write
        lock, in-place writes); else the objects.

    Raises
    ------
    ValueError
        For `storage_options` or `filesystem` with a plain path, or
        `storage_options` with a filesystem.
    ImportError
        If fsspec (or the filesystem the URL needs) is not installed.
    """
    if type(rootdir) is str and "://" not in rootdir and filesystem is None \
            and not storage_options:
        return rootdir  # a plain local path (the common case, at every open)
    if isinstance(rootdir, Objects):
        if storage_options or filesystem is not None:
            raise ValueError("storage_options and filesystem go with a URL or a path, not "
                             "with objects already located")
        return rootdir
    if _mapper(rootdir):
        if storage_options or filesystem is not None:
            raise ValueError("an fsspec mapper carries its filesystem: pass no "
                             "storage_options or filesystem with it")
        filesystem, rootdir = rootdir.fs, rootdir.root
    if filesystem is not None:
        if storage_options:
            raise ValueError("storage_options configure the filesystem of a URL; pass them "
                             "to the filesystem given instead")
        path = filesystem._strip_protocol(os.fspath(rootdir))
        if _is_local(filesystem):
            return path
        return FsspecObjects(filesystem, path)
    if is_url(rootdir):
        if rootdir.startswith("file://") and not storage_options:
            return rootdir[len("file://"):]
        fs, path = _fsspec().core.url_to_fs(rootdir, **(storage_options or {}))
        if _is_local(fs):
            return path
        return FsspecObjects(fs, path)
    if storage_options:
        raise ValueError(f"storage_options go with a URL (s3://..., gs://...), not with the "
                         f"local path {os.fspath(rootdir)!r}")
    return os.fspath(rootdir)


def _is_local(fs) -> bool:
    protocol = fs.protocol if isinstance(fs.protocol, tuple) else (fs.protocol,)
    return "file" in protocol and type(fs).__name__ == "LocalFileSystem"


class Objects:
    """The objects of one dataset (or table) directory: reads in batches, whole writes.

    Keys are paths relative to the directory (``"meta/sizes"``,
    ``"data/__0.bin"``).  Reads of missing objects give None (whole
    reads) or raise :class:`TruncatedDataError` (ranges); every other
    failure raises :class:`RemoteError` (or :class:`RemoteTimeoutError`)
    naming the object's URL.
    """

    #: The directory's URL (or path), for messages and as the dataset's rootdir.
    url: str

    def child(self, name: str) -> "Objects":
        """The objects of the subdirectory `name` (a ctable's column)."""
        raise NotImplementedError

    def url_of(self, key: str) -> str:
        return f"{self.url}/{key}"

    def fetch(self, keys: list[str]) -> list[bytes | None]:
        """Whole objects, requested together; None for each missing one."""
        raise NotImplementedError

    def fetch_ranges(self, ranges: list[tuple[str, int, int | None]]) -> list[bytes]:
        """Bytes ``start .. end-1`` of each ``(key, start, end)`` (`end` None: to the
        object's end), requested together.

        Raises
        ------
        TruncatedDataError
            If an object is missing or ends before `end`.
        """
        raise NotImplementedError

    def put(self, items: dict[str, bytes]) -> None:
        """Write each object whole (replacing it), the writes issued together."""
        raise NotImplementedError

    def remove_all(self) -> None:
        """Delete every object under the directory (none there: nothing to do)."""
        raise NotImplementedError

    def discard(self) -> None:
        """:meth:`remove_all`, best effort: what a failed write uploaded, which no
        metadata names (readers never see it); a store that fails now is ignored."""
        try:
            self.remove_all()
        except Exception:  # noqa: BLE001 - unpublished objects are invisible to readers
            pass

    def exists(self, key: str) -> bool:
        """Whether the object `key` exists (one request)."""
        return self.fetch([key])[0] is not None

    def occupied(self) -> bool:
        """Whether any object is stored under the directory (one listing)."""
        raise NotImplementedError

    def usage(self) -> tuple[int, int]:
        """``(objects, bytes)`` stored under the directory (a listing)."""
        raise NotImplementedError

    def _short(self, key: str, start: int, end: int | None, got: int) -> TruncatedDataError:
        if end is None:
            return TruncatedDataError(f"object has fewer than {start + 1} bytes",
                                      path=self.url_of(key))
        return TruncatedDataError(f"object ends at byte {start + got}, {end - start} bytes "
                                  f"needed from {start}", path=self.url_of(key))


# -- fsspec ------------------------------------------------------------------------------


def _failure(exc: BaseException, url: str, what: str) -> BaseException:
    """`exc`, raised by fsspec while it `what` the object at `url`, as our exception."""
    if isinstance(exc, BcolzxError) or not isinstance(exc, Exception):
        return exc
    name = type(exc).__name__
    text = f"{what} {url} failed: {name}: {exc}"
    if isinstance(exc, TimeoutError) or "Timeout" in name:
        return RemoteTimeoutError(text, url=url)
    return RemoteError(text, url=url)


#: fsspec protocols of object stores whose first path component is a bucket.
_BUCKET_PROTOCOLS = frozenset({"s3", "s3a", "gs", "gcs", "az", "abfs", "abfss", "oss", "r2"})


class FsspecObjects(Objects):
    """The objects under `path` of the fsspec filesystem `fs`.

    Picklable (fsspec filesystems pickle as their options), so a Dask graph
    can hold it.
    """

    def __init__(self, fs, path: str):
        self.fs = fs
        self.path = path.rstrip("/")
        self.url = fs.unstrip_protocol(self.path)

    def __reduce__(self):
        return (FsspecObjects, (self.fs, self.path))

    def __eq__(self, other) -> bool:
        return isinstance(other, FsspecObjects) and other.fs == self.fs and \
            other.path == self.path

    def __hash__(self) -> int:
        return hash(self.url)

    def __repr__(self) -> str:
        return f"FsspecObjects({self.url!r})"

    def child(self, name: str) -> "FsspecObjects":
        return FsspecObjects(self.fs, f"{self.path}/{name}")

    def _full(self, key: str) -> str:
        return f"{self.path}/{key}"

    @property
    def _asynchronous(self) -> bool:
        return bool(getattr(self.fs, "async_impl", False))

    def fetch(self, keys: list[str]) -> list[bytes | None]:
        if not keys:
            return []
        paths = [self._full(k) for k in keys]
        if self._asynchronous:
            # One GET each: a range from 0 (cat() would first look each path up, and
            # s3fs asks a whole object's size before reading it).
            try:
                results = self.fs.cat_ranges(paths, [0] * len(paths), [None] * len(paths),
                                             on_error="return", batch_size=MAX_IN_FLIGHT)
            except Exception as exc:
                raise _failure(exc, self.url, "reading objects under") from exc
        else:
            results = list(_threads.map_ordered(self._cat_one, paths, _fanout(len(paths))))
        out: list[bytes | None] = []
        for key, res in zip(keys, results):
            if isinstance(res, FileNotFoundError):
                out.append(None)
            elif isinstance(res, BaseException) and _empty_range(res):
                out.append(b"")  # an empty object: no byte 0 to start at
            elif isinstance(res, BaseException):
                raise _failure(res, self.url_of(key), "reading") from res
            else:
                out.append(bytes(res))
        return out

    def _cat_one(self, path: str):
        try:
            return self.fs.cat_file(path)
        except Exception as exc:  # returned, as fsspec's on_error="return" does
            return exc

    def _cat_range(self, job: tuple[str, int, int]):
        path, start, end = job
        try:
            return self.fs.cat_file(path, start=start, end=end)
        except Exception as exc:
            return exc

    def fetch_ranges(self, ranges: list[tuple[str, int, int | None]]) -> list[bytes]:
        if not ranges:
            return []
        paths = [self._full(k) for k, _, _ in ranges]
        starts = [s for _, s, _ in ranges]
        ends = [e for _, _, e in ranges]
        if self._asynchronous:
            try:
                results = self.fs.cat_ranges(paths, starts, ends, on_error="return",
                                             batch_size=MAX_IN_FLIGHT)
            except Exception as exc:
                raise _failure(exc, self.url, "reading objects under") from exc
        else:
            results = list(_threads.map_ordered(self._cat_range, zip(paths, starts, ends),
                                                _fanout(len(paths))))
        out = []
        for (key, start, end), res in zip(ranges, results):
            if isinstance(res, FileNotFoundError):
                raise TruncatedDataError("object is missing", path=self.url_of(key))
            if isinstance(res, BaseException):
                if _empty_range(res):  # starts past its end
                    raise self._short(key, start, end, 0) from None
                raise _failure(res, self.url_of(key), "reading") from res
            if end is not None and len(res) != end - start:
                raise self._short(key, start, end, len(res))
            out.append(res)
        return out

    def put(self, items: dict[str, bytes]) -> None:
        if not items:
            return
        if len(items) == 1 or not self._asynchronous:
            for key, data in items.items():
                try:
                    self.fs.pipe_file(self._full(key), data)
                except Exception as exc:
                    raise _failure(exc, self.url_of(key), "writing") from exc
            return
        try:
            self.fs.pipe({self._full(k): v for k, v in items.items()},
                         batch_size=MAX_IN_FLIGHT)
        except Exception as exc:
            raise _failure(exc, self.url, "writing objects under") from exc

    def occupied(self) -> bool:
        try:
            self.fs.invalidate_cache(self.path)
            return bool(self.fs.ls(self.path, detail=False))  # one level: one request
        except FileNotFoundError:
            return False
        except Exception as exc:
            raise _failure(exc, self.url, "listing the objects under") from exc

    def usage(self) -> tuple[int, int]:
        try:
            self.fs.invalidate_cache(self.path)
            sizes = self.fs.du(self.path, total=False)
        except FileNotFoundError:
            return 0, 0
        except Exception as exc:
            raise _failure(exc, self.url, "listing the objects under") from exc
        return len(sizes), int(sum(sizes.values()))

    def _whole_bucket(self) -> bool:
        protocols = self.fs.protocol if isinstance(self.fs.protocol, (tuple, list)) \
            else (self.fs.protocol,)
        return bool(set(protocols) & _BUCKET_PROTOCOLS) and "/" not in self.path.strip("/")

    def remove_all(self) -> None:
        try:
            found = self.fs.find(self.path)
            if found and self._whole_bucket():
                raise InvalidParameterError(
                    f"{self.url} is a whole bucket, holding {len(found)} objects: writing a "
                    "dataset in mode 'w' deletes everything under its place, and bcolzx never "
                    f"deletes a whole bucket; give the dataset a prefix ({self.url}/name)")
            if found:
                self.fs.rm(found)
        except FileNotFoundError:
            return
        except InvalidParameterError:
            raise
        except Exception as exc:
            raise _failure(exc, self.url, "deleting the objects under") from exc
        self.fs.invalidate_cache(self.path)


#: Names of Zarr's metadata documents: a reader finds a Zarr store by them.
ZARR_METADATA = frozenset({"zarr.json", ".zarray", ".zgroup", ".zattrs", ".zmetadata"})


def upload(local: str, target: FsspecObjects) -> None:
    """Upload the file or directory `local` (an export: a .npy, Parquet, HDF5 file,
    a Zarr store...) to `target`'s place, so that no reader sees it half-written.

    A file becomes one object, written whole (an object store shows the old
    object or the new one, never part of one).  A directory is uploaded data
    first, then its Zarr metadata documents deepest first, the top one last:
    until then a reader finds no store at `target` (and no array whose
    chunks are missing, which Zarr would read as fill values).  If the upload
    of a directory fails, what was uploaded is deleted (best effort).

    Raises
    ------
    RemoteError, RemoteTimeoutError
        If the store fails (naming `target`'s URL).
    """
    fs, path, url = target.fs, target.path, target.url
    if not os.path.isdir(local):
        try:
            fs.put_file(local, path)
        except Exception as exc:
            raise _failure(exc, url, "uploading") from exc
        return
    data: list[str] = []
    meta: list[str] = []
    for root, _dirs, names in os.walk(local):
        for name in names:
            rel = os.path.relpath(os.path.join(root, name), local).replace(os.sep, "/")
            (meta if name in ZARR_METADATA else data).append(rel)
    meta.sort(key=lambda rel: (-rel.count("/"), rel))  # the top document last
    try:
        if data:
            fs.put([os.path.join(local, *r.split("/")) for r in data],
                   [f"{path}/{r}" for r in data])
        for rel in meta:
            fs.put_file(os.path.join(local, *rel.split("/")), f"{path}/{rel}")
    except BaseException as exc:
        try:
            fs.rm(path, recursive=True)
        except Exception:  # noqa: BLE001 - without its top document no reader finds it
            pass
        if isinstance(exc, Exception):
            raise _failure(exc, url, "uploading") from exc
        raise


def exists(target: FsspecObjects) -> bool:
    """Whether anything (an object, or objects under it) is stored at `target`'s place.

    Raises
    ------
    RemoteError
        If the store fails.
    """
    try:
        target.fs.invalidate_cache(target.path)
        return bool(target.fs.exists(target.path))
    except Exception as exc:
        raise _failure(exc, target.url, "looking for") from exc


def _empty_range(exc: BaseException) -> bool:
    """Whether `exc` says a range starts past the object's end (HTTP 416)."""
    return "InvalidRange" in str(exc) or "416" in str(exc)


def _fanout(n: int) -> int:
    """Pool threads for `n` requests of a synchronous filesystem."""
    from bcolzx import defaults

    return max(1, min(n, max(defaults.nthreads, 8)))


# -- a local directory -------------------------------------------------------------------


class LocalObjects(Objects):
    """The files under a local directory, as objects (reads by ``pread``, atomic writes)."""

    def __init__(self, rootdir: str):
        self.rootdir = os.fspath(rootdir)
        self.url = self.rootdir

    def __reduce__(self):
        return (LocalObjects, (self.rootdir,))

    def __eq__(self, other) -> bool:
        return isinstance(other, LocalObjects) and other.rootdir == self.rootdir

    def __hash__(self) -> int:
        return hash(self.rootdir)

    def url_of(self, key: str) -> str:
        return os.path.join(self.rootdir, *key.split("/"))

    def child(self, name: str) -> "LocalObjects":
        return LocalObjects(os.path.join(self.rootdir, name))

    def fetch(self, keys: list[str]) -> list[bytes | None]:
        out: list[bytes | None] = []
        for key in keys:
            try:
                with open(self.url_of(key), "rb") as f:
                    out.append(f.read())
            except FileNotFoundError:
                out.append(None)
        return out

    def fetch_ranges(self, ranges: list[tuple[str, int, int | None]]) -> list[bytes]:
        out = []
        for key, start, end in ranges:
            path = self.url_of(key)
            try:
                fd = os.open(path, os.O_RDONLY)
            except FileNotFoundError:
                raise TruncatedDataError("object is missing", path=path) from None
            try:
                if end is None:
                    end = os.fstat(fd).st_size
                data = os.pread(fd, end - start, start)
            finally:
                os.close(fd)
            if len(data) != end - start:
                raise self._short(key, start, end, len(data))
            out.append(data)
        return out

    def put(self, items: dict[str, bytes]) -> None:
        for key, data in items.items():
            path = self.url_of(key)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            write_atomic(path, data)

    def occupied(self) -> bool:
        return os.path.lexists(self.rootdir)

    def usage(self) -> tuple[int, int]:
        files = size = 0
        for root, _dirs, names in os.walk(self.rootdir):
            for name in names:
                try:
                    size += os.lstat(os.path.join(root, name)).st_size
                except FileNotFoundError:  # removed meanwhile
                    continue
                files += 1
        return files, size

    def remove_all(self) -> None:
        import shutil

        try:
            shutil.rmtree(self.rootdir)
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise OSError(exc.errno or errno.EIO, f"cannot delete {self.rootdir}: {exc}") \
                from exc
