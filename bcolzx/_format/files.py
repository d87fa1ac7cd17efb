"""Opening and creating a dataset's own files: never through a link, never a FIFO.

Whoever may write inside a dataset directory (a shared, group-writable
dataset) can plant a symbolic link, a FIFO or a device where bcolzx's own
files belong (``__lock__``, ``data/__0.bin.tmp``...).  Every file bcolzx
creates or opens to write goes through this module, so that:

* a link is never followed (``O_NOFOLLOW``): what is at the path is refused
  with :class:`~bcolzx.errors.UnsafeFileError`, or, for a temporary file,
  removed (the link itself, never its target) and created afresh with
  ``O_EXCL``, which fails rather than open anything that appears meanwhile;
* nothing but a regular file is used (``O_NONBLOCK`` at the open, so that a
  FIFO cannot make it wait, then ``fstat``);
* the dataset's own subdirectories (``meta/``, ``data/``) are opened without
  following a link, and temporary files are created and renamed relative to
  that directory (``dir_fd``), so that swapping a subdirectory for a link
  moves no write outside the dataset;
* new files get mode ``0o666`` less the process's umask, as every file tool
  gives them (readable by the other users of a shared dataset when the umask
  says so), never the ``0o600`` of :func:`tempfile.mkstemp`.

Reading follows links (a user may link a dataset's files elsewhere); what
is read is checked as data, and opens for reading use ``O_NONBLOCK`` too.
"""

from __future__ import annotations

import errno
import os
import re
import secrets
import stat

from bcolzx._ext import metafiles as _metafiles
from bcolzx.errors import UnsafeFileError

__all__ = ["NOFOLLOW", "READ_FLAGS", "open_own", "open_dir", "check_own_dir", "create_temp",
           "unique_temp", "describe", "check_regular", "read_regular", "read_whole",
           "stat_file", "exists", "is_regular", "own_subdir"]

NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
CLOEXEC = getattr(os, "O_CLOEXEC", 0)
NONBLOCK = getattr(os, "O_NONBLOCK", 0)
DIRECTORY = getattr(os, "O_DIRECTORY", 0)
#: Flags of every open for reading: a FIFO planted at the path opens at once
#: (and is then refused) instead of waiting for a writer.
READ_FLAGS = os.O_RDONLY | CLOEXEC | NONBLOCK
#: The files a dataset keeps in its subdirectories (docs/format/README.md §1),
#: temporary ones included: a subdirectory holding one is never followed
#: through a link.
_OWN_FILES = {
    "meta": re.compile(r"(storage|sizes|zonemap|journal|\.tmp-[0-9a-f]+)"),
    "data": re.compile(r"__[0-9]+\.(bin|blp)(\.tmp|\.compact)?|\.tmp-[0-9a-f]+"),
}
#: Mode of new files, before the umask.
FILE_MODE = 0o666


def describe(mode: int) -> str:
    """What a file of ``st_mode`` `mode` is, in words (for messages)."""
    for test, words in ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISFIFO, "a FIFO"),
                        (stat.S_ISDIR, "a directory"), (stat.S_ISSOCK, "a socket"),
                        (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device")):
        if test(mode):
            return words
    return "not a regular file"


def check_regular(fd: int, path: str) -> os.stat_result:
    """``fstat(fd)``, refusing anything but a regular file (the caller closes `fd`).

    Raises
    ------
    UnsafeFileError
        If `fd` is not a regular file.
    """
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        raise UnsafeFileError(path, describe(st.st_mode))
    return st


def _link_error(path: str, exc: OSError, dir_fd: int | None = None) -> OSError:
    """The error for an open refused by ``O_NOFOLLOW``: UnsafeFileError for a link."""
    if exc.errno in (errno.ELOOP, errno.EMLINK):  # EMLINK: FreeBSD's O_NOFOLLOW
        try:
            st = os.lstat(os.path.basename(path) if dir_fd is not None else path,
                          dir_fd=dir_fd)
        except OSError:
            return exc
        if stat.S_ISLNK(st.st_mode):
            return UnsafeFileError(path, "a symbolic link")
    return exc


def open_own(path: str, flags: int, *, dir_fd: int | None = None) -> int:
    """Open a file of the dataset to write it (``O_CREAT`` in `flags` creates
    it, mode 0o666 less the umask): never through a link, never anything but
    a regular file.

    Parameters
    ----------
    path : str
        The file (relative to `dir_fd` when given, else as given).
    flags : int
        ``os.O_WRONLY``, ``os.O_RDWR``... with ``O_CREAT``/``O_EXCL`` as needed.
    dir_fd : int, optional
        A descriptor of the directory holding `path`'s last component.

    Returns
    -------
    int
        The descriptor (close-on-exec).

    Raises
    ------
    UnsafeFileError
        If `path` is a symbolic link, a FIFO, a directory or a device.
    OSError
        As ``os.open``.
    """
    name = os.path.basename(path) if dir_fd is not None else path
    if dir_fd is None:
        check_own_dir(path)
    try:
        fd = os.open(name, flags | NOFOLLOW | CLOEXEC | NONBLOCK, FILE_MODE, dir_fd=dir_fd)
    except OSError as exc:
        raise _link_error(path, exc, dir_fd) from None
    try:
        check_regular(fd, path)
    except BaseException:
        os.close(fd)
        raise
    return fd


def own_subdir(path: str) -> bool:
    """Whether the file `path` is one of a dataset's own files in ``meta/`` or
    ``data/`` (docs/format/README.md §1), judged by the names: such a
    directory is never reached through a link.  A dataset directory that is
    itself named ``data`` or ``meta`` (or reached through a user's link) is
    not concerned: its ``__lock__`` or ``__attrs__`` match no pattern."""
    parent = os.path.basename(os.path.dirname(os.path.normpath(path)))
    pattern = _OWN_FILES.get(parent)
    return pattern is not None and pattern.fullmatch(os.path.basename(path)) is not None


def open_dir(path: str, name: str) -> int:
    """A descriptor of the directory `path`, to create the file `name` in it.

    A dataset's own subdirectory (``meta``, ``data``: see :func:`own_subdir`)
    is opened without following a link; any other directory (the dataset's
    root, which a user may reach through a link of theirs) as named.

    Raises
    ------
    UnsafeFileError
        If a dataset subdirectory is a symbolic link (or not a directory).
    OSError
        As ``os.open``.
    """
    flags = os.O_RDONLY | CLOEXEC | DIRECTORY
    if own_subdir(os.path.join(path, name)):
        flags |= NOFOLLOW
    try:
        return os.open(path, flags)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
            try:
                what = describe(os.lstat(path).st_mode)
            except OSError:
                raise exc from None
            raise UnsafeFileError(path, what) from None
        raise


def check_own_dir(path: str) -> None:
    """Refuse to write the file `path` if it is one of a dataset's own files in
    ``meta/`` or ``data/`` (:func:`own_subdir`) and that directory is a link.

    Raises
    ------
    UnsafeFileError
        If the directory is a symbolic link or no directory.
    """
    if own_subdir(path):
        directory = os.path.dirname(os.path.normpath(path))
        mode = os.lstat(directory).st_mode
        if not stat.S_ISDIR(mode):
            raise UnsafeFileError(directory, describe(mode))


def create_temp(path: str, *, dir_fd: int | None = None, read: bool = False) -> int:
    """Create the temporary file `path` (a fixed name, such as ``__3.bin.tmp``)
    for writing, replacing whatever a crash or someone else left there.

    What is at the path is removed first (a link is removed, never
    followed), then the file is created with ``O_EXCL``: if anything appears
    at the path meanwhile, the creation fails instead of opening it.

    Parameters
    ----------
    path : str
        The temporary file.
    dir_fd : int, optional
        A descriptor of its directory (`path`'s last component is then
        relative to it).
    read : bool
        Open it for reading too (``O_RDWR``).

    Raises
    ------
    OSError
        If the file cannot be created (``FileExistsError`` when something
        was put at the path between the removal and the creation).
    """
    name = os.path.basename(path) if dir_fd is not None else path
    try:
        os.unlink(name, dir_fd=dir_fd)
    except FileNotFoundError:
        pass
    except IsADirectoryError:
        raise UnsafeFileError(path, "a directory") from None
    except PermissionError:  # a directory on Linux (EISDIR is BSD's)
        st = os.lstat(name, dir_fd=dir_fd)
        if stat.S_ISDIR(st.st_mode):
            raise UnsafeFileError(path, "a directory") from None
        raise
    access = os.O_RDWR if read else os.O_WRONLY
    return open_own(path, access | os.O_CREAT | os.O_EXCL, dir_fd=dir_fd)


def unique_temp(directory_fd: int, prefix: str, directory: str) -> tuple[int, str]:
    """Create a new temporary file with a random name in a directory.

    Returns
    -------
    (int, str)
        Its descriptor (open for writing) and its name inside the directory.

    Raises
    ------
    OSError
        If the directory refuses.
    """
    for _ in range(100):
        name = f"{prefix}{secrets.token_hex(6)}"
        try:
            return open_own(os.path.join(directory, name),
                            os.O_WRONLY | os.O_CREAT | os.O_EXCL, dir_fd=directory_fd), name
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free temporary name", directory)


#: ``os.stat`` of a path as ``(st_mode, st_ino, st_size, st_mtime_ns)``, or None
#: when nothing is there, without an exception for that (made in C: opening
#: asks whether a table's ``__rootdirs__`` and a ``meta/journal`` exist).
stat_file = _metafiles.stat_file


def _stat_or_none(path: str) -> tuple | None:
    try:
        return stat_file(path)
    except (OSError, ValueError):  # (as os.path's tests: nothing that can be told)
        return None


def exists(path: str) -> bool:
    """``os.path.exists(path)``, without an exception inside for a missing path."""
    return _stat_or_none(path) is not None


def is_regular(path: str) -> bool:
    """``os.path.isfile(path)``: whether a regular file is at `path` (following
    links), False when it cannot be told."""
    st = _stat_or_none(path)
    return st is not None and stat.S_ISREG(st[0])


def read_whole(path: str) -> bytes:
    """The bytes of the file at `path`: :func:`read_regular` without a limit or
    the ``fstat`` returned, its system calls made in C (_ext/metafiles.pyx), for
    the small files every open reads.

    Raises
    ------
    FileNotFoundError, UnsafeFileError, OSError
        As :func:`read_regular`.
    """
    raw, mode = _metafiles.read_whole(path, READ_FLAGS)
    if raw is None:
        raise UnsafeFileError(path, describe(mode))
    return raw


def read_regular(path: str, limit: int | None = None) -> tuple[bytes, os.stat_result]:
    """The bytes of the file at `path` (its first `limit` bytes when given)
    and its ``fstat``, refusing anything but a regular file: a FIFO planted
    there is refused at once instead of waited on.

    Raises
    ------
    FileNotFoundError
        If the file does not exist.
    UnsafeFileError
        If it is not a regular file.
    OSError
        As ``os.read``.
    """
    fd = os.open(path, READ_FLAGS)
    try:
        st = check_regular(fd, path)
        chunks, got = [], 0
        while limit is None or got < limit:  # to the end, even if it grew since fstat
            want = max(st.st_size, 1 << 16) if limit is None else limit - got
            part = os.read(fd, want)
            if not part:
                break
            chunks.append(part)
            got += len(part)
            if len(part) < want and limit is None and got >= st.st_size:
                break  # a short read of all fstat saw: the end (no read of nothing to say so)
        return b"".join(chunks), st
    finally:
        os.close(fd)
