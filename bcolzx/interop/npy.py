"""Stream carrays and ctables to and from NumPy ``.npy`` files.

:func:`to_npy` writes the ``.npy`` header (format versions 1.0, 2.0 or 3.0,
whichever is the first that can hold it, as NumPy chooses) and then the
rows block by block, so that no more than one block is ever in memory; a
ctable becomes a structured array.  :func:`from_npy` memory-maps the file
and appends it block by block; a structured array becomes a ctable (one
column per field).  Only NumPy is needed.
"""

from __future__ import annotations

import os
import secrets
import struct
from math import prod

import numpy as np

from bcolzx._format.jsonfile import fsync_dir
from bcolzx.errors import CorruptDataError, UnsupportedFormatError
from bcolzx.interop._common import refuse_objects, reporter

__all__ = ["to_npy", "from_npy", "npy_header"]

#: Uncompressed bytes of rows moved at once.
BLOCK_BYTES = 8 << 20
#: Largest ``.npy`` header :func:`from_npy` parses (NumPy's default is 10 kB):
#: the header of a structured array with thousands of fields, not more.
MAX_HEADER_BYTES = 1 << 20
_MAGIC = b"\x93NUMPY"
_ALIGN = 64  # the header ends on a multiple of this many bytes
#: (version, struct format of the header length, encoding), first that fits wins.
_VERSIONS = ((1, "<H", "latin1"), (2, "<I", "latin1"), (3, "<I", "utf8"))
#: The modes of :func:`to_npy`.
MODES = ("w", "x")


def npy_header(dtype: np.dtype, shape: tuple) -> bytes:
    """The header of a C-order ``.npy`` file of `dtype` and `shape`.

    Parameters
    ----------
    dtype : numpy.dtype
    shape : tuple of int

    Returns
    -------
    bytes
        Magic, version, header length and the padded header dictionary, a
        multiple of 64 bytes long.

    Raises
    ------
    ValueError
        If the header cannot be represented in any version (over 4 GiB).
    """
    from numpy.lib.format import dtype_to_descr

    text = (f"{{'descr': {dtype_to_descr(np.dtype(dtype))!r}, 'fortran_order': False, "
            f"'shape': {tuple(int(n) for n in shape)!r}, }}")
    for version, fmt, encoding in _VERSIONS:
        try:
            raw = text.encode(encoding)
        except UnicodeEncodeError:  # field names beyond latin-1: version 3
            continue
        prefix = len(_MAGIC) + 2 + struct.calcsize(fmt)
        raw += b" " * (-(prefix + len(raw) + 1) % _ALIGN) + b"\n"
        if len(raw) < 1 << (8 * struct.calcsize(fmt)):
            return _MAGIC + bytes([version, 0]) + struct.pack(fmt, len(raw)) + raw
    raise ValueError(f"an .npy header for {dtype} cannot be written: {len(text)} bytes")


def _block_rows(rowbytes: int) -> int:
    return max(1, BLOCK_BYTES // max(1, rowbytes))


def _as_bytes(block: np.ndarray) -> np.ndarray:
    # A uint8 view: datetime and some structured dtypes export no buffer of their own.
    return np.ascontiguousarray(block).reshape(-1).view(np.uint8)


def to_npy(cobj, path, *, mode: str = "w", progress=None,
           storage_options: dict | None = None) -> None:
    """Write a carray or a ctable to a ``.npy`` file, streaming.

    The file is written under a hidden temporary name beside `path`,
    fsynced and renamed over `path` (replacing it): `path` never holds half
    a file.  At a URL of object storage, it is written to a local temporary
    directory, then uploaded as one object (docs/remote.md).

    Parameters
    ----------
    cobj : carray or ctable
        A ctable becomes a 1-D structured array (one field per column).
    path : str or os.PathLike
        The file to write, or its URL (``s3://bucket/a.npy``, ``gs://...``).
    mode : {'w', 'x'}
        'w' replaces an existing file; 'x' refuses to.
    progress : callable, optional
        Called with the uncompressed bytes of each block written; the calls
        add up to the data's ``nbytes``.  A callback with a ``set_total``
        method is first told that total.
    storage_options : dict, optional
        For a URL: the options of its fsspec filesystem (credentials,
        endpoint...).

    Raises
    ------
    CorruptDataError
        If a chunk of `cobj` is damaged (nothing is left at `path`).
    FileExistsError
        With ``mode='x'`` when `path` exists.
    ValueError
        For a bad `mode`, or `storage_options` with a local path.
    RemoteError
        If the object store fails (nothing is published at the URL).
    OSError
        If the file cannot be written.

    Examples
    --------
    >>> import os, tempfile, numpy as np, bcolzx
    >>> from bcolzx.interop.npy import to_npy
    >>> path = os.path.join(tempfile.mkdtemp(), "a.npy")
    >>> to_npy(bcolzx.arange(5), path)
    >>> np.load(path)
    array([0, 1, 2, 3, 4])
    """
    from bcolzx._publish import export_place
    from bcolzx.carray import iterblocks

    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
    path = export_place(path, storage_options, mode,
                        lambda local: to_npy(cobj, local, progress=progress),
                        what=".npy file", suffix=".npy")
    if path is None:
        return
    if mode == "x" and os.path.lexists(path):
        raise FileExistsError(f"{path} exists (mode 'x')")
    refuse_objects(cobj, "a .npy file written by bcolzx")
    dtype, shape = np.dtype(cobj.dtype), tuple(cobj.shape)
    directory = os.path.dirname(os.path.abspath(path))
    tmp = os.path.join(directory, f".{os.path.basename(path)}.{secrets.token_hex(6)}.tmp")
    rowbytes = dtype.itemsize * prod(shape[1:])
    report = reporter(progress, dtype.itemsize * prod(shape))
    try:
        with open(tmp, "xb") as f:
            f.write(npy_header(dtype, shape))
            for block in iterblocks(cobj, _block_rows(rowbytes)):
                data = _as_bytes(np.asarray(block, dtype=dtype))
                f.write(data)
                report(len(data))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.lexists(tmp):
            os.unlink(tmp)
        raise
    fsync_dir(directory)


def _open_npy(path: str) -> np.ndarray:
    """The array of an ``.npy`` file, memory-mapped read-only.

    Raises
    ------
    FileNotFoundError
        If there is no such file.
    UnsupportedFormatError
        If it is not an ``.npy`` file, or holds Python objects.
    CorruptDataError
        If its header is damaged or it is shorter than its header says.
    """
    with open(path, "rb") as f:
        magic = f.read(len(_MAGIC))
    if magic != _MAGIC:
        raise UnsupportedFormatError(f"{path} is not a NumPy .npy file (no .npy magic)")
    try:
        try:  # headers of tables with many columns pass NumPy's default 10 kB limit
            return np.load(path, mmap_mode="r", allow_pickle=False,
                           max_header_size=MAX_HEADER_BYTES)
        except TypeError:  # pragma: no cover - NumPy < 1.24.2 has no limit (nor keyword)
            return np.load(path, mmap_mode="r", allow_pickle=False)
    except ValueError as exc:
        if "Python objects" in str(exc):
            raise UnsupportedFormatError(
                f"{path} holds Python objects (pickled), which bcolzx does not unpickle from "
                ".npy files; load them with numpy.load(allow_pickle=True) if you trust the "
                "file, then store them with carray(..., allow_pickle=True)") from None
        raise CorruptDataError(f"unreadable .npy file: {exc}", path=path) from None


def from_npy(path, rootdir=None, *, progress=None, **kwargs):
    """Read a ``.npy`` file into a new carray, or a ctable for a structured array.

    The file is memory-mapped and copied block by block: it is never read
    into memory whole.

    Parameters
    ----------
    path : str or os.PathLike
        A ``.npy`` file (any version, C or Fortran order).
    rootdir : str, optional
        Where to store the new dataset (default: in memory).
    progress : callable, optional
        Called with the uncompressed bytes of each block copied; the calls
        add up to the array's ``nbytes``.  A callback with a ``set_total``
        method is first told that total.
    **kwargs
        For the carray or ctable constructor: ``mode``, ``cparams``,
        ``chunklen``, ``expectedlen``...

    Returns
    -------
    carray or ctable
        A ctable (one column per field) when the array is 1-D and structured.

    Raises
    ------
    FileNotFoundError
        If `path` does not exist.
    UnsupportedFormatError
        If `path` is not an ``.npy`` file, or its array is 0-d, holds
        Python objects, or is structured with more than one dimension.
    CorruptDataError
        If the file is damaged or truncated.
    FileExistsError
        If `rootdir` exists (unless ``mode='w'``).

    Examples
    --------
    >>> import os, tempfile, numpy as np
    >>> from bcolzx.interop.npy import from_npy
    >>> path = os.path.join(tempfile.mkdtemp(), "a.npy")
    >>> np.save(path, np.zeros(3, dtype=[("x", "i4"), ("y", "f8")]))
    >>> from_npy(path).names
    ['x', 'y']
    """
    path = os.fspath(path)
    arr = _open_npy(path)
    if arr.ndim == 0:
        raise UnsupportedFormatError(f"{path} holds a 0-d array; bcolzx needs rows")
    names = arr.dtype.names
    if names and arr.ndim != 1:
        raise UnsupportedFormatError(f"{path} holds a {arr.ndim}-d structured array; a "
                                     "ctable is made of 1-d structured arrays only")
    kwargs.setdefault("expectedlen", max(len(arr), 1))
    if names:
        from bcolzx.ctable import ctable

        empty = [np.empty((0, *arr.dtype[n].shape), arr.dtype[n].base) for n in names]
        out = ctable(empty, names=list(names), rootdir=rootdir, auto_flush=False, **kwargs)
    else:
        from bcolzx.carray import carray

        out = carray(np.empty((0, *arr.shape[1:]), arr.dtype), rootdir=rootdir, **kwargs)
    step = _block_rows(arr.dtype.itemsize * prod(arr.shape[1:]))
    report = reporter(progress, arr.nbytes)
    for lo in range(0, len(arr), step):
        block = np.ascontiguousarray(arr[lo:lo + step])
        out.append(block)
        report(block.nbytes)
    out.flush()
    return out
