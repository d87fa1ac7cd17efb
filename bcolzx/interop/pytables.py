"""Copy ctables to and from HDF5 files, as PyTables Tables (legacy bcolz's format).

:func:`to_hdf5` writes a ctable as a :class:`tables.Table` (one HDF5
compound dataset, one field per column) and :func:`from_hdf5` reads such a
table into a new ctable.  Both stream: the data moves in blocks of rows
(whole HDF5 chunks, at least one ctable chunk long, on the way out; on the
way in PyTables' buffer size, at most 8 MiB), never the whole table at once.
PyTables is imported only when one of them is called.

Column types
------------
bool, int8..int64, uint8..uint64, float16..float64, complex64/128 and
fixed-width bytes (``S<n>``), with any row shape, are stored as they are.
HDF5 (through PyTables) has no type for two NumPy kinds, which are stored as
follows and restored exactly by :func:`from_hdf5`:

``datetime64``, ``timedelta64`` (any unit)
    Their int64 counts (NaT is the int64 minimum).
``U<n>`` (unicode strings)
    Their raw UCS-4 code units, in an ``S<4n>`` field (not UTF-8: this keeps
    the copy a zero-cost view and the round trip exact; other HDF5 readers
    see 4 bytes per character).

The NumPy dtypes of such columns are recorded in the node attribute
``bcolzx_dtypes`` (a JSON object ``{column: dtype}``).

Attributes
----------
The ctable's attrs become attributes of the table node, and back.  Strings,
booleans, floats and int64-sized integers are stored as native HDF5
attributes (readable by any HDF5 tool); lists, dicts, None and larger
integers as their JSON text, their names listed in the node attribute
``bcolzx_json_attrs``.  Attribute names starting with ``bcolzx_`` are
reserved.  Reading a table that bcolzx did not write, attributes that JSON
cannot hold are skipped with a warning.  Note that PyTables unpickles
pickled attributes when reading them: open only files you trust.

Compression
-----------
The ctable's (or the given) ``cparams`` give the HDF5 filters' level
(``clevel``) and shuffle (SHUFFLE or BITSHUFFLE).  The compressor (PyTables'
``complib``) is `cname` when given, otherwise Blosc2 with the cparams'
codec (``'blosc2:lz4'`` by default) when PyTables has Blosc2, else Blosc1
with that codec, else zlib.  With Blosc2 the HDF5 chunks hold about 1 MiB
of rows (PyTables' own choice, the size of the L3 cache, makes writes slow);
otherwise PyTables chooses them.  A table compressed with a filter PyTables
lacks (one of hdf5plugin's, written by another program) is read with
hdf5plugin's plugins when it is installed, else refused with an ImportError
naming it (:mod:`bcolzx.interop._hdf5_filters`).
"""

from __future__ import annotations

import json
import os
import posixpath
import warnings
from typing import TYPE_CHECKING, Any

import numpy as np

from bcolzx.interop._common import discard_on_error, finish, refuse_objects, reporter
from bcolzx.interop._common import python_value as _python_value
from bcolzx.interop._hdf5_filters import ensure_pytables

if TYPE_CHECKING:  # pragma: no cover - typing only
    from bcolzx.ctable import ctable

__all__ = ["to_hdf5", "from_hdf5"]

#: Node attribute: JSON object of the NumPy dtypes of datetime/timedelta/unicode columns.
DTYPES_ATTR = "bcolzx_dtypes"
#: Node attribute: JSON list of the attributes stored as JSON text.
JSON_ATTRS_ATTR = "bcolzx_json_attrs"
RESERVED_PREFIX = "bcolzx_"
MODES = ("w", "a", "r+")
#: Bytes of rows in one HDF5 chunk of a Blosc2-compressed table.
BLOSC2_CHUNK_BYTES = 1 << 20
#: Most bytes read from the HDF5 table at once (PyTables' own buffer may be smaller).
READ_BLOCK_BYTES = 8 << 20

_INT64 = np.iinfo(np.int64)


def _import_tables():
    try:
        import tables
    except ImportError as exc:
        raise ImportError("reading or writing HDF5 needs PyTables: pip install tables") from exc
    return tables


# -- dtypes ----------------------------------------------------------------------------


def _storage_dtype(dtype: np.dtype) -> np.dtype | None:
    """The dtype HDF5 stores `dtype` as, when it cannot store it as is (else None)."""
    if dtype.kind in "mM":
        return np.dtype(dtype.str[0] + "i8")
    if dtype.kind == "U":
        return np.dtype(f"S{dtype.itemsize}")
    return None


def _table_layout(ct: ctable) -> tuple[np.dtype, dict[str, str]]:
    """The row dtype of the HDF5 table and the dtypes to record."""
    fields, recorded = [], {}
    for name, col in ct.cols.items():
        dtype = col.dtype
        store = _storage_dtype(dtype)
        if store is not None:
            recorded[name] = dtype.str
            dtype = store
        elif dtype.kind not in "biufcS":
            raise TypeError(f"column {name!r}: dtype {dtype} cannot be stored in HDF5")
        fields.append((name, dtype, col.shape[1:]))
    return np.dtype(fields), recorded


# -- compression -----------------------------------------------------------------------


def _complib(tables, codec: str, cname: str | None) -> str:
    if cname is None:
        for family in ("blosc2", "blosc"):
            lister = getattr(tables, f"{family}_compressor_list", None)
            if tables.which_lib_version(family) is not None and lister is not None \
                    and codec in lister():
                return f"{family}:{codec}"
        return "zlib"
    if not isinstance(cname, str) or cname not in tables.filters.all_complibs:
        raise ValueError(f"cname must be a PyTables complib, one of "
                         f"{tables.filters.all_complibs}, not {cname!r}")
    if tables.which_lib_version(cname.split(":")[0]) is None:
        raise ValueError(f"this PyTables has no {cname.split(':')[0]!r} library")
    return cname


def _filters(tables, ct: ctable, cparams, cname: str | None):
    from bcolzx.params import BITSHUFFLE, SHUFFLE
    from bcolzx.params import cparams as cparams_type

    if cparams is None:
        cparams = ct.cparams
    elif isinstance(cparams, dict):
        cparams = cparams_type(**cparams)
    elif not isinstance(cparams, cparams_type):
        raise TypeError(f"cparams must be a bcolzx.cparams or a dict, not "
                        f"{type(cparams).__name__}")
    return tables.Filters(complevel=cparams.clevel,
                          complib=_complib(tables, cparams.cname, cname),
                          shuffle=cparams.shuffle == SHUFFLE,
                          bitshuffle=cparams.shuffle == BITSHUFFLE)


# -- attributes ------------------------------------------------------------------------


def _is_native(value: Any) -> bool:
    if isinstance(value, (bool, str, float)):
        return True
    return isinstance(value, int) and _INT64.min <= value <= _INT64.max


def _write_attrs(node, attrs: dict[str, Any], recorded: dict[str, str]) -> None:
    as_json = []
    for name, value in attrs.items():
        if name.startswith(RESERVED_PREFIX):
            raise ValueError(f"attribute {name!r}: names starting with {RESERVED_PREFIX!r} "
                             "are reserved for bcolzx in HDF5 files")
        if _is_native(value):
            node.attrs[name] = value
        else:
            node.attrs[name] = json.dumps(value)
            as_json.append(name)
    if recorded:
        node.attrs[DTYPES_ATTR] = json.dumps(recorded)
    if as_json:
        node.attrs[JSON_ATTRS_ATTR] = json.dumps(as_json)


def _json_attr(node, name: str, default):
    if name not in node.attrs._v_attrnames:
        return default
    try:
        return json.loads(_python_value(node.attrs[name]))
    except (TypeError, ValueError, UnicodeDecodeError) as exc:
        from bcolzx.errors import CorruptDataError

        raise CorruptDataError(f"node attribute {name!r} is not valid JSON: {exc}") from None


def _read_attrs(node, ct: ctable) -> None:
    as_json = set(_json_attr(node, JSON_ATTRS_ATTR, []))
    skipped = []
    for name in node.attrs._v_attrnamesuser:
        if name.startswith(RESERVED_PREFIX):
            continue
        try:
            value = _python_value(node.attrs[name])
            ct.attrs[name] = json.loads(value) if name in as_json else value
        except (TypeError, ValueError, UnicodeDecodeError):
            skipped.append(name)
    if skipped:
        warnings.warn(f"HDF5 attributes {skipped} cannot be held by ctable attrs (JSON) and "
                      "were skipped", stacklevel=3)


# -- public API ------------------------------------------------------------------------


def _split_nodepath(nodepath: str) -> tuple[str, str]:
    if not isinstance(nodepath, str) or not nodepath.startswith("/"):
        raise ValueError(f"nodepath must be an absolute HDF5 path such as '/ctable', "
                         f"not {nodepath!r}")
    parent, name = posixpath.split(nodepath.rstrip("/"))
    if not name:
        raise ValueError(f"nodepath {nodepath!r} names no node")
    return parent or "/", name


def to_hdf5(ct: ctable, filepath, nodepath: str = "/ctable", mode: str = "w", cparams=None,
            cname: str | None = None, *, progress=None,
            storage_options: dict | None = None) -> None:
    """Write a ctable to an HDF5 file as a PyTables Table.

    The rows are written in blocks of whole HDF5 chunks, at least one
    ctable chunk long; the ctable's attrs become attributes of the node.  See
    the module docstring for the types and attributes.  At a URL of object
    storage, the file is written to a local temporary directory, then
    uploaded as one object (docs/remote.md).

    Parameters
    ----------
    ct : ctable
    filepath : str or os.PathLike
        The HDF5 file, or its URL (``s3://bucket/t.h5``, ``gs://...``).
    nodepath : str
        Absolute path of the new table in the file; missing groups are
        created.
    mode : {'w', 'a', 'r+'}
        'w' creates the file (replacing any existing file, with all its
        nodes); 'a' and 'r+' add the table to an existing file ('a' creates
        it if missing).
        At a URL of object storage, where an object is written whole and
        never changed, 'a' writes a new file only where there is none, and
        'r+' is refused (AppendOnlyError).
    cparams : cparams or dict, optional
        Gives the filters' level and shuffle (and the Blosc codec when
        `cname` is None).  Default: ``ct.cparams``.
    cname : str, optional
        A PyTables ``complib``: ``'zlib'``, ``'lzo'``, ``'bzip2'``,
        ``'blosc'``, ``'blosc2'``, ``'blosc:<codec>'`` or ``'blosc2:<codec>'``.
        Default: ``'blosc2:<cparams.cname>'`` (see the module docstring).
    progress : callable, optional
        Called with the uncompressed bytes of each block of rows written;
        the calls add up to ``ct.nbytes``.  A callback with a ``set_total``
        method is first told that total.
    storage_options : dict, optional
        For a URL: the options of its fsspec filesystem (credentials,
        endpoint...).

    Raises
    ------
    ImportError
        If PyTables is not installed.
    ValueError
        For a bad `mode`, `nodepath` or `cname`, an existing node at
        `nodepath`, an attribute name starting with ``bcolzx_``, or
        `storage_options` with a local path.
    TypeError
        For bad `cparams`, or a column dtype HDF5 cannot hold.
    AppendOnlyError
        With mode 'a' or 'r+' when a file is at the URL.
    RemoteError
        If the object store fails (nothing is published at the URL).
    OSError
        If the file cannot be opened or written.

    Examples
    --------
    >>> import numpy as np, bcolzx, os, tempfile
    >>> from bcolzx.interop.pytables import to_hdf5, from_hdf5
    >>> ct = bcolzx.ctable([np.arange(3), np.array(["a", "b", "c"])], names=["i", "s"])
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     to_hdf5(ct, os.path.join(tmp, "t.h5"), "/data/t")
    ...     from_hdf5(os.path.join(tmp, "t.h5"), "/data/t")["s"][:]
    array(['a', 'b', 'c'], dtype='<U1')
    """
    from bcolzx._publish import export_place

    refuse_objects(ct, "HDF5 (PyTables)")
    tables = _import_tables()
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
    filepath = export_place(filepath, storage_options, mode, lambda local: to_hdf5(
        ct, local, nodepath, "w", cparams, cname, progress=progress),
        what="HDF5 file", suffix=".h5")
    if filepath is None:
        return
    parent, name = _split_nodepath(nodepath)
    rowtype, recorded = _table_layout(ct)
    filters = _filters(tables, ct, cparams, cname)
    attrs = ct.attrs.getall()
    n = len(ct)
    chunkshape = None
    if (filters.complib or "").startswith("blosc2"):
        # PyTables would size Blosc2 chunks to the L3 cache (tens of MB), and
        # every append then recompresses a whole chunk.
        chunkshape = (max(1, min(n, BLOSC2_CHUNK_BYTES // max(rowtype.itemsize, 1))),)
    with warnings.catch_warnings():
        # Column and attribute names need not be Python identifiers.
        warnings.simplefilter("ignore", tables.NaturalNameWarning)
        with tables.open_file(os.fspath(filepath), mode) as h5:
            if nodepath.rstrip("/") in h5:
                raise ValueError(f"{filepath} already has a node {nodepath!r}")
            table = h5.create_table(parent, name, description=rowtype, filters=filters,
                                    expectedrows=max(n, 1), chunkshape=chunkshape,
                                    createparents=True)
            # Whole HDF5 chunks per append (no chunk is rewritten), and at
            # least one chunk of the widest column per read.
            hchunk = int(table.chunkshape[0])
            most = max(col.chunklen for col in ct.cols.values())
            blen = hchunk * max(1, -(-most // hchunk))
            report = reporter(progress, n * rowtype.itemsize)
            for lo in range(0, n, blen):
                hi = min(n, lo + blen)
                block = np.empty(hi - lo, dtype=rowtype)
                for colname, col in ct.cols.items():
                    values = col[lo:hi]
                    if colname in recorded:
                        values = values.view(rowtype[colname].base)
                    block[colname] = values
                table.append(block)
                report(block.nbytes)
            _write_attrs(table, attrs, recorded)
            table.flush()


def from_hdf5(filepath, nodepath: str = "/ctable", *, progress=None, **kwargs) -> ctable:
    """Read a PyTables Table from an HDF5 file into a new ctable.

    The table is read in blocks of rows (PyTables' buffer, at most 8 MiB) and
    appended to the ctable; its attributes become the ctable's attrs.  The
    dtypes recorded by :func:`to_hdf5` (datetimes, timedeltas, unicode
    strings) are restored.  See the module docstring.

    Parameters
    ----------
    filepath : str or os.PathLike
        The HDF5 file (opened read-only).
    nodepath : str
        Path of the table in the file.
    progress : callable, optional
        Called with the uncompressed bytes of each block of rows stored; the
        calls add up to the ctable's ``nbytes``.  A callback with a
        ``set_total`` method is first told that total.
    **kwargs
        Passed to the :class:`~bcolzx.ctable.ctable` constructor
        (``rootdir``, ``mode``, ``cparams``, ``chunklen``, ``expectedlen``
        (default: the table's row count), ``dflt``, ``auto_flush``).

    Returns
    -------
    ctable

    Raises
    ------
    ImportError
        If PyTables is not installed, or the table uses a filter of
        hdf5plugin's and hdf5plugin is not installed.
    UnsupportedFormatError
        If the table uses an HDF5 filter no installed plugin provides.
    FileNotFoundError
        If `filepath` does not exist.
    KeyError
        If there is no node at `nodepath`.
    TypeError
        If the node is not a Table, or has nested columns.
    CorruptDataError
        If the bcolzx node attributes are not valid JSON.
    FileExistsError, ReadOnlyError
        As the ctable constructor, for `rootdir` and `mode`.

    Warns
    -----
    UserWarning
        For node attributes that ctable attrs (JSON) cannot hold; they are
        skipped.
    """
    tables = _import_tables()
    from bcolzx.ctable import ctable

    filepath = os.fspath(filepath)
    if not os.path.isfile(filepath):
        raise FileNotFoundError(f"no HDF5 file {filepath}")
    with tables.open_file(filepath, "r") as h5:
        try:
            table = h5.get_node(nodepath)
        except tables.NoSuchNodeError:
            raise KeyError(f"{filepath} has no node {nodepath!r}") from None
        if not isinstance(table, tables.Table):
            raise TypeError(f"node {nodepath!r} is a {type(table).__name__}, not a Table")
        unreadable = ensure_pytables(tables, table, filepath)
        names = list(table.dtype.names)
        for name in names:
            if table.dtype[name].base.names:
                raise TypeError(f"column {name!r} is nested; a ctable holds flat columns")
        recorded = {k: np.dtype(v) for k, v in _json_attr(table, DTYPES_ATTR, {}).items()}
        n = int(table.nrows)
        blen = max(1, min(int(table.nrowsinbuf), READ_BLOCK_BYTES // table.rowsize))
        kwargs.setdefault("expectedlen", max(n, 1))

        rowbytes = sum(table.dtype[name].itemsize for name in names)
        report = reporter(progress, n * rowbytes)

        def columns(lo: int, hi: int) -> list[np.ndarray]:
            try:
                block = table.read(lo, hi)
            except tables.HDF5ExtError as exc:
                if unreadable is None:
                    raise
                raise unreadable from exc
            return [block[name].view(recorded[name]) if name in recorded else block[name]
                    for name in names]

        # One flush at the end, not one per block; then the caller's setting.
        auto_flush = kwargs.pop("auto_flush", kwargs.get("rootdir") is not None)
        first = min(n, blen)
        ct = ctable(columns(0, first), names=names, auto_flush=False, **kwargs)
        with discard_on_error(ct):  # a failed import leaves no half-written table
            report(first * rowbytes)
            for lo in range(blen, n, blen):
                hi = min(n, lo + blen)
                ct.append(columns(lo, hi))
                report((hi - lo) * rowbytes)
            _read_attrs(table, ct)
            ct.auto_flush = auto_flush
            finish(ct)
    return ct
