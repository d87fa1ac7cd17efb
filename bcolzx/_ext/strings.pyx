# NumPy StringDType arrays to and from variable-length chunks, with the GIL released.
#
# The chunk layout (docs/format/strings.md) is decoded and validated by
# bcolzx._format.vlen, which hands this module the absolute offsets of the
# items and the rows that are missing (NA).  Here the items are checked to be
# UTF-8 and packed into a StringDType array through NumPy's NpyString API
# (numpy/ndarraytypes.h, NumPy >= 2.0), and a StringDType array is turned
# back into a chunk.  Nothing loops in Python per row, and nothing builds a
# Python str.
#
# Built against NumPy 2's C API (NPY_TARGET_VERSION 2.0): imported only for
# StringDType data, which exists only there.

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize
from libc.stdint cimport int64_t, uint8_t, uint32_t, uint64_t
from libc.string cimport memchr, memcmp, memcpy, memset

cimport numpy as cnp
import numpy as np
from numpy cimport (
    PyArray_StringDTypeObject,
    npy_packed_static_string,
    npy_static_string,
    npy_string_allocator,
)


# NumPy's own declarations lack nogil; these functions take the allocator's
# lock, not the GIL (NumPy's string ufunc loops call them without it).
cdef extern from "numpy/arrayobject.h" nogil:
    npy_string_allocator* NpyString_acquire_allocator(const PyArray_StringDTypeObject* descr)
    void NpyString_release_allocator(npy_string_allocator* allocator)
    int NpyString_load(npy_string_allocator* allocator,
                       const npy_packed_static_string* packed_string,
                       npy_static_string* unpacked_string)
    int NpyString_pack_null(npy_string_allocator* allocator,
                            npy_packed_static_string* packed_string)
    int NpyString_pack(npy_string_allocator* allocator,
                       npy_packed_static_string* packed_string, const char* buf, size_t size)


cnp.import_array()

cdef uint32_t _NA = 0xFFFFFFFF
cdef Py_ssize_t _HEAD = 8
#: The length that marks a missing (NA) row in a chunk's length table.
NA_LENGTH = _NA
#: Bytes before the length table: the item count, a little-endian uint64.
HEAD = _HEAD


cdef Py_ssize_t _utf8_error(const uint8_t* p, Py_ssize_t n) noexcept nogil:
    """The position of the first byte of `p[:n]` that is not well-formed UTF-8
    (shortest form, no surrogates, at most U+10FFFF, per the Unicode standard's
    table 3-7), or -1 when all of it is."""
    cdef Py_ssize_t i = 0
    cdef uint8_t b, b1
    cdef uint64_t word
    while i < n:
        # Eight ASCII bytes at a time (the common case for tickers and text).
        while i + 8 <= n:
            memcpy(&word, p + i, 8)
            if word & 0x8080808080808080ULL:
                break
            i += 8
        if i >= n:
            break
        b = p[i]
        if b < 0x80:
            i += 1
            continue
        if b < 0xC2:
            return i  # a continuation byte, or an overlong two-byte lead
        if b < 0xE0:
            if i + 1 >= n or (p[i + 1] & 0xC0) != 0x80:
                return i
            i += 2
            continue
        if b < 0xF0:
            if i + 2 >= n:
                return i
            b1 = p[i + 1]
            if (b == 0xE0 and not 0xA0 <= b1 <= 0xBF) or \
                    (b == 0xED and not 0x80 <= b1 <= 0x9F) or (b1 & 0xC0) != 0x80 or \
                    (p[i + 2] & 0xC0) != 0x80:
                return i  # overlong, a surrogate, or a bad continuation
            i += 3
            continue
        if b < 0xF5:
            if i + 3 >= n:
                return i
            b1 = p[i + 1]
            if (b == 0xF0 and not 0x90 <= b1 <= 0xBF) or \
                    (b == 0xF4 and not 0x80 <= b1 <= 0x8F) or (b1 & 0xC0) != 0x80 or \
                    (p[i + 2] & 0xC0) != 0x80 or (p[i + 3] & 0xC0) != 0x80:
                return i  # overlong, beyond U+10FFFF, or a bad continuation
            i += 4
            continue
        return i  # 0xF5..0xFF never occur in UTF-8
    return -1


def utf8_error(src) -> int:
    """The position of the first byte of `src` that is not well-formed UTF-8, or -1.

    Well-formed: shortest form, no surrogate code points, nothing beyond
    U+10FFFF (what Python's ``bytes.decode('utf-8')`` accepts).

    Raises
    ------
    TypeError
        If `src` does not support the buffer protocol.
    """
    cdef const uint8_t[::1] view = src
    cdef Py_ssize_t at
    if view.shape[0] == 0:
        return -1
    with nogil:
        at = _utf8_error(&view[0], view.shape[0])
    return at


cdef inline npy_packed_static_string* _slot(cnp.ndarray arr, Py_ssize_t i) noexcept nogil:
    return <npy_packed_static_string*>(cnp.PyArray_BYTES(arr) + i * cnp.PyArray_STRIDES(arr)[0])


cdef _check_strings(cnp.ndarray arr, str what):
    if not isinstance(arr.dtype, _STRING_DTYPE) or arr.ndim != 1:
        raise TypeError(f"{what} must be a 1-D StringDType array, not {arr.dtype} of "
                        f"{arr.ndim} dimensions")


_STRING_DTYPE = np.dtypes.StringDType


cdef extern from *:
    """
    #if defined(__linux__)
    #include <sys/mman.h>
    #include <unistd.h>
    #endif
    /* Fault in the whole pages of [p, p + n) ahead of writing them, without
       changing their contents (Linux's MADV_POPULATE_WRITE; nothing elsewhere,
       or when the kernel lacks it: the pages then fault in as they are
       written). */
    static void bcolzx_prefault(char *p, size_t n) {
    #if defined(__linux__) && defined(MADV_POPULATE_WRITE)
        static long page = 0;
        if (page <= 0) page = sysconf(_SC_PAGESIZE);
        if (page <= 0) return;
        size_t lo = ((size_t)p + (size_t)page - 1) & ~((size_t)page - 1);
        size_t hi = ((size_t)p + n) & ~((size_t)page - 1);
        if (hi > lo) (void)madvise((void *)lo, hi - lo, MADV_POPULATE_WRITE);
    #else
        (void)p; (void)n;
    #endif
    }
    """
    void bcolzx_prefault(char* p, size_t n) nogil


cdef Py_ssize_t _check_rows(const uint8_t* base, Py_ssize_t size, const int64_t* offsets,
                            Py_ssize_t count, Py_ssize_t* outside) noexcept nogil:
    """The first of rows ``0 .. count - 1`` (delimited by ``offsets[0 .. count]``)
    whose bytes are not well-formed UTF-8, or -1; sets `outside` to the first
    row whose span is not inside the ``size`` bytes at `base` (and stops
    there), else leaves it.  A missing row spans nothing and passes."""
    cdef Py_ssize_t r
    cdef int64_t a, b, lo = offsets[0], hi = offsets[count]
    cdef bint whole = False
    # The rows' bytes are contiguous: when they are well-formed UTF-8 as a
    # whole, a row is too unless it starts or ends inside a character (one
    # byte checked per row).
    if 0 <= lo <= hi <= size:
        whole = _utf8_error(base + lo, hi - lo) < 0
    for r in range(count):
        a, b = offsets[r], offsets[r + 1]
        if not 0 <= a <= b <= size:
            outside[0] = r
            return -1
        if whole and lo <= a <= b <= hi:
            if a < b and (base[a] & 0xC0) == 0x80 or b < hi and (base[b] & 0xC0) == 0x80:
                return r
        elif _utf8_error(base + a, b - a) >= 0:
            return r
    return -1


cdef const uint8_t* _na_flags(object na, Py_ssize_t n, Py_ssize_t first,
                              Py_ssize_t count) except? NULL:
    """The NA flags of rows ``first ..`` of a chunk of `n` rows (NULL when `na`
    is None), once rows ``first .. first + count - 1`` are checked to be in it."""
    if first < 0 or n < 0 or first + count > n:
        raise ValueError(f"rows {first}..{first + count} are not in a chunk of {n} rows")
    if na is None:
        return NULL
    cdef const uint8_t[::1] missing = na
    if missing.shape[0] != n:
        raise ValueError(f"{missing.shape[0]} NA flags for {n} rows")
    return &missing[first] if first < n else NULL


cdef int _check_inside(Py_ssize_t outside, Py_ssize_t first) except -1:
    if outside >= 0:
        raise ValueError(f"row {first + outside} is not inside the chunk (its offsets were "
                         "not validated)")
    return 0


def check_rows(const uint8_t[::1] chunk, const int64_t[::1] offsets):
    """The first row of a decoded chunk whose bytes are not well-formed UTF-8,
    or -1: what :func:`pack` checks before it packs anything, for a caller
    that uses the rows' bytes as they are (groupby's keys).

    Parameters
    ----------
    chunk, offsets
        As for :func:`pack` (a missing row has an empty span and passes).

    Raises
    ------
    ValueError
        If a row's offsets lie outside the chunk.
    """
    cdef Py_ssize_t count = offsets.shape[0] - 1, bad, outside = -1
    if count <= 0:
        return -1
    cdef const uint8_t* base = &chunk[0] if chunk.shape[0] else NULL
    with nogil:
        bad = _check_rows(base, chunk.shape[0], &offsets[0], count, &outside)
    _check_inside(outside, 0)
    return bad


def pack(const uint8_t[::1] chunk, const int64_t[::1] offsets, na, cnp.ndarray out,
         Py_ssize_t first):
    """Rows ``first .. first + len(out) - 1`` of a decoded chunk into `out`.

    Every row is checked (inside the chunk, well-formed UTF-8) before any is
    written, and the pages of `out` are faulted in, with the GIL released and
    without holding `out`'s string allocator; only the packing holds it, so
    that threads filling disjoint parts of one array wait for each other no
    longer than that.

    Parameters
    ----------
    chunk : bytes-like
        The decompressed chunk.
    offsets : int64 array
        ``N + 1`` absolute offsets of its items, validated
        (:func:`bcolzx._format.vlen.decode`); a missing row has an empty span.
    na : uint8 array or None
        1 for each of the ``N`` rows that is missing (NA); None when none is.
    out : numpy.ndarray
        A 1-D StringDType array (a view is fine), written in place; a missing
        row needs a dtype with an ``na_object``.
    first : int
        The first row of the chunk to take.

    Returns
    -------
    int
        -1, or the first row of the chunk whose bytes are not well-formed
        UTF-8 (`out` is then left as it was).

    Raises
    ------
    TypeError
        If `out` is not a 1-D StringDType array.
    ValueError
        If the rows are not in the chunk, a row's offsets lie outside it, or
        a missing row meets a dtype without an ``na_object``.
    MemoryError
        If NumPy cannot allocate a string.
    """
    _check_strings(out, "out")
    cdef Py_ssize_t count = out.shape[0]
    cdef bint has_na = na is not None
    cdef const uint8_t* flags = _na_flags(na, offsets.shape[0] - 1, first, count)
    cdef PyArray_StringDTypeObject* descr = <PyArray_StringDTypeObject*>cnp.PyArray_DESCR(out)
    if has_na and descr.na_object == NULL:
        raise ValueError("the chunk holds missing values and the dtype has no na_object")
    if count == 0:
        return -1
    cdef const uint8_t* base = &chunk[0] if chunk.shape[0] else NULL
    cdef const int64_t* o = &offsets[first]
    cdef Py_ssize_t r, bad, failed = -1, outside = -1
    cdef Py_ssize_t size = chunk.shape[0]
    cdef char* slots = cnp.PyArray_BYTES(out)
    cdef Py_ssize_t stride = cnp.PyArray_STRIDES(out)[0], itemsize = cnp.PyArray_ITEMSIZE(out)
    cdef npy_string_allocator* allocator
    with nogil:
        bad = _check_rows(base, size, o, count, &outside)
        if bad < 0 and outside < 0:
            if stride == itemsize:  # contiguous: its pages are one range
                bcolzx_prefault(slots, <size_t>(count * stride))
            allocator = NpyString_acquire_allocator(descr)
            for r in range(count):
                if has_na and flags[r]:
                    if NpyString_pack_null(
                            allocator, <npy_packed_static_string*>(slots + r * stride)) < 0:
                        failed = r
                        break
                elif NpyString_pack(allocator, <npy_packed_static_string*>(slots + r * stride),
                                    <const char*>(base + o[r]), <size_t>(o[r + 1] - o[r])) < 0:
                    failed = r
                    break
            NpyString_release_allocator(allocator)
    _check_inside(outside, first)
    if failed >= 0:
        raise MemoryError(f"NumPy could not store string {failed} of a chunk")
    return first + bad if bad >= 0 else -1


#: The tests of :func:`match`, by name: the comparisons (as the query layer
#: names them) and the string predicates.
MATCH_OPS = {"eq": 0, "ne": 1, "lt": 2, "le": 3, "gt": 4, "ge": 5, "startswith": 6,
             "endswith": 7, "contains": 8}
cdef enum:
    _EQ, _NE, _LT, _LE, _GT, _GE, _STARTS, _ENDS, _CONTAINS


cdef inline int _compare(const uint8_t* a, const uint8_t* b, Py_ssize_t m) noexcept nogil:
    """memcmp's sign of ``a[:m]`` against ``b[:m]``: short runs compared here,
    without a call."""
    cdef Py_ssize_t j
    if m > 16:
        return memcmp(a, b, <size_t>m)
    for j in range(m):
        if a[j] != b[j]:
            return -1 if a[j] < b[j] else 1
    return 0


cdef inline int _order(const uint8_t* a, Py_ssize_t na, const uint8_t* b,
                       Py_ssize_t nb) noexcept nogil:
    """-1, 0 or 1 as bytes `a` sort before, with or after bytes `b` (for
    UTF-8: code point order, NumPy's order of strings)."""
    cdef int c = _compare(a, b, na if na < nb else nb)
    if c:
        return -1 if c < 0 else 1
    return (na > nb) - (na < nb)


cdef inline bint _holds(const uint8_t* h, Py_ssize_t nh, const uint8_t* nd,
                        Py_ssize_t nn) noexcept nogil:
    """Whether bytes `nd` occur in bytes `h` (always, when `nd` is empty)."""
    if nn == 0:
        return True
    if nn > nh:
        return False
    cdef const uint8_t* p = h
    cdef const uint8_t* last = h + (nh - nn)  # the last place a match may start
    while p <= last:
        p = <const uint8_t*>memchr(p, nd[0], <size_t>(last - p + 1))
        if p == NULL:
            return False
        if _compare(p + 1, nd + 1, nn - 1) == 0:
            return True
        p += 1
    return False


cdef inline bint _test(int code, const uint8_t* s, Py_ssize_t m, const uint8_t* nd,
                       Py_ssize_t nn) noexcept nogil:
    if code == _EQ:
        return m == nn and _compare(s, nd, nn) == 0
    if code == _NE:
        return m != nn or _compare(s, nd, nn) != 0
    if code == _LT:
        return _order(s, m, nd, nn) < 0
    if code == _LE:
        return _order(s, m, nd, nn) <= 0
    if code == _GT:
        return _order(s, m, nd, nn) > 0
    if code == _GE:
        return _order(s, m, nd, nn) >= 0
    if code == _STARTS:
        return m >= nn and _compare(s, nd, nn) == 0
    if code == _ENDS:
        return m >= nn and _compare(s + m - nn, nd, nn) == 0
    return _holds(s, m, nd, nn)


cdef inline uint32_t _length_at(const uint8_t* planes, Py_ssize_t n,
                                Py_ssize_t i) noexcept nogil:
    """Row `i`'s length in the four byte planes of a table of `n` rows."""
    return planes[i] | (<uint32_t>planes[n + i] << 8) | (<uint32_t>planes[2 * n + i] << 16) | \
        (<uint32_t>planes[3 * n + i] << 24)


cdef int64_t _span(const uint8_t* planes, Py_ssize_t n, Py_ssize_t a,
                   Py_ssize_t b) noexcept nogil:
    """The bytes of rows ``a .. b-1`` of a table of `n` rows none of which is
    missing: the sum of their lengths, plane by plane."""
    cdef uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0
    cdef Py_ssize_t i
    for i in range(a, b):
        s0 += planes[i]
    for i in range(a, b):
        s1 += planes[n + i]
    for i in range(a, b):
        s2 += planes[2 * n + i]
    for i in range(a, b):
        s3 += planes[3 * n + i]
    return <int64_t>(s0 + (s1 << 8) + (s2 << 16) + (s3 << 24))


cdef void _match_short(int code, const uint8_t* lengths, Py_ssize_t count,
                       const uint8_t* base, Py_ssize_t size, int64_t pos,
                       const uint8_t* nd, Py_ssize_t nn, uint8_t* res) noexcept nogil:
    """``==``, ``!=`` or ``startswith`` of `count` rows of the lengths given
    (each below 256) starting at ``base + pos``, against a needle of at most 8
    bytes, without a branch on the data: each row's first 8 bytes (fewer at
    the end of the chunk) masked to the needle's length and compared with it
    as one word."""
    cdef uint64_t want = 0, mask = 0, word
    cdef uint8_t ones[8]
    cdef Py_ssize_t r, length
    cdef bint hit
    memset(ones, 0xFF, 8)
    if nn:
        memcpy(&want, nd, <size_t>nn)
        memcpy(&mask, ones, <size_t>nn)
    for r in range(count):
        length = lengths[r]
        word = 0
        if pos + 8 <= size:
            memcpy(&word, base + pos, 8)
        else:
            memcpy(&word, base + pos, <size_t>(size - pos))
        hit = (word & mask) == want
        if code == _STARTS:
            res[r] = hit & (length >= nn)
        else:
            res[r] = (hit & (length == nn)) ^ (code == _NE)
        pos += length


cdef uint64_t _ored(const uint8_t* p, Py_ssize_t n) noexcept nogil:
    """The bytes of ``p[:n]`` or-ed together, 8 at a time (a byte of the
    result is the or of the bytes at its place, modulo 8; the last ones fall
    in its lowest byte)."""
    cdef uint64_t word, seen = 0
    cdef Py_ssize_t i = 0
    while i + 8 <= n:
        memcpy(&word, p + i, 8)
        seen |= word
        i += 8
    while i < n:
        seen |= p[i]
        i += 1
    return seen


cdef inline bint _ascii(const uint8_t* p, Py_ssize_t n) noexcept nogil:
    """Whether no byte of ``p[:n]`` has its high bit set."""
    return (_ored(p, n) & 0x8080808080808080ULL) == 0


cdef inline bint _zeros(const uint8_t* p, Py_ssize_t n) noexcept nogil:
    """Whether every byte of ``p[:n]`` is zero."""
    return _ored(p, n) == 0


def match(const uint8_t[::1] chunk, Py_ssize_t nitems, bint na_ok, str op, needle,
          bint na_result, uint8_t[::1] out, Py_ssize_t first):
    """Test rows ``first .. first + len(out) - 1`` of a decompressed planar
    chunk (docs/format/strings.md) against the UTF-8 string `needle`, into
    `out` (1 where the test holds), straight from the chunk's bytes: no
    string is built, and no table of offsets either (the lengths are read
    from their planes as the rows are tested).

    The chunk's table is validated as :func:`bcolzx._format.vlen.locate`
    validates it (its item count, missing rows only where allowed, the items
    ending where the chunk does), and each row tested is checked to be
    well-formed UTF-8, as :func:`pack` checks it.  The tests compare UTF-8
    bytes, which order as code points do (NumPy's order of strings).

    Parameters
    ----------
    chunk : bytes-like
        The decompressed chunk.
    nitems : int
        The item count the metadata expects, or -1 for any.
    na_ok : bool
        Whether rows may be missing (the dataset has an ``na_object``).
    op : str
        A key of :data:`MATCH_OPS`: ``row <op> needle`` for the comparisons,
        ``op(row, needle)`` for the predicates.
    needle : bytes-like
        The UTF-8 of the string tested against.
    na_result : bool
        What a missing row gives.
    out : uint8 array
        Written in place (a boolean array's ``view(numpy.uint8)``); partly,
        when a row is not well-formed UTF-8.
    first : int
        The first row of the chunk to test.

    Returns
    -------
    int
        -1, or the first row of the chunk whose bytes are not well-formed
        UTF-8.

    Raises
    ------
    ValueError
        For an unknown `op`, a damaged table (the message says which way),
        or rows that are not in the chunk.
    """
    if op not in MATCH_OPS:
        raise ValueError(f"unknown test {op!r}; known: {', '.join(MATCH_OPS)}")
    cdef int code = MATCH_OPS[op]
    cdef const uint8_t[::1] nd_view = needle
    cdef Py_ssize_t size = chunk.shape[0], count = out.shape[0], nn = nd_view.shape[0]
    if size < _HEAD:
        raise ValueError(f"{size} bytes: shorter than its length table")
    cdef uint64_t stated = 0
    cdef int k
    for k in range(8):
        stated |= <uint64_t>chunk[k] << (8 * k)
    if stated > <uint64_t>((size - _HEAD) // 4):
        raise ValueError(f"{size} bytes say they hold {stated} items: more than their "
                         "length table can hold")
    cdef Py_ssize_t n = <Py_ssize_t>stated
    if nitems >= 0 and n != nitems:
        raise ValueError(f"holds {n} items, the metadata calls for {nitems}")
    if first < 0 or first + count > n:
        raise ValueError(f"rows {first}..{first + count} are not in a chunk of {n} rows")
    cdef const uint8_t* base = &chunk[0]
    cdef const uint8_t* planes = base + _HEAD
    cdef const uint8_t* nd = &nd_view[0] if nn else NULL
    cdef uint8_t* res = &out[0] if count else NULL
    cdef int64_t pos = _HEAD + 4 * n, lo = -1, hi = -1, a, b
    cdef uint32_t length
    cdef Py_ssize_t i, r, missing = -1, bad = -1
    cdef bint whole = True, per_row = False, short = False
    with nogil:
        # The whole table: missing rows allowed, the items ending where the
        # chunk does (so that no row below lies outside it).
        if n and memchr(planes + 3 * n, 0xFF, <size_t>n) == NULL:  # no row is missing
            lo = pos + _span(planes, n, 0, first)
            hi = lo + _span(planes, n, first, first + count)
            pos = hi + _span(planes, n, first + count, n)
        else:
            for i in range(n):
                if i == first:
                    lo = pos
                length = _length_at(planes, n, i)
                if length == _NA:
                    if not na_ok:
                        missing = i
                        break
                else:
                    pos += length
                if i == first + count - 1:
                    hi = pos
        if missing < 0 and pos == size and count:
            # The tested rows' bytes, as pack checks them: as a whole, then a
            # row only where it may start or end inside a character.
            whole = _utf8_error(base + lo, hi - lo) < 0
            per_row = not whole or not _ascii(base + lo, hi - lo)
            b = lo
            short = not per_row and nn <= 8 and \
                (code == _EQ or code == _NE or code == _STARTS) and _zeros(planes + n, 3 * n)
            if short:
                # Rows shorter than 256 bytes (one length plane), a needle of
                # at most 8: each row's first 8 bytes compared at once.
                _match_short(code, planes + first, count, base, size, lo, nd, nn, res)
            for r in range(0 if short else count):
                length = _length_at(planes, n, first + r)
                if length == _NA:
                    res[r] = na_result
                    continue
                a, b = b, b + length
                if per_row:
                    if whole:
                        if a < b and (base[a] & 0xC0) == 0x80 or \
                                b < hi and (base[b] & 0xC0) == 0x80:
                            bad = r
                            break
                    elif _utf8_error(base + a, b - a) >= 0:
                        bad = r
                        break
                res[r] = _test(code, base + a, b - a, nd, nn)
    if missing >= 0:
        raise ValueError(f"row {missing} is missing (NA) in a dataset that has no missing "
                         "values")
    if pos != size:
        raise ValueError(f"{size} bytes whose items end at {pos}")
    return first + bad if bad >= 0 else -1


def encode(cnp.ndarray rows, bint na_ok):
    """The chunk holding `rows` (a 1-D StringDType array): the item count, the
    length table as four byte planes, then the UTF-8 items.

    Parameters
    ----------
    rows : numpy.ndarray
        The strings (missing values are NA).
    na_ok : bool
        Whether missing values may be stored (the dataset has an ``na_object``).

    Returns
    -------
    bytes
        The uncompressed chunk (docs/format/strings.md).

    Raises
    ------
    TypeError
        If `rows` is not a 1-D StringDType array.
    ValueError
        For a missing value when `na_ok` is false, or a string of 4 GiB or more.
    MemoryError
        If the chunk cannot be allocated.
    """
    _check_strings(rows, "rows")
    cdef Py_ssize_t n = rows.shape[0], i, k
    cdef PyArray_StringDTypeObject* descr = <PyArray_StringDTypeObject*>cnp.PyArray_DESCR(rows)
    cdef npy_string_allocator* allocator
    cdef npy_static_string s
    cdef int state
    cdef Py_ssize_t total = 0, bad_na = -1, too_long = -1, failed = -1
    with nogil:
        allocator = NpyString_acquire_allocator(descr)
        for i in range(n):
            state = NpyString_load(allocator, _slot(rows, i), &s)
            if state < 0:
                failed = i
                break
            if state == 1:
                if not na_ok:
                    bad_na = i
                    break
                continue
            if s.size >= _NA:
                too_long = i
                break
            total += s.size
        NpyString_release_allocator(allocator)
    if failed >= 0:
        raise MemoryError(f"NumPy could not load string {failed}")
    if bad_na >= 0:
        raise ValueError(f"row {bad_na} is missing (NA), and this array stores no missing "
                         "values (its StringDType has no na_object)")
    if too_long >= 0:
        raise ValueError(f"string {too_long} is 4 GiB or longer, more than a chunk can hold")
    cdef bytes out = PyBytes_FromStringAndSize(NULL, _HEAD + 4 * n + total)
    cdef uint8_t* p = <uint8_t*>PyBytes_AS_STRING(out)
    cdef uint8_t* items = p + _HEAD + 4 * n
    cdef uint64_t count = n
    cdef uint32_t length
    for k in range(8):
        p[k] = (count >> (8 * k)) & 0xFF
    with nogil:
        allocator = NpyString_acquire_allocator(descr)
        for i in range(n):
            state = NpyString_load(allocator, _slot(rows, i), &s)
            if state < 0:
                failed = i
                break
            if state == 1:
                length = _NA
            else:
                length = <uint32_t>s.size
                if s.size:
                    memcpy(items, s.buf, s.size)
                    items += s.size
            for k in range(4):
                p[_HEAD + k * n + i] = (length >> (8 * k)) & 0xFF
        NpyString_release_allocator(allocator)
    if failed >= 0:
        raise MemoryError(f"NumPy could not load string {failed}")
    return out


def bounds(cnp.ndarray rows):
    """The rows holding the smallest and the largest string of `rows` (a 1-D
    StringDType array), compared as UTF-8 bytes (code point order), and
    whether a row is missing (NA).

    Returns
    -------
    tuple
        ``(lo, hi, has_na)``: row numbers, -1 when every row is missing.

    Raises
    ------
    TypeError
        If `rows` is not a 1-D StringDType array.
    MemoryError
        If NumPy cannot load a string.
    """
    _check_strings(rows, "rows")
    cdef Py_ssize_t n = rows.shape[0], i, lo = -1, hi = -1, failed = -1
    cdef PyArray_StringDTypeObject* descr = <PyArray_StringDTypeObject*>cnp.PyArray_DESCR(rows)
    cdef npy_string_allocator* allocator
    cdef npy_static_string s, smin, smax
    cdef int state
    cdef bint has_na = False
    with nogil:
        allocator = NpyString_acquire_allocator(descr)
        for i in range(n):
            state = NpyString_load(allocator, _slot(rows, i), &s)
            if state < 0:
                failed = i
                break
            if state == 1:
                has_na = True
                continue
            if lo < 0:
                lo = i
                hi = i
                smin = s
                smax = s
                continue
            if _less(&s, &smin):
                lo = i
                smin = s
            elif _less(&smax, &s):
                hi = i
                smax = s
        NpyString_release_allocator(allocator)
    if failed >= 0:
        raise MemoryError(f"NumPy could not load string {failed}")
    return lo, hi, has_na


cdef inline bint _less(const npy_static_string* x, const npy_static_string* y) noexcept nogil:
    cdef size_t m = x.size if x.size < y.size else y.size
    cdef int c = memcmp(x.buf, y.buf, m) if m else 0
    return c < 0 or (c == 0 and x.size < y.size)


def planar_offsets(const uint8_t[::1] chunk, Py_ssize_t n, bint na_ok):
    """The absolute offsets and missing rows of a planar chunk of `n` rows
    (docs/format/strings.md), in one pass over its length planes.

    Returns
    -------
    tuple
        ``(offsets, na)``: ``n + 1`` int64 offsets (a missing row spans
        nothing), and uint8 flags of the missing rows or None when none is.
        ``offsets[n]`` is where the items end: the caller compares it with
        the chunk's length.

    Raises
    ------
    ValueError
        If the planes do not fit in the chunk, or a row is missing and
        `na_ok` is false (the message says "missing").
    """
    cdef Py_ssize_t size = chunk.shape[0], i
    if n < 0 or _HEAD + 4 * n > size:
        raise ValueError(f"{n} lengths do not fit in a chunk of {size} bytes")
    offsets = np.empty(n + 1, dtype=np.int64)
    cdef int64_t[::1] o = offsets
    cdef const uint8_t* p = &chunk[0] + _HEAD if size else NULL
    cdef uint32_t length
    cdef int64_t pos = _HEAD + 4 * n
    cdef Py_ssize_t first_na = -1
    o[0] = pos
    with nogil:
        for i in range(n):
            length = p[i] | (<uint32_t>p[n + i] << 8) | (<uint32_t>p[2 * n + i] << 16) | \
                (<uint32_t>p[3 * n + i] << 24)
            if length == _NA:
                if first_na < 0:
                    first_na = i
            else:
                pos += length
            o[i + 1] = pos
    if first_na < 0:
        return offsets, None
    if not na_ok:
        raise ValueError(f"row {first_na} is missing (NA) in a dataset that has no missing "
                         "values")
    na = np.zeros(n, dtype=np.uint8)
    cdef uint8_t[::1] flags = na
    with nogil:
        for i in range(n):
            if (p[i] & p[n + i] & p[2 * n + i] & p[3 * n + i]) == 0xFF:
                flags[i] = 1
    return offsets, na


def na_mask(cnp.ndarray rows):
    """1 for each missing (NA) row of `rows` (a 1-D StringDType array), as uint8.

    Raises
    ------
    TypeError
        If `rows` is not a 1-D StringDType array.
    MemoryError
        If NumPy cannot load a string.
    """
    _check_strings(rows, "rows")
    cdef Py_ssize_t n = rows.shape[0], i, failed = -1
    out = np.zeros(n, dtype=np.uint8)
    cdef uint8_t[::1] flags = out
    cdef PyArray_StringDTypeObject* descr = <PyArray_StringDTypeObject*>cnp.PyArray_DESCR(rows)
    cdef npy_string_allocator* allocator
    cdef npy_static_string s
    cdef int state
    with nogil:
        allocator = NpyString_acquire_allocator(descr)
        for i in range(n):
            state = NpyString_load(allocator, _slot(rows, i), &s)
            if state < 0:
                failed = i
                break
            flags[i] = state == 1
        NpyString_release_allocator(allocator)
    if failed >= 0:
        raise MemoryError(f"NumPy could not load string {failed}")
    return out


def flatten(cnp.ndarray rows):
    """The UTF-8 bytes of `rows` (a 1-D StringDType array) end to end, with
    their offsets and missing rows: what a hash table of variable-length keys
    takes (:class:`bcolzx._ext.groupby.VarBytesTable`).

    Returns
    -------
    tuple
        ``(data, offsets, na)``: a uint8 array, ``len(rows) + 1`` int64
        offsets (a missing row spans nothing), and uint8 flags of the
        missing rows, or None when none is.

    Raises
    ------
    TypeError
        If `rows` is not a 1-D StringDType array.
    MemoryError
        If NumPy cannot load a string.
    """
    _check_strings(rows, "rows")
    cdef Py_ssize_t n = rows.shape[0], i, failed = -1, total = 0
    cdef PyArray_StringDTypeObject* descr = <PyArray_StringDTypeObject*>cnp.PyArray_DESCR(rows)
    cdef npy_string_allocator* allocator
    cdef npy_static_string s
    cdef int state
    cdef bint has_na = False
    offsets = np.empty(n + 1, dtype=np.int64)
    cdef int64_t[::1] o = offsets
    o[0] = 0
    with nogil:
        allocator = NpyString_acquire_allocator(descr)
        for i in range(n):
            state = NpyString_load(allocator, _slot(rows, i), &s)
            if state < 0:
                failed = i
                break
            if state == 1:
                has_na = True
            else:
                total += s.size
            o[i + 1] = total
        NpyString_release_allocator(allocator)
    if failed >= 0:
        raise MemoryError(f"NumPy could not load string {failed}")
    data = np.empty(total, dtype=np.uint8)
    na = np.zeros(n, dtype=np.uint8) if has_na else np.empty(0, dtype=np.uint8)
    cdef uint8_t[::1] d = data
    cdef uint8_t[::1] flags = na
    cdef uint8_t* out = &d[0] if total else NULL
    with nogil:
        allocator = NpyString_acquire_allocator(descr)
        for i in range(n):
            state = NpyString_load(allocator, _slot(rows, i), &s)
            if state < 0:
                failed = i
                break
            if state == 1:
                if not has_na or o[i] != o[i + 1]:
                    failed = i  # changed meanwhile (another thread wrote the array)
                    break
                flags[i] = 1
            elif o[i] + <int64_t>s.size != o[i + 1]:
                failed = i
                break
            elif s.size:
                memcpy(out + o[i], s.buf, s.size)
        NpyString_release_allocator(allocator)
    if failed >= 0:
        raise MemoryError(f"NumPy could not load string {failed} (or it changed while read)")
    return data, offsets, na if has_na else None
