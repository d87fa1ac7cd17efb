"""One process-wide pool of worker threads for chunk-parallel work.

Compression and decompression (in C) and NumPy reductions all release the GIL, so a few
Python threads that each decode a chunk into a buffer of their own and reduce
it keep every core busy with the chunk still in cache.  The pool is created
on first use, grows to the largest thread count asked for, and is forgotten
in a forked child (its threads do not exist there; a new pool starts on the
child's first use).
"""

from __future__ import annotations

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


def pool(nthreads: int) -> ThreadPoolExecutor:
    """The shared executor, with at least `nthreads` workers."""
    global _pool, _size
    with _lock:
        if _pool is None or _size < nthreads:
            old = _pool
            _pool, _size = ThreadPoolExecutor(nthreads, thread_name_prefix="bcolzx"), nthreads
            if old is not None:
                old.shutdown(wait=False)
        return _pool


def writer() -> ThreadPoolExecutor:
    """The one thread that stores compressed chunks while others compress more."""
    global _writer
    with _lock:
        if _writer is None:
            _writer = ThreadPoolExecutor(1, thread_name_prefix="bcolzx-writer")
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


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_after_fork)
