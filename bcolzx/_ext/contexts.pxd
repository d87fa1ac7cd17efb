# The base of the codec classes and the threads callback of a forked child
# (bcolzx._ext.contexts), for bcolzx._ext.codec:
#     from bcolzx._ext.contexts cimport _Locked, _dojob_t, _jobs_on_new_threads

from cpython.pythread cimport PyThread_type_lock


cdef class _Locked:
    cdef PyThread_type_lock _lock
    cdef object __weakref__
    cdef void acquire(self) noexcept nogil
    cdef void release(self) noexcept nogil


ctypedef void (*_dojob_t)(void*) noexcept nogil

cdef void _jobs_on_new_threads(void* data, _dojob_t dojob, int numjobs, size_t elsize,
                               void* jobdata) noexcept nogil
