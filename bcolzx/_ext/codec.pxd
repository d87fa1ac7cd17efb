# The codec classes, declared here so that other bcolzx extension modules can
# cimport them and call the C-level methods without going through Python.

from cpython.pythread cimport PyThread_type_lock
from libc.stdint cimport uint8_t

cimport cblosc2 as c


cdef class _Locked:
    cdef PyThread_type_lock _lock
    cdef object __weakref__
    cdef void acquire(self) noexcept nogil
    cdef void release(self) noexcept nogil


cdef class Compressor(_Locked):
    cdef c.blosc2_context* ctx
    cdef c.blosc2_cparams _cparams      # what ctx was made from (made again after fork)
    cdef Py_ssize_t _largest            # the largest buffer ctx has compressed
    cdef readonly str cname
    cdef readonly int clevel, shuffle, typesize, blocksize, nthreads
    cdef readonly bint bytedelta, split
    cdef int _compress(self, const void* src, Py_ssize_t srcsize, void* dest,
                       Py_ssize_t destsize) except -1


cdef class Decompressor(_Locked):
    # Blosc2-format chunks and C-Blosc 1.x chunks never share a context: a
    # context that decoded a Blosc2 chunk with the byte-delta filter decodes a
    # later shuffled Blosc 1.x chunk wrongly (C-Blosc2 3.x keeps stale filters).
    cdef c.blosc2_context* ctx           # nthreads threads inside one chunk
    cdef c.blosc2_context* ctx1          # the same, for Blosc 1.x chunks
    cdef c.blosc2_context* _ctx_for(self, const uint8_t* src) noexcept nogil
    cdef int _make_contexts(self) except -1
    cdef readonly int nthreads
    cdef int _decompress(self, const uint8_t* src, Py_ssize_t srcsize, void* dest,
                         Py_ssize_t destsize, bint exact=*) except -1
