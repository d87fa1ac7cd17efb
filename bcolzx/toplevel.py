"""The top-level functions of the bcolzx namespace, with legacy ``bcolz.toplevel``'s names.

Constructors with NumPy's names (:func:`fill`, :func:`zeros`, :func:`ones`,
:func:`arange`, :func:`fromiter`), built chunk by chunk; :func:`open` and
:func:`walk` for datasets on disk; :func:`eval` (its evaluation is
:mod:`bcolzx._query.evaluate`'s); and the C-Blosc2 library bcolzx runs with.
"""

from __future__ import annotations

import contextlib as _contextlib
import glob as _glob
import itertools as _itertools
import math as _math
import os as _os
import shutil as _shutil
import warnings as _warnings

import numpy as _np

from bcolzx._ext import codec as _codec
from bcolzx._format import layout as _layout
from bcolzx._format.files import is_regular as _is_regular
from bcolzx._query import evaluate as _evaluate
from bcolzx._query.expr import compile_expression as _compile
from bcolzx._query.scope import caller_scope as _caller_scope
from bcolzx._query.scope import resolve_names as _resolve
from bcolzx._query.scope import split_operands as _split
from bcolzx._storage.objects import Objects as _Objects
from bcolzx._storage.objects import is_url as _is_url
from bcolzx._storage.objects import resolve as _where
from bcolzx.carray import carray as _carray
from bcolzx.carray import iterblocks
from bcolzx.ctable import ctable as _ctable
from bcolzx.errors import DatasetNotFoundError as _DatasetNotFoundError
from bcolzx.errors import PickleNotAllowedError as _PickleNotAllowedError
from bcolzx.errors import UnsupportedFormatError as _UnsupportedFormatError

# Imports are aliased with a leading underscore: the module's public names
# are the functions below (and iterblocks), as in legacy bcolz.toplevel.
__all__ = ["arange", "blosc_compressor_list", "blosc_version", "eval", "fill", "fromiter",
           "iterblocks", "ones", "open", "vlen_dtype", "walk", "zeros"]


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


def _shape_len(shape) -> tuple[int, tuple]:
    # A float length is taken as int(length), as legacy bcolz did (zeros(1e6)).
    shape = (shape,) if isinstance(shape, (int, float, _np.integer, _np.floating)) \
        else tuple(shape)
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
        As for :class:`carray` (cparams, chunklen, rootdir, mode,
        allow_pickle, ...).

    Returns
    -------
    carray

    Raises
    ------
    ValueError
        For a negative shape or a value that is not of `dtype`.
    PickleNotAllowedError
        For object dtype without ``allow_pickle`` (the default ``dflt`` is
        then None; NumPy's zeros and ones of object dtype are the ints 0 and 1).

    Examples
    --------
    >>> import bcolzx
    >>> bcolzx.fill(5, 2.5)[:]
    array([2.5, 2.5, 2.5, 2.5, 2.5])
    """
    n, rowshape = _shape_len(shape)
    dtype = _np.dtype(dtype)
    _layout.check_rows(n, dtype.itemsize * _math.prod(rowshape))  # before anything is created
    kwargs.setdefault("expectedlen", n)
    if dtype.names and not rowshape:
        return _fill_ctable(n, dflt, dtype, kwargs)
    ca = _carray(_np.empty((0, *rowshape), dtype), dflt=dflt, **kwargs)
    ca.engine.resize(n, ca._fill_value())
    if ca.rootdir is not None:
        ca.flush()
    return ca


def _table_kwargs(kwargs: dict) -> tuple[dict, dict]:
    table = {k: kwargs.pop(k) for k in ("rootdir", "mode", "auto_flush", "allow_pickle")
             if k in kwargs}
    return table, kwargs


def _fill_ctable(n: int, dflt, dtype: _np.dtype, kwargs: dict):
    """A ctable of `n` rows of a structured `dtype`, one column per field."""
    names = list(dtype.names or ())
    table, kwargs = _table_kwargs(kwargs)
    row = _np.zeros((), dtype) if dflt is None else _np.asarray(dflt, dtype)
    cols = [fill((n, *dtype[f].shape), row[f] if dflt is not None else None,
                 dtype[f].base, allow_pickle=table.get("allow_pickle"), **kwargs)
            for f in names]
    return _ctable(cols, names=names, **table, **kwargs)


def vlen_dtype(kind) -> _np.dtype:
    """The dtype of a column of variable-length items of `kind`, stored
    natively (never pickled; docs/format/strings.md), as h5py's ``vlen_dtype``.

    Parameters
    ----------
    kind : {str, bytes}
        ``str``: NumPy's ``StringDType()`` (text, stored as UTF-8).
        ``bytes``: object declared as bytes (``dtype('O')`` with metadata
        ``{'vlen': bytes}``, the dtype ``h5py.vlen_dtype(bytes)`` returns),
        each row a ``bytes`` of any length.

    Returns
    -------
    numpy.dtype

    Raises
    ------
    TypeError
        For another `kind`, or ``str`` on NumPy 1 (which has no StringDType).

    Examples
    --------
    >>> import bcolzx
    >>> c = bcolzx.carray([b"", b"\\x00\\xff", b"abc"], dtype=bcolzx.vlen_dtype(bytes))
    >>> c[1]
    b'\\x00\\xff'
    """
    from bcolzx._format import strings

    if kind is bytes:
        return strings.BYTES_DTYPE
    if kind is str:
        return strings.string_dtype()
    raise TypeError(f"vlen_dtype takes str or bytes, not {kind!r}")


def zeros(shape, dtype=float, **kwargs) -> _carray:
    """A carray of zeros (legacy ``bcolz.zeros``); see :func:`fill`.

    Raises
    ------
    ValueError
        For a negative shape.
    PickleNotAllowedError
        For object dtype without ``allow_pickle``.

    Examples
    --------
    >>> import bcolzx
    >>> bcolzx.zeros(3, dtype="i4")[:]
    array([0, 0, 0], dtype=int32)
    """
    if _np.dtype(dtype) == object:
        return fill(shape, 0, dtype, **kwargs)  # as NumPy's zeros: the int 0
    return fill(shape, None, dtype, **kwargs)


def ones(shape, dtype=float, **kwargs) -> _carray:
    """A carray of ones (legacy ``bcolz.ones``); see :func:`fill`.

    Raises
    ------
    ValueError
        For a negative shape.
    PickleNotAllowedError
        For object dtype without ``allow_pickle``.

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
    Keyword arguments are those of :class:`carray` (``allow_pickle`` for
    ``dtype=object``, whose values are Python ints or floats).

    Raises
    ------
    ValueError
        If `step` is zero.
    PickleNotAllowedError
        For object dtype without ``allow_pickle``.

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
    if dtype is None:  # NumPy's rule: the arguments' kind as Python numbers (1e3 -> float64)
        dtype = _np.result_type(*(x.item() if isinstance(x, _np.generic) else x
                                  for x in (start, stop, step)))
    dtype = _np.dtype(dtype)
    n = len(range(start, stop, step)) if all(isinstance(x, (int, _np.integer))
                                             for x in (start, stop, step)) \
        else len(_np.arange(start, stop, step))
    _layout.check_rows(n, dtype.itemsize)  # before anything is created
    kwargs.setdefault("expectedlen", n)
    head = _arange_head(start, step, n, dtype)  # NumPy's errors before anything is created
    ca = _carray(_np.empty(0, dtype), **kwargs)
    blen = ca.chunklen * 16
    ints = all(isinstance(x, (int, _np.integer)) for x in (start, stop, step))
    for i in range(0, n, blen):
        if head is not None:
            block = _arange_block(head, i, min(blen, n - i))
        else:
            steps = i + _np.arange(min(blen, n - i), dtype=_np.int64 if ints else _np.float64)
            block = (start + steps * step).astype(dtype)
        ca.engine.append(ca._rows(block) if ca._objects else block)
    if ca.rootdir is not None:
        ca.flush()
    return ca


def _arange_head(start, step, n: int, dtype: _np.dtype) -> _np.ndarray | None:
    """The first two values of ``numpy.arange`` in a numeric `dtype` (None for other dtypes).

    NumPy stores `start` and ``start + step`` into the dtype (so with its
    conversions and errors: -2.5 becomes -2 in an integer dtype, -6 raises
    OverflowError in uint16) and continues the progression of those two
    values; :func:`_arange_block` does the same.
    """
    if dtype.kind not in "biufcmM" or n == 0:
        return None
    if dtype.kind == "b" and n > 2:
        raise TypeError("arange() of booleans has at most 2 values (as numpy.arange)")
    head = _np.empty(2, dtype)
    head[0] = start
    head[1] = start + step if n > 1 else start
    return head


def _arange_block(head: _np.ndarray, first: int, count: int) -> _np.ndarray:
    """Values `first` to ``first + count - 1`` of the progression of `head`, as numpy.arange.

    NumPy computes ``start + i * delta``, with ``delta = head[1] - head[0]``,
    in the dtype's own arithmetic from the third value on: modulo 2**bits for
    integers and datetimes (wrapping around as NumPy does), in float32 for
    float16 and float32, per part for complex numbers.
    """
    dtype = head.dtype
    i = first + _np.arange(count, dtype=_np.int64)
    if dtype.kind == "b":
        return head[first:first + count].copy()
    if dtype.kind in "iumM":
        ints = head.view(f"i{dtype.itemsize}") if dtype.kind in "mM" else head
        h0, delta = int(ints[0]), int(ints[1]) - int(ints[0])
        modulo = _np.uint64(h0 % 2**64) + i.astype(_np.uint64) * _np.uint64(delta % 2**64)
        return modulo.astype(ints.dtype).view(dtype)
    if dtype.kind == "c":
        out = _np.empty(count, dtype)
        out.real = _arange_block(head.real.copy(), first, count)
        out.imag = _arange_block(head.imag.copy(), first, count)
        return out
    calc = _np.dtype(_np.float32) if dtype.itemsize <= 4 else dtype
    h0 = head[0].astype(calc)
    delta = head[1].astype(calc) - h0
    out = (h0 + i.astype(calc) * delta).astype(dtype)
    k = min(count, max(0, 2 - first))
    out[:k] = head[first:first + k]  # the first two values are head's, as stored
    return out


def fromiter(iterable, dtype, count, **kwargs) -> _carray:
    """A carray from an iterable, consumed block by block (legacy ``bcolz.fromiter``).

    Parameters
    ----------
    iterable : iterable
        The values.
    dtype : numpy.dtype
        Their dtype.
    count : int
        How many to take at most (an iterable that ends sooner gives fewer, as
        in legacy bcolz); -1 for all.
    **kwargs
        As for :class:`carray` (``allow_pickle`` for ``dtype=object``: each
        value is one row).

    Returns
    -------
    carray

    Raises
    ------
    ValueError
        If `count` values would not fit a dataset, or a value does not
        convert to `dtype`; a `rootdir` the call created is removed.
    PickleNotAllowedError
        For object dtype (or an object field) without ``allow_pickle``;
        nothing is created.

    Examples
    --------
    >>> import bcolzx
    >>> bcolzx.fromiter((i * i for i in range(5)), dtype="i8", count=-1)[:]
    array([ 0,  1,  4,  9, 16])
    """
    dtype = _np.dtype(dtype)
    count = int(count)
    if count >= 0:
        _layout.check_rows(count, dtype.itemsize)  # before anything is created
        kwargs.setdefault("expectedlen", count)
    with _removed_on_failure(kwargs.get("rootdir")):
        if dtype.names:
            return _fromiter_ctable(iterable, dtype, count, kwargs)
        ca = _carray(_np.empty(0, dtype), _publish=False, **kwargs)
        try:
            for block in _iter_blocks(iterable, dtype, count, ca.chunklen):
                ca.engine.append(ca._rows(block))
            if ca.rootdir is not None:
                ca.flush()  # on object storage, publishes it
        except BaseException:
            if ca.engine.store.unpublished:
                ca._discard_remote()
            raise
        return ca


@_contextlib.contextmanager
def _removed_on_failure(rootdir):
    """Remove `rootdir` if the block fails and it did not exist before: a dataset
    that could not be built completely is not left half-written."""
    # Object storage: the store discards what an unpublished dataset uploaded.
    existed = rootdir is None or not isinstance(rootdir, (str, _os.PathLike)) or \
        _is_url(rootdir) or _os.path.lexists(rootdir)
    try:
        yield
    except BaseException:
        if not existed:
            _shutil.rmtree(rootdir, ignore_errors=True)
        raise


def _iter_blocks(iterable, dtype: _np.dtype, count: int, blen: int):
    """NumPy blocks of up to `blen` values of `iterable`: at most `count` in all
    (all: -1); an iterable that ends sooner gives what it has, as in legacy bcolz."""
    it = iter(iterable)
    taken = 0
    while count < 0 or taken < count:
        want = blen if count < 0 else min(blen, count - taken)
        if dtype == _np.dtype(object):  # one value per row, whatever it holds
            values = list(_itertools.islice(it, want))
            block = _np.empty(len(values), dtype=object)
            for i, value in enumerate(values):
                block[i] = value
        else:
            block = _np.fromiter(_itertools.islice(it, want), dtype=dtype)
        if len(block):
            yield block
            taken += len(block)
        if len(block) < want:
            return


def _fromiter_ctable(iterable, dtype: _np.dtype, count: int, kwargs: dict):
    """fromiter for a structured dtype: a ctable filled block by block."""
    names = list(dtype.names or ())
    table, kwargs = _table_kwargs(kwargs)
    auto_flush = table.pop("auto_flush", table.get("rootdir") is not None)
    empty = [_np.empty((0, *dtype[f].shape), dtype[f].base) for f in names]
    # One flush at the end, not one per block; then the caller's setting.
    ct = _ctable(empty, names=names, auto_flush=False, _publish=False, **table, **kwargs)
    for block in _iter_blocks(iterable, dtype, count, next(iter(ct.cols.values())).chunklen):
        ct.append(block)
    if ct.rootdir is not None:
        ct.flush()
    ct.auto_flush = auto_flush
    return ct


def _kind(path: str) -> str | None:
    if _os.path.isfile(_os.path.join(path, _layout.ROOTDIRS_FILE)):
        return "ctable"
    if _os.path.isfile(_os.path.join(path, _layout.META_DIR, _layout.STORAGE_FILE)):
        return "carray"
    return None


def open(rootdir, mode: str = "a", *, lock_timeout=None,  # legacy name, shadows the builtin
         allow_pickle=None, storage_options=None, filesystem=None):
    """Open a persistent carray or ctable (legacy ``bcolz.open``).

    Parameters
    ----------
    rootdir : str
        The dataset directory, or its URL on object storage (``s3://...``,
        ``gs://...``, ``https://...``, any fsspec URL; docs/remote.md).
    mode : {'r', 'a', 'w'}
        Read-only, read-write, or (for a carray) emptied: 'w' opens an
        emptied carray, and refuses a ctable as legacy bcolz did.
    lock_timeout : float, optional
        Seconds to wait, at the first change, for a dataset another writer
        holds (default ``bcolzx.defaults.lock_timeout``; see :class:`carray`).
    allow_pickle : bool, optional
        Allow reading and writing the values of object-dtype data (carray
        or ctable columns), which are pickled; default
        ``bcolzx.defaults.allow_pickle``.  Opening needs no switch: nothing
        is unpickled until values are read.
    storage_options : dict, optional
        With a URL: the options of its fsspec filesystem (endpoint,
        credentials, timeouts).
    filesystem : fsspec.AbstractFileSystem, optional
        The filesystem `rootdir` (then a path in it) is on.

    Returns
    -------
    carray or ctable
        A ctable when the directory has ``__rootdirs__``.

    Raises
    ------
    FileNotFoundError
        If `rootdir` holds no dataset (on object storage,
        :class:`~bcolzx.errors.DatasetNotFoundError`, also for a dataset being
        written, which its last step publishes).
    ValueError
        For a ctable in mode 'w'.
    RemoteError
        (an ``OSError``) If the object store fails a request.
    LockedError
        In mode 'w', if another writer holds the dataset (nothing is changed).
    PickleNotAllowedError
        In mode 'w', for object dtype without `allow_pickle` (nothing is
        changed); reading values of an object dataset later raises it too.

    Examples
    --------
    >>> import bcolzx, tempfile, os
    >>> d = os.path.join(tempfile.mkdtemp(), "a")
    >>> _ = bcolzx.arange(5, rootdir=d)
    >>> bcolzx.open(d, mode="r")[:]
    array([0, 1, 2, 3, 4])
    """
    where = _where(rootdir, storage_options, filesystem)
    if isinstance(where, _Objects):
        return _open_objects(where, mode, lock_timeout, allow_pickle)
    rootdir = where
    if _is_regular(f"{rootdir}/{_layout.ROOTDIRS_FILE}"):
        return _open_ctable(rootdir, mode, lock_timeout, allow_pickle)
    try:  # a carray: its meta/storage is read once, by the carray (no stat before)
        return _open_carray(rootdir, mode, lock_timeout, allow_pickle)
    except FileNotFoundError:
        if _kind(rootdir) is None:
            raise FileNotFoundError(f"no bcolzx carray or ctable at {rootdir}") from None
        raise


def _open_ctable(rootdir: str, mode: str, lock_timeout, allow_pickle):
    if mode == "w":  # as legacy bcolz: a table is replaced by new columns only
        raise ValueError(f"{rootdir} is a ctable: opening it in mode 'w' would empty it; "
                         "create a new one with ctable(columns, rootdir=..., mode='w')")
    return _ctable(rootdir=rootdir, mode=mode, lock_timeout=lock_timeout,
                   allow_pickle=allow_pickle)


def _open_carray(rootdir: str, mode: str, lock_timeout, allow_pickle):
    if mode == "w":
        old = _carray(rootdir=rootdir, mode="r")
        return _carray(_np.empty((0, *old.shape[1:]), old.dtype), cparams=old.cparams,
                       dflt=old.dflt, chunklen=old.chunklen, rootdir=rootdir, mode="w",
                       lock_timeout=lock_timeout, allow_pickle=allow_pickle)
    return _carray(rootdir=rootdir, mode=mode, lock_timeout=lock_timeout,
                   allow_pickle=allow_pickle)


def _open_objects(objects: _Objects, mode: str, lock_timeout, allow_pickle):
    """:func:`open` on object storage: the small files read in one batch first."""
    from bcolzx._storage import remote

    kind, fetched = remote.probe(objects)
    if kind is None:
        raise _DatasetNotFoundError(f"no bcolzx carray or ctable at {objects.url}")
    if kind == "ctable":
        if mode == "w":
            raise ValueError(f"{objects.url} is a ctable: opening it in mode 'w' would empty "
                             "it; create a new one with ctable(columns, rootdir=..., mode='w')")
        return _ctable(rootdir=objects, mode=mode, lock_timeout=lock_timeout,
                       allow_pickle=allow_pickle, _fetched=fetched)
    if mode == "w":
        old = _carray(rootdir=objects, mode="r", _fetched=fetched)
        return _carray(_np.empty((0, *old.shape[1:]), old.dtype), cparams=old.cparams,
                       dflt=old.dflt, chunklen=old.chunklen, rootdir=objects, mode="w",
                       allow_pickle=allow_pickle)
    return _carray(rootdir=objects, mode=mode, lock_timeout=lock_timeout,
                   allow_pickle=allow_pickle, _fetched=fetched)


def walk(dir, classname=None, mode="a", *, allow_pickle=None):  # legacy names
    """Yield the carrays (and ctables) found under `dir` (legacy ``bcolz.walk``).

    Parameters
    ----------
    dir : str
        Where to start.
    classname : {'carray', 'ctable', None}
        Only that kind (None: both).
    mode : str
        Mode to open them with.
    allow_pickle : bool, optional
        Yield object-dtype datasets (and ctables with object columns) too,
        able to read their pickled values; default
        ``bcolzx.defaults.allow_pickle``.  Without it they are skipped with
        a warning, as datasets that cannot be read.

    Yields
    ------
    carray or ctable

    Warns
    -----
    RuntimeWarning
        For a dataset bcolzx cannot read (it is skipped; damaged ones raise),
        or an object dataset without `allow_pickle`.

    Raises
    ------
    ValueError
        For an unknown `classname`.
    """
    if classname not in (None, "carray", "ctable"):
        raise ValueError(f"classname must be 'carray', 'ctable' or None, not {classname!r}")
    # Legacy bcolz's walk, step for step: the entries of `dir` that glob's
    # '*' lists (hidden ones not), in that order; first the containers among
    # them, then, recursively, the other directories.  `dir` itself is not
    # a candidate, and a container's own subdirectories are never entered.
    plain = []
    for node in _glob.glob(_os.path.join(_glob.escape(_os.fspath(dir)), "*")):
        if not _os.path.isdir(node):
            continue
        kind = _kind(node)
        if kind is None:
            plain.append(node)
            continue
        try:
            obj = open(node, mode=mode, allow_pickle=allow_pickle)
            if obj._pickles_refused():  # values pickled, and no consent to read them
                raise _PickleNotAllowedError("reading an object-dtype dataset", node)
        except _UnsupportedFormatError as exc:  # a codec or format bcolzx lacks, pickles
            _warnings.warn(f"walk skips {node}: {exc}", RuntimeWarning, stacklevel=2)
            continue
        if len(obj) and classname in (None, kind):  # legacy skips empty containers
            yield obj
    for node in plain:
        yield from walk(node, classname, mode, allow_pickle=allow_pickle)


# --- eval ---------------------------------------------------------------------------


def eval(expression, vm=None, out_flavor=None, user_dict=None, blen=None, **kwargs):  # legacy name
    """Evaluate an expression over carrays, arrays and scalars, block by block (legacy
    ``bcolz.eval``).

    The expression is parsed, never executed as Python: only names, numbers,
    strings, arithmetic, comparisons, ``& | ~`` (and ``and or not``) and
    numexpr's functions (``where``, ``sqrt``, ``sin``, ``log``, ``abs``...)
    are allowed.  Names are looked up in `user_dict`, then in the caller's
    locals and globals.  Operands are read one block at a time and the
    blocks are evaluated in parallel threads, so memory stays flat.

    Parameters
    ----------
    expression : str
    vm : {'numexpr', 'python', 'dask'}, optional
        Default ``bcolzx.defaults.vm``; all give identical results.  'dask'
        evaluates the blocks as Dask tasks with Dask's current scheduler (a
        ``distributed`` client's cluster when there is one), each with
        numexpr when installed; blocks of on-disk carrays are read by the
        tasks from the files.
    out_flavor : {'bcolz', 'carray', 'numpy'}, optional
        A carray (default, ``bcolzx.defaults.out_flavor``) or a NumPy array.
    user_dict : dict, optional
        Values of names, searched first.
    blen : int, optional
        Rows per block (default: the operands' chunk length).
    **kwargs
        carray parameters for the result (``cparams``, ``rootdir``,
        ``chunklen``, ...).

    Returns
    -------
    carray or numpy.ndarray

    Raises
    ------
    ExpressionError
        (a ValueError) for a malformed or unsafe expression or an unknown name.
    ValueError
        For operands of different lengths, or a bad `vm` or `out_flavor`.

    Examples
    --------
    >>> import numpy as np, bcolzx
    >>> a = bcolzx.arange(6)
    >>> b = np.arange(6) * 10
    >>> bcolzx.eval("a * 2 + b", out_flavor="numpy")
    array([ 0, 12, 24, 36, 48, 60])
    >>> try:
    ...     bcolzx.eval("__import__('os')")
    ... except ValueError as exc:
    ...     print(type(exc).__name__)
    ExpressionError
    """
    expr = _compile(expression)
    values = _resolve(expr.names, _caller_scope(user_dict))
    columns, scalars = _split(values)
    return _evaluate.evaluate(expr, columns, scalars, new_carray=_carray, vm=vm,
                              out_flavor=out_flavor, blen=blen, **kwargs)
