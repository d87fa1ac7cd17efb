"""Top-level functions of the bcolzx namespace (legacy bcolz names)."""

from __future__ import annotations

from bcolzx._ext import codec as _codec

__all__ = ["blosc_version", "blosc_compressor_list"]


def blosc_version() -> tuple[str, str]:
    """The C-Blosc2 library bcolzx runs with.

    Returns
    -------
    tuple of str
        ``(version, date)``, as legacy ``bcolz.blosc_version()`` returns.

    Raises
    ------
    None

    Examples
    --------
    >>> import bcolzx
    >>> version, date = bcolzx.blosc_version()
    >>> version.count(".") >= 2
    True
    """
    return _codec.blosc2_version(), _codec.blosc2_version_date()


def blosc_compressor_list() -> list[str]:
    """The codecs available for ``cparams(cname=...)``.

    Returns
    -------
    list of str

    Raises
    ------
    None

    Examples
    --------
    >>> import bcolzx
    >>> "lz4" in bcolzx.blosc_compressor_list()
    True
    """
    return _codec.compressor_list()


# --- constructors and directory helpers (bcolz 1.2 names and signatures) ----------

import itertools as _itertools  # noqa: E402
import os as _os  # noqa: E402

import numpy as _np  # noqa: E402

from bcolzx._format import layout as _layout  # noqa: E402
from bcolzx.carray import carray as _carray  # noqa: E402
from bcolzx.carray import iterblocks  # noqa: E402,F401
from bcolzx.errors import UnsupportedFormatError as _Unsupported  # noqa: E402

__all__ += ["open", "zeros", "ones", "fill", "arange", "fromiter", "iterblocks", "walk"]


def _shape_len(shape) -> tuple[int, tuple]:
    shape = (shape,) if isinstance(shape, (int, _np.integer)) else tuple(shape)
    if not shape or any(int(x) < 0 for x in shape):
        raise ValueError(f"shape must be non-negative and at least 1-D, not {shape}")
    return int(shape[0]), tuple(int(x) for x in shape[1:])


def fill(shape, dflt=None, dtype=float, **kwargs) -> _carray:
    """A carray of `shape` filled with `dflt` (legacy ``bcolz.fill``).

    Built chunk by chunk: a constant chunk is stored as a special value, so
    ``fill(10**9, 1.5)`` takes neither 8 GB of memory nor of disk.

    Parameters
    ----------
    shape : int or tuple of int
        Length, then trailing dimensions.
    dflt : scalar, optional
        The value (default zero); also the carray's ``dflt``.
    dtype : numpy.dtype
        Default float64.
    **kwargs
        As for :class:`carray` (cparams, chunklen, rootdir, mode, ...).

    Returns
    -------
    carray

    Raises
    ------
    ValueError
        For a negative shape or a value that is not of `dtype`.

    Examples
    --------
    >>> import bcolzx
    >>> bcolzx.fill(5, 2.5)[:]
    array([2.5, 2.5, 2.5, 2.5, 2.5])
    """
    n, rowshape = _shape_len(shape)
    dtype = _np.dtype(dtype)
    kwargs.setdefault("expectedlen", n)
    ca = _carray(_np.empty((0, *rowshape), dtype), dflt=dflt, **kwargs)
    ca._engine.resize(n, ca.dflt)
    if ca.rootdir is not None:
        ca.flush()
    return ca


def zeros(shape, dtype=float, **kwargs) -> _carray:
    """A carray of zeros (legacy ``bcolz.zeros``); see :func:`fill`.

    Raises
    ------
    ValueError
        For a negative shape.

    Examples
    --------
    >>> import bcolzx
    >>> bcolzx.zeros(3, dtype="i4")[:]
    array([0, 0, 0], dtype=int32)
    """
    return fill(shape, None, dtype, **kwargs)


def ones(shape, dtype=float, **kwargs) -> _carray:
    """A carray of ones (legacy ``bcolz.ones``); see :func:`fill`.

    Raises
    ------
    ValueError
        For a negative shape.

    Examples
    --------
    >>> import bcolzx
    >>> bcolzx.ones(2)[:]
    array([1., 1.])
    """
    return fill(shape, 1, dtype, **kwargs)


def arange(start=None, stop=None, step=None, dtype=None, **kwargs) -> _carray:
    """A carray of evenly spaced values, built block by block (legacy ``bcolz.arange``).

    Called as ``arange(stop)``, ``arange(start, stop)`` or ``arange(start, stop, step)``.

    Raises
    ------
    ValueError
        If `step` is zero.

    Examples
    --------
    >>> import bcolzx
    >>> bcolzx.arange(2, 10, 3)[:]
    array([2, 5, 8])
    """
    if stop is None:
        start, stop = 0, start
    if start is None:
        start = 0
    if step is None:
        step = 1
    if step == 0:
        raise ValueError("step must not be zero")
    dtype = _np.arange(start, start + step, step, dtype=dtype).dtype if dtype is None else \
        _np.dtype(dtype)
    n = len(range(start, stop, step)) if all(isinstance(x, (int, _np.integer))
                                             for x in (start, stop, step)) \
        else len(_np.arange(start, stop, step))
    kwargs.setdefault("expectedlen", n)
    ca = _carray(_np.empty(0, dtype), **kwargs)
    blen = ca.chunklen * 16
    ints = all(isinstance(x, (int, _np.integer)) for x in (start, stop, step))
    for i in range(0, n, blen):
        steps = i + _np.arange(min(blen, n - i), dtype=_np.int64 if ints else _np.float64)
        ca._engine.append((start + steps * step).astype(dtype))
    if ca.rootdir is not None:
        ca.flush()
    return ca


def fromiter(iterable, dtype, count, **kwargs) -> _carray:
    """A carray from an iterable, consumed block by block (legacy ``bcolz.fromiter``).

    Parameters
    ----------
    iterable : iterable
        The values.
    dtype : numpy.dtype
        Their dtype.
    count : int
        How many to take; -1 for all.
    **kwargs
        As for :class:`carray`.

    Returns
    -------
    carray

    Raises
    ------
    ValueError
        If the iterable ends before `count` values.

    Examples
    --------
    >>> import bcolzx
    >>> bcolzx.fromiter((i * i for i in range(5)), dtype="i8", count=-1)[:]
    array([ 0,  1,  4,  9, 16])
    """
    dtype = _np.dtype(dtype)
    count = int(count)
    if count >= 0:
        kwargs.setdefault("expectedlen", count)
    ca = _carray(_np.empty(0, dtype), **kwargs)
    it = iter(iterable)
    blen = ca.chunklen
    taken = 0
    while count < 0 or taken < count:
        want = blen if count < 0 else min(blen, count - taken)
        block = _np.fromiter(_itertools.islice(it, want), dtype=dtype)
        if len(block):
            ca._engine.append(ca._rows(block))
            taken += len(block)
        if len(block) < want:
            if count >= 0:
                raise ValueError(f"the iterable ended after {taken} values, {count} asked for")
            break
    if ca.rootdir is not None:
        ca.flush()
    return ca


def _kind(path: str) -> str | None:
    if _os.path.isfile(_os.path.join(path, _layout.ROOTDIRS_FILE)):
        return "ctable"
    if _os.path.isfile(_os.path.join(path, _layout.META_DIR, _layout.STORAGE_FILE)):
        return "carray"
    return None


def open(rootdir, mode: str = "a"):  # noqa: A001 - legacy name
    """Open a persistent carray or ctable (legacy ``bcolz.open``).

    Parameters
    ----------
    rootdir : str
        The dataset directory.
    mode : {'r', 'a', 'w'}
        Read-only, read-write, or replace ('w' opens an emptied carray).

    Returns
    -------
    carray

    Raises
    ------
    FileNotFoundError
        If `rootdir` holds no dataset.
    UnsupportedFormatError
        For a ctable directory (not supported by this version yet).

    Examples
    --------
    >>> import bcolzx, tempfile, os
    >>> d = os.path.join(tempfile.mkdtemp(), "a")
    >>> _ = bcolzx.arange(5, rootdir=d)
    >>> bcolzx.open(d, mode="r")[:]
    array([0, 1, 2, 3, 4])
    """
    rootdir = _os.fspath(rootdir)
    kind = _kind(rootdir)
    if kind is None:
        raise FileNotFoundError(f"no bcolzx carray or ctable at {rootdir}")
    if kind == "ctable":
        raise _Unsupported(f"{rootdir} is a ctable; this bcolzx opens carrays only")
    if mode == "w":
        old = _carray(rootdir=rootdir, mode="r")
        return _carray(_np.empty((0, *old.shape[1:]), old.dtype), cparams=old.cparams,
                       dflt=old.dflt, chunklen=old.chunklen, rootdir=rootdir, mode="w")
    return _carray(rootdir=rootdir, mode=mode)


def walk(dir, classname=None, mode="a"):  # noqa: A002 - legacy name
    """Yield the carrays (and ctables) found under `dir` (legacy ``bcolz.walk``).

    Parameters
    ----------
    dir : str
        Where to start.
    classname : {'carray', 'ctable', None}
        Only that kind (None: both).
    mode : str
        Mode to open them with.

    Yields
    ------
    carray

    Raises
    ------
    ValueError
        For an unknown `classname`.
    """
    if classname not in (None, "carray", "ctable"):
        raise ValueError(f"classname must be 'carray', 'ctable' or None, not {classname!r}")
    for root, dirs, _files in _os.walk(dir):
        kind = _kind(root)
        if kind is None:
            continue
        dirs[:] = []  # a container's subdirectories are its own
        if classname not in (None, kind) or kind == "ctable":
            continue
        ca = _carray(rootdir=root, mode=mode)
        if len(ca):  # legacy skips empty containers
            yield ca
