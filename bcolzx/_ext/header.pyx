"""Header and layout of the superchunk file, format 1 (``docs/format/superchunk.md``).

A superchunk file holds ``K`` chunk slots: a 32-byte header, two copies (A
and B) of the slot index, then the data region.  This module encodes and
validates the header (spec section 2) and computes where the index copies
and the data region start; :mod:`bcolzx._ext.index` handles the index copies
and :mod:`bcolzx._ext.checksum` the per-chunk checksums.  It does no I/O:
callers read and write the bytes.

:func:`decode_header` validates the stored bytes completely, so a damaged
header raises :class:`~bcolzx.errors.CorruptDataError` (or
:class:`~bcolzx.errors.UnsupportedFormatError`).
"""

from libc.stdint cimport uint32_t, uint64_t
from cpython.buffer cimport PyBuffer_Release
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize

from bcolzx._ext._buffers cimport get_buffer
from bcolzx._ext._fields cimport _ld32, _ld64, _st32, _st64, _uint
from bcolzx._ext.checksum cimport crc32c_update

from bcolzx._ext.checksum import CHECKSUM_ADLER32, CHECKSUM_CRC32C, CHECKSUM_NONE
from bcolzx.errors import CorruptDataError, TruncatedDataError, UnsupportedFormatError


MAGIC = b"BCXS"
FORMAT_VERSION = 1
HEADER_SIZE = 32
MAX_SLOTS = 1 << 20

cdef enum:
    _HEADER_SIZE = 32


def index_size(nslots):
    """Size in bytes of one index copy for `nslots` slots: ``24 + 16*K``.

    Parameters
    ----------
    nslots : int
        K, the number of slots, 1 to :data:`MAX_SLOTS`.

    Returns
    -------
    int
        The size of one index copy.

    Raises
    ------
    TypeError
        If `nslots` is not an int.
    ValueError
        If `nslots` is out of range.
    """
    return 24 + 16 * _uint(nslots, "nslots", MAX_SLOTS, 1)


def data_start(nslots):
    """Offset of the data region for `nslots` slots: ``32 + 2*index_size(K)``.

    Parameters
    ----------
    nslots : int
        K, the number of slots, 1 to :data:`MAX_SLOTS`.

    Returns
    -------
    int
        The first offset a data entry may point at.

    Raises
    ------
    TypeError
        If `nslots` is not an int.
    ValueError
        If `nslots` is out of range.
    """
    return HEADER_SIZE + 2 * index_size(nslots)


def index_offset(nslots, copy):
    """File offset of index copy `copy` (0 for A, 1 for B).

    Parameters
    ----------
    nslots : int
        K, the number of slots.
    copy : int
        0 for copy A, 1 for copy B.

    Returns
    -------
    int
        ``32`` for A, ``32 + index_size(K)`` for B.

    Raises
    ------
    TypeError
        If an argument is not an int.
    ValueError
        If an argument is out of range.
    """
    return HEADER_SIZE + _uint(copy, "copy", 1) * index_size(nslots)


def checksum_size(checksum_type):
    """Bytes of checksum stored after each chunk for `checksum_type`.

    Parameters
    ----------
    checksum_type : int
        :data:`CHECKSUM_NONE`, :data:`CHECKSUM_CRC32C` or :data:`CHECKSUM_ADLER32`.

    Returns
    -------
    int
        0 for none, 4 for CRC-32C and Adler-32.

    Raises
    ------
    TypeError
        If `checksum_type` is not an int.
    ValueError
        If `checksum_type` is unknown.
    """
    return 0 if _uint(checksum_type, "checksum_type", 2) == CHECKSUM_NONE else 4


# ---------------------------------------------------------------------------
# header (spec section 2)

def encode_header(checksum_type, typesize, chunk_size, nslots, superchunk_number):
    """Encode the 32-byte header of a superchunk file.

    Parameters
    ----------
    checksum_type : int
        0 none, 1 CRC-32C, 2 Adler-32.
    typesize : int
        Item size in bytes, 0 to 255 (0 when the item size exceeds 255).
    chunk_size : int
        Uncompressed bytes of a full chunk, 1 to 2**32-1.
    nslots : int
        K, slots in the file, 1 to :data:`MAX_SLOTS`.
    superchunk_number : int
        The N of ``__N.bin``, 0 to 2**64-1.

    Returns
    -------
    bytes
        The header, :data:`HEADER_SIZE` bytes.

    Raises
    ------
    TypeError
        If an argument is not an int.
    ValueError
        If an argument is out of range.
    """
    cdef uint32_t ctype = _uint(checksum_type, "checksum_type", 2)
    cdef uint32_t tsize = _uint(typesize, "typesize", 255)
    cdef uint32_t csize = _uint(chunk_size, "chunk_size", 2**32 - 1, 1)
    cdef uint32_t k = _uint(nslots, "nslots", MAX_SLOTS, 1)
    cdef uint64_t number = _uint(superchunk_number, "superchunk_number", 2**64 - 1)
    out = PyBytes_FromStringAndSize(NULL, _HEADER_SIZE)
    cdef unsigned char* p = <unsigned char*>PyBytes_AS_STRING(out)
    p[0] = b'B'
    p[1] = b'C'
    p[2] = b'X'
    p[3] = b'S'
    p[4] = FORMAT_VERSION
    p[5] = 0
    p[6] = ctype
    p[7] = tsize
    _st32(p + 8, csize)
    _st32(p + 12, k)
    _st64(p + 16, number)
    _st32(p + 24, 0)
    _st32(p + 28, crc32c_update(0, p, 28))
    return out


def decode_header(buf, path=None):
    """Decode and validate the header of a superchunk file.

    Checks run in this order: length, magic, header crc, version, options,
    then the remaining fields, so that random damage is reported as
    corruption and only an intact header of a newer format as unsupported.

    Parameters
    ----------
    buf : buffer
        At least the first 32 bytes of the file; further bytes are ignored.
    path : str, optional
        The file, for error messages.

    Returns
    -------
    dict
        Keys ``checksum_type``, ``typesize``, ``chunk_size``, ``nslots`` and
        ``superchunk_number``.

    Raises
    ------
    TruncatedDataError
        If `buf` holds fewer than 32 bytes.
    CorruptDataError
        If the magic, the crc, the version (0), the reserved field, K or the
        chunk size is wrong.
    UnsupportedFormatError
        If the version is higher than 1, an option bit is set or the
        checksum type is unknown (in an otherwise intact header).
    TypeError
        If `buf` does not support the buffer protocol.
    ValueError
        If `buf` is not C-contiguous.
    """
    cdef Py_buffer view
    cdef unsigned char h[_HEADER_SIZE]
    cdef uint32_t crc
    cdef Py_ssize_t i
    get_buffer(buf, &view, False, "buf")
    try:
        if view.len < _HEADER_SIZE:
            raise TruncatedDataError(
                f"superchunk header needs {_HEADER_SIZE} bytes, got {view.len}", path=path)
        for i in range(<Py_ssize_t>_HEADER_SIZE):
            h[i] = (<const unsigned char*>view.buf)[i]
    finally:
        PyBuffer_Release(&view)
    if h[0] != b'B' or h[1] != b'C' or h[2] != b'X' or h[3] != b'S':
        raise CorruptDataError(f"bad superchunk magic {(<char*>h)[:4]!r}", path=path)
    crc = crc32c_update(0, h, 28)
    if crc != _ld32(h + 28):
        raise CorruptDataError(
            f"superchunk header crc mismatch (stored {_ld32(h + 28):#010x}, computed {crc:#010x})",
            path=path)
    if h[4] > FORMAT_VERSION:
        raise UnsupportedFormatError(
            f"superchunk format version {h[4]} is newer than this bcolzx reads ({FORMAT_VERSION})"
            + (f" (file {path})" if path is not None else ""))
    if h[4] != FORMAT_VERSION:
        raise CorruptDataError(f"superchunk format version {h[4]} does not exist", path=path)
    if h[5] != 0:
        raise UnsupportedFormatError(
            f"superchunk header has unknown option bits {h[5]:#04x}"
            + (f" (file {path})" if path is not None else ""))
    if _ld32(h + 24) != 0:
        raise CorruptDataError("superchunk header reserved field is not zero", path=path)
    if h[6] > CHECKSUM_ADLER32:
        raise UnsupportedFormatError(
            f"unknown chunk checksum type {h[6]}"
            + (f" (file {path})" if path is not None else ""))
    chunk_size = _ld32(h + 8)
    if chunk_size == 0:
        raise CorruptDataError("superchunk header has chunk size 0", path=path)
    nslots = _ld32(h + 12)
    if not 1 <= nslots <= MAX_SLOTS:
        raise CorruptDataError(
            f"superchunk header has K = {nslots}, outside 1..{MAX_SLOTS}", path=path)
    return {
        "checksum_type": h[6],
        "typesize": h[7],
        "chunk_size": chunk_size,
        "nslots": nslots,
        "superchunk_number": _ld64(h + 16),
    }

