# Shared helpers for taking C pointers out of Python buffer objects.
# Inline, so each extension module gets its own copy of these few lines
# instead of every call site repeating them.

from cpython.buffer cimport (
    PyBUF_C_CONTIGUOUS,
    PyBUF_WRITABLE,
    PyObject_CheckBuffer,
    PyObject_GetBuffer,
)


cdef inline int get_buffer(object obj, Py_buffer* view, bint writable, str what) except -1:
    """Fill `view` with a C-contiguous (and, if asked, writable) view of `obj`.

    Raises TypeError for an object without the buffer protocol and ValueError
    for one that is not C-contiguous or not writable.
    """
    cdef int flags = PyBUF_C_CONTIGUOUS
    if writable:
        flags |= PyBUF_WRITABLE
    if not PyObject_CheckBuffer(obj):
        raise TypeError(f"{what} must support the buffer protocol, not {type(obj).__name__}")
    try:
        PyObject_GetBuffer(obj, view, flags)
    except BufferError as exc:
        kind = "a writable C-contiguous" if writable else "a C-contiguous"
        raise ValueError(f"{what} must be {kind} buffer: {exc}") from None
    return 0
