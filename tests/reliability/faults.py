"""I/O failures on demand: a full disk, an I/O error, an interrupt, at the k-th write.

:class:`Faults` replaces the ``os`` functions through which bcolzx writes and
makes durable (``pwritev``, ``pwrite``, ``fdatasync``, ``fsync``,
``replace``) with counting wrappers; the k-th call raises instead of running.
Counting one run of a scenario without a failure gives the number of points
a sweep must visit; :func:`small_tmpfs` gives a real file system that fills
up, when running as root.
"""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess

#: The functions that bcolzx's write paths call, in the ``os`` module.
WRITE_CALLS = ("pwritev", "pwrite", "fdatasync", "fsync", "replace")


class Faults:
    """Count calls of :data:`WRITE_CALLS`; fail the `at`-th one (0-based) with `error`.

    Use as a context manager: the functions are patched inside the block only.
    ``count`` is the number of calls seen, ``fired`` what failed (call name).
    """

    def __init__(self, at: int | None = None, error: BaseException | None = None):
        self.at = at
        self.error = error if error is not None else OSError(errno.ENOSPC,
                                                             os.strerror(errno.ENOSPC))
        self.count = 0
        self.fired: str | None = None
        self._saved: dict = {}

    def _wrap(self, name, real):
        def call(*args, **kwargs):
            k = self.count
            self.count += 1
            if k == self.at:
                self.fired = name
                raise self.error
            return real(*args, **kwargs)
        return call

    def __enter__(self) -> "Faults":
        for name in WRITE_CALLS:
            self._saved[name] = getattr(os, name)
            setattr(os, name, self._wrap(name, self._saved[name]))
        return self

    def __exit__(self, *exc) -> None:
        for name, real in self._saved.items():
            setattr(os, name, real)
        self._saved.clear()


def mount_reason() -> str | None:
    """Why a small tmpfs cannot be mounted here (None when it can be)."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return ("mounting a size-limited tmpfs needs root (uid 0); running as uid "
                f"{os.geteuid() if hasattr(os, 'geteuid') else '?'}")
    return None


@contextlib.contextmanager
def small_tmpfs(path, size: str = "2m"):
    """A tmpfs of `size` mounted at `path` for the block (unmounted after).

    Raises
    ------
    OSError
        If the mount fails (with mount's message), e.g. inside a container
        without CAP_SYS_ADMIN.
    """
    os.makedirs(path, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
                          capture_output=True, text=True)
    if done.returncode:
        raise OSError(f"mount -t tmpfs failed: {done.stderr.strip() or done.returncode}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], capture_output=True)


def remount(path, options: str) -> None:
    """``mount -o remount,<options>`` the file system at `path`."""
    subprocess.run(["mount", "-o", f"remount,{options}", str(path)], check=True,
                   capture_output=True)


def reserve(directory, nbytes: int) -> str:
    """A file of `nbytes` in `directory`: delete it to free that much space later."""
    path = os.path.join(str(directory), "reserve")
    with open(path, "wb") as f:
        f.write(b"\xff" * nbytes)
    return path
