"""Sharing C-Blosc2 contexts: one thread at a time, and threads per call after fork().

A C-Blosc2 context is not safe for concurrent use: :class:`_Locked`, the base
of the codec classes of :mod:`bcolzx._ext.codec`, gives each object owning
contexts a lock taken without the GIL.  In a child created by fork(),
C-Blosc2's shared pool of worker threads does not exist; codec's fork hook
makes :func:`_jobs_on_new_threads` C-Blosc2's threads callback, so that each
call starts the threads it needs.  Nothing here calls C-Blosc2.
"""

from cpython.pythread cimport (
    PyThread_acquire_lock,
    PyThread_allocate_lock,
    PyThread_free_lock,
    PyThread_release_lock,
    WAIT_LOCK,
)
from libc.stdlib cimport calloc, free


cdef class _Locked:
    """Base for objects owning C-Blosc2 contexts: one user at a time.

    A context is not safe for concurrent use; the lock (taken without the
    GIL) makes sharing one object between threads slow but never unsafe.
    """
    def __cinit__(self, *args, **kwargs):
        self._lock = PyThread_allocate_lock()
        if self._lock == NULL:
            raise MemoryError("cannot allocate a lock")

    def __dealloc__(self):
        if self._lock != NULL:
            PyThread_free_lock(self._lock)

    cdef void acquire(self) noexcept nogil:
        PyThread_acquire_lock(self._lock, WAIT_LOCK)

    cdef void release(self) noexcept nogil:
        PyThread_release_lock(self._lock)

    def _after_fork(self):
        """In a child just forked: a new lock and new contexts, the inherited ones
        abandoned (another thread of the parent may have held the lock; the
        contexts' worker threads do not exist here; freeing them would join
        threads that are not ours)."""
        self._lock = PyThread_allocate_lock()
        if self._lock == NULL:  # pragma: no cover - out of memory in a fresh child
            raise MemoryError("cannot allocate a lock")


cdef extern from "<pthread.h>" nogil:
    ctypedef struct pthread_t:
        pass
    int pthread_create(pthread_t* thread, const void* attr,
                       void* (*start)(void*) noexcept nogil, void* arg)
    int pthread_join(pthread_t thread, void** retval)


cdef struct _Job:
    _dojob_t dojob
    void* arg


cdef void* _run_job(void* arg) noexcept nogil:
    cdef _Job* job = <_Job*>arg
    job.dojob(job.arg)
    return NULL


cdef void _jobs_on_new_threads(void* data, _dojob_t dojob, int numjobs, size_t elsize,
                               void* jobdata) noexcept nogil:
    """C-Blosc2's threads callback in a forked child: the jobs of one call on threads
    started for it (a job that gets no thread runs here, after the first)."""
    cdef _Job* jobs = <_Job*>calloc(numjobs, sizeof(_Job))
    cdef pthread_t* threads = <pthread_t*>calloc(numjobs, sizeof(pthread_t))
    cdef char* started = <char*>calloc(numjobs, 1)
    cdef int i
    if jobs == NULL or threads == NULL or started == NULL:
        for i in range(numjobs):
            dojob(<char*>jobdata + i * elsize)
    else:
        for i in range(1, numjobs):
            jobs[i].dojob = dojob
            jobs[i].arg = <char*>jobdata + i * elsize
            started[i] = pthread_create(&threads[i], NULL, _run_job, &jobs[i]) == 0
        dojob(jobdata)
        for i in range(1, numjobs):
            if started[i]:
                pthread_join(threads[i], NULL)
            else:
                dojob(jobs[i].arg)
    free(jobs)
    free(threads)
    free(started)
