"""Chunks in flight: the process-wide budget of appended chunks being compressed by
pool threads, and the fork and interpreter-exit hooks that keep them safe.

An append that completes a chunk hands it to a pool thread and goes on
(:meth:`bcolzx._storage.engine.ChunkedArray._hand_off`); the chunk is stored
later, in order, by the appending thread.  This module holds what all arrays
share for that: a bound on the bytes in flight (:data:`FLIGHT_BYTES`), the
arrays that have chunks in flight (stored before ``fork()``, so that a child
neither waits for a thread it does not have nor writes its parent's files),
and the writable arrays on disk (their unsaved rows are stored at interpreter
exit, while imports and threads still work).
"""

from __future__ import annotations

import atexit
import os
import threading
import warnings
import weakref

__all__ = ["FLIGHT_BYTES", "fly", "land", "busy", "on_disk"]

#: Uncompressed bytes of the chunks appends may have in flight, all arrays
#: together; an array also keeps at most 8 more than its thread count.
FLIGHT_BYTES = 16 << 20

_lock = threading.Lock()
_bytes = 0
#: Arrays with chunks in flight.
busy: weakref.WeakSet = weakref.WeakSet()
#: Arrays on disk that may be written to (flushed at interpreter exit).
on_disk: weakref.WeakSet = weakref.WeakSet()


def fly(nbytes: int) -> bool:
    """Count `nbytes` more in flight, if :data:`FLIGHT_BYTES` allow (or
    nothing else is in flight)."""
    global _bytes
    with _lock:
        if _bytes and _bytes + nbytes > FLIGHT_BYTES:
            return False
        _bytes += nbytes
        return True


def land(nbytes: int) -> None:
    """`nbytes` are no longer in flight."""
    global _bytes
    with _lock:
        _bytes -= nbytes


def in_flight() -> int:
    """Bytes in flight now, all arrays together."""
    return _bytes


def _settle_before_fork() -> None:
    # A child must neither wait for a pool thread it does not have nor store
    # chunks into files its parent writes: everything in flight is stored here.
    for engine in list(busy):
        try:
            engine.settle()
        except BaseException as exc:  # pragma: no cover - nothing to raise into
            warnings.warn(f"bcolzx could not store an appended chunk before fork(): "
                          f"{exc!r}", ResourceWarning, stacklevel=1)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_settle_before_fork)


@atexit.register
def _flush_at_exit() -> None:
    # Garbage collection at the very end of the interpreter cannot import or
    # start threads any more: unsaved rows are stored while it still can.
    for engine in list(on_disk):
        if engine.dirty and not engine.closed:
            try:
                engine.flush()
            except Exception as exc:  # pragma: no cover - nothing to raise into
                warnings.warn(f"bcolzx could not flush {engine.rootdir} at exit: {exc!r}",
                              ResourceWarning, stacklevel=1)
