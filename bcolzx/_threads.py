"""The one pool of worker threads every layer of bcolzx uses, and per-thread resources.

Compression and decompression (in C), checksums, NumPy reductions and
expression evaluation all release the GIL, so a few Python threads that each
work on a chunk of their own keep every core busy with the chunk still in
cache.  There is one pool for the whole process (C-Blosc2's own threads
aside): the engine's chunk-parallel encoding and hand-off, reads of many
chunks, reductions and the blocks of a query all run on it, sized by
``bcolzx.set_nthreads`` / ``defaults.nthreads``.  It is created on first use,
grows to the largest thread count asked for, and is forgotten in a forked
child (its threads do not exist there; a new pool starts on the child's first
use).  Work submitted from one of its own threads runs inline
(:func:`map_ordered`): a task never waits for the pool it occupies.

Also here: the one writer thread that stores compressed chunks while others
compress (:func:`writer`), and what each thread keeps for itself: a scratch
buffer, a decompression context, compressors, and recycled chunk buffers.
"""

from __future__ import annotations

import itertools
import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from bcolzx._ext import codec

_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None
_size = 0
_writer: ThreadPoolExecutor | None = None
_local = threading.local()


def _mark_worker() -> None:
    _local.worker = True


def pool(nthreads: int) -> ThreadPoolExecutor:
    """The shared executor, with at least `nthreads` workers."""
    global _pool, _size
    with _lock:
        if _pool is None or _size < nthreads:
            old = _pool
            _pool, _size = ThreadPoolExecutor(nthreads, thread_name_prefix="bcolzx",
                                              initializer=_mark_worker), nthreads
            if old is not None:
                old.shutdown(wait=False)
        return _pool


def in_worker() -> bool:
    """Whether the calling thread is one of the pool's (or the writer's)."""
    return getattr(_local, "worker", False)


def _groups(items: list, n: int) -> list[list]:
    """`items` cut in `n` contiguous groups (the first ones one longer)."""
    return [items[len(items) * k // n:len(items) * (k + 1) // n] for k in range(n)]


def map_ordered(fn, items, nthreads: int):
    """``fn(item)`` for each of `items`, in order, on at most `nthreads` pool threads.

    The items are cut in `nthreads` contiguous groups, each run by one pool
    thread one item after the other (so at most `nthreads` run at once,
    whatever the pool's size).  Runs inline, one item after the other, with
    one thread, one item, or when called from a pool thread (a task must
    never wait for the pool it occupies).  Returns an iterator over the
    results, in the order of `items`; the first exception is raised when its
    result is reached.
    """
    items = list(items)
    if nthreads < 2 or len(items) < 2 or in_worker():
        return map(fn, items)
    groups = _groups(items, min(nthreads, len(items)))
    futures = [pool(nthreads).submit(_run_group, fn, g) for g in groups]
    return (r for f in futures for r in f.result())


def _run_group(fn, group: list) -> list:
    return [fn(item) for item in group]


def run_all(fn, items, nthreads: int) -> list:
    """``fn(item)`` for every one of `items` on at most `nthreads` pool threads;
    every call finishes (or fails) before the first exception, in the order
    of `items`, is raised.  Inline as :func:`map_ordered` says.

    Returns
    -------
    list
        The results, in the order of `items`.
    """
    items = list(items)
    if nthreads < 2 or len(items) < 2 or in_worker():
        outcomes = [_attempt(fn, item) for item in items]
    else:
        groups = _groups(items, min(nthreads, len(items)))
        futures = [pool(nthreads).submit(_attempt_group, fn, g) for g in groups]
        outcomes = [o for f in futures for o in f.result()]
    for ok, value in outcomes:
        if not ok:
            raise value
    return [value for _, value in outcomes]


def share(fn, items, nthreads: int) -> list:
    """``fn(item)`` for every one of `items`, shared by this thread and at most
    ``nthreads - 1`` pool threads, each taking the next item nobody has taken
    yet, one at a time: this thread never sleeps while items are left, and a
    pool thread that starts late (busy elsewhere) takes fewer, or none.  Items
    are taken in order, so ``fn`` may wait for an earlier item's outcome
    (never for a later one's).  Every call finishes (or fails) before the
    first exception, in the order of `items`, is raised.  Called from a pool
    thread too: the items are offered to the pool's other threads (idle ones
    help), and this thread waits only for items a pool thread has started
    (it never waits for work that cannot start).

    Returns
    -------
    list
        The results, in the order of `items`.
    """
    items = list(items)
    n = len(items)
    if nthreads < 2 or n < 2:
        outcomes = [_attempt(fn, item) for item in items]
    else:
        outcomes = [(True, None)] * n
        claim = itertools.count().__next__  # atomic: each number goes to one thread

        def work() -> None:
            k = claim()
            while k < n:
                outcomes[k] = _attempt(fn, items[k])
                k = claim()

        try:
            helpers = [pool(nthreads).submit(work) for _ in range(min(nthreads, n) - 1)]
        except RuntimeError:  # interpreter shutdown: no new threads
            helpers = []
        work()
        for helper in helpers:  # one not started yet has nothing left to take
            if not helper.cancel():
                helper.result()
    for ok, value in outcomes:
        if not ok:
            raise value
    return [value for _, value in outcomes]


def run_waiting(fn, items, nthreads: int) -> list:
    """:func:`run_all` for calls that mostly wait for the system (fsyncs), from
    any thread: called from a pool thread, the items are still offered to the
    pool (it may have idle threads), and this thread runs every one that no
    pool thread has started, so that it never waits for work that cannot start.
    """
    items = list(items)
    if nthreads < 2 or len(items) < 2 or not in_worker():
        return run_all(fn, items, nthreads)
    executor = pool(nthreads)
    futures = [executor.submit(_attempt, fn, item) for item in items[1:]]
    outcomes = [_attempt(fn, items[0])]
    for item, future in zip(items[1:], futures):
        outcomes.append(_attempt(fn, item) if future.cancel() else future.result())
    for ok, value in outcomes:
        if not ok:
            raise value
    return [value for _, value in outcomes]


def _attempt(fn, item) -> tuple:
    try:
        return True, fn(item)
    except BaseException as exc:  # noqa: BLE001 - raised by run_all, after every call
        return False, exc


def _attempt_group(fn, group: list) -> list:
    return [_attempt(fn, item) for item in group]


def writer() -> ThreadPoolExecutor:
    """The one thread that stores compressed chunks while others compress more."""
    global _writer
    with _lock:
        if _writer is None:
            _writer = ThreadPoolExecutor(1, thread_name_prefix="bcolzx-writer",
                                         initializer=_mark_worker)
        return _writer


def buffer(nbytes: int) -> np.ndarray:
    """This thread's scratch buffer (``uint8``, at least `nbytes`; kept and
    reused, so a chunk decoded into it stays in this core's cache)."""
    buf = getattr(_local, "buf", None)
    if buf is None or len(buf) < nbytes:
        buf = _local.buf = np.empty(nbytes, np.uint8)
    return buf[:nbytes]


#: Bytes of chunk buffers kept for reuse by :func:`chunk_buffer`, all arrays together.
SPARE_BYTES = 16 << 20
_spares: dict = {}
_spare_bytes = 0


def chunk_buffer(nbytes: int) -> np.ndarray:
    """A ``uint8`` buffer of `nbytes` for a chunk's rows: a recycled one when
    :func:`recycle` kept one of that size, else a new one."""
    global _spare_bytes
    with _lock:
        free = _spares.get(nbytes)
        if free:
            _spare_bytes -= nbytes
            return free.pop()
    return np.empty(nbytes, np.uint8)


def recycle(rows: np.ndarray) -> None:
    """Keep `rows` (a C-contiguous array no longer in use) for :func:`chunk_buffer`,
    unless :data:`SPARE_BYTES` are kept already."""
    global _spare_bytes
    raw = rows.reshape(-1).view(np.uint8)
    with _lock:
        if _spare_bytes + raw.nbytes <= SPARE_BYTES:
            _spares.setdefault(raw.nbytes, []).append(raw)
            _spare_bytes += raw.nbytes


def decompressor() -> codec.Decompressor:
    """This thread's single-threaded decompression context."""
    dec = getattr(_local, "dec", None)
    if dec is None:
        dec = _local.dec = codec.Decompressor(1)
    return dec


def compressor(like: codec.Compressor) -> codec.Compressor:
    """This thread's single-threaded compressor with the settings of `like`."""
    key = (like.cname, like.clevel, like.shuffle, like.typesize, like.blocksize,
           like.bytedelta, like.split)
    comps = getattr(_local, "comps", None)
    if comps is None:
        comps = _local.comps = {}
    comp = comps.get(key)
    if comp is None:
        comp = comps[key] = codec.Compressor(*key[:5], 1, bytedelta=key[5], split=key[6])
    return comp


def _forget_after_fork() -> None:
    global _pool, _size, _lock, _writer
    _pool, _size, _lock, _writer = None, 0, threading.Lock(), None
    _local.__dict__.pop("worker", None)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_after_fork)
