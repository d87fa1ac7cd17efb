# The codec classes, declared here so that other bcolzx extension modules can
# cimport them and call the C-level methods without going through Python.

from cpython.pythread cimport PyThread_type_lock
from libc.stdint cimport uint8_t

cimport cblosc2 as c


cdef class _Locked:
    cdef PyThread_type_lock _lock
    cdef void acquire(self) noexcept nogil
    cdef void release(self) noexcept nogil


cdef class Compressor(_Locked):
    cdef c.blosc2_context* ctx
    cdef readonly str cname
    cdef readonly int clevel, shuffle, typesize, blocksize, nthreads
    cdef readonly bint bytedelta
    cdef int _compress(self, const void* src, Py_ssize_t srcsize, void* dest,
                       Py_ssize_t destsize) except -1


cdef class Decompressor(_Locked):
    cdef c.blosc2_context* ctx           # nthreads threads inside one chunk
    cdef c.blosc2_context** workers      # one single-threaded context per worker
    cdef readonly int nthreads
    cdef int _decompress(self, const uint8_t* src, Py_ssize_t srcsize, void* dest,
                         Py_ssize_t destsize) except -1
