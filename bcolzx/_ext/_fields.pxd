# Fixed-width fields of the superchunk format (docs/format/superchunk.md), for
# the modules that encode and decode them (header, index, checksum):
#     from bcolzx._ext._fields cimport _ld32, _ld64, _st32, _st64, _uint
# Inline, so each module gets its own copy and none imports another for them.

from cpython.number cimport PyNumber_Index
from libc.stdint cimport uint32_t, uint64_t


# ---------------------------------------------------------------------------
# little-endian loads and stores, byte-wise so they are endian-independent

cdef inline uint32_t _ld32(const unsigned char* p) noexcept nogil:
    return (<uint32_t>p[0] | (<uint32_t>p[1] << 8)
            | (<uint32_t>p[2] << 16) | (<uint32_t>p[3] << 24))


cdef inline uint64_t _ld64(const unsigned char* p) noexcept nogil:
    return <uint64_t>_ld32(p) | (<uint64_t>_ld32(p + 4) << 32)


cdef inline void _st32(unsigned char* p, uint32_t v) noexcept nogil:
    p[0] = v & 0xFF
    p[1] = (v >> 8) & 0xFF
    p[2] = (v >> 16) & 0xFF
    p[3] = v >> 24


cdef inline void _st64(unsigned char* p, uint64_t v) noexcept nogil:
    _st32(p, <uint32_t>(v & 0xFFFFFFFFu))
    _st32(p + 4, <uint32_t>(v >> 32))


# ---------------------------------------------------------------------------
# argument helpers

cdef inline object _uint(object value, str name, object maximum, object minimum=0):
    """`value` as a Python int in [minimum, maximum], else TypeError/ValueError."""
    try:
        value = PyNumber_Index(value)
    except TypeError:
        raise TypeError(f"{name} must be an int, not {type(value).__name__}") from None
    if not minimum <= value <= maximum:
        raise ValueError(f"{name} must be between {minimum} and {maximum}, not {value}")
    return value

