"""Index copies of the superchunk file, format 1 (``docs/format/superchunk.md``).

A superchunk file holds ``K`` chunk slots: a 32-byte header, two copies (A
and B) of the slot index, then the data region.  This module encodes and
validates the index copies (spec sections 3 and 4) and picks the current
copy.  It does no I/O: callers read and write the bytes.

Decoding validates the stored bytes completely, so a damaged index copy
raises :class:`~bcolzx.errors.CorruptDataError` and never yields an entry
pointing outside the data region of the file.  Loops run with the GIL
released.

The header and layout (:mod:`bcolzx._ext.header`) and the chunk checksums
(:mod:`bcolzx._ext.checksum`) are importable from here too, so that callers
reach the whole file format through one module.
"""

from libc.stdint cimport uint32_t, uint64_t
from cpython.buffer cimport PyBuffer_Release
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize
from cpython.mem cimport PyMem_Free, PyMem_Malloc

from operator import index as _as_index

from bcolzx._ext._buffers cimport get_buffer
from bcolzx._ext._fields cimport _ld32, _ld64, _st32, _st64, _uint
from bcolzx._ext.checksum cimport crc32c_update

from bcolzx._ext.checksum import (  # noqa: F401 (re-exported)
    CHECKSUM_ADLER32,
    CHECKSUM_CRC32C,
    CHECKSUM_NONE,
    chunk_checksum,
    verify_chunk,
)
from bcolzx._ext.header import (  # noqa: F401 (re-exported)
    FORMAT_VERSION,
    HEADER_SIZE,
    MAGIC,
    MAX_SLOTS,
    checksum_size,
    data_start,
    decode_header,
    encode_header,
    index_offset,
    index_size,
)
from bcolzx.errors import CorruptDataError, TruncatedDataError


cdef extern from *:
    """
    #define BCX_EMPTY UINT64_MAX
    #define BCX_SPECIAL_FLAG (((uint64_t)1) << 63)
    """
    const uint64_t BCX_EMPTY
    const uint64_t BCX_SPECIAL_FLAG


EMPTY = 2**64 - 1
SPECIAL_FLAG = 1 << 63
KIND_ZERO = 1
KIND_NAN = 2
KIND_VALUE = 3
MIN_CHUNK_NBYTES = 32

cdef enum:
    _MIN_CHUNK_NBYTES = 32
    _KIND_ZERO = 1
    _KIND_NAN = 2
    _KIND_VALUE = 3

# Results of _check_entry / _check_index: 0 is fine, anything else names
# the first problem (see _MESSAGES).
cdef enum:
    _OK = 0
    _E_NOT_EMPTY = 1
    _E_SPECIAL_RESERVED = 2
    _E_SPECIAL_KIND = 3
    _E_NAN_TYPESIZE = 4
    _E_VALUE_TYPESIZE = 5
    _E_SPECIAL_NBYTES = 6
    _E_DATA_START = 7
    _E_DATA_SMALL = 8
    _E_DATA_EOF = 9

_MESSAGES = {
    _E_NOT_EMPTY: "slot at or beyond nchunks is not empty",
    _E_SPECIAL_RESERVED: "special entry has non-zero reserved bits",
    _E_SPECIAL_KIND: "special entry has an unknown kind",
    _E_NAN_TYPESIZE: "NaN special entry needs typesize 4 or 8",
    _E_VALUE_TYPESIZE: "value special entry needs typesize 1 to 8",
    _E_SPECIAL_NBYTES: "special entry has non-zero bytes beyond its value",
    _E_DATA_START: "data entry starts before the data region",
    _E_DATA_SMALL: "data entry is shorter than a chunk header (32 bytes)",
    _E_DATA_EOF: "data entry (with its checksum) extends past the end of the file",
}

# ---------------------------------------------------------------------------
# index entries (spec sections 3 and 4)

cdef int _check_entry(uint64_t off, uint64_t nb, uint64_t dstart, uint64_t fsize,
                      uint64_t csize, uint32_t typesize) noexcept nogil:
    """Validate one entry of a slot below nchunks; 0 or an _E_* code."""
    cdef uint64_t kind, avail
    if off == BCX_EMPTY and nb == BCX_EMPTY:
        return _OK
    if off & BCX_SPECIAL_FLAG:
        if (off & ~BCX_SPECIAL_FLAG) >> 8:
            return _E_SPECIAL_RESERVED
        kind = off & 0xFF
        if kind == _KIND_ZERO:
            return _OK if nb == 0 else _E_SPECIAL_NBYTES
        if kind == _KIND_NAN:
            if typesize != 4 and typesize != 8:
                return _E_NAN_TYPESIZE
            return _OK if nb == 0 else _E_SPECIAL_NBYTES
        if kind == _KIND_VALUE:
            if typesize < 1 or typesize > 8:
                return _E_VALUE_TYPESIZE
            if typesize < 8 and (nb >> (8 * typesize)) != 0:
                return _E_SPECIAL_NBYTES
            return _OK
        return _E_SPECIAL_KIND
    if off < dstart:
        return _E_DATA_START
    if nb < _MIN_CHUNK_NBYTES:
        return _E_DATA_SMALL
    # off + nb + csize <= fsize, written so that nothing can overflow.
    if off > fsize:
        return _E_DATA_EOF
    avail = fsize - off
    if nb > avail or csize > avail - nb:
        return _E_DATA_EOF
    return _OK


cdef inline int _entry_kind(uint64_t off, uint64_t nb) noexcept nogil:
    """0 empty, 1 special, 2 data (for an entry already validated)."""
    if off == BCX_EMPTY and nb == BCX_EMPTY:
        return 0
    return 1 if off & BCX_SPECIAL_FLAG else 2


cdef int _check_index(const uint64_t* e, uint32_t k, uint32_t nchunks, uint64_t dstart,
                      uint64_t fsize, uint64_t csize, uint32_t typesize,
                      uint32_t* bad_slot) noexcept nogil:
    """Validate all K entries; on failure store the slot and return its code."""
    cdef uint32_t s
    cdef int rc
    for s in range(k):
        if s < nchunks:
            rc = _check_entry(e[2 * s], e[2 * s + 1], dstart, fsize, csize, typesize)
        elif e[2 * s] != BCX_EMPTY or e[2 * s + 1] != BCX_EMPTY:
            rc = _E_NOT_EMPTY
        else:
            rc = _OK
        if rc != _OK:
            bad_slot[0] = s
            return rc
    return _OK


cdef class Index:
    """One copy of the slot index of a superchunk file, held in C memory.

    Entries are a C array of ``K`` ``(offset, nbytes)`` pairs of uint64; see
    spec section 4 for the three kinds of entry (empty, special, data).

    Parameters
    ----------
    nslots : int
        K, the number of slots, 1 to :data:`MAX_SLOTS`.

    Attributes
    ----------
    nslots : int
        K (read-only).
    generation : int
        0 = never written, else >= 1; a writer stores ``current + 1``.
    nchunks : int
        Slots in use, 0 to K; slots at or beyond it must be empty.
    last_chunk_size : int
        Uncompressed bytes of slot ``nchunks - 1`` (0 when nchunks is 0).
    copy : int or None
        Which copy :func:`select` took this index from: 0 (A), 1 (B), or
        None (not read from a file, or both copies never written).

    Raises
    ------
    TypeError
        If `nslots` is not an int.
    ValueError
        If `nslots` is out of range.
    """

    cdef uint64_t* _e
    cdef uint32_t _k
    cdef uint32_t _nchunks
    cdef uint32_t _last
    cdef uint64_t _generation
    cdef object _copy

    def __cinit__(self, nslots):
        cdef uint32_t k = _uint(nslots, "nslots", MAX_SLOTS, 1)
        cdef uint32_t i
        self._e = <uint64_t*>PyMem_Malloc(2 * <size_t>k * sizeof(uint64_t))
        if self._e == NULL:
            raise MemoryError()
        self._k = k
        with nogil:
            for i in range(2 * k):
                self._e[i] = BCX_EMPTY
        self._copy = None

    def __dealloc__(self):
        PyMem_Free(self._e)

    # -- scalar fields -----------------------------------------------------

    @property
    def nslots(self):
        """K, the number of slots."""
        return self._k

    @property
    def generation(self):
        """Generation of this copy: 0 = never written, else >= 1."""
        return self._generation

    @generation.setter
    def generation(self, value):
        self._generation = _uint(value, "generation", 2**64 - 1)

    @property
    def nchunks(self):
        """Slots in use, 0 to K."""
        return self._nchunks

    @nchunks.setter
    def nchunks(self, value):
        self._nchunks = _uint(value, "nchunks", self._k)

    @property
    def last_chunk_size(self):
        """Uncompressed bytes of slot ``nchunks - 1`` (0 when nchunks is 0)."""
        return self._last

    @last_chunk_size.setter
    def last_chunk_size(self, value):
        self._last = _uint(value, "last_chunk_size", 2**32 - 1)

    @property
    def copy(self):
        """0 (A) or 1 (B) when chosen by :func:`select`, else None."""
        return self._copy

    @property
    def write_copy(self):
        """The copy a writer must write next: the one that is not current.

        Returns 1 when this index came from copy A and 0 otherwise (from B,
        or from a file whose copies were never written).
        """
        return 1 if self._copy == 0 else 0

    # -- entries -----------------------------------------------------------

    cdef uint32_t _slot(self, slot) except? 0xFFFFFFFF:
        try:
            s = _as_index(slot)
        except TypeError:
            raise TypeError(f"slot must be an int, not {type(slot).__name__}") from None
        if not 0 <= s < self._k:
            raise IndexError(f"slot {s} out of range for {self._k} slots")
        return s

    def entry(self, slot):
        """The raw ``(offset, nbytes)`` pair of `slot`.

        Parameters
        ----------
        slot : int
            0 to K-1.

        Returns
        -------
        tuple of int
            ``(offset, nbytes)`` as stored.

        Raises
        ------
        TypeError
            If `slot` is not an int.
        IndexError
            If `slot` is out of range.
        """
        cdef uint32_t s = self._slot(slot)
        return (self._e[2 * s], self._e[2 * s + 1])

    def kind(self, slot):
        """The kind of entry in `slot`: ``"empty"``, ``"special"`` or ``"data"``.

        Parameters
        ----------
        slot : int
            0 to K-1.

        Returns
        -------
        str
            The kind.

        Raises
        ------
        TypeError
            If `slot` is not an int.
        IndexError
            If `slot` is out of range.
        """
        cdef uint32_t s = self._slot(slot)
        return ("empty", "special", "data")[_entry_kind(self._e[2 * s], self._e[2 * s + 1])]

    def special(self, slot, typesize=8):
        """Decode the special entry in `slot`.

        Parameters
        ----------
        slot : int
            0 to K-1; must hold a special entry.
        typesize : int, optional
            Item size, 1 to 8: how many bytes of a kind-3 value to return.

        Returns
        -------
        tuple
            ``(kind, value)``: `value` is the item's `typesize` bytes for
            :data:`KIND_VALUE` and None for the other kinds.

        Raises
        ------
        TypeError
            If an argument is not an int.
        IndexError
            If `slot` is out of range.
        ValueError
            If `slot` does not hold a special entry or `typesize` is out of
            range.
        """
        cdef uint32_t s = self._slot(slot)
        tsize = _uint(typesize, "typesize", 8, 1)
        off = self._e[2 * s]
        nb = self._e[2 * s + 1]
        if _entry_kind(off, nb) != 1:
            raise ValueError(f"slot {s} does not hold a special entry")
        kind = off & 0xFF
        if kind == KIND_VALUE:
            return (kind, nb.to_bytes(8, "little")[:tsize])
        return (kind, None)

    def set_empty(self, slot):
        """Make `slot` empty.

        Parameters
        ----------
        slot : int
            0 to K-1.

        Raises
        ------
        TypeError
            If `slot` is not an int.
        IndexError
            If `slot` is out of range.
        """
        cdef uint32_t s = self._slot(slot)
        self._e[2 * s] = BCX_EMPTY
        self._e[2 * s + 1] = BCX_EMPTY

    def set_data(self, slot, offset, nbytes):
        """Point `slot` at a chunk of `nbytes` bytes at file offset `offset`.

        Parameters
        ----------
        slot : int
            0 to K-1.
        offset : int
            File offset of the chunk, at least ``data_start(K)`` and below 2**63.
        nbytes : int
            Compressed size of the chunk, at least 32.

        Raises
        ------
        TypeError
            If an argument is not an int.
        IndexError
            If `slot` is out of range.
        ValueError
            If `offset` or `nbytes` is out of range.
        """
        cdef uint32_t s = self._slot(slot)
        cdef uint64_t off = _uint(offset, "offset", 2**63 - 1)
        cdef uint64_t nb = _uint(nbytes, "nbytes", 2**64 - 1)
        rc = _check_entry(off, nb, 32 + 2 * (24 + 16 * <uint64_t>self._k), BCX_EMPTY, 0, 0)
        if rc != _OK:
            raise ValueError(f"invalid data entry ({offset}, {nbytes}): {_MESSAGES[rc]}")
        self._e[2 * s] = off
        self._e[2 * s + 1] = nb

    def set_special(self, slot, kind, value=None, typesize=0):
        """Store a constant chunk in `slot` as a special entry (no data).

        Parameters
        ----------
        slot : int
            0 to K-1.
        kind : int
            :data:`KIND_ZERO`, :data:`KIND_NAN` or :data:`KIND_VALUE`.
        value : bytes-like, optional
            For :data:`KIND_VALUE` only: the item's `typesize` bytes, stored
            zero-padded in the nbytes field.  None for the other kinds.
        typesize : int, optional
            Item size; must be 4 or 8 for NaN and 1 to 8 for a value.

        Raises
        ------
        TypeError
            If an argument has the wrong type.
        IndexError
            If `slot` is out of range.
        ValueError
            If `kind` is unknown, or `value` or `typesize` does not fit it.
        """
        cdef uint32_t s = self._slot(slot)
        k = _uint(kind, "kind", KIND_VALUE, KIND_ZERO)
        tsize = _uint(typesize, "typesize", 255)
        nb = 0
        if k == KIND_VALUE:
            if value is None:
                raise ValueError("a value special entry needs a value")
            raw = bytes(memoryview(value).cast("B"))
            if not 1 <= tsize <= 8:
                raise ValueError(f"value special entries need typesize 1 to 8, not {tsize}")
            if len(raw) != tsize:
                raise ValueError(f"value has {len(raw)} bytes, typesize is {tsize}")
            nb = int.from_bytes(raw, "little")
        elif value is not None:
            raise ValueError(f"special entries of kind {k} take no value")
        rc = _check_entry(SPECIAL_FLAG | k, nb, 0, 0, 0, tsize)
        if rc != _OK:
            raise ValueError(f"invalid special entry: {_MESSAGES[rc]}")
        self._e[2 * s] = SPECIAL_FLAG | k
        self._e[2 * s + 1] = nb

    def data_extent(self, checksum_size=0):
        """End of the data used by data entries: where the next chunk may go.

        Parameters
        ----------
        checksum_size : int, optional
            Checksum bytes after each chunk (0 or 4).

        Returns
        -------
        int
            ``max(offset + nbytes + checksum_size)`` over data entries, or
            ``data_start(K)`` when there are none.

        Raises
        ------
        TypeError
            If `checksum_size` is not an int.
        ValueError
            If `checksum_size` is out of range.
        """
        cdef uint64_t csize = _uint(checksum_size, "checksum_size", 8)
        cdef uint64_t end = 32 + 2 * (24 + 16 * <uint64_t>self._k)
        cdef uint64_t off, nb
        cdef uint32_t s
        with nogil:
            for s in range(self._k):
                off = self._e[2 * s]
                nb = self._e[2 * s + 1]
                if _entry_kind(off, nb) == 2 and off + nb + csize > end:
                    end = off + nb + csize
        return end

    # -- encoding ----------------------------------------------------------

    def encode(self):
        """Encode this copy, crc included.

        Returns
        -------
        bytes
            Exactly ``index_size(K)`` bytes.

        Raises
        ------
        ValueError
            If the index is inconsistent: a slot at or beyond nchunks is not
            empty, or last_chunk_size is non-zero while nchunks is 0.
        """
        cdef uint32_t bad = 0
        rc = _check_index(self._e, self._k, self._nchunks, 0, BCX_EMPTY, 0, 8, &bad)
        if rc == _E_NOT_EMPTY:
            raise ValueError(f"slot {bad} is not empty but nchunks is {self._nchunks}")
        if self._nchunks == 0 and self._last != 0:
            raise ValueError("last_chunk_size must be 0 when nchunks is 0")
        cdef Py_ssize_t size = 24 + 16 * <Py_ssize_t>self._k
        out = PyBytes_FromStringAndSize(NULL, size)
        cdef unsigned char* p = <unsigned char*>PyBytes_AS_STRING(out)
        cdef uint32_t s
        with nogil:
            _st64(p, self._generation)
            _st32(p + 8, self._nchunks)
            _st32(p + 12, self._last)
            for s in range(2 * self._k):
                _st64(p + 16 + 8 * <size_t>s, self._e[s])
            _st32(p + size - 8, crc32c_update(0, p, size - 8))
            _st32(p + size - 4, 0)
        return out

    @staticmethod
    def decode(buf, nslots, file_size, checksum_size, typesize, path=None, chunk_size=None):
        """Decode and fully validate one index copy.

        A copy of generation 0 ("never written") is accepted only when its
        crc matches and it is empty (nchunks 0, all slots empty): that is
        the canonical encoding of ``Index(K)``.

        Parameters
        ----------
        buf : buffer
            The ``index_size(K)`` bytes of the copy.
        nslots : int
            K, from the header.
        file_size : int
            Size of the superchunk file in bytes.
        checksum_size : int
            Checksum bytes after each chunk: 0 or 4.
        typesize : int
            Item size from the header (0 to 255), for special entries.
        path : str, optional
            The file, for error messages.
        chunk_size : int, optional
            Chunk size from the header; when given, last_chunk_size must not
            exceed it.

        Returns
        -------
        Index
            The decoded copy.

        Raises
        ------
        TruncatedDataError
            If `buf` is shorter than ``index_size(K)``.
        CorruptDataError
            If the crc does not match, a field is out of range, or an entry
            breaks spec section 4 (then ``.chunk`` is its slot).
        TypeError
            If an argument has the wrong type.
        ValueError
            If an argument is out of range or `buf` is longer than
            ``index_size(K)``.
        """
        cdef Index idx = Index(nslots)
        cdef uint64_t fsize = _uint(file_size, "file_size", 2**64 - 1)
        cdef uint64_t csize = _uint(checksum_size, "checksum_size", 8)
        cdef uint32_t tsize = _uint(typesize, "typesize", 255)
        if chunk_size is not None:
            chunk_size = _uint(chunk_size, "chunk_size", 2**32 - 1, 1)
        cdef uint32_t k = idx._k
        cdef Py_ssize_t size = 24 + 16 * <Py_ssize_t>k
        cdef Py_buffer view
        cdef const unsigned char* p
        cdef uint32_t crc = 0, stored = 0, reserved = 0, s, bad = 0
        cdef int rc = 0
        cdef uint64_t dstart = 32 + 2 * <uint64_t>size
        get_buffer(buf, &view, False, "buf")
        try:
            if view.len < size:
                raise TruncatedDataError(
                    f"index copy needs {size} bytes, got {view.len}", path=path)
            if view.len > size:
                raise ValueError(f"index copy has {size} bytes, got {view.len}")
            p = <const unsigned char*>view.buf
            with nogil:
                crc = crc32c_update(0, p, size - 8)
                stored = _ld32(p + size - 8)
                reserved = _ld32(p + size - 4)
                if crc == stored:
                    idx._generation = _ld64(p)
                    idx._nchunks = _ld32(p + 8)
                    idx._last = _ld32(p + 12)
                    for s in range(2 * k):
                        idx._e[s] = _ld64(p + 16 + 8 * <size_t>s)
        finally:
            PyBuffer_Release(&view)
        if crc != stored:
            raise CorruptDataError(
                f"index copy crc mismatch (stored {stored:#010x}, computed {crc:#010x})",
                path=path)
        if reserved != 0:
            raise CorruptDataError("index copy reserved field is not zero", path=path)
        if idx._nchunks > k:
            raise CorruptDataError(
                f"index copy has nchunks {idx._nchunks} > K = {k}", path=path)
        if idx._nchunks == 0 and idx._last != 0:
            raise CorruptDataError(
                "index copy has a last chunk size but no chunks", path=path)
        if idx._nchunks > 0 and idx._last == 0:
            raise CorruptDataError("index copy has a last chunk size of 0", path=path)
        if chunk_size is not None and idx._last > chunk_size:
            raise CorruptDataError(
                f"index copy has last chunk size {idx._last} > chunk size {chunk_size}",
                path=path)
        with nogil:
            rc = _check_index(idx._e, k, idx._nchunks, dstart, fsize, csize, tsize, &bad)
        if rc != _OK:
            off, nb = idx._e[2 * bad], idx._e[2 * bad + 1]
            raise CorruptDataError(
                f"bad index entry in slot {bad}: {_MESSAGES[rc]} (offset {off}, nbytes {nb})",
                path=path, chunk=bad)
        if idx._generation == 0:
            with nogil:
                for s in range(2 * k):
                    if idx._e[s] != BCX_EMPTY:
                        rc = 1
                        break
            if rc != _OK or idx._nchunks != 0:
                raise CorruptDataError("index copy of generation 0 is not empty", path=path)
        return idx

    # -- comparison ----------------------------------------------------------

    def __eq__(self, other):
        if not isinstance(other, Index):
            return NotImplemented
        cdef Index o = <Index>other
        if (self._k != o._k or self._generation != o._generation
                or self._nchunks != o._nchunks or self._last != o._last):
            return False
        cdef uint32_t s
        cdef bint same = True
        with nogil:
            for s in range(2 * self._k):
                if self._e[s] != o._e[s]:
                    same = False
                    break
        return same

    __hash__ = None

    def __repr__(self):
        return (f"<Index K={self._k} generation={self._generation} "
                f"nchunks={self._nchunks} last_chunk_size={self._last} copy={self._copy}>")


def select(copy_a, copy_b, nslots, file_size, checksum_size, typesize, path=None,
           chunk_size=None):
    """Pick the current index copy of a superchunk file (spec section 3).

    Each copy is decoded with :meth:`Index.decode`; the valid copy with the
    higher generation wins.  A copy of generation 0 is "never written" (the
    encoding of an empty ``Index(K)``); it is never current, but when *both*
    copies are never written the file is new and an empty index of
    generation 0 is returned (``copy`` None, so the first write goes to A).
    One never-written copy beside a damaged one raises: the damaged copy may
    have held data.

    Parameters
    ----------
    copy_a, copy_b : buffer
        The ``index_size(K)`` bytes of copies A and B.
    nslots, file_size, checksum_size, typesize, path, chunk_size
        As for :meth:`Index.decode`.

    Returns
    -------
    Index
        The current copy, with ``copy`` set to 0 (A) or 1 (B).

    Raises
    ------
    CorruptDataError
        If neither copy is valid (nor both never written), or both are valid
        with the same generation but different contents.
    TypeError
        If an argument has the wrong type.
    ValueError
        If an argument is out of range.
    """
    valid = []
    errors = []
    for which, buf in enumerate((copy_a, copy_b)):
        try:
            idx = Index.decode(buf, nslots, file_size, checksum_size, typesize,
                               path=path, chunk_size=chunk_size)
        except CorruptDataError as exc:
            errors.append(f"copy {'AB'[which]}: {exc}")
            continue
        (<Index>idx)._copy = which
        valid.append(idx)
    written = [idx for idx in valid if idx.generation >= 1]
    if len(written) == 2:
        a, b = written
        if a.generation == b.generation:
            if a == b:
                return a
            raise CorruptDataError(
                f"index copies A and B differ but both have generation {a.generation}",
                path=path)
        return a if a.generation > b.generation else b
    if len(written) == 1:
        return written[0]
    if len(valid) == 2:
        return Index(nslots)
    if valid:
        errors.append(f"copy {'AB'[valid[0].copy]}: never written")
    raise CorruptDataError("no valid index copy; " + "; ".join(errors), path=path)

