"""The single-writer lock of a dataset directory: ``rootdir/__lock__``.

A writer holds an advisory ``flock`` on the file ``__lock__`` at the root of
a carray or ctable directory (docs/format/README.md §1).  ``flock`` locks
belong to an open file description, so the operating system releases them
when the writer closes the file or dies, however it dies; and two opens of the
file conflict even inside one process.  The holder writes its process id and
host name into the file for the error message of whoever is refused.

Inside one process, the flock is taken once per dataset and *owned* by one
:class:`WriterLock` at a time.  Ownership passes to another lock object of the
same thread when the owner is idle (it has no unsaved changes: its ``idle``
callback says so), which keeps sequential legacy code working
(``c = bcolz.open(p); c.append(x); c = bcolz.open(p); c.append(y)``); the
object that lost it re-reads the dataset before it writes again.  Any other
conflict (another process, another thread, an owner with unsaved changes)
raises :class:`~bcolzx.errors.LockedError`, at once or after ``timeout``
seconds of polling.

The holder removes the lock file just before it releases the lock, so that a
dataset nobody writes carries none; every lock, once taken, is verified to be
on the file the path names (else it is dropped and taken again on the new
file), so that removing a locked file never lets two writers in.  In a child
created by ``os.fork()`` every inherited lock is dropped (its descriptor
closed, never unlocked, so that the parent keeps it): objects copied into the
child must take the lock again
before writing.  Where the lock file can be neither created nor opened (a
read-only file system, a directory of someone else's), no lock is taken and
the first write fails with the file system's own error.
"""

from __future__ import annotations

import errno
import gc
import json
import math
import os
import socket
import stat
import struct
import threading
import time
import weakref
from collections.abc import Callable

from bcolzx._format import files as _files
from bcolzx._format.layout import LOCK_FILE
from bcolzx.errors import ConcurrentModificationError, LockedError, UnsafeFileError

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no advisory locks, writers unguarded
    fcntl = None

__all__ = ["WriterLock", "LOCK_FILE", "holder_of", "writer_alive"]

#: Errors meaning "this file system will not let us create or write the lock file".
_NO_LOCK_ERRNOS = {errno.EROFS, errno.EACCES, errno.EPERM}
#: Polling interval bounds while waiting for a lock (seconds).
_FIRST_WAIT, _MAX_WAIT = 0.001, 0.05


class _Held:
    """A flock this process holds: its descriptor and the lock object owning it."""

    __slots__ = ("fd", "key", "owner", "thread")

    def __init__(self, fd: int, key: tuple[int, int], owner: "WriterLock"):
        self.fd = fd
        self.key = key
        self.owner = weakref.ref(owner)
        self.thread = threading.get_ident()


# The flocks this process holds, by (st_dev, st_ino) of the lock file.  Process
# state by nature (a flock is the process's); reset in a forked child.  Reentrant:
# the cycle collector may free a lock object (whose __del__ releases it) at any
# allocation, including one made while this thread holds the mutex to take another.
_mutex = threading.RLock()
_held: dict[tuple[int, int], _Held] = {}


#: What :meth:`WriterLock._try` returns when the lock file changed under it.
_AGAIN: dict = {}


def _always_idle() -> bool:
    return True


class WriterLock:
    """The write lock of one dataset directory, as one writer object takes it.

    Parameters
    ----------
    rootdir : str
        The dataset directory (it must exist when the lock is taken).
    timeout : float
        Seconds :meth:`acquire` waits for a lock held elsewhere: 0 (the
        default) raises at once, ``math.inf`` waits for ever.

    Attributes
    ----------
    idle : callable
        Returns True when the object using this lock has nothing unsaved, so
        that another object of the same thread may take the lock over.
    unavailable : bool
        No lock could be taken (read-only file system or directory): the
        writer proceeds unguarded and its first write fails.
    """

    def __init__(self, rootdir: str, timeout: float = 0.0):
        self.rootdir = os.fspath(rootdir)
        self.path = os.path.join(self.rootdir, LOCK_FILE)
        self.timeout = timeout
        self.idle: Callable[[], bool] = _always_idle
        self.unavailable = False
        self._held: _Held | None = None
        #: True once a lock owned by this object was dropped in a forked child.
        self.forked = False

    def __repr__(self) -> str:
        state = "acquired" if self.acquired else "not acquired"
        return f"WriterLock({self.rootdir!r}, {state})"

    @property
    def held(self) -> bool:
        """Whether this object owns the dataset's flock now."""
        h = self._held
        return h is not None and h.fd >= 0 and h.owner() is self

    @property
    def acquired(self) -> bool:
        """Whether this object may write: it owns the lock, or no lock is possible."""
        return self.unavailable or self.held

    # -- taking and releasing ----------------------------------------------------

    def acquire(self, timeout: float | None = None) -> None:
        """Own the dataset's lock (no-op when already owned).

        Parameters
        ----------
        timeout : float, optional
            Overrides the constructor's `timeout` for this call.

        Raises
        ------
        LockedError
            If another process, thread or busy object holds it (after
            `timeout` seconds).
        FileNotFoundError
            If the dataset directory does not exist (any more).
        OSError
            If the lock file cannot be used for another reason.
        """
        if self.acquired:
            return
        if fcntl is None:  # pragma: no cover - Windows
            self.unavailable = True
            return
        timeout = self.timeout if timeout is None else timeout
        start = time.monotonic()
        deadline = start + timeout if timeout != math.inf else math.inf
        wait, collected = _FIRST_WAIT, False
        while True:
            refusal = self._try()
            if refusal is None:
                return
            if refusal is _AGAIN:
                continue
            if refusal.get("same_process") and not collected:
                # The holder may be garbage waiting for the cycle collector:
                # collecting it flushes and releases.
                collected = True
                gc.collect()
                continue
            now = time.monotonic()
            if now >= deadline:
                raise LockedError(self.rootdir, waited=now - start if timeout else None,
                                  **refusal)
            time.sleep(min(wait, deadline - now))
            wait = min(wait * 2, _MAX_WAIT)

    def _try(self) -> dict | None:
        """One attempt: None when the lock is ours, else what refused it."""
        fd = self._open()
        if fd is None:
            self.unavailable = True
            return None
        st = os.fstat(fd)
        key = (st.st_dev, st.st_ino)
        with _mutex:
            held = _held.get(key)
            if held is not None:  # this process has it: who owns it?
                os.close(fd)
                owner = held.owner()
                same_thread = held.thread == threading.get_ident()
                if owner is None or owner is self or (same_thread and owner.idle()):
                    if owner is not None and owner is not self:
                        owner._held = None
                    held.owner, held.thread = weakref.ref(self), threading.get_ident()
                    self._held = held
                    return None
                return {"pid": os.getpid(), "same_process": True}
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                return holder_of(self.rootdir)
            except BaseException:
                os.close(fd)
                raise
            try:
                if not _names_file(self.path, key):
                    os.close(fd)  # the file was replaced or removed meanwhile: the new one
                    return _AGAIN
                _announce(fd)
                _record_holder(fd)
                held = _Held(fd, key, self)
            except BaseException:  # an interrupt: never keep a lock nobody knows of
                os.close(fd)
                raise
            _held[key] = self._held = held
            return None

    def _open(self) -> int | None:
        """A descriptor of the lock file (created if needed), or None if impossible.

        Never through a link, and only a regular file (a FIFO would make the
        open wait, a link would make the writer truncate and write its
        target): anything else at the path raises UnsafeFileError.
        """
        try:
            return _files.open_own(self.path, os.O_RDWR | os.O_CREAT)
        except UnsafeFileError:
            raise
        except FileNotFoundError:
            if not os.path.isdir(self.rootdir):
                raise FileNotFoundError(errno.ENOENT, "no dataset directory at",
                                        self.rootdir) from None
            raise
        except OSError as exc:
            if exc.errno not in _NO_LOCK_ERRNOS:
                raise
        try:  # someone else's lock file in a directory we may not write: flock it read-only
            return _files.open_own(self.path, os.O_RDONLY)
        except UnsafeFileError:
            raise
        except OSError as exc:
            if exc.errno in _NO_LOCK_ERRNOS or exc.errno == errno.ENOENT:
                return None
            raise

    def check(self) -> None:
        """Raise unless this object may write now (stores call it before each write).

        Raises
        ------
        ConcurrentModificationError
            If the lock is not owned: the writer lost it (to a fork, or by
            handing it over) and must take it again, re-reading the dataset,
            before writing.
        """
        if not self.acquired:
            why = ("it was dropped in this child process after fork()" if self.forked
                   else "it was not taken, or was handed over")
            raise ConcurrentModificationError(
                f"writing to {self.rootdir} without its write lock ({why}); nothing was "
                "written: open the dataset again")

    def release(self) -> None:
        """Give the lock up (no-op when not owned).  Never raises."""
        held, self._held = self._held, None
        if held is None or held.owner() is not self:
            return
        with _mutex:
            if _held.get(held.key) is held:
                del _held[held.key]
            fd, held.fd = held.fd, -1
        if fd < 0:
            return
        try:
            # Still ours: remove the file, so that a dataset nobody writes
            # carries none (legacy directories stay pure v1).  Whoever locks the
            # removed file next finds it is no longer at the path, and retries.
            if _names_file(self.path, held.key):
                os.unlink(self.path)
        except OSError:  # a read-only directory: the file stays, harmless
            try:
                os.ftruncate(fd, 0)  # at least forget our pid
            except OSError:
                pass
        try:
            os.close(fd)  # releases the flock
        except OSError:  # pragma: no cover - nothing sensible to do
            pass

    def __del__(self) -> None:
        if getattr(self, "_held", None) is not None:
            self.release()


# -- the lock file's contents ----------------------------------------------------------


def _names_file(path: str, key: tuple[int, int]) -> bool:
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return False
    return (st.st_dev, st.st_ino) == key


def _record_holder(fd: int) -> None:
    """Write who holds the lock (best effort: a read-only descriptor records nothing)."""
    data = json.dumps({"pid": os.getpid(), "host": socket.gethostname()}).encode()
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, data, 0)
    except OSError:
        pass


def holder_of(rootdir: str) -> dict:
    """Who the lock file of `rootdir` says holds it: ``{'pid': int|None, 'host': str|None}``.

    The record is informative only: a holder that died leaves its record in
    place (but not its lock), and its pid may belong to another process
    since.  Anything but a regular file at the path records nobody.
    """
    try:
        fd = os.open(os.path.join(rootdir, LOCK_FILE), _files.READ_FLAGS)
    except OSError:
        fd = None
    info = {}
    if fd is not None:
        try:
            if stat.S_ISREG(os.fstat(fd).st_mode):
                info = json.loads(os.pread(fd, 4096, 0) or b"{}")
        except (OSError, ValueError):
            info = {}
        finally:
            os.close(fd)
    if not isinstance(info, dict):
        info = {}
    pid, host = info.get("pid"), info.get("host")
    return {"pid": pid if isinstance(pid, int) else None,
            "host": host if isinstance(host, str) else None,
            "same_process": pid == os.getpid() and host == socket.gethostname()}


# -- is a writer at work? (the flock is the truth) ---------------------------------------

#: ``struct flock`` for F_OFD_GETLK/F_OFD_SETLK: l_type, l_whence, l_start, l_len,
#: l_pid; its size padded to the alignment of its 64-bit members, as C pads it.
_FLOCK_FMT = "@hhqqi"
_FLOCK_SIZE = struct.calcsize(_FLOCK_FMT + "0q")
_OFD = fcntl is not None and hasattr(fcntl, "F_OFD_GETLK")


def _flock_struct(kind: int) -> bytes:
    return struct.pack(_FLOCK_FMT, kind, os.SEEK_SET, 0, 0, 0).ljust(_FLOCK_SIZE, b"\0")


def _announce(fd: int) -> None:
    """Also hold an open-file-description write lock on the lock file (Linux):
    readers can then ask whether a writer is at work (:func:`writer_alive`)
    without taking anything.  Best effort: it is released with the flock,
    when `fd` is closed, however the process ends."""
    if _OFD:
        try:
            fcntl.fcntl(fd, fcntl.F_OFD_SETLK, _flock_struct(fcntl.F_WRLCK))
        except OSError:  # a file system without byte-range locks: readers probe the flock
            pass


def writer_alive(rootdir: str) -> bool:
    """Whether a writer holds the lock of `rootdir` now.

    The lock itself says so, not the pid recorded in the file (a writer
    killed leaves its record, and its pid may be reused by another process,
    such as a restarted container's pid 1).  Where the system can tell
    without taking anything (Linux: the writer's open-file-description lock,
    queried with F_OFD_GETLK), it is asked; elsewhere, a shared flock is
    tried without waiting and dropped at once (a writer taking the lock in
    that instant may be refused once).  False when there is no lock
    file, or something else than a regular file at its place.
    """
    if fcntl is None:  # pragma: no cover - Windows: no locks, no writer to wait for
        return False
    try:
        fd = os.open(os.path.join(rootdir, LOCK_FILE), _files.READ_FLAGS)
    except OSError:
        return False
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return False
        if _OFD:
            try:
                got = fcntl.fcntl(fd, fcntl.F_OFD_GETLK, _flock_struct(fcntl.F_RDLCK))
            except OSError:
                got = None
            if got is not None:
                # A writer of an older bcolzx holds only the flock: not waiting
                # for it costs nothing but the wait (the columns' common rows
                # are a state the table had).
                return struct.unpack_from(_FLOCK_FMT, got)[0] != fcntl.F_UNLCK
        return _probe_flock(fd)
    finally:
        os.close(fd)


def _probe_flock(fd: int) -> bool:
    """Whether an exclusive flock is held on `fd`'s file (tried shared, without waiting)."""
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return False
    fcntl.flock(fd, fcntl.LOCK_UN)
    return False


def _after_fork_in_child() -> None:
    """Drop every inherited lock: close the descriptors, never unlock (the parent's)."""
    global _mutex
    _mutex = threading.RLock()
    for held in list(_held.values()):
        owner = held.owner()
        if owner is not None:
            owner.forked = True
        if held.fd >= 0:
            try:
                os.close(held.fd)
            except OSError:  # pragma: no cover
                pass
            held.fd = -1
    _held.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
