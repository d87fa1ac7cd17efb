"""Checksum kernels: CRC-32C (Castagnoli), Adler-32, and chunk checksums from them.

CRC-32C has two implementations that always agree: a hardware one built on
the x86-64 SSE4.2 ``crc32`` instruction (three interleaved streams, see
``crc32c_x86.h``) and a portable slicing-by-8 table-driven one.
:func:`crc32c` picks the hardware path whenever the CPU has it.  Adler-32
gives the same values as :func:`zlib.adler32`.  :func:`chunk_checksum` and
:func:`verify_chunk` are the per-chunk checksums of the superchunk format
(``docs/format/superchunk.md``, section 5), over the chunk's number and bytes.

All functions accept any C-contiguous object with the buffer protocol
(``bytes``, ``bytearray``, ``memoryview``, numpy arrays of any dtype, ...)
and release the GIL while they checksum.
"""

from libc.stdint cimport uint32_t, uint64_t
from cpython.buffer cimport PyBuffer_Release

from bcolzx._ext._buffers cimport get_buffer
from bcolzx._ext._fields cimport _st64, _uint

from bcolzx.errors import ChecksumError


cdef extern from "crc32c_x86.h" nogil:
    enum:
        BCOLZX_CRC32C_LONG
        BCOLZX_CRC32C_SHORT
    int bcolzx_crc32c_hw_available()
    uint32_t bcolzx_crc32c_hw(uint32_t reg, const unsigned char* p, size_t n,
                              const uint32_t* shift_long, const uint32_t* shift_short)


# Adler-32: modulus, and the longest run of bytes whose sums fit 32 bits.
cdef enum:
    _BASE = 65521
    _NMAX = 5552

# Reflected CRC-32C polynomial.
cdef uint32_t _POLY = 0x82F63B78u

CHECKSUMS = {"none": 0, "crc32c": 1, "adler32": 2}
CHECKSUM_NONE = 0
CHECKSUM_CRC32C = 1
CHECKSUM_ADLER32 = 2

# _SLICE[k][b]: raw register of byte b followed by k zero bytes, from zero.
cdef uint32_t _SLICE[8][256]
# Flat 4 x 256 tables appending BCOLZX_CRC32C_LONG / _SHORT zero bytes to the
# raw register, one table per register byte.
cdef uint32_t _SHIFT_LONG[1024]
cdef uint32_t _SHIFT_SHORT[1024]
cdef bint _have_hw = False


cdef void _build_shift_table(uint32_t* table, size_t nbytes) noexcept nogil:
    """Fill `table` with the operator "append `nbytes` zero bytes".

    The operator is linear over GF(2), so it is fixed by the images of the
    32 single-bit registers (its columns); the tables then hold the XOR of
    the columns selected by each value of each register byte.
    """
    cdef uint32_t cols[32]
    cdef uint32_t reg
    cdef size_t i, j, k, b
    for i in range(32):
        reg = (<uint32_t>1) << i
        for j in range(nbytes):
            reg = (reg >> 8) ^ _SLICE[0][reg & 0xFF]
        cols[i] = reg
    for k in range(4):
        table[k * 256] = 0
        for b in range(1, 256):
            # Add the column of the lowest set bit of b to the entry without it.
            j = 0
            while not (b >> j) & 1:
                j += 1
            table[k * 256 + b] = table[k * 256 + (b & (b - 1))] ^ cols[8 * k + j]


cdef void _init_tables() noexcept nogil:
    cdef uint32_t reg
    cdef size_t b, k, bit
    for b in range(256):
        reg = <uint32_t>b
        for bit in range(8):
            reg = (reg >> 1) ^ (_POLY if reg & 1 else 0)
        _SLICE[0][b] = reg
    for k in range(1, 8):
        for b in range(256):
            reg = _SLICE[k - 1][b]
            _SLICE[k][b] = (reg >> 8) ^ _SLICE[0][reg & 0xFF]
    _build_shift_table(_SHIFT_LONG, BCOLZX_CRC32C_LONG)
    _build_shift_table(_SHIFT_SHORT, BCOLZX_CRC32C_SHORT)


cdef inline uint32_t _load_le32(const unsigned char* p) noexcept nogil:
    # Byte-wise so it is endian-independent; compilers merge it into one load.
    return (<uint32_t>p[0] | (<uint32_t>p[1] << 8)
            | (<uint32_t>p[2] << 16) | (<uint32_t>p[3] << 24))


cdef uint32_t _crc32c_sw(uint32_t reg, const unsigned char* p, size_t n) noexcept nogil:
    """Slicing-by-8 update of the raw (un-inverted) register."""
    cdef uint32_t lo, hi
    while n >= 8:
        lo = reg ^ _load_le32(p)
        hi = _load_le32(p + 4)
        reg = (_SLICE[7][lo & 0xFF] ^ _SLICE[6][(lo >> 8) & 0xFF]
               ^ _SLICE[5][(lo >> 16) & 0xFF] ^ _SLICE[4][lo >> 24]
               ^ _SLICE[3][hi & 0xFF] ^ _SLICE[2][(hi >> 8) & 0xFF]
               ^ _SLICE[1][(hi >> 16) & 0xFF] ^ _SLICE[0][hi >> 24])
        p += 8
        n -= 8
    while n > 0:
        reg = (reg >> 8) ^ _SLICE[0][(reg ^ p[0]) & 0xFF]
        p += 1
        n -= 1
    return reg


cdef uint32_t crc32c_update(uint32_t crc, const unsigned char* data, size_t n) noexcept nogil:
    """Continue the finished CRC-32C value `crc` over `n` bytes at `data`."""
    if _have_hw:
        return ~bcolzx_crc32c_hw(~crc, data, n, _SHIFT_LONG, _SHIFT_SHORT)
    return ~_crc32c_sw(~crc, data, n)


cdef uint32_t adler32_update(uint32_t adler, const unsigned char* data, size_t n) noexcept nogil:
    """Continue the Adler-32 value `adler` over `n` bytes at `data`, as zlib."""
    cdef uint32_t a = adler & 0xFFFF
    cdef uint32_t b = adler >> 16
    cdef uint32_t s, w
    cdef size_t block, i
    while True:
        block = n if n < _NMAX else _NMAX
        n -= block
        # 16 bytes at a time: a += sum(x_i), b += 16*a + sum((16 - i) * x_i),
        # exactly the serial result, without its one-byte dependency chain.
        while block >= 16:
            s = 0
            w = 0
            for i in range(16):
                s += data[i]
                w += (16 - <uint32_t>i) * data[i]
            b += 16 * a + w
            a += s
            data += 16
            block -= 16
        while block > 0:
            a += data[0]
            b += a
            data += 1
            block -= 1
        # At most _NMAX bytes since a, b < 2**16: neither sum has overflowed.
        a %= _BASE
        b %= _BASE
        if n == 0:
            return (b << 16) | a


with nogil:
    _init_tables()
_have_hw = bcolzx_crc32c_hw_available() != 0

HAVE_HARDWARE_CRC32C = bool(_have_hw)
# Bytes consumed by one round of the three-way interleave, short and long
# (for tests that probe the round boundaries).
_INTERLEAVE_ROUNDS = (3 * BCOLZX_CRC32C_SHORT, 3 * BCOLZX_CRC32C_LONG)


ctypedef uint32_t (*_update_fn)(uint32_t, const unsigned char*, size_t) noexcept nogil


cdef uint32_t _crc32c_portable_update(uint32_t crc, const unsigned char* data,
                                      size_t n) noexcept nogil:
    return ~_crc32c_sw(~crc, data, n)


cdef uint32_t _crc32c_hardware_update(uint32_t crc, const unsigned char* data,
                                      size_t n) noexcept nogil:
    return ~bcolzx_crc32c_hw(~crc, data, n, _SHIFT_LONG, _SHIFT_SHORT)


cdef uint32_t _checksum(object data, uint32_t value, _update_fn update) except? 0:
    """Run `update` over the bytes of `data` with the GIL released."""
    cdef Py_buffer view
    get_buffer(data, &view, False, "data")
    try:
        with nogil:
            value = update(value, <const unsigned char*>view.buf, <size_t>view.len)
    finally:
        PyBuffer_Release(&view)
    return value


def crc32c(data, uint32_t value=0):
    """Compute the CRC-32C (Castagnoli) checksum of a buffer.

    Uses the SSE4.2 ``crc32`` instruction when the CPU has it (see
    :data:`HAVE_HARDWARE_CRC32C`) and the portable table-driven code
    otherwise; both give the same result.

    Parameters
    ----------
    data : buffer
        Any C-contiguous object supporting the buffer protocol; its raw
        bytes are checksummed whatever its format or item size.
    value : int, optional
        The result of a previous call, to continue the checksum over
        concatenated data (like :func:`zlib.crc32`).  Default 0, the start.

    Returns
    -------
    int
        The CRC-32C, an unsigned 32-bit integer.

    Raises
    ------
    TypeError
        If `data` does not support the buffer protocol.
    ValueError
        If `data` is not C-contiguous.
    OverflowError
        If `value` is not in ``range(2**32)``.
    """
    return _checksum(data, value, crc32c_update)


def crc32c_portable(data, uint32_t value=0):
    """Compute CRC-32C with the portable slicing-by-8 code only.

    Parameters
    ----------
    data : buffer
        Any C-contiguous object supporting the buffer protocol.
    value : int, optional
        The result of a previous call, to continue the checksum.  Default 0.

    Returns
    -------
    int
        The CRC-32C, equal to ``crc32c(data, value)``.

    Raises
    ------
    TypeError
        If `data` does not support the buffer protocol.
    ValueError
        If `data` is not C-contiguous.
    OverflowError
        If `value` is not in ``range(2**32)``.
    """
    return _checksum(data, value, _crc32c_portable_update)


def crc32c_hardware(data, uint32_t value=0):
    """Compute CRC-32C with the SSE4.2 ``crc32`` instruction only.

    Parameters
    ----------
    data : buffer
        Any C-contiguous object supporting the buffer protocol.
    value : int, optional
        The result of a previous call, to continue the checksum.  Default 0.

    Returns
    -------
    int
        The CRC-32C, equal to ``crc32c(data, value)``.

    Raises
    ------
    RuntimeError
        If the CPU has no SSE4.2 ``crc32`` instruction (or bcolzx was built
        for an architecture without one); see :data:`HAVE_HARDWARE_CRC32C`.
    TypeError
        If `data` does not support the buffer protocol.
    ValueError
        If `data` is not C-contiguous.
    OverflowError
        If `value` is not in ``range(2**32)``.
    """
    if not _have_hw:
        raise RuntimeError("hardware CRC-32C is unavailable: no SSE4.2 crc32 instruction "
                           "on this CPU or architecture")
    return _checksum(data, value, _crc32c_hardware_update)


def adler32(data, uint32_t value=1):
    """Compute the Adler-32 checksum of a buffer, as :func:`zlib.adler32`.

    Parameters
    ----------
    data : buffer
        Any C-contiguous object supporting the buffer protocol.
    value : int, optional
        The result of a previous call, to continue the checksum over
        concatenated data.  Default 1, the start.  (For a `value` that no
        Adler-32 can produce, one with a 16-bit half >= 65521, the result is
        fully reduced and may differ from zlib's by a multiple of 65521.)

    Returns
    -------
    int
        The Adler-32, an unsigned 32-bit integer.

    Raises
    ------
    TypeError
        If `data` does not support the buffer protocol.
    ValueError
        If `data` is not C-contiguous.
    OverflowError
        If `value` is not in ``range(2**32)``.
    """
    return _checksum(data, value, adler32_update)


# ---------------------------------------------------------------------------
# chunk checksums (spec section 5)

def chunk_checksum(checksum_type, global_chunk_number, chunk):
    """Checksum of a stored chunk: over ``le64(global_chunk_number) || chunk``.

    Parameters
    ----------
    checksum_type : int
        :data:`CHECKSUM_CRC32C` or :data:`CHECKSUM_ADLER32`.
    global_chunk_number : int
        The chunk's number in the dataset, 0 to 2**64-1.
    chunk : buffer
        The compressed chunk bytes.

    Returns
    -------
    int
        The unsigned 32-bit checksum, stored little-endian after the chunk.

    Raises
    ------
    TypeError
        If an argument has the wrong type.
    ValueError
        If `checksum_type` is :data:`CHECKSUM_NONE` or unknown, a number is
        out of range, or `chunk` is not C-contiguous.
    """
    ctype = _uint(checksum_type, "checksum_type", CHECKSUM_ADLER32)
    if ctype == CHECKSUM_NONE:
        raise ValueError("checksum type 0 (none) has no checksum")
    cdef uint64_t number = _uint(global_chunk_number, "global_chunk_number", 2**64 - 1)
    cdef unsigned char le[8]
    _st64(le, number)
    cdef Py_buffer view
    cdef uint32_t value
    cdef bint crc = ctype == CHECKSUM_CRC32C
    get_buffer(chunk, &view, False, "chunk")
    try:
        with nogil:
            if crc:
                value = crc32c_update(0, le, 8)
                value = crc32c_update(value, <const unsigned char*>view.buf, <size_t>view.len)
            else:
                value = adler32_update(1, le, 8)
                value = adler32_update(value, <const unsigned char*>view.buf, <size_t>view.len)
    finally:
        PyBuffer_Release(&view)
    return value


def verify_chunk(checksum_type, global_chunk_number, chunk, stored, path=None):
    """Check a chunk against its stored checksum; do nothing for type none.

    Parameters
    ----------
    checksum_type : int
        0 none, 1 CRC-32C, 2 Adler-32.
    global_chunk_number : int
        The chunk's number in the dataset.
    chunk : buffer
        The compressed chunk bytes.
    stored : bytes-like or int
        The 4 checksum bytes read after the chunk (little-endian), or their
        value; ignored for type none.
    path : str, optional
        The file, for error messages.

    Raises
    ------
    ChecksumError
        If the checksum does not match (``.chunk`` is the chunk number).
    TypeError
        If an argument has the wrong type.
    ValueError
        If an argument is out of range or `stored` is not 4 bytes.
    """
    if _uint(checksum_type, "checksum_type", CHECKSUM_ADLER32) == CHECKSUM_NONE:
        return
    if isinstance(stored, int):
        expected = _uint(stored, "stored", 2**32 - 1)
    else:
        raw = bytes(memoryview(stored).cast("B"))
        if len(raw) != 4:
            raise ValueError(f"stored checksum must be 4 bytes, not {len(raw)}")
        expected = int.from_bytes(raw, "little")
    actual = chunk_checksum(checksum_type, global_chunk_number, chunk)
    if actual != expected:
        raise ChecksumError(
            f"chunk checksum mismatch (stored {expected:#010x}, computed {actual:#010x})",
            path=path, chunk=global_chunk_number)
