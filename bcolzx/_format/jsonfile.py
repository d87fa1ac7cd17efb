"""Small JSON files of a dataset: read with clear errors, written atomically."""

from __future__ import annotations

import json
import os
from typing import Any

from bcolzx._ext import metafiles
from bcolzx._format import files as _files
from bcolzx._format import seal as _seal
from bcolzx.errors import CorruptDataError

#: The one member of the JSON object that stands for a non-finite float in the
#: JSON file of a sealed (bcolzx-format) dataset (docs/format/README.md §2c).
FLOAT_KEY = "$float"
_NONFINITE = {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}
#: json's own scanner (what json.loads runs once it has skipped the whitespace
#: around the value, which the files bcolzx writes have none of).
_SCAN = json.JSONDecoder().scan_once


def _decode(raw: bytes) -> Any:
    """``json.loads(raw)``, sooner for a value without whitespace around it: what
    ``metafiles.loads`` leaves to json (escapes, NaN, errors).

    Raises
    ------
    UnicodeDecodeError, ValueError, RecursionError
        As ``json.loads`` of `raw` decoded as UTF-8 (which then says what is wrong).
    """
    text = raw.decode("utf-8")
    try:
        obj, end = _SCAN(text, 0)
        if end == len(text):
            return obj
    except StopIteration:  # not a JSON value where one starts
        pass
    return json.loads(text)


def is_float_object(obj: Any) -> bool:
    return isinstance(obj, dict) and len(obj) == 1 and FLOAT_KEY in obj


def encode_nonfinite(obj: Any) -> Any:
    """`obj` (a stored value: JSON types only) with every NaN and infinity
    replaced by its standard-JSON stand-in ``{"$float": "NaN"}`` (``"Infinity"``,
    ``"-Infinity"``), for a sealed file; `obj` itself is returned when it holds
    none."""
    if isinstance(obj, float):
        if obj != obj:
            return {FLOAT_KEY: "NaN"}
        if obj in (float("inf"), float("-inf")):
            return {FLOAT_KEY: "Infinity" if obj > 0 else "-Infinity"}
        return obj
    if isinstance(obj, dict):
        new = {k: encode_nonfinite(v) for k, v in obj.items()}
        return obj if all(new[k] is obj[k] for k in obj) else new
    if isinstance(obj, list):
        items = [encode_nonfinite(v) for v in obj]
        return obj if all(a is b for a, b in zip(items, obj)) else items
    return obj


def decode_nonfinite(obj: Any, path: str | None = None) -> Any:
    """The inverse of :func:`encode_nonfinite`, for what a sealed file holds.

    Raises
    ------
    CorruptDataError
        For a ``{"$float": ...}`` object whose value is not one of the three names.
    """
    if is_float_object(obj):
        name = obj[FLOAT_KEY]
        if not isinstance(name, str) or name not in _NONFINITE:
            raise CorruptDataError(f"malformed non-finite number {obj!r} ",
                                   path=path)
        return _NONFINITE[name]
    if isinstance(obj, dict):
        return {k: decode_nonfinite(v, path) for k, v in obj.items()}
    if isinstance(obj, list):
        return [decode_nonfinite(v, path) for v in obj]
    return obj


def fsync_dir(path: str) -> None:
    """fsync a directory, so that a rename or a new file in it is durable."""
    fd = os.open(path, os.O_RDONLY | _files.CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def make_dirs(path: str, unsynced: list | None = None) -> None:
    """``os.makedirs(path, exist_ok=True)``, each directory it creates made durable.

    A new directory's name lives in its parent: the parent is fsynced after
    each ``mkdir``, so that a power cut cannot take the new directory away
    with everything later written and fsynced inside it.  With `unsynced` (a
    list), the parents are appended to it instead, for the caller to fsync
    before anything it writes there is committed.

    Raises
    ------
    OSError
        If a directory cannot be created (FileExistsError if `path` is a file).
    """
    path = os.path.abspath(path)
    if os.path.isdir(path):
        return
    parent = os.path.dirname(path)
    if parent != path:
        make_dirs(parent, unsynced)
    try:
        os.mkdir(path)
    except FileExistsError:
        if not os.path.isdir(path):
            raise
        return
    if unsynced is None:
        fsync_dir(parent)
    else:
        unsynced.append(parent)


class Staged:
    """A file's new contents written under a temporary name, not yet fsynced
    nor renamed: fsync :attr:`fd` (on any thread), then :meth:`publish`, or
    :meth:`discard`.  For a commit that fsyncs several files at once before
    it renames them (:func:`write_atomic` does the three steps for one file).

    The temporary file is created as :func:`write_atomic` creates it, and the
    rename is made relative to the directory opened here.

    Raises
    ------
    UnsafeFileError
        If the directory is a dataset subdirectory replaced by a link.
    OSError
        If the file system refuses (nothing is left behind).
    """

    def __init__(self, path: str, data: bytes):
        self.directory = os.path.dirname(path) or "."
        self.name = os.path.basename(path)
        self._dfd = _files.open_dir(self.directory, self.name)
        self._fd = -1
        self._renamed = False
        try:
            self._fd, self._tmp = _files.unique_temp(self._dfd, ".tmp-", self.directory)
            view = memoryview(data)
            while view:
                view = view[os.write(self._fd, view):]
        except BaseException:
            self.discard()
            raise

    @property
    def fd(self) -> int:
        """The descriptor of the new contents (to fsync), until :meth:`publish`."""
        return self._fd

    def rename(self) -> None:
        """Rename the new contents over the file now, keeping :attr:`fd` open
        (durable once the file and its directory are fsynced)."""
        if not self._renamed:
            os.replace(self._tmp, self.name, src_dir_fd=self._dfd, dst_dir_fd=self._dfd)
            self._renamed = True

    def publish(self) -> None:
        """Rename the new contents over the file (durable once its directory is
        fsynced), if not done yet, and close it."""
        self.rename()
        self._close()

    def discard(self) -> None:
        """Remove the temporary file (when it was not renamed)."""
        if self._fd >= 0 and not self._renamed:
            try:
                os.unlink(self._tmp, dir_fd=self._dfd)
            except FileNotFoundError:
                pass
        self._close()

    def _close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
        if self._dfd >= 0:
            os.close(self._dfd)
            self._dfd = -1


def write_atomic(path: str, data: bytes, *, durable: bool = True,
                 sync_dir: bool = True) -> None:
    """Replace the file at `path` with `data` so that readers see old or new, never half.

    Writes a temporary file with a random name in the same directory, fsyncs
    it, renames it over `path` and fsyncs the directory.  The temporary file
    is created exclusively (``O_EXCL``, never through a link) with mode 0o666
    less the umask, and both it and the rename are made relative to the
    directory opened once (a dataset's ``meta/`` or ``data/`` never through a
    link): see :mod:`bcolzx._format.files`.

    Parameters
    ----------
    path : str
        The file to write.
    data : bytes
        Its new contents.
    durable : bool
        fsync file and directory (default); False only for throwaway data.
    sync_dir : bool
        With `durable`, also fsync the directory (default).  False when the
        caller fsyncs it once for several files: the rename may then be lost
        to a power cut, but never reaches the disk before the file's bytes.

    Raises
    ------
    UnsafeFileError
        If the directory is a dataset subdirectory replaced by a link.
    OSError
        If the file system refuses; `path` is then unchanged.
    """
    directory = os.path.dirname(path) or "."
    name = os.path.basename(path)
    dfd = _files.open_dir(directory, name)
    try:
        fd, tmp = _files.unique_temp(dfd, ".tmp-", directory)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                if durable:
                    os.fsync(f.fileno())
            os.replace(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
        except BaseException:
            try:
                os.unlink(tmp, dir_fd=dfd)
            except FileNotFoundError:
                pass
            raise
        if durable and sync_dir:
            os.fsync(dfd)
    finally:
        os.close(dfd)


def write_json(path: str, obj: Any, *, durable: bool = True, seal: bool = True,
               uid: str | None = None) -> None:
    """Write `obj` as JSON to `path` atomically (see :func:`write_atomic`).

    A dict is sealed (docs/format/README.md §2c: a checksum, and `uid` when
    given) unless `seal` is False, which legacy (format v1) datasets need.

    Raises
    ------
    TypeError, ValueError
        If `obj` cannot be represented in JSON; nothing is written.
    OSError
        If the file system refuses.
    """
    write_atomic(path, dumps(obj, os.path.basename(path), seal=seal, uid=uid),
                 durable=durable)


def stage_json(path: str, obj: Any, *, seal: bool = True, uid: str | None = None) -> Staged:
    """`obj` as :func:`write_json` writes it, staged (:class:`Staged`)."""
    return Staged(path, dumps(obj, os.path.basename(path), seal=seal, uid=uid))


def read_json_sealed(path: str, *, kind: type | None = dict) -> tuple[Any, _seal.Seal]:
    """Read a JSON file of a dataset, check its seal and take it off.

    Parameters
    ----------
    path : str
        The file.
    kind : type, optional
        The type the top-level value must have (default dict).

    Returns
    -------
    (object, Seal)
        The decoded value without the seal members, and what its seal said.

    Raises
    ------
    FileNotFoundError
        If the file does not exist.
    CorruptDataError
        If it is not valid JSON (UTF-8), not of type `kind`, or its seal
        does not match.
    UnsafeFileError
        If it is a FIFO, a device or a directory.
    """
    raw = _files.read_whole(path)
    # (os.path.basename, without its calls for the str path of every open)
    name = path.rpartition("/")[2] if type(path) is str else os.path.basename(path)
    return loads_sealed(raw, name, path, kind=kind)


def loads_sealed(raw: bytes, name: str, path: str | None = None, *,
                 kind: type | None = dict) -> tuple[Any, _seal.Seal]:
    """:func:`read_json_sealed` of bytes already read: `raw`, the file `name`
    (its base name) at `path` (a path or URL, for messages).

    Raises
    ------
    CorruptDataError
        As :func:`read_json_sealed`.
    """
    obj = metafiles.loads(raw)  # in C: what the metadata files hold (json: the rest)
    try:
        if obj is metafiles.UNPARSED:
            obj = _decode(raw)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise CorruptDataError(f"invalid JSON: {exc}", path=path) from None
    if kind is not None and not isinstance(obj, kind):
        raise CorruptDataError(f"expected a JSON {kind.__name__}, found {type(obj).__name__}",
                               path=path)
    obj, found = _seal.unseal(raw, obj, name, path)
    # Sealed files written before the stand-ins hold NaN tokens, which json reads too.
    # (find, not `in`: bytes.__contains__ raises and clears a TypeError inside)
    if found.sealed and raw.find(b'"$float"') >= 0:
        obj = decode_nonfinite(obj, path)
    return obj, found


def dumps(obj: Any, name: str, *, seal: bool = True, uid: str | None = None) -> bytes:
    """The bytes :func:`write_json` writes into the file `name` (its base name).

    Raises
    ------
    TypeError, ValueError
        If `obj` cannot be represented in JSON.
    """
    if seal and isinstance(obj, dict):  # standard JSON: NaN and infinities stand in
        return _seal.seal(encode_nonfinite(obj), name, uid)
    return json.dumps(obj, allow_nan=True).encode("utf-8")


def read_json(path: str, *, kind: type | None = dict) -> Any:
    """Read a JSON file of a dataset: :func:`read_json_sealed` without the Seal.

    Raises
    ------
    FileNotFoundError, CorruptDataError
        As :func:`read_json_sealed`.
    """
    return read_json_sealed(path, kind=kind)[0]
