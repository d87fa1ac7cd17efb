"""Copy carrays to and from any HDF5 dataset with h5py, chunk by chunk.

:func:`to_hdf5` writes a carray as one HDF5 dataset (``carray.tohdf5``);
:func:`from_hdf5` reads any HDF5 dataset of at least one dimension into a
carray, and :func:`fromhdf5` (``bcolzx.fromhdf5``) reads any node: a
PyTables Table into a ctable, any other dataset into a carray.  All stream:
the data moves in blocks of whole HDF5 chunks (about 8 MiB), never the whole
array at once.  h5py (and hdf5plugin for the Blosc2 filter) is imported
only when one of them is called (``pip install 'bcolzx[h5py]'``).

Which node becomes what (:func:`fromhdf5`)
------------------------------------------
* A dataset with the attribute ``CLASS = "TABLE"`` (a PyTables Table, as
  ``ctable.tohdf5`` and legacy bcolz write) becomes a **ctable**, read by
  :func:`bcolzx.interop.pytables.from_hdf5` (this needs PyTables too).
* Any other dataset becomes a **carray** of the dataset's dtype and shape:
  numbers, booleans, fixed-length strings, and compound types (a
  structured carray), in any number of dimensions (chunked along the first).
* A group, a 0-d or empty (null dataspace) dataset, and variable-length or
  reference types are refused (TypeError or ValueError).

Types
-----
bool, int8..int64, uint8..uint64, float16..float64, complex64/128,
fixed-width bytes (``S<n>``) and structured dtypes of those are stored as
they are.  ``datetime64``/``timedelta64`` are stored as their int64 counts
and ``U<n>`` as its raw UCS-4 code units (``S<4n>``), as
:mod:`bcolzx.interop.pytables` does; the NumPy dtype is then recorded in the
dataset attribute ``bcolzx_dtype`` and restored on reading.
Variable-length strings (``StringDType``) are HDF5 variable-length UTF-8
strings (``h5py.string_dtype()``) and ``vlen_dtype(bytes)`` is h5py's own
variable-length bytes (ASCII strings), both without a filter (HDF5 filters
see only the heap references) and without a fill value; HDF5 refuses NUL
characters in them (ValueError), and missing strings are refused.  Reading,
a UTF-8 variable-length string dataset becomes a ``StringDType`` carray and
an ASCII one a bytes carray.

The carray's ``dflt`` is the dataset's fill value, and back.

Attributes
----------
The carray's attrs become attributes of the dataset, and back: strings,
booleans, floats and int64-sized integers natively, the rest as JSON text
(named in ``bcolzx_json_attrs``).  Names starting with ``bcolzx_`` are
reserved.  On reading, PyTables' own attributes (``CLASS``, ``VERSION``,
``TITLE``...) and dimension-scale references are left out, and values JSON
cannot hold are skipped with a warning.

Compression
-----------
By default, the Blosc2 filter of hdf5plugin with the carray's (or the given)
``cparams``: the same codec, level and shuffle; without hdf5plugin, HDF5's
gzip with that level (at most 9) and its shuffle filter.  `compression`
takes anything h5py's ``create_dataset`` does instead (``"gzip"``,
``"lzf"``, an hdf5plugin filter such as ``hdf5plugin.Zstd()``).  HDF5
chunks are ``chunklen`` rows, so the dataset is chunked as the carray; the
dataset can grow along its first axis.  A reader takes the dataset's chunk
length as ``chunklen`` when its chunks hold whole rows.

Reading needs the dataset's filters: a reader in a new process loads
hdf5plugin itself when the dataset uses one of its filters (Blosc2 among
them), and says so (ImportError naming hdf5plugin) when it is not installed
(:mod:`bcolzx.interop._hdf5_filters`).
"""

from __future__ import annotations

import contextlib
import json
import os
from typing import TYPE_CHECKING, Any

import numpy as np

from bcolzx._format import strings
from bcolzx.interop import pytables as _tables_interop
from bcolzx.interop._common import (
    block_rows,
    discard_on_error,
    finish,
    import_optional,
    json_attrs,
    new_carray,
    python_value,
    refuse_objects,
    reporter,
)
from bcolzx.interop._hdf5_filters import ensure_h5py

if TYPE_CHECKING:  # pragma: no cover - typing only
    from bcolzx.carray import carray
    from bcolzx.ctable import ctable

__all__ = ["to_hdf5", "from_hdf5", "fromhdf5"]

#: Dataset attribute: the NumPy dtype when it is stored as another one.
DTYPE_ATTR = "bcolzx_dtype"
JSON_ATTRS_ATTR = _tables_interop.JSON_ATTRS_ATTR
RESERVED_PREFIX = _tables_interop.RESERVED_PREFIX
MODES = _tables_interop.MODES
#: HDF5 chunks cannot hold 4 GiB or more.
MAX_CHUNK_BYTES = (1 << 32) - 1
#: Attributes that HDF5 tools write for themselves, left out of attrs.
SYSTEM_ATTRS = frozenset({"CLASS", "VERSION", "TITLE", "EXTDIM", "FLAVOR",
                          "PYTABLES_FORMAT_VERSION", "DIMENSION_LIST", "REFERENCE_LIST",
                          "NAME", "_Netcdf4Dimid", "_Netcdf4Coordinates", "_NCProperties"})
_STORED_KINDS = "biufcS"
_UNREADABLE = object()


def _import_h5py():
    return import_optional("h5py", "h5py", "reading or writing HDF5 datasets")


# -- dtypes ----------------------------------------------------------------------------


def _check_storable(dtype: np.dtype, what: str) -> None:
    if dtype.fields is not None:
        for name in dtype.names:
            _check_storable(dtype.fields[name][0], f"{what}, field {name!r}")
        return
    if dtype.subdtype is not None:
        _check_storable(dtype.subdtype[0], what)
        return
    if dtype.kind not in _STORED_KINDS:
        raise TypeError(f"{what}: dtype {dtype} cannot be stored in HDF5 (within a "
                        "structured dtype only numbers, booleans and bytes can)")


def _storage_dtype(dtype: np.dtype) -> np.dtype:
    """The dtype the dataset holds for a carray of `dtype`."""
    stored = _tables_interop._storage_dtype(dtype)
    if stored is not None:
        return stored
    _check_storable(dtype, "the carray")
    return dtype


# -- compression -----------------------------------------------------------------------


def _compression(cp, compression) -> dict[str, Any]:
    """``create_dataset`` keywords for the filters."""
    from bcolzx.params import BITSHUFFLE, NOSHUFFLE, SHUFFLE

    if compression is not None:
        return {"compression": compression}
    try:
        import hdf5plugin
    except ImportError:
        if cp.clevel == 0:
            return {}
        return {"compression": "gzip", "compression_opts": min(cp.clevel, 9),
                "shuffle": cp.shuffle != NOSHUFFLE}
    shuffle = {SHUFFLE: hdf5plugin.Blosc2.SHUFFLE, BITSHUFFLE: hdf5plugin.Blosc2.BITSHUFFLE}
    return {"compression": hdf5plugin.Blosc2(cname=cp.cname, clevel=cp.clevel,
                                             filters=shuffle.get(cp.shuffle,
                                                                 hdf5plugin.Blosc2.NOFILTER))}


def _as_cparams(ca: carray, cparams):
    from bcolzx.params import cparams as cparams_type

    if cparams is None:
        return ca.cparams
    if isinstance(cparams, dict):
        return cparams_type(**cparams)
    if isinstance(cparams, cparams_type):
        return cparams
    raise TypeError(f"cparams must be a bcolzx.cparams or a dict, not {type(cparams).__name__}")


# -- attributes ------------------------------------------------------------------------


def _read_attrs(dset) -> dict[str, Any]:
    as_json = set()
    if JSON_ATTRS_ATTR in dset.attrs:
        as_json = set(_load_json(dset, JSON_ATTRS_ATTR))
    items = []
    for name in dset.attrs:
        if name.startswith(RESERVED_PREFIX) or name in SYSTEM_ATTRS:
            continue
        try:
            value = dset.attrs[name]
        except (OSError, TypeError, ValueError):  # a type h5py cannot read
            value = _UNREADABLE  # skipped with the others that JSON cannot hold
        if name in as_json:
            value = _load_json(dset, name)
        items.append((name, value))
    return json_attrs(items, f"HDF5 node {dset.name}")


def _load_json(dset, name: str) -> Any:
    from bcolzx.errors import CorruptDataError

    try:
        return json.loads(python_value(dset.attrs[name]))
    except (TypeError, ValueError, UnicodeDecodeError) as exc:
        raise CorruptDataError(f"attribute {name!r} of {dset.name} is not valid JSON: {exc}",
                               path=dset.file.filename) from None


# -- writing ---------------------------------------------------------------------------


def to_hdf5(ca: carray, filepath, nodepath: str = "/carray", mode: str = "w", cparams=None,
            compression=None, *, progress=None, storage_options: dict | None = None) -> None:
    """Write a carray to an HDF5 dataset with h5py, in blocks of whole HDF5 chunks.

    See the module docstring for the types, attributes and filters.  At a
    URL of object storage, the file is written to a local temporary
    directory, then uploaded as one object (docs/remote.md).

    Parameters
    ----------
    ca : carray
    filepath : str or os.PathLike
        The HDF5 file, or its URL (``s3://bucket/a.h5``, ``gs://...``).
    nodepath : str
        Absolute path of the new dataset; missing groups are created.
    mode : {'w', 'a', 'r+'}
        'w' creates the file (replacing any existing one with all its nodes);
        'a' and 'r+' add the dataset to an existing file ('a' creates it if
        missing).
        At a URL of object storage, where an object is written whole and
        never changed, 'a' writes a new file only where there is none, and
        'r+' is refused (AppendOnlyError).
    cparams : cparams or dict, optional
        Codec, level and shuffle of the filter (default: ``ca.cparams``).
    compression : optional
        Any ``compression`` of h5py's ``create_dataset`` instead (see the
        module docstring).
    progress : callable, optional
        Called with the uncompressed bytes of each block written; the calls
        add up to ``ca.nbytes``.  A callback with a ``set_total`` method is
        first told that total.
    storage_options : dict, optional
        For a URL: the options of its fsspec filesystem (credentials,
        endpoint...).

    Raises
    ------
    ImportError
        If h5py is not installed.
    ValueError
        For a bad `mode` or `nodepath`, an existing node at `nodepath`, an
        attribute name starting with ``bcolzx_``, or `storage_options` with
        a local path.
    TypeError
        For bad `cparams`, or a dtype HDF5 cannot hold.
    AppendOnlyError
        With mode 'a' or 'r+' when a file is at the URL.
    RemoteError
        If the object store fails (nothing is published at the URL).
    OSError
        If the file cannot be opened or written.

    Examples
    --------
    >>> import os, tempfile, numpy as np, bcolzx
    >>> ca = bcolzx.carray(np.arange(6).reshape(3, 2), dflt=-1)
    >>> path = os.path.join(tempfile.mkdtemp(), "a.h5")
    >>> ca.tohdf5(path, "/group/a")
    >>> back = bcolzx.fromhdf5(path, "/group/a")
    >>> back[:].tolist(), back.dflt.tolist()
    ([[0, 1], [2, 3], [4, 5]], -1)
    """
    from bcolzx._publish import export_place

    refuse_objects(ca, "HDF5", vlen_ok=True)
    h5py = _import_h5py()
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
    filepath = export_place(filepath, storage_options, mode, lambda local: to_hdf5(
        ca, local, nodepath, "w", cparams, compression, progress=progress),
        what="HDF5 file", suffix=".h5")
    if filepath is None:
        return
    _tables_interop._split_nodepath(nodepath)
    vlen = _vlen_out(h5py, ca.dtype)
    stored = _storage_dtype(ca.dtype) if vlen is None else vlen
    cp = _as_cparams(ca, cparams)
    attrs = ca.attrs.getall()
    for name in attrs:
        if name.startswith(RESERVED_PREFIX):
            raise ValueError(f"attribute {name!r}: names starting with {RESERVED_PREFIX!r} "
                             "are reserved for bcolzx in HDF5 files")
    n, rowshape, rowbytes = len(ca), ca.shape[1:], ca.atomsize
    chunk_rows = max(1, min(ca.chunklen, MAX_CHUNK_BYTES // rowbytes))
    fill = np.asarray(ca.dflt, dtype=ca.dtype).reshape(())
    extra = {} if vlen is not None else \
        {"fillvalue": fill.view(stored), **_compression(cp, compression)}
    with h5py.File(os.fspath(filepath), mode) as h5:
        if nodepath.rstrip("/") in h5:
            raise ValueError(f"{filepath} already has a node {nodepath!r}")
        dset = h5.create_dataset(nodepath, shape=ca.shape, dtype=stored,
                                 maxshape=(None, *rowshape), chunks=(chunk_rows, *rowshape),
                                 **extra)
        blen = block_rows(rowbytes, chunk_rows)
        report = reporter(progress, n * rowbytes)
        for lo in range(0, n, blen):
            hi = min(n, lo + blen)
            dset[lo:hi] = ca[lo:hi].view(stored) if vlen is None else _no_na(ca[lo:hi])
            report((hi - lo) * rowbytes)
        _tables_interop._write_attrs(dset, attrs, {})
        if vlen is None and stored != ca.dtype:
            dset.attrs[DTYPE_ATTR] = ca.dtype.str


def _vlen_out(h5py, dtype: np.dtype):
    """h5py's dtype for a carray of variable-length strings or bytes, else None."""
    kind = strings.item_kind(dtype)
    if kind == "utf8":
        return h5py.string_dtype("utf-8")
    if kind == "bytes":
        return h5py.vlen_dtype(bytes)
    return None


def _no_na(block: np.ndarray) -> np.ndarray:
    """A block of strings or bytes as h5py writes it; missing strings refused."""
    if strings.is_string(block.dtype) and hasattr(block.dtype, "na_object") and \
            strings.exact_bounds(block)[2]:
        raise ValueError("the carray holds missing strings, which HDF5 variable-length "
                         "strings cannot hold; fill them first")
    return block


# -- reading ---------------------------------------------------------------------------


@contextlib.contextmanager
def _open_dataset(filepath, nodepath: str, what: str):
    """The dataset at `nodepath` of `filepath`, opened read-only (`what` it may be)."""
    h5py = _import_h5py()
    filepath = os.fspath(filepath)
    if not os.path.isfile(filepath):
        raise FileNotFoundError(f"no HDF5 file {filepath}")
    if not isinstance(nodepath, str):
        raise ValueError(f"nodepath must be a str, not {nodepath!r}")
    with h5py.File(filepath, "r") as h5:
        try:
            node = h5[nodepath]
        except KeyError:
            raise KeyError(f"{filepath} has no node {nodepath!r}") from None
        if not isinstance(node, h5py.Dataset):
            raise TypeError(f"node {nodepath!r} is a {type(node).__name__}; {what}")
        yield node


def _is_table(dset) -> bool:
    value = dset.attrs.get("CLASS")
    return python_value(value) == "TABLE" if value is not None else False


def _plain(dtype: np.dtype) -> np.dtype:
    """`dtype` without the metadata h5py attaches (string encodings, enum members)."""
    if dtype.fields is not None:
        return np.dtype({"names": list(dtype.names),
                         "formats": [_plain(dtype.fields[n][0]) for n in dtype.names],
                         "offsets": [dtype.fields[n][1] for n in dtype.names],
                         "itemsize": dtype.itemsize})
    if dtype.subdtype is not None:
        return np.dtype((_plain(dtype.subdtype[0]), dtype.subdtype[1]))
    return np.dtype(dtype.str)


def _dataset_dtype(dset, filepath: str) -> tuple[np.dtype, np.dtype]:
    """(the dataset's dtype, the carray's)."""
    from bcolzx.errors import CorruptDataError

    h5py = _import_h5py()
    info = h5py.check_string_dtype(dset.dtype)
    if info is not None and info.length is None:  # variable-length: utf-8 text, ascii bytes
        return dset.dtype, strings.string_dtype() if info.encoding == "utf-8" else \
            strings.BYTES_DTYPE
    stored = _plain(dset.dtype)
    if stored.hasobject:
        raise TypeError(f"node {dset.name!r} holds variable-length or reference data "
                        f"({stored}), which bcolzx does not import")
    recorded = dset.attrs.get(DTYPE_ATTR)
    if recorded is None:
        return stored, stored
    try:
        dtype = np.dtype(python_value(recorded))
        if dtype.itemsize != stored.itemsize:
            raise ValueError(f"{dtype} is not {stored.itemsize} bytes")
    except (TypeError, ValueError) as exc:
        raise CorruptDataError(f"attribute {DTYPE_ATTR!r} of {dset.name} is not a dtype for "
                               f"its data: {exc}", path=filepath) from None
    return stored, dtype


def _read_dataset(dset, filepath: str, kwargs: dict[str, Any], progress) -> carray:
    if dset.shape is None or dset.ndim == 0:
        raise ValueError(f"node {dset.name!r} is a scalar or empty (null) dataset; a carray "
                         "has at least one dimension")
    stored, dtype = _dataset_dtype(dset, filepath)
    unreadable = ensure_h5py(_import_h5py(), dset, filepath)
    n, rowshape = dset.shape[0], tuple(dset.shape[1:])
    defaults: dict[str, Any] = {"expectedlen": max(n, 1)}
    chunks = dset.chunks
    if chunks is not None and tuple(chunks[1:]) == rowshape:
        defaults["chunklen"] = int(chunks[0])
    vlen = strings.item_kind(dtype) in ("utf8", "bytes")
    fill = dset.fillvalue
    if fill is not None and not vlen:
        defaults["dflt"] = np.asarray(fill, dtype=stored).reshape(()).view(dtype)
    ca = new_carray(dtype, rowshape, defaults, kwargs)
    unit = chunks[0] if chunks is not None else 1
    blen = block_rows(ca.atomsize, unit)
    buf = np.empty((min(blen, n), *rowshape), dtype=stored) if not vlen else None
    source = dset.astype(dtype) if strings.is_string(dtype) else dset
    report = reporter(progress, n * ca.atomsize)
    with discard_on_error(ca):
        for lo in range(0, n, blen):
            hi = min(n, lo + blen)
            try:
                if buf is None:  # variable-length: h5py makes the strings or bytes
                    block = source[lo:hi]
                else:
                    block = buf[:hi - lo]
                    dset.read_direct(block, np.s_[lo:hi])
                    block = block.view(dtype)
            except OSError as exc:
                if unreadable is None:
                    raise
                raise unreadable from exc
            ca.append(block)
            report(block.nbytes)
        for name, value in _read_attrs(dset).items():
            ca.attrs[name] = value
        finish(ca)
    return ca


def from_hdf5(filepath, nodepath: str = "/carray", rootdir=None, *, progress=None,
              **kwargs) -> carray:
    """Read an HDF5 dataset into a new carray with h5py, in blocks of whole HDF5 chunks.

    Parameters
    ----------
    filepath : str or os.PathLike
        The HDF5 file (opened read-only).
    nodepath : str
        Path of the dataset in the file.
    rootdir : str, optional
        Where to store the carray (default: in memory).
    progress : callable, optional
        Called with the uncompressed bytes of each block stored; the calls
        add up to the carray's ``nbytes``.  A callback with a ``set_total``
        method is first told that total.
    **kwargs
        For the :class:`~bcolzx.carray.carray` constructor: ``mode``,
        ``cparams``, ``chunklen`` (default: the dataset's chunk length when
        its chunks hold whole rows), ``expectedlen``, ``dflt`` (default: the
        dataset's fill value).

    Returns
    -------
    carray

    Raises
    ------
    ImportError
        If h5py is not installed, or the dataset uses a filter of
        hdf5plugin's (Blosc2...) and hdf5plugin is not installed.
    UnsupportedFormatError
        If the dataset uses an HDF5 filter no installed plugin provides.
    FileNotFoundError
        If `filepath` does not exist.
    KeyError
        If there is no node at `nodepath`.
    TypeError
        If the node is not a dataset, or holds variable-length data.
    ValueError
        For a scalar or null dataset.
    CorruptDataError
        If bcolzx's attributes on the node are malformed.
    FileExistsError, ReadOnlyError
        As the carray constructor, for `rootdir` and ``mode``.

    Warns
    -----
    UserWarning
        For attributes that attrs (JSON) cannot hold; they are skipped.
    """
    with _open_dataset(filepath, nodepath, "a carray is read from a dataset") as node:
        return _read_dataset(node, os.fspath(filepath), {"rootdir": rootdir, **kwargs},
                             progress)


def fromhdf5(filepath, nodepath: str, rootdir=None, *, progress=None,
             **kwargs) -> carray | ctable:
    """Read any HDF5 dataset: a PyTables Table into a ctable, anything else into a carray.

    The node decides (see the module docstring): a dataset with the
    attribute ``CLASS = "TABLE"`` is read by
    :func:`bcolzx.interop.pytables.from_hdf5` (PyTables) into a ctable, any
    other dataset by :func:`from_hdf5` into a carray.

    Parameters
    ----------
    filepath : str or os.PathLike
    nodepath : str
        Path of the node in the file, e.g. ``"/carray"`` or ``"/ctable"``.
    rootdir : str, optional
        Where to store the result (default: in memory).
    progress : callable, optional
        Called with the uncompressed bytes of each block stored; the calls
        add up to the result's ``nbytes``.  A callback with a ``set_total``
        method is first told that total.
    **kwargs
        For the carray or ctable constructor (``mode``, ``cparams``,
        ``chunklen``, ``expectedlen``, ``dflt``; ``auto_flush`` for a ctable).

    Returns
    -------
    carray or ctable

    Raises
    ------
    ImportError
        If h5py is not installed (or PyTables, for a Table), or the node
        uses a filter of hdf5plugin's and hdf5plugin is not installed.
    UnsupportedFormatError
        If the node uses an HDF5 filter no installed plugin provides.
    FileNotFoundError
        If `filepath` does not exist.
    KeyError
        If there is no node at `nodepath`.
    TypeError
        If the node is a group, or holds variable-length data.
    ValueError
        For a scalar or null dataset.
    FileExistsError, ReadOnlyError
        As the constructors, for `rootdir` and ``mode``.
    """
    with _open_dataset(filepath, nodepath, "bcolzx reads datasets (a carray) and PyTables "
                       "Tables (a ctable)") as node:
        if not _is_table(node):
            return _read_dataset(node, os.fspath(filepath), {"rootdir": rootdir, **kwargs},
                                 progress)
    return _tables_interop.from_hdf5(filepath, nodepath, rootdir=rootdir, progress=progress,
                                     **kwargs)
