# Constant ("special") chunks: recognise a buffer made of one repeated item, fill one.
#
# A chunk whose rows all equal one item is stored as C-Blosc2 stores it, as a
# special chunk holding no data (bcolzx._ext.codec.special_chunk makes one) or
# as a special entry of a superchunk index.  This module finds such buffers
# and fills an output with the item.  It calls no C-Blosc2 function and does
# not link the library: only the kind numbers come from blosc2.h (a header
# enum, so they are C-Blosc2's own).

from cpython.buffer cimport PyBuffer_Release
from libc.stdint cimport uint8_t
from libc.string cimport memcmp, memcpy, memset

cimport cblosc2 as c

from bcolzx._ext._buffers cimport get_buffer

SPECIAL_NONE = c.BLOSC2_NO_SPECIAL
SPECIAL_ZERO = c.BLOSC2_SPECIAL_ZERO
SPECIAL_NAN = c.BLOSC2_SPECIAL_NAN
SPECIAL_VALUE = c.BLOSC2_SPECIAL_VALUE

# The quiet NaNs C-Blosc2 writes for a NaN special chunk (little endian).
cdef const unsigned char* _NAN32 = b"\x00\x00\xc0\x7f"
cdef const unsigned char* _NAN64 = b"\x00\x00\x00\x00\x00\x00\xf8\x7f"


cdef int _special_kind(const uint8_t* p, Py_ssize_t n, Py_ssize_t typesize) noexcept nogil:
    """The special kind of a buffer of n bytes, or SPECIAL_NONE."""
    cdef Py_ssize_t i
    if n == 0 or typesize <= 0 or n % typesize != 0:
        return c.BLOSC2_NO_SPECIAL
    # Periodic with period typesize <=> every item equals the first one.
    if n > typesize and memcmp(p, p + typesize, n - typesize) != 0:
        return c.BLOSC2_NO_SPECIAL
    for i in range(typesize):
        if p[i] != 0:
            break
    else:
        return c.BLOSC2_SPECIAL_ZERO
    if (typesize == 4 and memcmp(p, _NAN32, 4) == 0) or (typesize == 8 and memcmp(p, _NAN64, 8) == 0):
        return c.BLOSC2_SPECIAL_NAN
    return c.BLOSC2_SPECIAL_VALUE


def special_value(src, Py_ssize_t typesize):
    """Recognise a buffer made of one repeated item.

    Parameters
    ----------
    src : buffer
        The data of a chunk.
    typesize : int
        Item size in bytes.

    Returns
    -------
    tuple
        ``(kind, value)``: `kind` is ``SPECIAL_ZERO`` (every byte zero),
        ``SPECIAL_NAN`` (every item the quiet NaN C-Blosc2 writes, typesize 4
        or 8), ``SPECIAL_VALUE`` (every item equal to `value`, a bytes object
        of `typesize` bytes) or ``SPECIAL_NONE`` (anything else, including an
        empty buffer); `value` is None unless the kind is ``SPECIAL_VALUE``.

    Raises
    ------
    ValueError
        If `typesize` is not positive.
    """
    cdef Py_buffer view
    cdef int kind
    if typesize <= 0:
        raise ValueError(f"typesize must be positive, not {typesize}")
    get_buffer(src, &view, False, "src")
    try:
        with nogil:
            kind = _special_kind(<const uint8_t*>view.buf, view.len, typesize)
        value = (<const char*>view.buf)[:typesize] if kind == c.BLOSC2_SPECIAL_VALUE else None
        return kind, value
    finally:
        PyBuffer_Release(&view)


def fill_special(out, int kind, Py_ssize_t typesize, value=None):
    """Fill a buffer with a special value, as a special chunk would decode.

    Parameters
    ----------
    out : writable buffer
        Its length must be a multiple of `typesize`.
    kind, typesize, value
        As for :func:`special_chunk`.

    Returns
    -------
    buffer
        `out`.

    Raises
    ------
    ValueError
        For an unknown kind or inconsistent sizes.
    """
    cdef Py_buffer view
    cdef const unsigned char* item
    cdef uint8_t* p
    cdef Py_ssize_t done, n
    if typesize <= 0:
        raise ValueError(f"typesize must be positive, not {typesize}")
    if kind == c.BLOSC2_SPECIAL_ZERO:
        item = NULL
    elif kind == c.BLOSC2_SPECIAL_NAN:
        if typesize not in (4, 8):
            raise ValueError(f"NaN needs typesize 4 or 8, not {typesize}")
        item = _NAN32 if typesize == 4 else _NAN64
    elif kind == c.BLOSC2_SPECIAL_VALUE:
        if not isinstance(value, bytes) or len(value) != typesize:
            raise ValueError(f"a value fill needs value as {typesize} bytes")
        item = value
    else:
        raise ValueError(f"unknown special kind {kind}")
    get_buffer(out, &view, True, "out")
    try:
        if view.len % typesize:
            raise ValueError(f"out has {view.len} bytes, not a multiple of typesize {typesize}")
        p = <uint8_t*>view.buf
        n = view.len
        with nogil:
            if item == NULL:
                memset(p, 0, n)
            elif n > 0:
                memcpy(p, item, typesize)
                done = typesize
                while done < n:   # double the filled prefix each step
                    memcpy(p + done, p, done if 2 * done <= n else n - done)
                    done *= 2
        return out
    finally:
        PyBuffer_Release(&view)
