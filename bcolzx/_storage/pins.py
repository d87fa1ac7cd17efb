"""The descriptors loaded superchunk files keep open: a process-wide budget.

A :class:`~bcolzx._format.superchunk.SuperchunkFile` that a directory store
loads keeps the descriptor it was loaded through and reads through it
(``keep_open``): a reader's snapshot then reads the very files it loaded,
whatever a writer does to the paths meanwhile (renames a compacted file
over one, removes one that a truncation emptied, creates a new one at the
same name), and a read costs one ``pread`` instead of ``open``, ``pread``,
``close``.  Writers never write over bytes once written (docs/format §3),
so what such a descriptor reads is what the snapshot's index describes.

Descriptors are a limited resource: at most :data:`BUDGET` are kept by the
whole process.  Past it, the files loaded longest ago are *forgotten* by
their store (its cached index dropped, unless it holds uncommitted
changes); the descriptor closes when the last read using the object ends,
and the store loads the file again, through ``meta/sizes``, when it needs it
(bcolzx._storage.snapshot).  On Windows nothing is kept: an open file
there cannot be renamed over.
"""

from __future__ import annotations

import os
import threading
import weakref
from collections import OrderedDict

__all__ = ["BUDGET", "enabled", "keep", "kept"]


def _budget() -> int:
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        if soft == resource.RLIM_INFINITY:
            soft = 1 << 16
    except (ImportError, OSError, ValueError):  # pragma: no cover - no resource module
        soft = 1024
    return max(8, min(1024, soft // 4))


#: Descriptors kept at most, process-wide: a quarter of the soft limit on open
#: files (256 with the usual 1024), between 8 and 1024.
BUDGET = _budget()

# Reentrant: a file that dies while it is held runs _gone() in this thread.
_mutex = threading.RLock()
# id(file) -> (store, number, file), weakly; oldest first.
_kept: OrderedDict[int, tuple] = OrderedDict()


def enabled() -> bool:
    """Whether loaded files keep their descriptor on this platform."""
    return os.name == "posix"


def kept() -> int:
    """How many loaded files keep a descriptor now (for tests and statistics)."""
    with _mutex:
        return sum(1 for _, _, f in _kept.values() if f() is not None)


def keep(store, number: int, sc) -> None:
    """Count `sc` (superchunk `number` of `store`, keeping a descriptor) in the
    budget, and make the stores forget the files loaded longest ago if over it."""
    key = id(sc)
    with _mutex:
        _kept[key] = (weakref.ref(store), number, weakref.ref(sc, lambda _, k=key: _gone(k)))
        if len(_kept) <= BUDGET:
            return
        victims = []
        for k in list(_kept):
            if len(_kept) - len(victims) <= BUDGET:
                break
            entry = _kept.get(k)
            if entry is None:
                continue
            sref, n, fref = entry
            f, st = fref(), sref()
            if f is None or st is None:
                victims.append((k, None, None, None))
            elif f is not sc and not f.dirty:
                victims.append((k, st, n, f))
        for k, *_ in victims:
            _kept.pop(k, None)
    for _, st, n, f in victims:
        if st is not None:
            st.forget_file(n, f)


def _gone(key: int) -> None:
    with _mutex:
        _kept.pop(key, None)
