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
its members off.  What any of them finds wrong is reported by the Python
callers (``_format.files``, ``_format.seal``), with their messages.
"""

from cpython.buffer cimport PyBuffer_Release
from cpython.bytes cimport PyBytes_FromStringAndSize
from libc.errno cimport errno, EINTR, ENOENT, ENOTDIR
from libc.stdint cimport uint32_t, uint64_t
from libc.stdlib cimport malloc, realloc, free
from libc.string cimport memcmp
from posix.fcntl cimport open as c_open
from posix.stat cimport struct_stat, fstat, stat, S_ISREG
from posix.unistd cimport read as c_read, close as c_close

from bcolzx._ext._buffers cimport get_buffer
from bcolzx._ext.checksum cimport crc32c_update

cdef extern from "Python.h":
    bytes PyUnicode_EncodeFSDefault(object unicode)

import os

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
    if b"\0" in bpath:
        raise ValueError("embedded null byte")
    return bpath


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
    cdef int fd, rc = 0, err = 0
    cdef struct_stat st
    cdef char* buf = NULL
    cdef Py_ssize_t size = 0
    cdef bint regular = True
    with nogil:
        fd = c_open(cpath, flags)
        while fd < 0 and errno == EINTR:
            fd = c_open(cpath, flags)
        if fd < 0:
            rc = -1
        elif fstat(fd, &st) != 0:
            rc = -1
        elif not S_ISREG(st.st_mode):
            regular = False
        else:
            rc = _read_fd(fd, &buf, &size, st.st_size)
        err = errno
        if fd >= 0:
            c_close(fd)
    if rc == -2:
        raise MemoryError(f"reading {path!r}")
    if rc != 0:  # OSError picks the subclass of the errno (FileNotFoundError...)
        raise OSError(err, os.strerror(err), path)
    if not regular:
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
        found, stored, crc = _seal_crc(<const unsigned char*>view.buf, view.len, name_crc)
    finally:
        PyBuffer_Release(&view)
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
