"""A dataset's small metadata files, in C: read whole, looked up, and their seals.

Opening a dataset reads two small sealed JSON files (``meta/storage``,
``meta/sizes``, docs/format/README.md §2c) and asks whether two others exist
(``__rootdirs__``: a table; ``meta/journal``: rows past the commit).
:func:`read_whole` reads a file with the system calls alone, the GIL
released (the checks of ``bcolzx._format.files.read_regular``: a regular
file only, read to its end); :func:`stat_file` asks about a file without
raising for a missing one; :func:`seal_crc` finds a file's seal member and
computes the checksum it must hold, without copying the file, and
:func:`unseal` applies every rule of the seal to a decoded file and takes
its members off; :func:`loads` decodes their JSON as ``json.loads`` does
(leaving to ``json`` what it does not take), :func:`plain_storage` and
:func:`plain_sizes` make the ``Storage`` and ``Sizes`` of the usual files,
:func:`read_plain` does all of it for both files of a usual dataset in one
call, and :func:`column_lengths` reads a table's columns' lengths from their
``meta/sizes``.
What any of them finds wrong is reported by the Python callers
(``_format.files``, ``_format.seal``, ``_format.jsonfile``, ``_format.meta``),
with their messages.
"""

from cpython.buffer cimport PyBuffer_Release
from cpython.bytes cimport PyBytes_FromStringAndSize
from libc.errno cimport errno, EINTR, ENOENT, ENOTDIR
from libc.stdint cimport uint32_t, uint64_t
from libc.stdlib cimport malloc, realloc, free
from libc.string cimport memchr, memcmp, memcpy
from posix.fcntl cimport open as c_open
from posix.stat cimport struct_stat, fstat, stat, S_ISREG
from posix.unistd cimport read as c_read, close as c_close

from bcolzx._ext._buffers cimport get_buffer
from bcolzx._ext.checksum cimport crc32c_update

cdef extern from "Python.h":
    bytes PyUnicode_EncodeFSDefault(object unicode)

import os
from sys import intern as _intern

#: The seal member's key, as it precedes the checksum (``"__crc32c__": N}``).
cdef const char* _KEY = b'"__crc32c__": '
cdef enum:
    _KEYLEN = 14
    _NOGIL_BYTES = 1 << 16  # a checksum over more releases the GIL

#: What :func:`seal_crc` and :func:`unseal` found.
SEALED = 0        # a well-formed seal member ends the file (and, for unseal, it matches)
NO_TAIL = 1       # the file does not end with ``"__crc32c__": N}``
MALFORMED = 2     # it does, but what precedes the member is not ``{`` or ``..., ``
UNSEALED = 3      # unseal: the object has neither seal member
NO_CHECKSUM = 4   # unseal: a uid member without the checksum member
MISMATCH = 5      # unseal: the checksum is not that of the bytes (or of the member read)
BAD_UID = 6       # unseal: the uid member is not 16 lowercase hex digits

#: The seal's members (docs/format/README.md §2c).
cdef str _CRC_KEY = "__crc32c__"
cdef str _UID_KEY = "__uid__"


cdef int _read_fd(int fd, char** out, Py_ssize_t* size, Py_ssize_t expected) noexcept nogil:
    """Read `fd` to its end into a new buffer (*out, freed by the caller); -1 and
    errno on failure.  Reading stops at a short read once `expected` bytes came
    (what fstat saw), and otherwise at end of file, even if the file grew."""
    cdef Py_ssize_t cap = expected + 1 if expected >= 0 else 4096
    cdef Py_ssize_t got = 0
    cdef Py_ssize_t n
    cdef char* buf = <char*>malloc(cap)
    cdef char* grown
    if buf == NULL:
        return -2
    while True:
        if got == cap:
            cap *= 2
            grown = <char*>realloc(buf, cap)
            if grown == NULL:
                free(buf)
                return -2
            buf = grown
        n = c_read(fd, buf + got, cap - got)
        if n < 0:
            if errno == EINTR:
                continue
            free(buf)
            return -1
        if n == 0:
            break
        got += n
        if got < cap and got >= expected:
            break  # a short read of all fstat saw: the end
    out[0] = buf
    size[0] = got
    return 0


cdef bytes _c_path(path):
    """`path` as the bytes of a C string (ValueError for a NUL inside, as ``os``)."""
    cdef bytes bpath
    if type(path) is str:
        bpath = PyUnicode_EncodeFSDefault(path)
    else:
        bpath = os.fsencode(path)
    # (memchr: ``b"\0" in bpath`` raises and clears a TypeError inside, as
    # bytes.__contains__ first tries its argument as an int)
    if memchr(<const char*>bpath, 0, len(bpath)) != NULL:
        raise ValueError("embedded null byte")
    return bpath


cdef int _read_path(const char* cpath, int flags, char** buf, Py_ssize_t* size,
                    struct_stat* st, int* err) noexcept nogil:
    """Open `cpath` with `flags` and, when it is a regular file, read it whole into
    a new buffer (*buf, freed by the caller): 0; 1 when it is not a regular
    file (*st says what it is; nothing read); -1 and *err on failure; -2 when
    the buffer cannot be allocated."""
    cdef int rc = 0
    cdef int fd = c_open(cpath, flags)
    while fd < 0 and errno == EINTR:
        fd = c_open(cpath, flags)
    if fd < 0:
        rc = -1
    elif fstat(fd, st) != 0:
        rc = -1
    elif not S_ISREG(st.st_mode):
        rc = 1
    else:
        rc = _read_fd(fd, buf, size, st.st_size)
    err[0] = errno
    if fd >= 0:
        c_close(fd)
    return rc


def read_whole(path, int flags):
    """The bytes of the file at `path` (a str or bytes path), opened with `flags`.

    Returns
    -------
    (bytes, 0) or (None, int)
        The file's bytes, or, when it is not a regular file (a FIFO, a
        device, a directory), None and its ``st_mode``: nothing is read.

    Raises
    ------
    OSError
        As ``os.open`` (FileNotFoundError...) and ``os.read``, with the path.
    ValueError
        For a path with a NUL character.
    MemoryError
        If the buffer cannot be allocated.
    """
    cdef bytes bpath = _c_path(path)
    cdef const char* cpath = bpath
    cdef int rc, err = 0
    cdef struct_stat st
    cdef char* buf = NULL
    cdef Py_ssize_t size = 0
    with nogil:
        rc = _read_path(cpath, flags, &buf, &size, &st, &err)
    if rc == -2:
        raise MemoryError(f"reading {path!r}")
    if rc == -1:  # OSError picks the subclass of the errno (FileNotFoundError...)
        raise OSError(err, os.strerror(err), path)
    if rc == 1:
        return None, st.st_mode
    try:
        return PyBytes_FromStringAndSize(buf, size), 0
    finally:
        free(buf)


def stat_file(path):
    """``os.stat(path)`` as ``(st_mode, st_ino, st_size, st_mtime_ns)``, or None
    when nothing is at `path` (or a component of it is not a directory).

    Raises
    ------
    OSError
        For any other failure (permission...), with the path.
    ValueError
        For a path with a NUL character.
    """
    cdef bytes bpath = _c_path(path)
    cdef const char* cpath = bpath
    cdef struct_stat st
    cdef int rc, err
    with nogil:
        rc = stat(cpath, &st)
        err = errno
    if rc == 0:
        return (st.st_mode, st.st_ino, st.st_size,
                <long long>st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec)
    if err == ENOENT or err == ENOTDIR:
        return None
    raise OSError(err, os.strerror(err), path)


cdef Py_ssize_t _rfind_key(const unsigned char* p, Py_ssize_t n) noexcept nogil:
    """Where the last ``"__crc32c__": `` starts in p[:n], or -1."""
    cdef Py_ssize_t i = n - _KEYLEN
    while i >= 0:
        if p[i] == c'"' and memcmp(p + i, _KEY, _KEYLEN) == 0:
            return i
        i -= 1
    return -1


def seal_crc(raw, uint32_t name_crc):
    """The seal member ending a sealed JSON file, and the checksum it must hold.

    Parameters
    ----------
    raw : bytes-like
        The file's bytes.
    name_crc : int
        The CRC-32C of the file's name and a NUL byte (where the seal's
        checksum starts, docs/format/README.md §2c).

    Returns
    -------
    (int, int, int)
        ``(SEALED, stored, computed)``: the number the member holds and the
        CRC-32C of the name and of the file without the member; or
        ``(NO_TAIL, 0, 0)`` / ``(MALFORMED, 0, 0)`` (see the module's constants).

    Raises
    ------
    TypeError, ValueError
        If `raw` is not a C-contiguous buffer.
    """
    cdef Py_buffer view
    get_buffer(raw, &view, False, "raw")
    try:
        return _seal_crc(<const unsigned char*>view.buf, view.len, name_crc)
    finally:
        PyBuffer_Release(&view)


def unseal(raw, dict obj, uint32_t name_crc):
    """Check the seal of a sealed JSON file's bytes `raw`, decoded as `obj`, and
    take its members off `obj` (in place) when it matches.

    Returns
    -------
    (int, int, int, object)
        ``(status, stored, computed, uid)``: :data:`SEALED` (the members are
        taken off; `uid` is the dataset's, or None) or :data:`UNSEALED` (no
        seal member), else what is wrong (:data:`NO_CHECKSUM`,
        :data:`NO_TAIL`, :data:`MALFORMED`, :data:`MISMATCH`: `stored` and
        `computed` say how; :data:`BAD_UID`: `uid` is the value found), and
        `obj` is left as it was.

    Raises
    ------
    TypeError, ValueError
        If `raw` is not a C-contiguous buffer.
    """
    cdef Py_buffer view
    if _CRC_KEY not in obj:
        return (NO_CHECKSUM if _UID_KEY in obj else UNSEALED), 0, 0, None
    get_buffer(raw, &view, False, "raw")
    try:
        return _unseal(<const unsigned char*>view.buf, view.len, obj, name_crc)
    finally:
        PyBuffer_Release(&view)


cdef tuple _unseal(const unsigned char* p, Py_ssize_t n, dict obj, uint32_t name_crc):
    """:func:`unseal` of the `n` bytes at `p`, for an `obj` holding the checksum member."""
    found, stored, crc = _seal_crc(p, n, name_crc)
    if found != SEALED:
        return found, 0, 0, None
    if crc != stored or obj[_CRC_KEY] != stored:
        return MISMATCH, stored, crc, None
    uid = obj.get(_UID_KEY)
    if uid is not None and not _is_uid(uid):
        return BAD_UID, stored, crc, uid
    del obj[_CRC_KEY]
    obj.pop(_UID_KEY, None)  # (a null uid too)
    return SEALED, stored, crc, uid


cdef bint _is_uid(object uid):
    """Whether `uid` is a dataset uid: a str of 16 lowercase hex digits."""
    cdef Py_UCS4 c
    if not isinstance(uid, str) or len(<str>uid) != 16:
        return False
    for c in <str>uid:
        if not (c'0' <= c <= c'9' or c'a' <= c <= c'f'):
            return False
    return True


cdef tuple _seal_crc(const unsigned char* p, Py_ssize_t n, uint32_t name_crc):
    cdef Py_ssize_t at, i, digits
    cdef uint64_t stored = 0
    cdef uint32_t crc
    cdef unsigned char close = c'}'
    # Only the last occurrence of the key can run to the end of the file.
    at = _rfind_key(p, n)
    if at < 0:
        return NO_TAIL, 0, 0
    i = at + _KEYLEN
    # "__crc32c__": (0|[1-9][0-9]{0,9})}  and nothing after it
    digits = 0
    while i < n and c'0' <= p[i] <= c'9':
        stored = stored * 10 + (p[i] - c'0')
        i += 1
        digits += 1
        if digits > 10:
            return NO_TAIL, 0, 0
    if digits == 0 or (digits > 1 and p[at + _KEYLEN] == c'0') or i != n - 1 or p[i] != c'}':
        return NO_TAIL, 0, 0
    # What precedes the member: "{" alone, or the object's other members and ", ".
    if at == 1 and p[0] == c'{':
        crc = crc32c_update(name_crc, <const unsigned char*>b"{}", 2)
    elif at >= 2 and p[at - 2] == c',' and p[at - 1] == c' ':
        if at > _NOGIL_BYTES:
            with nogil:
                crc = crc32c_update(name_crc, p, at - 2)
        else:
            crc = crc32c_update(name_crc, p, at - 2)
        crc = crc32c_update(crc, &close, 1)
    else:
        return MALFORMED, 0, 0
    return SEALED, stored, crc


# -- JSON of the metadata files -------------------------------------------------
#
# The metadata files are small JSON objects written by ``json.dumps``: strings
# without escapes (ASCII names, dtypes, codecs), integers, a few floats.
# :func:`loads` decodes what it can of JSON (RFC 8259) exactly as ``json.loads``
# would, and gives up on the rest (escapes in strings, NaN and infinities,
# nesting deeper than _MAX_DEPTH, anything that is not JSON), which the caller
# then hands to ``json`` (for its value, or its error message).

#: What :func:`loads` returns for a document it leaves to ``json``.
UNPARSED = object()
cdef object _UNPARSED = UNPARSED

cdef enum:
    _MAX_DEPTH = 256    # json's own limit is the interpreter's recursion limit
    _MAX_INT_DIGITS = 18  # fits an int64: no overflow to check
    _MAX_NUMBER = 64    # characters of a float handed to the C parser

cdef extern from "Python.h":
    double PyOS_string_to_double(const char* s, char** endptr, void* overflow_exception) \
        except? -1.0


cdef struct _Cursor:
    const unsigned char* p
    Py_ssize_t n
    Py_ssize_t i


cdef inline void _skip_ws(_Cursor* c) noexcept:
    cdef unsigned char b
    while c.i < c.n:
        b = c.p[c.i]
        if b != c' ' and b != c'\n' and b != c'\r' and b != c'\t':
            return
        c.i += 1


def loads(raw):
    """The JSON value in the UTF-8 bytes `raw`, as ``json.loads(raw)`` decodes
    it, or :data:`UNPARSED` for a document this parser leaves to ``json``
    (anything it would not decode to the same value, and anything invalid).

    Raises
    ------
    TypeError, ValueError
        If `raw` is not a C-contiguous buffer.
    """
    cdef Py_buffer view
    get_buffer(raw, &view, False, "raw")
    try:
        return _loads(<const unsigned char*>view.buf, view.len)
    finally:
        PyBuffer_Release(&view)


cdef object _loads(const unsigned char* p, Py_ssize_t n):
    """:func:`loads` of the `n` bytes at `p`."""
    cdef _Cursor c
    c.p = p
    c.n = n
    c.i = 0
    _skip_ws(&c)
    value = _value(&c, 0)
    if value is not _UNPARSED:
        _skip_ws(&c)
        if c.i != c.n:  # more after the value: json says "Extra data"
            return _UNPARSED
    return value


cdef object _value(_Cursor* c, int depth):
    cdef unsigned char b
    if c.i >= c.n:
        return _UNPARSED
    b = c.p[c.i]
    if b == c'"':
        return _string(c)
    if b == c'{':
        return _object(c, depth + 1)
    if b == c'[':
        return _array(c, depth + 1)
    if b == c'-' or c'0' <= b <= c'9':
        return _number(c)
    if _literal(c, b"true", 4):
        return True
    if _literal(c, b"false", 5):
        return False
    if _literal(c, b"null", 4):
        return None
    return _UNPARSED


cdef inline bint _literal(_Cursor* c, const char* word, Py_ssize_t k) noexcept:
    if c.n - c.i >= k and memcmp(c.p + c.i, word, k) == 0:
        c.i += k
        return True
    return False


# What each byte is inside a JSON string: itself (0), its end (1), an escape
# or a control character (2: left to json), or part of a non-ASCII character (3).
cdef unsigned char _IN_STRING[256]
for _b in range(256):
    _IN_STRING[_b] = 1 if _b == 0x22 else 2 if _b == 0x5C or _b < 0x20 else 3 if _b >= 0x80 \
        else 0

# Member names seen before, as the str made of their bytes then (interned: its
# hash is computed once): a file's names are a handful of the same few, and
# making each anew was most of the cost of decoding one.  A name is looked up
# by its bytes; at most _NAMES of them (of up to _NAME_BYTES) are kept.
cdef enum:
    _NAMES = 64
    _NAME_BYTES = 32
cdef list _names = []  # (bytes, str) pairs, which own what _name_data points to
cdef const char* _name_data[_NAMES]
cdef Py_ssize_t _name_len[_NAMES]
cdef Py_ssize_t _nnames = 0


cdef object _name(const unsigned char* p, Py_ssize_t n):
    """The ASCII member name of `n` bytes at `p`, as a str."""
    global _nnames
    cdef Py_ssize_t k
    cdef bytes raw
    for k in range(_nnames):
        if _name_len[k] == n and memcmp(_name_data[k], p, n) == 0:
            return (<tuple>_names[k])[1]
    raw = (<const char*>p)[:n]
    name = _intern(raw.decode("ascii"))
    if _nnames < _NAMES and n <= _NAME_BYTES:
        _names.append((raw, name))
        _name_data[_nnames] = raw
        _name_len[_nnames] = n
        _nnames += 1
    return name


cdef object _string(_Cursor* c, bint name=False):
    """A string without escapes or control characters (json's other cases); a
    member's `name` is made once (:func:`_name`)."""
    cdef Py_ssize_t start = c.i + 1
    cdef Py_ssize_t i = start
    cdef unsigned char kind
    cdef bint ascii = True
    while i < c.n:
        kind = _IN_STRING[c.p[i]]
        if kind:
            if kind == 1:
                break
            if kind == 2:
                return _UNPARSED
            ascii = False
        i += 1
    else:
        return _UNPARSED  # unterminated
    c.i = i + 1
    if ascii:
        if name:
            return _name(c.p + start, i - start)
        return (<const char*>c.p + start)[:i - start].decode("ascii")
    try:
        return (<const char*>c.p + start)[:i - start].decode("utf-8")
    except UnicodeDecodeError:  # json's decoding of the whole document says what is wrong
        return _UNPARSED


cdef object _number(_Cursor* c):
    """-?(0|[1-9][0-9]*)(\\.[0-9]+)?([eE][+-]?[0-9]+)?  as json reads it: an int
    without a fraction or an exponent, else a float."""
    cdef Py_ssize_t start = c.i
    cdef Py_ssize_t i = start
    cdef Py_ssize_t digits
    cdef bint negative = False
    cdef bint is_float = False
    cdef long long value = 0
    cdef char text[_MAX_NUMBER + 1]
    cdef char* end
    cdef double d
    if c.p[i] == c'-':
        negative = True
        i += 1
    if i >= c.n or not c'0' <= c.p[i] <= c'9':
        return _UNPARSED  # "-Infinity", or not a number
    if c.p[i] == c'0':
        i += 1
        if i < c.n and c'0' <= c.p[i] <= c'9':
            return _UNPARSED  # a leading zero
        digits = 1
    else:
        digits = 0
        while i < c.n and c'0' <= c.p[i] <= c'9':
            if digits < _MAX_INT_DIGITS:
                value = value * 10 + (c.p[i] - c'0')
            digits += 1
            i += 1
    if i < c.n and c.p[i] == c'.':
        is_float = True
        i += 1
        if i >= c.n or not c'0' <= c.p[i] <= c'9':
            return _UNPARSED
        while i < c.n and c'0' <= c.p[i] <= c'9':
            i += 1
    if i < c.n and (c.p[i] == c'e' or c.p[i] == c'E'):
        is_float = True
        i += 1
        if i < c.n and (c.p[i] == c'+' or c.p[i] == c'-'):
            i += 1
        if i >= c.n or not c'0' <= c.p[i] <= c'9':
            return _UNPARSED
        while i < c.n and c'0' <= c.p[i] <= c'9':
            i += 1
    if not is_float:
        if digits > _MAX_INT_DIGITS:
            return _UNPARSED  # json's int() (and its limit on digits)
        c.i = i
        return -value if negative else value
    if i - start > _MAX_NUMBER:
        return _UNPARSED
    memcpy(text, c.p + start, i - start)
    text[i - start] = 0
    d = PyOS_string_to_double(text, &end, NULL)  # float()'s conversion, as json's
    if end != text + (i - start):
        return _UNPARSED
    c.i = i
    return d


cdef int _enter(_Cursor* c, int depth, unsigned char close) noexcept:
    """Past a container's opening bracket: 1 if it closes at once, 0 if members
    follow, -1 when nested too deep."""
    if depth > _MAX_DEPTH:
        return -1
    c.i += 1
    _skip_ws(c)
    if c.i < c.n and c.p[c.i] == close:
        c.i += 1
        return 1
    return 0


cdef int _after_member(_Cursor* c, unsigned char close) noexcept:
    """Past what follows a container's member: 1 at its end, 0 if another
    follows, -1 for anything else."""
    _skip_ws(c)
    if c.i >= c.n:
        return -1
    if c.p[c.i] == c',':
        c.i += 1
        _skip_ws(c)
        return 0
    if c.p[c.i] == close:
        c.i += 1
        return 1
    return -1


cdef object _array(_Cursor* c, int depth):
    cdef list out = []
    cdef int state = _enter(c, depth, c']')
    while state == 0:
        item = _value(c, depth)
        if item is _UNPARSED:
            return _UNPARSED
        out.append(item)
        state = _after_member(c, c']')
    return out if state == 1 else _UNPARSED


cdef object _object(_Cursor* c, int depth):
    cdef dict out = {}
    cdef int state = _enter(c, depth, c'}')
    while state == 0:
        if c.i >= c.n or c.p[c.i] != c'"':
            return _UNPARSED
        key = _string(c, True)
        if key is _UNPARSED:
            return _UNPARSED
        _skip_ws(c)
        if c.i >= c.n or c.p[c.i] != c':':
            return _UNPARSED
        c.i += 1
        _skip_ws(c)
        item = _value(c, depth)
        if item is _UNPARSED:
            return _UNPARSED
        out[key] = item  # a repeated key: the last value, in the first's place (as json)
        state = _after_member(c, c'}')
    return out if state == 1 else _UNPARSED


# -- meta/storage and meta/sizes of the usual kind ---------------------------------
#
# The checks of ``Storage.from_json`` and ``Sizes.from_json`` (``_format/meta.py``)
# for the files nearly every dataset has: a fixed-size numeric dtype named by a
# string and a numeric default, or strings (StringDType, no missing value) and
# a str default; every number a JSON integer.  Anything else (and anything
# those checks would refuse) is left to them: these return None, and the Python
# decoding, the definition, says what is wrong.

cdef object _new = object.__new__


cdef inline bint _count(object value) noexcept:
    """A JSON integer >= 0 (never a bool, whose type is not int)."""
    return type(value) is int and value >= 0


def plain_storage(dict obj, object seal, tuple known):
    """The ``Storage`` of a ``meta/storage`` object `obj` of the usual kind read
    with `seal`, made as ``Storage.from_json`` makes it, or None for any other
    (then decoded, or refused, by ``Storage.from_json``).

    `known` is ``(storage class, cparams class, numpy.dtype, numpy.array,
    format name, newest version, parts version, codecs, checksums, bytedelta
    modes, most chunks per superchunk, the StringDType maker, the first
    version with variable-length items)``.  The usual kinds: a fixed-size
    numeric dtype, and strings (StringDType) without a missing value.
    """
    return _plain_storage(obj, seal, known)


cdef object _plain_storage(dict obj, object seal, tuple known):
    cdef object storage_cls, cparams_cls, dtype_of, array, name, newest, parted, codecs, \
        checksums, modes, most, string_dtype, vlen_version
    (storage_cls, cparams_cls, dtype_of, array, name, newest, parted, codecs, checksums,
     modes, most, string_dtype, vlen_version) = known
    if seal is None or obj.get("format") != name:
        return None
    version = obj.get("format_version")
    if type(version) is not int or not 1 <= version <= newest:
        return None
    vlen = obj.get("vlen")
    if obj.get("na_object") is not None or \
            vlen is not None and (vlen != "utf8" or version < vlen_version):
        return None
    cp = obj.get("cparams")
    if type(cp) is not dict:
        return None
    clevel, shuffle = (<dict>cp).get("clevel", 5), (<dict>cp).get("shuffle", 1)
    cname, quantize = (<dict>cp).get("cname", "blosclz"), (<dict>cp).get("quantize", 0)
    if not (_count(clevel) and clevel <= 9 and _count(shuffle) and shuffle <= 2
            and _count(quantize) and type(cname) is str and cname in codecs):
        return None
    chunklen, cps = obj.get("chunklen"), obj.get("chunks_per_superchunk")
    expectedlen, blocksize = obj.get("expectedlen", 0), obj.get("blocksize", 0)
    checksum, bytedelta = obj.get("checksum"), obj.get("bytedelta", "off")
    if not (_count(chunklen) and chunklen >= 1 and _count(cps) and 1 <= cps <= most
            and type(expectedlen) is int and _count(blocksize)
            and type(checksum) is str and checksum in checksums
            and type(bytedelta) is str and bytedelta in modes):
        return None
    raw, dflt = obj.get("dtype"), obj.get("dflt", 0)
    if vlen is not None:  # strings: StringDType ("T"), a str default
        if raw != "T" or type(dflt) is not str:
            return None
        try:
            dtype = string_dtype()
        except TypeError:  # NumPy 1
            return None
        dflt = array(dflt, dtype=dtype)
    else:
        if type(raw) is not str or not (type(dflt) is float or type(dflt) is int
                                        or type(dflt) is bool):
            return None
        try:
            dtype = dtype_of(raw)
        except (TypeError, ValueError):
            return None
        if dtype.hasobject or dtype.kind not in ("b", "i", "u", "f", "c"):
            return None
        try:
            dflt = array(dflt, dtype=dtype).reshape(())
        except (TypeError, ValueError, OverflowError):
            return None
    cparams = _new(cparams_cls)
    cparams.__dict__.update({"clevel": clevel, "shuffle": shuffle, "cname": cname,
                             "quantize": quantize})
    out = _new(storage_cls)
    out.__dict__.update({
        "dtype": dtype, "chunklen": chunklen, "cparams": cparams, "expectedlen": expectedlen,
        "dflt": dflt, "chunks_per_superchunk": cps, "checksum": checksum,
        "blocksize": blocksize, "bytedelta": bytedelta, "vlen": vlen,
        "uid": seal[1], "sealed": seal[0], "parted": version >= parted})
    return out


def plain_sizes(dict obj, object sizes_cls):
    """The ``Sizes`` of a ``meta/sizes`` object `obj` without parts, made as
    ``Sizes.from_json`` makes it, or None for any other (then decoded, or
    refused, by ``Sizes.from_json``)."""
    return _plain_sizes(obj, sizes_cls)


cdef object _plain_sizes(dict obj, object sizes_cls):
    shape = obj.get("shape")
    if type(shape) is not list or not shape or "parts" in obj:
        return None
    for value in <list>shape:
        if not _count(value):
            return None
    gens = obj.get("generations")
    if gens is None:
        if "generations" in obj:
            return None
        gens = ()
    elif type(gens) is not list:
        return None
    for value in gens:
        if type(value) is not int or value < 1:
            return None
    nbytes, cbytes = obj.get("nbytes", 0), obj.get("cbytes", 0)
    epoch, cut = obj.get("epoch", 0), obj.get("cut", 0)
    if not (_count(nbytes) and _count(cbytes) and _count(epoch) and _count(cut)):
        return None
    out = _new(sizes_cls)
    out.__dict__.update({"nbytes": nbytes, "cbytes": cbytes, "epoch": epoch, "cut": cut,
                         "shape": tuple(shape), "generations": tuple(gens), "parts": ()})
    return out


# -- the two files of a usual dataset, read and checked at once ---------------------
#
# Opening a dataset reads ``meta/storage`` and then ``meta/sizes``: two files
# read whole, two JSON documents, two seals checked against each other, a
# ``Storage`` and a ``Sizes``.  :func:`read_plain` does all of that in one
# call for the usual dataset (both files sealed with one uid, of the kinds
# _plain_storage and _plain_sizes take), with the same checks as the Python
# path; for anything else, a failure included, it hands back the bytes of
# ``meta/storage`` (None if they could not be read), which the Python path
# decodes, reading ``meta/sizes`` itself, and accepts or says what is wrong.

#: The token of a non-finite float in a sealed file (``_format/jsonfile.py``).
cdef const char* _FLOAT_TOKEN = b'"$float"'


cdef extern from "string.h":  # (a GNU extension: Python.h defines _GNU_SOURCE)
    void* memmem(const void* haystack, size_t n, const void* needle, size_t k) nogil


cdef inline bint _has_float_token(const unsigned char* p, Py_ssize_t n) noexcept:
    return memmem(p, n, _FLOAT_TOKEN, 8) != NULL


cdef bytes _read_file(bytes path, int flags):
    """The bytes of the regular file at `path`, or None when it cannot be read
    (:func:`read_whole` without its exceptions)."""
    cdef const char* cpath = path
    cdef int rc, err
    cdef struct_stat st
    cdef char* buf = NULL
    cdef Py_ssize_t size = 0
    with nogil:
        rc = _read_path(cpath, flags, &buf, &size, &st, &err)
    if rc != 0:
        return None
    try:
        return PyBytes_FromStringAndSize(buf, size)
    finally:
        free(buf)


cdef object _sealed_object(bytes raw, uint32_t name_crc, bint with_uid=True):
    """``(object, uid)`` of `raw` when it holds a sealed JSON object (with a uid,
    unless not `with_uid`; its members taken off) and no non-finite float,
    else None."""
    cdef const unsigned char* p = <const unsigned char*><const char*>raw
    cdef Py_ssize_t size = len(raw)
    if _has_float_token(p, size):
        return None
    obj = _loads(p, size)
    if type(obj) is not dict or _CRC_KEY not in <dict>obj:
        return None
    found, _, _, uid = _unseal(p, size, <dict>obj, name_crc)
    if found != SEALED or (with_uid and uid is None):
        return None
    return obj, uid


def read_plain(rootdir, int flags, uint32_t storage_crc, uint32_t sizes_crc, tuple known,
               object sizes_cls):
    """The ``(Storage, Sizes)`` of the dataset directory `rootdir` (a str) when it
    is of the usual kind, read and checked in one call; else its ``meta/storage``'s
    bytes, or None.

    The usual kind: ``meta/storage`` and ``meta/sizes`` are regular files,
    sealed with the same uid (read with `flags`; `storage_crc` and
    `sizes_crc` start their seals' checksums), ``meta/storage`` is one that
    :func:`plain_storage` makes (with `known`) and ``meta/sizes`` one that
    :func:`plain_sizes` makes (with `sizes_cls`).  For any other dataset,
    and for anything that fails (a missing file...), the bytes of its
    ``meta/storage`` when that could be read as a regular file, else None:
    the caller then decodes them (or reads it) the long way, which takes the
    dataset or says what is wrong.
    """
    if type(rootdir) is not str:
        return None
    cdef bytes prefix = PyUnicode_EncodeFSDefault(rootdir)
    if memchr(<const char*>prefix, 0, len(prefix)) != NULL:
        return None
    raw = _read_file(prefix + b"/meta/storage", flags)
    if raw is None:
        return None
    got = _sealed_object(raw, storage_crc)
    if got is None:
        return raw
    obj, uid = got
    storage = _plain_storage(obj, (True, uid), known)
    if storage is None:
        return raw
    sizes_raw = _read_file(prefix + b"/meta/sizes", flags)
    if sizes_raw is None:
        return raw
    got = _sealed_object(sizes_raw, sizes_crc)
    if got is None or got[1] != uid:
        return raw
    sizes = _plain_sizes(got[0], sizes_cls)
    if sizes is None:
        return raw
    return storage, sizes


def column_lengths(rootdir, list names, int flags, uint32_t sizes_crc):
    """Each column's committed length, ``{name: rows}``, read from its sealed
    ``meta/sizes`` alone, when that is the whole story: every column of the
    table at `rootdir` (a str) has a sealed ``meta/sizes`` (read with
    `flags`; `sizes_crc` starts its seal's checksum) whose ``shape`` starts
    with a JSON integer >= 0, no non-empty append journal, and all have the
    same length.  None otherwise, and for anything that fails: the caller
    then opens every column, which checks everything and says what is wrong.
    """
    cdef bytes prefix, base
    cdef const char* cpath
    cdef struct_stat st
    cdef int rc, err
    cdef dict lengths = {}
    if type(rootdir) is not str:
        return None
    prefix = PyUnicode_EncodeFSDefault(rootdir) + b"/"
    for name in names:
        if type(name) is not str:
            return None
        base = prefix + PyUnicode_EncodeFSDefault(name)
        if memchr(<const char*>base, 0, len(base)) != NULL:
            return None
        journal = base + b"/meta/journal"
        cpath = journal
        with nogil:
            rc = stat(cpath, &st)
            err = errno
        if rc == 0:
            if st.st_size != 0:
                return None  # rows past the commit: the column knows its length
        elif err != ENOENT and err != ENOTDIR:
            return None
        raw = _read_file(base + b"/meta/sizes", flags)
        if raw is None:
            return None
        got = _sealed_object(raw, sizes_crc, False)
        if got is None:
            return None
        shape = (<dict>got[0]).get("shape")
        if type(shape) is not list or not shape:
            return None
        rows = (<list>shape)[0]
        if type(rows) is not int or rows < 0:
            return None
        lengths[name] = rows
    if len(set(lengths.values())) > 1:
        return None
    return lengths
