"""The bcolzx exception hierarchy.

Every exception bcolzx raises on purpose derives from :class:`BcolzxError`
and also from the builtin exception that legacy bcolz code (or any Python
caller) would catch for the same situation: corrupt data is a
:class:`ValueError`, a write to a read-only dataset is a
:class:`PermissionError` (hence an ``IOError``/``OSError``), and so on.
Plain argument mistakes raise the plain builtins (:class:`TypeError`,
:class:`ValueError`, :class:`IndexError`).

:func:`blosc2_error` is the one place where C-Blosc2 return codes become
exceptions.
"""

from __future__ import annotations

import errno

__all__ = [
    "BcolzxError",
    "CodecError",
    "CorruptDataError",
    "ChecksumError",
    "TruncatedDataError",
    "UnsupportedFormatError",
    "PickleNotAllowedError",
    "LegacyFormatError",
    "ReadOnlyError",
    "LockedError",
    "UnsafeFileError",
    "ConcurrentModificationError",
    "BufferTooSmallError",
    "BcolzxMemoryError",
    "InvalidParameterError",
    "UndefinedNameError",
    "DatasetNotFoundError",
    "RemoteError",
    "RemoteTimeoutError",
    "AppendOnlyError",
    "NoColumnsError",
    "MaskLengthError",
    "ColumnNameError",
    "ExpressionError",
    "RowConditionError",
    "blosc2_error",
]


class BcolzxError(Exception):
    """Root of every exception raised by bcolzx.

    Attributes
    ----------
    code : int or None
        The C-Blosc2 return code behind the error, when there is one.
    """

    code: int | None = None


class CodecError(BcolzxError, RuntimeError):
    """C-Blosc2 failed for a reason that is neither bad input nor bad data."""


class InvalidParameterError(BcolzxError, ValueError):
    """C-Blosc2 rejected a parameter passed through from the caller."""


class CorruptDataError(BcolzxError, ValueError):
    """Stored data is damaged: it cannot be decoded or fails a check.

    Parameters
    ----------
    message : str
        What is wrong.
    path : str, optional
        The file holding the damaged data, when known.
    chunk : int, optional
        The number of the damaged chunk, when known.
    code : int, optional
        The C-Blosc2 return code, when the damage was found by C-Blosc2.
    """

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        chunk: int | None = None,
        code: int | None = None,
    ) -> None:
        where = []
        if path is not None:
            where.append(f"file {path!s}")
        if chunk is not None:
            where.append(f"chunk {chunk}")
        full = f"{message} ({', '.join(where)})" if where else message
        super().__init__(full)
        self.path = path
        self.chunk = chunk
        self.code = code


class ChecksumError(CorruptDataError):
    """A stored checksum does not match the data it protects."""


class TruncatedDataError(CorruptDataError):
    """Stored data ends before its header says it should."""


class UnsupportedFormatError(BcolzxError, ValueError):
    """Data written in a format (or format version) this bcolzx cannot read."""


class PickleNotAllowedError(UnsupportedFormatError, TypeError):
    """Python objects (object dtype) would be pickled or unpickled, and that is not allowed.

    Object-dtype carrays and ctable columns store each value with
    :mod:`pickle`, and unpickling can run any code the data names.  As
    ``numpy.load(allow_pickle=False)`` does, bcolzx refuses to pickle or
    unpickle unless the caller opts in: ``allow_pickle=True`` on the call
    (``carray``, ``ctable``, ``open``, ``fromiter``, ``walk``...) or
    ``bcolzx.defaults.allow_pickle = True`` for the process.  Raised before
    any byte is unpickled.

    Both an :class:`UnsupportedFormatError` (so a :class:`ValueError`, as
    NumPy's own refusal) and a :class:`TypeError`: until object dtype was
    supported, bcolzx refused new object data with ``TypeError`` and legacy
    object directories with ``UnsupportedFormatError``, and code written
    against either keeps catching the refusal (as ``numpy.exceptions.AxisError``
    is both a ``ValueError`` and an ``IndexError``).

    Parameters
    ----------
    action : str
        What was refused, e.g. ``"reading the values of an object carray"``.
    path : str, optional
        The dataset, when there is one.
    """

    def __init__(self, action: str, path: str | None = None) -> None:
        where = f" ({path})" if path is not None else ""
        super().__init__(
            f"{action}{where} needs pickle, which can run arbitrary code when data is read: "
            "pass allow_pickle=True or set bcolzx.defaults.allow_pickle = True if you trust "
            "the data (docs/migration.md, 'Object dtype')")
        self.path = path


class LegacyFormatError(UnsupportedFormatError, TypeError):
    """Data that a legacy bcolz (v1) directory cannot hold, such as
    variable-length strings or bytes (NumPy's StringDType).

    Raised before anything is written.  Legacy bcolz stored text only as
    fixed-width ``S``/``U`` items: store the column fixed-width (for
    :func:`bcolzx.fromdataframe`, ``strings="fixed"``) or use a bcolzx-format
    table.  Both an :class:`UnsupportedFormatError` (a :class:`ValueError`)
    and a :class:`TypeError`, which legacy bcolz raised for a dtype it could
    not store.
    """


class ReadOnlyError(BcolzxError, PermissionError):
    """A write was attempted on data opened read-only (mode ``'r'``)."""


class LockedError(BcolzxError, BlockingIOError):
    """Another writer holds the dataset's write lock.

    A :class:`BlockingIOError` (an ``OSError``/``IOError`` with errno
    ``EAGAIN``, as h5py reports a locked file), so that legacy code catching
    ``IOError`` around a write keeps catching it.

    Parameters
    ----------
    rootdir : str
        The dataset directory.
    pid : int, optional
        The holder's process id, as it recorded it in the lock file.
    host : str, optional
        The holder's host name, as recorded.
    waited : float, optional
        Seconds spent waiting for the lock before giving up.
    same_process : bool
        The holder is another object of this very process.
    """

    def __init__(self, rootdir: str, *, pid: int | None = None, host: str | None = None,
                 waited: float | None = None, same_process: bool = False) -> None:
        if same_process:
            who = f"another object of this process (pid {pid})"
            hint = ("close it first (obj.close(), a with block, or del obj), or open this one "
                    "in mode 'r'")
        elif pid is not None:
            who = f"process {pid}" + (f" on {host}" if host else "")
            hint = "wait for it, pass lock_timeout=seconds, or open in mode 'r' to read"
        else:
            who = "another process"
            hint = "wait for it, pass lock_timeout=seconds, or open in mode 'r' to read"
        after = f" after waiting {waited:.3g} s" if waited else ""
        super().__init__(errno.EAGAIN, f"{rootdir} is locked for writing by {who}{after}; "
                                       f"{hint}")
        self.rootdir = rootdir
        self.pid = pid
        self.host = host


class UnsafeFileError(BcolzxError, PermissionError):
    """A file bcolzx would write is not its own: a symbolic link, a FIFO, a device...

    bcolzx never writes through a symbolic link, and never opens anything but
    a regular file where one of its own files belongs (the lock file, a
    temporary file, a superchunk file, the append journal, a JSON file):
    something planted there would make it write outside the dataset or wait
    for ever.  Nothing was read or written through it; remove it (the
    message names it) and try again.  A :class:`PermissionError` (so an ``IOError``), as
    the operating system's own refusal to write would be.

    Parameters
    ----------
    path : str
        The offending file.
    what : str
        What was found there, e.g. ``"a symbolic link"``.
    """

    def __init__(self, path: str, what: str) -> None:
        super().__init__(errno.EPERM, f"{path} is {what}, not a regular file of bcolzx's own; "
                                      "nothing was read or written through it: remove it "
                                      "and try again", path)
        self.path = path


class ConcurrentModificationError(BcolzxError, RuntimeError):
    """The dataset was changed by another writer in a way this object cannot follow.

    Raised to a reader whose rows were removed (shrunk) or moved under it, and
    to an object whose unsaved changes were made on a state of the dataset
    that another writer has since replaced.  Nothing is written; open the
    dataset again.
    """


class BufferTooSmallError(BcolzxError, ValueError):
    """An output buffer given by the caller cannot hold the result."""


class BcolzxMemoryError(BcolzxError, MemoryError):
    """C-Blosc2 could not allocate memory."""


class ExpressionError(BcolzxError, ValueError):
    """An expression string is invalid, not allowed, or cannot be evaluated.

    Raised before anything is evaluated for syntax errors and for anything
    outside the whitelist of the expression engine (attributes, indexing,
    unknown functions, ambiguous ``a < 5 & b > 1``...), and during evaluation
    for undefined names or operators that do not apply to the operands'
    dtypes.  A :class:`ValueError`, like legacy bcolz's errors for bad
    expressions.
    """


class RowConditionError(ExpressionError, NotImplementedError):
    """A query condition gives more than one boolean per row.

    A condition over an N-D column (``'a > 0'`` where each row of ``a`` is
    an array) compares items, not rows, so it cannot select rows.  Both an
    :class:`ExpressionError` (so a ``ValueError``) and a
    :class:`NotImplementedError`, which legacy bcolz raised for it.
    """


class DatasetNotFoundError(BcolzxError, FileNotFoundError, KeyError):
    """A dataset opened for reading does not exist.

    A :class:`FileNotFoundError` (so an ``IOError``), and a :class:`KeyError`,
    which legacy bcolz raised when a ctable was opened in mode ``'r'`` at a
    path that does not exist.
    """


class RemoteError(BcolzxError, OSError):
    """An object store (S3, GCS, HTTP... through fsspec) refused or failed a request.

    An :class:`OSError` (so an ``IOError``), as a failing local file system
    would raise.  A missing or short object is not this error: a missing
    dataset is a :class:`FileNotFoundError`, a missing or short superchunk
    object a :class:`TruncatedDataError`.

    Parameters
    ----------
    message : str
        What failed, naming the URL.
    url : str, optional
        The object's URL.
    """

    def __init__(self, message: str, *, url: str | None = None):
        super().__init__(message)
        self.url = url

    def __reduce__(self):
        return (_remote_error, (type(self), str(self), self.url))


class RemoteTimeoutError(RemoteError, TimeoutError):
    """A request to an object store took longer than its time limit."""


class AppendOnlyError(ReadOnlyError):
    """A change that objects which cannot be modified in place do not allow.

    A dataset on object storage takes appends (new objects) and replaced
    metadata, but never a rewrite of stored rows (``c[i] = x``) or a
    truncation: copy it to a local directory, change it there, and write it
    back.  A :class:`ReadOnlyError`, so a :class:`PermissionError`.
    """


def _remote_error(cls, message, url):
    return cls(message, url=url)


class NoColumnsError(BcolzxError, FileNotFoundError, ValueError):
    """A ctable to open does not exist, and no columns were given to create one.

    ``ctable(rootdir=path)`` in mode ``'a'`` (the default) where nothing
    exists.  A :class:`FileNotFoundError` (so an ``IOError``), and a
    :class:`ValueError`, which legacy bcolz raised for it (it took the call
    for a creation in mode ``'w'`` without columns).
    """


class MaskLengthError(BcolzxError, IndexError, ValueError):
    """A boolean mask used as a key does not have one boolean per row.

    An :class:`IndexError`, as NumPy raises for it, and a
    :class:`ValueError`, as legacy bcolz raised (it ran boolean keys through
    ``where()``).
    """


class ColumnNameError(BcolzxError, TypeError, ValueError):
    """A column name that is not a string.

    A :class:`TypeError`, as legacy bcolz's constructor raised for it, and a
    :class:`ValueError`, as its ``addcol`` did.
    """


class UndefinedNameError(ExpressionError, NameError):
    """A name in an expression is neither a column nor a variable.

    Both an :class:`ExpressionError` (so a ``ValueError``) and a
    :class:`NameError`, which legacy bcolz raised for it (it ran the
    expression as Python).
    """


# C-Blosc2 return codes (blosc2.h, enum BLOSC2_ERROR_*) grouped by meaning.
_CORRUPT_CODES = {
    -2: "bad stream",
    -3: "invalid data",
    -11: "invalid header",
    -17: "bad run-length encoding",
}
_TRUNCATED_CODES = {-5}
_INVALID_ARGUMENT_CODES = {-8, -12, -22, -35}
_UNSUPPORTED_CODES = {-7, -10}
_MEMORY_CODES = {-4}
_BUFFER_CODES = {-6}
# Codes that, when met while *decoding*, can only mean the input is damaged.
_DECODE_FAILURE_CODES = {-1, -9, -18, -27}


def blosc2_error(
    code: int,
    operation: str,
    message: str,
    *,
    decoding: bool = False,
    path: str | None = None,
    chunk: int | None = None,
) -> BcolzxError:
    """Turn a negative C-Blosc2 return code into a bcolzx exception.

    Parameters
    ----------
    code : int
        The negative value returned by a C-Blosc2 function.
    operation : str
        What bcolzx was doing, e.g. ``"decompress"``; leads the message.
    message : str
        C-Blosc2's own text for the code (``blosc2_error_string``).
    decoding : bool, optional
        True when the input was stored data being decoded: then failures that
        can only come from damaged input are reported as corruption.
    path, chunk : optional
        Where the data came from, carried by :class:`CorruptDataError`.

    Returns
    -------
    BcolzxError
        The exception to raise (the caller raises it, so that tracebacks
        point at the failing call).

    Raises
    ------
    ValueError
        If `code` is not negative: success codes are not errors.
    """
    if code >= 0:
        raise ValueError(f"blosc2 return code {code} is not an error")
    text = f"{operation} failed: {message} (blosc2 error {code})"
    if code in _TRUNCATED_CODES and decoding:
        return TruncatedDataError(text, path=path, chunk=chunk, code=code)
    if code in _CORRUPT_CODES or (decoding and code in _DECODE_FAILURE_CODES | _TRUNCATED_CODES):
        return CorruptDataError(text, path=path, chunk=chunk, code=code)
    if code in _UNSUPPORTED_CODES:
        exc: BcolzxError = UnsupportedFormatError(text)
    elif code in _MEMORY_CODES:
        exc = BcolzxMemoryError(text)
    elif code in _BUFFER_CODES or code in _TRUNCATED_CODES:
        exc = BufferTooSmallError(text)
    elif code in _INVALID_ARGUMENT_CODES:
        exc = InvalidParameterError(text)
    else:
        exc = CodecError(text)
    exc.code = code
    return exc
