# The codec classes, declared here so that other bcolzx extension modules can
# cimport them and call the C-level methods without going through Python.

from libc.stdint cimport int32_t, uint8_t

cimport cblosc2 as c

from bcolzx._ext.contexts cimport _Locked


cdef class Compressor(_Locked):
    cdef c.blosc2_context* ctx
    cdef c.blosc2_cparams _cparams      # what ctx was made from (made again after fork)
    cdef Py_ssize_t _largest            # the largest buffer ctx has compressed
    cdef readonly str cname
    cdef readonly int clevel, shuffle, typesize, blocksize, nthreads
    cdef readonly bint bytedelta, split
    cdef bint _stops_exactly            # compression with too little room fails exactly
    cdef int _compress(self, const void* src, Py_ssize_t srcsize, void* dest,
                       Py_ssize_t destsize, Py_ssize_t limit=*, Py_ssize_t period=*) except -1


cdef class Decompressor(_Locked):
    # C-Blosc2 keeps state in a decompression context that the next chunk's
    # header does not reset: the filters' metadata of an extended (Blosc2)
    # header stays for later chunks with a regular (C-Blosc 1.x) header, and
    # a chunk that asks for a dictionary leaves the context using one.  A
    # context that decoded a byte-delta chunk, or a damaged chunk of a legacy
    # dataset, then decodes good chunks into wrong values, silently.  So the
    # two kinds of header never share a context, a chunk with a dictionary
    # gets a context of its own for that call, and a context that failed on a
    # chunk is replaced before it decodes another.
    cdef c.blosc2_context* ctx           # extended headers; nthreads threads inside a chunk
    cdef c.blosc2_context* ctx1          # the same, for regular headers
    cdef c.blosc2_context* _ctx_for(self, const uint8_t* src, int32_t cbytes) noexcept nogil
    cdef int _run(self, const uint8_t* src, int32_t cbytes, void* dest, int32_t destsize,
                  int start, int nitems) noexcept nogil
    cdef int _make_contexts(self) except -1
    cdef readonly int nthreads
    cdef int _decompress(self, const uint8_t* src, Py_ssize_t srcsize, void* dest,
                         Py_ssize_t destsize, bint exact=*) except -1
