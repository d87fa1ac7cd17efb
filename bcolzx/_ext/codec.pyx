"""Chunk compression and decompression over C-Blosc2 contexts.

This is the only bcolzx extension that links C-Blosc2: besides the codec
classes it reads chunk headers, makes special chunks and reports the
library's version.  Every call into the library happens with the GIL
released, on a context owned by a Python object (never the library's global
context), so that threads using different objects never contend and the
module holds no mutable state.  The objects' locks, and the threads C-Blosc2
runs in a forked child, are :mod:`bcolzx._ext.contexts`.
"""

from cpython.buffer cimport PyBuffer_Release
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, _PyBytes_Resize
from cpython.object cimport PyObject
from cpython.ref cimport Py_DECREF, Py_INCREF
from libc.stdint cimport int32_t, uint8_t
from libc.stdlib cimport calloc, free, malloc
from libc.string cimport memcmp, memcpy

cimport cblosc2 as c

from bcolzx._ext._buffers cimport get_buffer
from bcolzx._ext.contexts cimport _Locked, _jobs_on_new_threads

import os
import weakref

from bcolzx.errors import TruncatedDataError, blosc2_error

# Registering codecs and filters with the library (plugin filters fail without
# it).  Idempotent, and private to this module's own copy of C-Blosc2.
c.blosc2_init()

CODECS = {
    "blosclz": c.BLOSC_BLOSCLZ,
    "lz4": c.BLOSC_LZ4,
    "lz4hc": c.BLOSC_LZ4HC,
    "zlib": c.BLOSC_ZLIB,
    "zstd": c.BLOSC_ZSTD,
}
NOSHUFFLE = c.BLOSC_NOSHUFFLE
SHUFFLE = c.BLOSC_SHUFFLE
BITSHUFFLE = c.BLOSC_BITSHUFFLE
FILTERS = (NOSHUFFLE, SHUFFLE, BITSHUFFLE)
#: C-Blosc2's registered byte-delta filter (filters-registry.h: BLOSC_FILTER_BYTEDELTA).
BYTEDELTA = 35

MAX_OVERHEAD = c.BLOSC2_MAX_OVERHEAD
MAX_BUFFERSIZE = c.BLOSC2_MAX_BUFFERSIZE
MIN_HEADER_LENGTH = c.BLOSC_MIN_HEADER_LENGTH
#: C-Blosc2 version the extension was compiled against.
BUILD_VERSION = (c.BLOSC2_VERSION_MAJOR, c.BLOSC2_VERSION_MINOR, c.BLOSC2_VERSION_RELEASE)

cdef extern from *:
    # Set by setup.py: 1 when libblosc2.a is linked into this module.
    int BCOLZX_BLOSC2_STATIC

LINKAGE = "static" if BCOLZX_BLOSC2_STATIC else "shared"


def blosc2_version():
    """The version string of the C-Blosc2 library running in this process.

    Returns
    -------
    str
        For example ``"3.3.5"``.  With the default static build this is the
        C-Blosc2 compiled into bcolzx, whatever python-blosc2 is installed.
    """
    return c.blosc2_get_version_string().decode("ascii")


def blosc2_version_date():
    """The release date string of the C-Blosc2 bcolzx was built with.

    Returns
    -------
    str
    """
    return c.BLOSC2_VERSION_DATE.decode("ascii")


def compressor_list():
    """The codecs compiled into C-Blosc2.

    Returns
    -------
    list of str
        Codec names, e.g. ``["blosclz", "lz4", "lz4hc", "zlib", "zstd"]``.
    """
    return c.blosc2_list_compressors().decode("ascii").split(",")


cdef object _error(int rc, str operation, bint decoding, object chunk=None):
    return blosc2_error(rc, operation, c.blosc2_error_string(rc).decode("utf-8", "replace"),
                        decoding=decoding, chunk=chunk)


cdef bytes _shrink(PyObject* owned, Py_ssize_t size):
    """Shrink a new bytes object in place (a realloc, not a copy).

    `owned` must hold the only reference to the object, as _PyBytes_Resize
    requires; that reference passes to the returned object.
    """
    if _PyBytes_Resize(&owned, size) < 0:   # on failure `owned` was released
        raise MemoryError()
    result = <bytes>owned   # a second reference, for Python ...
    Py_DECREF(result)       # ... so release the one we were given
    return result


cdef bytes _taken(list holder, Py_ssize_t k, Py_ssize_t size):
    """``holder[k]``, a new bytes object that only `holder` references, shrunk
    to `size` bytes in place; ``holder[k]`` becomes None."""
    cdef bytes out = holder[k]
    cdef PyObject* owned
    holder[k] = None
    if size == len(out):
        return out
    owned = <PyObject*>out
    Py_INCREF(out)
    out = None          # `owned` now holds the only reference
    return _shrink(owned, size)


cdef int _check_src_size(Py_ssize_t size, str what) except -1:
    if size > c.BLOSC2_MAX_BUFFERSIZE:
        raise ValueError(f"{what} has {size} bytes; a chunk holds at most {c.BLOSC2_MAX_BUFFERSIZE}")
    return 0


cdef int _chunk_sizes(const uint8_t* src, Py_ssize_t srcsize, int32_t* nbytes,
                      int32_t* cbytes, int32_t* blocksize, object chunk=None) except -1:
    """Read and check a chunk's header sizes against the bytes available."""
    cdef int rc
    if srcsize < c.BLOSC_MIN_HEADER_LENGTH:
        raise TruncatedDataError(
            f"chunk has {srcsize} bytes, fewer than the {c.BLOSC_MIN_HEADER_LENGTH}-byte header",
            chunk=chunk)
    with nogil:
        rc = c.blosc2_cbuffer_sizes(src, nbytes, cbytes, blocksize)
    if rc < 0:
        raise _error(rc, "reading chunk header", True, chunk)
    if cbytes[0] > srcsize:
        raise TruncatedDataError(f"chunk header says {cbytes[0]} bytes, only {srcsize} given",
                                 chunk=chunk)
    if nbytes[0] < 0 or cbytes[0] < c.BLOSC_MIN_HEADER_LENGTH:
        raise _error(-11, "reading chunk header", True, chunk)
    return 0


def chunk_sizes(src):
    """The sizes recorded in a compressed chunk's header.

    Parameters
    ----------
    src : buffer
        A C-Blosc2 (or C-Blosc 1.x) chunk, or at least its first 16 bytes.

    Returns
    -------
    tuple of int
        ``(nbytes, cbytes, blocksize)``: uncompressed size, compressed size
        (header included) and block size, in bytes.

    Raises
    ------
    TruncatedDataError
        If `src` is shorter than a header or than the chunk it describes.
    CorruptDataError
        If the header is invalid.
    """
    cdef Py_buffer view
    cdef int32_t nbytes, cbytes, blocksize
    cdef int rc
    get_buffer(src, &view, False, "src")
    try:
        if view.len < c.BLOSC_MIN_HEADER_LENGTH:
            raise TruncatedDataError(
                f"chunk has {view.len} bytes, fewer than the {c.BLOSC_MIN_HEADER_LENGTH}-byte header")
        with nogil:
            rc = c.blosc2_cbuffer_sizes(view.buf, &nbytes, &cbytes, &blocksize)
        if rc < 0:
            raise _error(rc, "reading chunk header", True)
        return nbytes, cbytes, blocksize
    finally:
        PyBuffer_Release(&view)


def chunk_info(src):
    """Describe a compressed chunk from its header.

    Parameters
    ----------
    src : buffer
        A complete C-Blosc2 or C-Blosc 1.x chunk.

    Returns
    -------
    dict
        ``nbytes``, ``cbytes``, ``blocksize``, ``typesize``, ``version``
        (chunk format version), ``codec`` (the compression library, e.g.
        ``"LZ4"``) and ``memcpyed`` (stored without compression).

    Raises
    ------
    TruncatedDataError, CorruptDataError
        If the chunk is shorter than its header says, or its header is invalid.
    """
    cdef Py_buffer view
    cdef int32_t nbytes, cbytes, blocksize
    cdef size_t typesize
    cdef int flags, version, versionlz
    get_buffer(src, &view, False, "src")
    try:
        _chunk_sizes(<const uint8_t*>view.buf, view.len, &nbytes, &cbytes, &blocksize)
        with nogil:
            c.blosc1_cbuffer_metainfo(view.buf, &typesize, &flags)
            c.blosc2_cbuffer_versions(view.buf, &version, &versionlz)
        return {
            "nbytes": nbytes,
            "cbytes": cbytes,
            "blocksize": blocksize,
            "typesize": typesize,
            "version": version,
            "codec": c.blosc2_cbuffer_complib(view.buf).decode("ascii", "replace"),
            "memcpyed": bool(flags & c.BLOSC_MEMCPYED),
        }
    finally:
        PyBuffer_Release(&view)


# Every live codec object, so that a child created by fork() can give each new
# C-Blosc2 contexts.  Process state by nature; touched only at creation and in
# the fork hook.
_live = weakref.WeakSet()


def _after_fork_in_child():
    # C-Blosc2 3.x runs the threads of contexts with nthreads > 1 in one pool
    # shared by the library; a forked child inherits its bookkeeping but not its
    # threads, and would wait for them for ever.  From now on, each call starts
    # its own threads (c-blosc-vendor/README.md).  The child has one thread here.
    c.blosc2_set_threads_callback(_jobs_on_new_threads, NULL)
    for obj in list(_live):
        obj._after_fork()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


cdef int _check_nthreads(object nthreads) except -1:
    if not isinstance(nthreads, int) or isinstance(nthreads, bool):
        raise TypeError(f"nthreads must be an int, not {type(nthreads).__name__}")
    if not 1 <= nthreads <= 1024:
        raise ValueError(f"nthreads must be between 1 and 1024, not {nthreads}")
    return nthreads


cdef class Compressor(_Locked):
    """Compress buffers into C-Blosc2 chunks with fixed parameters.

    Parameters
    ----------
    cname : {'blosclz', 'lz4', 'lz4hc', 'zlib', 'zstd'}
        The codec.
    clevel : int
        Compression level, 0 (no compression) to 9.
    shuffle : {0, 1, 2}
        Filter: NOSHUFFLE, SHUFFLE (byte shuffle) or BITSHUFFLE.
    typesize : int
        Size in bytes of one item, for the shuffle filters.
    blocksize : int
        Size of the blocks C-Blosc2 splits a chunk into, rounded down to a
        multiple of `typesize`; 0 picks one.
    nthreads : int
        Threads C-Blosc2 uses inside one chunk.
    bytedelta : bool
        Follow the shuffle with C-Blosc2's byte-delta filter (each byte stream
        stored as differences): smooth numeric data then compresses many
        times better, even in small blocks.  Needs a shuffle.
    split : bool
        Compress each block as one stream per byte of an item (C-Blosc's
        historic layout, which C-Blosc 1.x readers expect) instead of as one
        stream.  One stream compresses faster, decodes faster and, after the
        byte shuffle, usually smaller; any C-Blosc2 reader reads both.

    Raises
    ------
    ValueError
        For an unknown codec or an out-of-range parameter.
    TypeError
        For a parameter of the wrong type.
    """
    def __cinit__(self, str cname="lz4", int clevel=5, int shuffle=SHUFFLE, int typesize=8,
                  int blocksize=0, nthreads=1, bint bytedelta=False, bint split=True):
        cdef c.blosc2_cparams cp = c.BLOSC2_CPARAMS_DEFAULTS
        if cname not in CODECS:
            raise ValueError(f"unknown codec {cname!r}; choose one of {sorted(CODECS)}")
        if not 0 <= clevel <= 9:
            raise ValueError(f"clevel must be between 0 and 9, not {clevel}")
        if shuffle not in FILTERS:
            raise ValueError(f"shuffle must be 0 (none), 1 (byte) or 2 (bit), not {shuffle}")
        if not 1 <= typesize <= c.BLOSC2_MAXTYPESIZE:
            raise ValueError(f"typesize must be between 1 and {c.BLOSC2_MAXTYPESIZE}, not {typesize}")
        if blocksize < 0:
            raise ValueError(f"blocksize must be >= 0, not {blocksize}")
        if bytedelta and shuffle == NOSHUFFLE:
            raise ValueError("bytedelta needs a shuffle filter (SHUFFLE or BITSHUFFLE)")
        if bytedelta and typesize > 255:
            raise ValueError(f"bytedelta needs a typesize <= 255, not {typesize}")
        _check_nthreads(nthreads)
        if blocksize:
            # C-Blosc2 (3.3.5 at least) writes chunks it cannot decode when a
            # forced block size is not a multiple of the typesize.
            blocksize = max(typesize, blocksize - blocksize % typesize)
        self.cname, self.clevel, self.shuffle = cname, clevel, shuffle
        self.bytedelta, self.split = bytedelta, split
        self.typesize, self.blocksize, self.nthreads = typesize, blocksize, nthreads
        # Codecs that, given room for `limit` bytes only, fail exactly when the
        # chunk is larger (zstd and blosclz fail sooner: they want room to spare).
        self._stops_exactly = cname in ("lz4", "lz4hc", "zlib")
        cp.compcode = CODECS[cname]
        cp.clevel = clevel
        cp.typesize = typesize
        cp.blocksize = blocksize
        cp.nthreads = nthreads
        cp.splitmode = c.BLOSC_FORWARD_COMPAT_SPLIT if split else c.BLOSC_NEVER_SPLIT
        if bytedelta:
            cp.filters[c.BLOSC2_MAX_FILTERS - 2] = shuffle
            cp.filters[c.BLOSC2_MAX_FILTERS - 1] = BYTEDELTA
            cp.filters_meta[c.BLOSC2_MAX_FILTERS - 1] = typesize  # its stride (<= 255 here)
        else:
            cp.filters[c.BLOSC2_MAX_FILTERS - 1] = shuffle
        self._cparams = cp
        with nogil:
            self.ctx = c.blosc2_create_cctx(cp)
        if self.ctx == NULL:
            raise MemoryError("cannot create a C-Blosc2 compression context")
        _live.add(self)

    def _after_fork(self):
        _Locked._after_fork(self)
        self._largest = 0
        self.ctx = c.blosc2_create_cctx(self._cparams)  # the parent's is abandoned
        if self.ctx == NULL:  # pragma: no cover - out of memory in a fresh child
            raise MemoryError("cannot create a C-Blosc2 compression context")

    def __dealloc__(self):
        if self.ctx != NULL:
            c.blosc2_free_ctx(self.ctx)

    def __repr__(self):
        return (f"Compressor(cname={self.cname!r}, clevel={self.clevel}, shuffle={self.shuffle}, "
                f"typesize={self.typesize}, blocksize={self.blocksize}, nthreads={self.nthreads}, "
                f"bytedelta={bool(self.bytedelta)}, split={bool(self.split)})")

    cdef int _compress(self, const void* src, Py_ssize_t srcsize, void* dest,
                       Py_ssize_t destsize, Py_ssize_t limit=0, Py_ssize_t period=0) except -1:
        # With `limit` > 0, a chunk larger than `limit` bytes returns 0; with
        # lz4, lz4hc and zlib, C-Blosc2 stops as soon as its output passes it.
        # With `period` > 0, a buffer of one item of `period` bytes repeated
        # is not compressed: 0 is returned (checked in the same GIL release).
        cdef int rc
        _check_src_size(srcsize, "src")
        if limit >= c.BLOSC_EXTENDED_HEADER_LENGTH and self._stops_exactly and limit < destsize:
            destsize = limit  # (less room than a header: C-Blosc2 would refuse it)
        if destsize > c.BLOSC2_MAX_BUFFERSIZE + c.BLOSC2_MAX_OVERHEAD:
            destsize = c.BLOSC2_MAX_BUFFERSIZE + c.BLOSC2_MAX_OVERHEAD
        cdef c.blosc2_context* ctx
        cdef c.blosc2_context* old
        cdef bint fresh
        with nogil:
            if period > 0 and (srcsize <= period or memcmp(src, <const char*>src + period,
                                                           srcsize - period) == 0):
                return 0
            self.acquire()
            # C-Blosc2 (3.3.5 at least) keeps in a context the block size it
            # chose for a buffer, and uses it for every later buffer: after a
            # leftover of a few KiB, every chunk would be cut in blocks of a
            # few KiB (slower, worse compression, and blocks of an odd size,
            # which its getitem mishandles).  A buffer smaller than the
            # largest one compressed gets a context of its own; a larger one,
            # a new main context.
            fresh = srcsize < self._largest
            if fresh:
                ctx = c.blosc2_create_cctx(self._cparams)
            else:
                if srcsize > self._largest and self._largest:
                    old, self.ctx = self.ctx, c.blosc2_create_cctx(self._cparams)
                    if self.ctx == NULL:
                        self.ctx = old
                    else:
                        c.blosc2_free_ctx(old)
                self._largest = srcsize
                ctx = self.ctx
            rc = -4  # BLOSC2_ERROR_MEMORY, if the context could not be made
            if ctx != NULL:
                rc = c.blosc2_compress_ctx(ctx, src, <int32_t>srcsize, dest, <int32_t>destsize)
            if fresh and ctx != NULL:
                c.blosc2_free_ctx(ctx)
            self.release()
        if rc < 0:
            raise _error(rc, "compress", False)
        if limit > 0 and (rc == 0 or rc > limit):
            return 0
        if rc == 0:
            # C-Blosc2 returns 0 when the output would not fit in destsize.
            raise _error(-6, "compress", False)
        return rc

    def compress(self, src, Py_ssize_t limit=0):
        """Compress a buffer into a new chunk.

        Parameters
        ----------
        src : buffer
            Any C-contiguous buffer (bytes, NumPy array, memoryview...) of at
            most ``MAX_BUFFERSIZE`` bytes.
        limit : int, optional
            If > 0, the largest chunk wanted: compression stops as soon as
            the chunk would be larger, and None is returned.  (A chunk that
            fits is the one made without a limit.)

        Returns
        -------
        bytes or None
            The chunk: a C-Blosc2 header followed by the compressed blocks
            (None when larger than `limit`).

        Raises
        ------
        TypeError, ValueError
            If `src` is not a C-contiguous buffer or is too large.
        CodecError
            If C-Blosc2 fails.
        """
        cdef Py_buffer view
        cdef bytes out
        cdef int n
        get_buffer(src, &view, False, "src")
        try:
            _check_src_size(view.len, "src")
            out = PyBytes_FromStringAndSize(NULL, view.len + c.BLOSC2_MAX_OVERHEAD)
            n = self._compress(view.buf, view.len, PyBytes_AS_STRING(out), len(out), limit)
        finally:
            PyBuffer_Release(&view)
        if n == 0:
            return None
        holder = [out]
        out = None          # `holder` now holds the only reference
        return _taken(holder, 0, n)

    def compress_into(self, src, dest):
        """Compress a buffer into a caller-supplied output buffer.

        Parameters
        ----------
        src : buffer
            Data to compress.
        dest : writable buffer
            Receives the chunk; ``len(src) + MAX_OVERHEAD`` bytes always suffice.

        Returns
        -------
        int
            The number of bytes written to `dest`.

        Raises
        ------
        BufferTooSmallError
            If the chunk does not fit in `dest`.
        TypeError, ValueError, CodecError
            As for :meth:`compress`.
        """
        cdef Py_buffer sview, dview
        get_buffer(src, &sview, False, "src")
        try:
            get_buffer(dest, &dview, True, "dest")
            try:
                return self._compress(sview.buf, sview.len, dview.buf, dview.len)
            finally:
                PyBuffer_Release(&dview)
        finally:
            PyBuffer_Release(&sview)


cdef class ChunkBatch:
    """Chunks to compress on any threads, into outputs made by the thread that
    makes the batch.

    Made on the thread that will keep the chunks (their outputs come from its
    allocator arena, where the memory of the chunks it frees is reused;
    buffers made and filled on pool threads come from theirs, whose freed
    memory the system takes back, so that every chunk is written into fresh
    pages).  :meth:`compress` may run on any thread (one thread per chunk,
    the GIL released while compressing); :meth:`take` hands a compressed
    chunk over, shrunk to its size, once.

    Parameters
    ----------
    srcs : list of buffers
        The chunks' data, C-contiguous, at most ``MAX_BUFFERSIZE`` bytes each.

    Raises
    ------
    TypeError, ValueError
        If a source is not a C-contiguous buffer or is too large.
    """
    cdef list _srcs, _outs, _sizes

    def __cinit__(self, list srcs):
        cdef Py_buffer view
        self._srcs, self._outs, self._sizes = srcs, [], [0] * len(srcs)
        for src in srcs:
            get_buffer(src, &view, False, "src")
            try:
                _check_src_size(view.len, "src")
                self._outs.append(PyBytes_FromStringAndSize(NULL, view.len + c.BLOSC2_MAX_OVERHEAD))
            finally:
                PyBuffer_Release(&view)

    def __len__(self):
        return len(self._srcs)

    def compress(self, Py_ssize_t k, Compressor comp, Py_ssize_t limit=0, Py_ssize_t period=0):
        """Compress chunk `k` with `comp` (GIL released once); its size in bytes,
        or 0 when `limit` > 0 and the chunk would be larger (as
        :meth:`Compressor.compress`), or when `period` > 0 and the chunk is one
        item of `period` bytes repeated (a special chunk's candidate, not compressed).

        Raises
        ------
        IndexError
            If chunk `k` does not exist or was taken.
        CodecError
            If C-Blosc2 fails.
        """
        cdef Py_buffer view
        cdef object out = self._outs[k]
        cdef int n
        if out is None:
            raise IndexError(f"chunk {k} of the batch was taken")
        get_buffer(self._srcs[k], &view, False, "src")
        try:
            n = comp._compress(view.buf, view.len, PyBytes_AS_STRING(out), len(out), limit,
                               period)
        finally:
            PyBuffer_Release(&view)
        self._sizes[k] = n
        return n

    def take(self, Py_ssize_t k):
        """Compressed chunk `k`, shrunk to its size (the batch forgets it).

        Raises
        ------
        IndexError
            If chunk `k` was not compressed, or was taken.
        """
        if self._outs[k] is None or not self._sizes[k]:
            raise IndexError(f"chunk {k} of the batch is not compressed, or was taken")
        return _taken(self._outs, k, self._sizes[k])


# Where a chunk's header says which context decodes it (blosc2.h, "chunk
# header"): both shuffle bits of its flags byte mean an extended header, whose
# Blosc2 flags byte may ask for a dictionary.
cdef enum:
    _FLAGS_BYTE = 2
    _EXTENDED = 0x05          # BLOSC_DOSHUFFLE | BLOSC_DOBITSHUFFLE
    _BLOSC2_FLAGS_BYTE = 31
    _USEDICT = 0x01           # BLOSC2_USEDICT
    _ERROR_MEMORY = -4        # BLOSC2_ERROR_MEMORY_ALLOC


cdef class Decompressor(_Locked):
    """Decompress C-Blosc2 and C-Blosc 1.x chunks.

    Parameters
    ----------
    nthreads : int
        C-Blosc2's threads inside a chunk (its blocks are decoded in
        parallel).  Work across chunks is shared out by the caller (bcolzx's
        one pool, ``bcolzx._threads``): no call starts threads of its own.

    Raises
    ------
    TypeError, ValueError
        For a bad `nthreads`.
    """
    def __cinit__(self, nthreads=1):
        self.nthreads = _check_nthreads(nthreads)
        self._make_contexts()
        _live.add(self)

    cdef int _make_contexts(self) except -1:
        cdef c.blosc2_dparams dp = c.BLOSC2_DPARAMS_DEFAULTS
        dp.nthreads = self.nthreads
        self.ctx = c.blosc2_create_dctx(dp)
        self.ctx1 = c.blosc2_create_dctx(dp)
        if self.ctx == NULL or self.ctx1 == NULL:
            raise MemoryError("cannot create a C-Blosc2 decompression context")
        return 0

    def _after_fork(self):
        _Locked._after_fork(self)
        self._make_contexts()  # the parent's contexts are abandoned, never freed here

    def __dealloc__(self):
        if self.ctx != NULL:
            c.blosc2_free_ctx(self.ctx)
        if self.ctx1 != NULL:
            c.blosc2_free_ctx(self.ctx1)

    cdef c.blosc2_context* _ctx_for(self, const uint8_t* src, int32_t cbytes) noexcept nogil:
        """The context for `src`'s kind of header (codec.pxd says why), or NULL
        for a chunk that needs one of its own: it uses a dictionary, or is too
        short for the extended header it claims.  `src` holds `cbytes` bytes,
        at least a regular header (``_chunk_sizes`` checked it)."""
        if src[_FLAGS_BYTE] & _EXTENDED != _EXTENDED:
            return self.ctx1
        if cbytes < c.BLOSC_EXTENDED_HEADER_LENGTH or src[_BLOSC2_FLAGS_BYTE] & _USEDICT:
            return NULL
        return self.ctx

    cdef int _run(self, const uint8_t* src, int32_t cbytes, void* dest, int32_t destsize,
                  int start, int nitems) noexcept nogil:
        """Decode `src` into `dest` (the whole chunk when `nitems` < 0, else the
        items [start, start + nitems)) on the context its header calls for; the
        lock is held.  A context that fails is replaced: nothing a damaged chunk
        left in it reaches the next chunk.  Returns C-Blosc2's code."""
        cdef c.blosc2_context* ctx = self._ctx_for(src, cbytes)
        cdef c.blosc2_context* fresh
        cdef c.blosc2_dparams dp = c.BLOSC2_DPARAMS_DEFAULTS
        cdef bint own = ctx == NULL
        cdef bint failed
        cdef int rc
        dp.nthreads = self.nthreads
        if own:
            ctx = c.blosc2_create_dctx(dp)
            if ctx == NULL:
                return _ERROR_MEMORY
        if nitems < 0:
            rc = c.blosc2_decompress_ctx(ctx, src, cbytes, dest, destsize)
        else:
            rc = c.blosc2_getitem_ctx(ctx, src, cbytes, start, nitems, dest, destsize)
        failed = rc != destsize
        if own:
            c.blosc2_free_ctx(ctx)
        elif failed:
            fresh = c.blosc2_create_dctx(dp)
            if fresh != NULL:  # else (out of memory) keep it: the next call may still fail
                c.blosc2_free_ctx(ctx)
                if ctx == self.ctx:
                    self.ctx = fresh
                else:
                    self.ctx1 = fresh
        return rc

    def __repr__(self):
        return f"Decompressor(nthreads={self.nthreads})"

    cdef int _decompress(self, const uint8_t* src, Py_ssize_t srcsize, void* dest,
                         Py_ssize_t destsize, bint exact=False) except -1:
        cdef int32_t nbytes, cbytes, blocksize
        cdef int rc
        _chunk_sizes(src, srcsize, &nbytes, &cbytes, &blocksize)
        if exact and nbytes != destsize:
            raise _error(-3, f"decompress (the chunk holds {nbytes} bytes, {destsize} "
                             "expected)", False)
        if nbytes > destsize:
            raise _error(-6, f"decompress ({nbytes} bytes into {destsize})", False)
        with nogil:
            self.acquire()
            rc = self._run(src, cbytes, dest, nbytes, 0, -1)
            self.release()
        if rc < 0:
            raise _error(rc, "decompress", True)
        if rc != nbytes:
            raise _error(-3, "decompress", True)
        return rc

    def decompress(self, src, out=None, bint exact=False):
        """Decompress one chunk.

        Parameters
        ----------
        src : buffer
            A complete chunk; bytes after its end are ignored.
        out : writable buffer, optional
            Where to write the data, at least the chunk's ``nbytes`` long.
            Decompression goes straight into it, with no intermediate copy.
        exact : bool
            The chunk must hold exactly ``len(out)`` bytes (checked from its
            header, before anything is decoded).

        Returns
        -------
        bytes or buffer
            A new bytes object, or `out` when given.

        Raises
        ------
        TruncatedDataError
            If `src` is shorter than the chunk its header describes.
        CorruptDataError
            If the chunk cannot be decoded, or with `exact` does not hold
            ``len(out)`` bytes.
        BufferTooSmallError
            If `out` is too small.
        """
        cdef Py_buffer sview, dview
        cdef int32_t nbytes, cbytes, blocksize
        cdef bytes result
        get_buffer(src, &sview, False, "src")
        try:
            if out is None:
                _chunk_sizes(<const uint8_t*>sview.buf, sview.len, &nbytes, &cbytes, &blocksize)
                result = PyBytes_FromStringAndSize(NULL, nbytes)
                self._decompress(<const uint8_t*>sview.buf, sview.len,
                                 PyBytes_AS_STRING(result), nbytes)
                return result
            get_buffer(out, &dview, True, "out")
            try:
                self._decompress(<const uint8_t*>sview.buf, sview.len, dview.buf, dview.len,
                                 exact)
            finally:
                PyBuffer_Release(&dview)
            return out
        finally:
            PyBuffer_Release(&sview)

    def getitem(self, src, Py_ssize_t start, Py_ssize_t nitems, out=None):
        """Decompress a range of items of a chunk, touching only its blocks.

        Parameters
        ----------
        src : buffer
            A complete chunk.
        start, nitems : int
            The range, counted in items of the chunk's typesize.
        out : writable buffer, optional
            Receives the ``nitems * typesize`` bytes.

        Returns
        -------
        bytes or buffer
            A new bytes object, or `out` when given.

        Raises
        ------
        IndexError
            If the range is not inside the chunk.
        TruncatedDataError, CorruptDataError
            If the chunk is damaged.
        BufferTooSmallError
            If `out` is too small.
        """
        cdef Py_buffer sview, dview
        cdef int32_t nbytes, cbytes, blocksize
        cdef size_t typesize
        cdef int flags, rc
        cdef Py_ssize_t size, destsize
        cdef void* dest
        cdef Py_ssize_t lead, first, span
        cdef char* scratch = NULL
        cdef bint held = False
        cdef bint whole
        cdef object result
        get_buffer(src, &sview, False, "src")
        try:
            _chunk_sizes(<const uint8_t*>sview.buf, sview.len, &nbytes, &cbytes, &blocksize)
            c.blosc1_cbuffer_metainfo(sview.buf, &typesize, &flags)
            if typesize == 0:
                raise _error(-11, "getitem", True)
            if start < 0 or nitems < 0 or (start + nitems) * <Py_ssize_t>typesize > nbytes:
                raise IndexError(f"items [{start}, {start + nitems}) are outside a chunk of "
                                 f"{nbytes // typesize} items")
            size = nitems * typesize
            if out is None:
                result = PyBytes_FromStringAndSize(NULL, size)
                dest, destsize = PyBytes_AS_STRING(result), size
            else:
                result = out
                get_buffer(out, &dview, True, "out")
                held = True  # keeps `out` from being resized while we write
                dest, destsize = dview.buf, dview.len
            if destsize < size:
                raise _error(-6, f"getitem ({size} bytes into {destsize})", False)
            if size == 0:
                return result
            # C-Blosc2 (3.3.5 at least) returns the wrong block for a range of
            # exactly one block's bytes (a whole block, or the shorter last
            # block of the chunk) that does not start on a block boundary.
            # Such a range is read from the start of its block (a range that
            # starts on a block boundary is read right) into a scratch buffer.
            # C-Blosc2's getitem never reads a chunk's dictionary (it used the one
            # a context kept from the last whole chunk it decoded, if any): a chunk
            # with a dictionary is decoded whole, on a context of its own (_run).
            whole = self._ctx_for(<const uint8_t*>sview.buf, cbytes) == NULL
            lead = (start * <Py_ssize_t>typesize) % blocksize if blocksize > 0 else 0
            if whole or lead and (size == blocksize or size == nbytes % blocksize):
                if lead % <Py_ssize_t>typesize == 0 and not whole:
                    first, span = start - lead // <Py_ssize_t>typesize, lead + size
                else:  # (blocks not made of whole items) the whole chunk
                    first, span, lead = 0, nbytes, start * <Py_ssize_t>typesize
                scratch = <char*>malloc(span)
                if scratch == NULL:
                    raise MemoryError(f"cannot allocate {span} bytes for getitem")
            with nogil:
                self.acquire()
                if scratch != NULL:
                    rc = self._run(<const uint8_t*>sview.buf, cbytes, scratch, <int32_t>span,
                                   <int>first, -1 if whole else
                                   <int>(span // <Py_ssize_t>typesize))
                    if rc == <int>span:
                        memcpy(dest, scratch + lead, size)
                        rc = <int>size
                else:
                    rc = self._run(<const uint8_t*>sview.buf, cbytes, dest, <int32_t>size,
                                   <int>start, <int>nitems)
                self.release()
            if rc < 0:
                raise _error(rc, "getitem", True)
            if rc != size:
                raise _error(-3, "getitem", True)
            return result
        finally:
            free(scratch)
            if held:
                PyBuffer_Release(&dview)
            PyBuffer_Release(&sview)

    def decompress_many(self, chunks, out, Py_ssize_t chunk_nbytes=0):
        """Decompress a sequence of chunks, one after another, into one buffer.

        Each chunk is decompressed straight into its place in `out`, on the
        calling thread with the GIL released (C-Blosc2's own threads split a
        chunk's blocks when ``nthreads > 1``).  To spread many chunks over
        several threads, call this from several threads on parts of them.

        Parameters
        ----------
        chunks : sequence of buffers
            Complete chunks, in output order.
        out : writable buffer
            Receives the concatenated data; must hold the sum of the chunks'
            ``nbytes``.
        chunk_nbytes : int
            When positive, every chunk must hold exactly this many bytes
            (checked from its header before anything is decoded).

        Returns
        -------
        int
            The number of bytes written.

        Raises
        ------
        TruncatedDataError, CorruptDataError
            If a chunk is damaged or (with `chunk_nbytes`) of another size;
            the exception's ``chunk`` is its position in `chunks`.
        BufferTooSmallError
            If `out` is too small.
        """
        cdef Py_ssize_t n = len(chunks), i, got = 0, total = 0, failed = -1
        cdef Py_buffer dview
        cdef Py_buffer* views = NULL
        cdef const uint8_t** srcs = NULL
        cdef int32_t* srcsizes = NULL
        cdef int32_t* destsizes = NULL
        cdef int32_t nbytes, cbytes, blocksize
        cdef int rc = 0
        cdef uint8_t* base
        get_buffer(out, &dview, True, "out")
        try:
            views = <Py_buffer*>calloc(n + 1, sizeof(Py_buffer))
            srcs = <const uint8_t**>calloc(n + 1, sizeof(uint8_t*))
            srcsizes = <int32_t*>calloc(n + 1, sizeof(int32_t))
            destsizes = <int32_t*>calloc(n + 1, sizeof(int32_t))
            if not (views and srcs and srcsizes and destsizes):
                raise MemoryError()
            base = <uint8_t*>dview.buf
            for i in range(n):
                get_buffer(chunks[i], &views[i], False, f"chunks[{i}]")
                got = i + 1
                _chunk_sizes(<const uint8_t*>views[i].buf, views[i].len,
                             &nbytes, &cbytes, &blocksize, i)
                if chunk_nbytes > 0 and nbytes != chunk_nbytes:
                    raise _error(-3, f"decompress_many (chunk {i} holds {nbytes} bytes, "
                                     f"{chunk_nbytes} expected)", False, i)
                if total + nbytes > dview.len:
                    raise _error(-6, f"decompress_many (chunk {i} ends past byte {dview.len})",
                                 False)
                srcs[i] = <const uint8_t*>views[i].buf
                srcsizes[i] = cbytes
                destsizes[i] = nbytes
                total += nbytes
            with nogil:
                self.acquire()
                total = 0
                for i in range(n):
                    rc = self._run(srcs[i], srcsizes[i], base + total, destsizes[i], 0, -1)
                    if rc != destsizes[i]:
                        failed = i
                        break
                    total += destsizes[i]
                self.release()
            if failed >= 0:
                raise _error(rc if rc < 0 else -3, "decompress_many", True, failed)
            return total
        finally:
            for i in range(got):
                PyBuffer_Release(&views[i])
            PyBuffer_Release(&dview)
            free(views)
            free(srcs)
            free(srcsizes)
            free(destsizes)


# --- special chunks --------------------------------------------------------
# Made by C-Blosc2 here; recognised and filled without it by bcolzx._ext.special.

def special_chunk(int kind, Py_ssize_t nbytes, int typesize, value=None):
    """Make a C-Blosc2 chunk that stores no data, only a repeated value.

    Parameters
    ----------
    kind : int
        ``SPECIAL_ZERO``, ``SPECIAL_NAN`` or ``SPECIAL_VALUE`` (constants of
        :mod:`bcolzx._ext.special`, which are C-Blosc2's).
    nbytes : int
        Uncompressed size of the chunk, a multiple of `typesize`.
    typesize : int
        Item size in bytes (4 or 8 for NaN).
    value : bytes, optional
        The item, `typesize` bytes, for ``SPECIAL_VALUE``.

    Returns
    -------
    bytes
        A chunk of ``MAX_OVERHEAD`` bytes (plus `typesize` for a value).

    Raises
    ------
    ValueError
        For an unknown kind, a bad size or a missing/mis-sized value.
    """
    cdef c.blosc2_cparams cp = c.BLOSC2_CPARAMS_DEFAULTS
    cdef bytes out
    cdef const unsigned char* v = NULL
    cdef int rc
    if nbytes < 0 or nbytes > c.BLOSC2_MAX_BUFFERSIZE or typesize <= 0 or nbytes % typesize:
        raise ValueError(f"nbytes={nbytes} must be a multiple of typesize={typesize} "
                         f"between 0 and {c.BLOSC2_MAX_BUFFERSIZE}")
    cp.typesize = typesize
    out = PyBytes_FromStringAndSize(NULL, c.BLOSC2_MAX_OVERHEAD + typesize)
    if kind == c.BLOSC2_SPECIAL_ZERO:
        rc = c.blosc2_chunk_zeros(cp, <int32_t>nbytes, PyBytes_AS_STRING(out), len(out))
    elif kind == c.BLOSC2_SPECIAL_NAN:
        if typesize not in (4, 8):
            raise ValueError(f"NaN chunks need typesize 4 or 8, not {typesize}")
        rc = c.blosc2_chunk_nans(cp, <int32_t>nbytes, PyBytes_AS_STRING(out), len(out))
    elif kind == c.BLOSC2_SPECIAL_VALUE:
        if not isinstance(value, bytes) or len(value) != typesize:
            raise ValueError(f"a value chunk needs value as {typesize} bytes")
        v = value
        rc = c.blosc2_chunk_repeatval(cp, <int32_t>nbytes, PyBytes_AS_STRING(out), len(out), v)
    else:
        raise ValueError(f"unknown special kind {kind}")
    if rc < 0:
        raise _error(rc, "special_chunk", False)
    return out[:rc]  # a few dozen bytes: the copy costs nothing


# --- import-time ABI check (shared builds only) ----------------------------

def check_runtime_version(str runtime, tuple build):
    """Check that a shared libblosc2 loaded at run time suits this build.

    Parameters
    ----------
    runtime : str
        Version string of the library loaded (``blosc2_get_version_string``).
    build : tuple of int
        ``(major, minor, release)`` of the headers bcolzx was compiled with.

    Raises
    ------
    ImportError
        If the major versions differ or the runtime minor version is older:
        the structs and enums compiled into bcolzx may not match the library.
    """
    parts = []
    for text in runtime.split(".")[:3]:
        digits = "".join(ch for ch in text if ch.isdigit())
        parts.append(int(digits) if digits else 0)
    rt = tuple(parts)
    if rt[:1] != build[:1] or rt[:2] < build[:2]:
        raise ImportError(
            f"bcolzx was built against C-Blosc2 {'.'.join(map(str, build))} but the "
            f"libblosc2 loaded at run time is {runtime}; rebuild bcolzx "
            "(pip install --force-reinstall --no-binary bcolzx bcolzx) or install the matching "
            "C-Blosc2")


if not BCOLZX_BLOSC2_STATIC:
    check_runtime_version(blosc2_version(), BUILD_VERSION)
