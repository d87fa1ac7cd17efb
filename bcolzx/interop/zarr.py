"""Copy carrays and ctables to and from Zarr v3, block by block.

:func:`to_zarr` writes a carray as a Zarr v3 array (``carray.to_zarr``) and
a ctable as a Zarr group holding one array per column (``ctable.to_zarr``);
:func:`from_zarr` (``bcolzx.from_zarr``) reads an array into a carray and a
group into a ctable.  Both stream in blocks of whole Zarr shards (or chunks
when unsharded) of about 8 MiB, never the whole array at once.  zarr-python
3 is imported only when one of them is called (``pip install 'bcolzx[zarr]'``).

How a carray maps onto a Zarr array
-----------------------------------
=================  ===============================================
carray             Zarr v3 array
=================  ===============================================
dtype, shape       data type, shape (any dimensions, at least one)
``chunklen``       chunk shape ``(chunklen, *shape[1:])`` by default
``dflt``           ``fill_value``
``cparams``        a ``BloscCodec`` with the same codec, level, shuffle and
                   block size (the codec a ``zstd``, ``lz4``, ``lz4hc``,
                   ``blosclz`` or ``zlib`` one)
attrs              attributes
=================  ===============================================

Reading, each is taken back: ``chunklen`` from the chunk shape when chunks
hold whole rows (else bcolzx's default) and ``cparams`` from a Blosc
compressor (else bcolzx's defaults).  Zarr stores every NumPy type bcolzx
has (fixed-width ``S``/``U`` strings and raw ``V`` bytes with Zarr's
*unstable specification* warning), except structured dtypes with
sub-array fields, which zarr-python cannot write, and sharded structured
dtypes, which it cannot shard (both refused with a TypeError).  Zarr v3
records no byte order in the data type (the ``bytes`` codec does): a
big-endian carray comes back in native byte order, with the same values.

Variable-length strings and bytes
---------------------------------
A ``StringDType`` carray becomes a Zarr v3 ``string`` array (the
``vlen-utf8`` codec) and a ``vlen_dtype(bytes)`` one a
``variable_length_bytes`` array (``vlen-bytes``), and back, each chunk's
items copied without padding.  Zarr's strings have no missing value: a
``StringDType(na_object=...)`` carray is written as plain strings, and one
that holds a missing value is refused with a ValueError naming it.

Groups
------
A ctable becomes a group with one array per column and the ctable's attrs
as the group's attributes, plus the reserved attribute ``"bcolzx"``:
``{"names": [...]}``, the column order (Zarr lists members by name).
Reading, a group without it gives its arrays in name order; arrays must
have the same length; sub-groups are not read (a warning names them).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from bcolzx.interop._common import (
    block_rows,
    check_attr_names,
    discard_on_error,
    finish,
    import_optional,
    json_attrs,
    merge_cparams,
    new_carray,
    refuse_objects,
    reporter,
)

if TYPE_CHECKING:  # pragma: no cover - typing only
    from bcolzx.carray import carray
    from bcolzx.ctable import ctable

__all__ = ["to_zarr", "from_zarr"]

#: Group attribute holding the column order of a ctable (reserved).
META_KEY = "bcolzx"
MODES = ("w", "x")
_CNAMES = ("blosclz", "lz4", "lz4hc", "zlib", "zstd")


def _import_zarr():
    return import_optional("zarr", "zarr", "reading or writing Zarr arrays")


def _store(source):
    return os.fspath(source) if isinstance(source, os.PathLike) else source


# -- writing ---------------------------------------------------------------------------


def _shape_along_rows(value, rowshape: tuple, what: str, default: int | None) -> tuple | None:
    """`value` (None, rows as an int, or a full shape) as a full chunk or shard shape."""
    if value is None:
        return None if default is None else (default, *rowshape)
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        shape = (int(value), *rowshape)
    else:
        try:
            shape = tuple(int(x) for x in value)
        except TypeError:
            raise ValueError(f"{what} must be rows (an int) or a shape, not {value!r}") from None
    if len(shape) != len(rowshape) + 1 or min(shape) < 1:
        raise ValueError(f"{what} {shape} is not a shape of positive ints for an array of "
                         f"{len(rowshape) + 1} dimensions")
    return shape


def _blosc_codec(cp) -> Any:
    from zarr.codecs import BloscCodec

    from bcolzx.params import BITSHUFFLE, SHUFFLE

    shuffle = {SHUFFLE: "shuffle", BITSHUFFLE: "bitshuffle"}.get(cp.shuffle, "noshuffle")
    return BloscCodec(cname=cp.cname, clevel=cp.clevel, shuffle=shuffle,
                      blocksize=cp.blocksize or 0)


def _check_dtype(dtype: np.dtype, what: str, sharded: bool) -> None:
    if dtype.fields is None:
        return
    if any(dtype.fields[n][0].subdtype is not None for n in dtype.names):
        raise TypeError(f"{what}: zarr-python cannot write structured dtypes with sub-array "
                        f"fields ({dtype})")
    if sharded:
        raise TypeError(f"{what}: zarr-python cannot shard arrays of structured dtypes "
                        f"({dtype}); write them without shards")


def _write_array(parent, name: str | None, ca: carray, chunks, shards, overwrite: bool,
                 cparams, attributes: dict[str, Any], report: Callable[[int], Any]):
    """A new Zarr array holding `ca` (in `parent`, a store or a group)."""
    from bcolzx.carray import _as_cparams

    zarr = _import_zarr()
    rowshape = ca.shape[1:]
    _check_dtype(ca.dtype, "the carray" if name is None else f"column {name!r}",
                 shards is not None)
    cp = ca.cparams if cparams is None else _as_cparams(cparams)
    chunk_shape = _shape_along_rows(chunks, rowshape, "chunks", ca.chunklen)
    shard_shape = _shape_along_rows(shards, rowshape, "shards", None)
    if shard_shape is not None and any(s % c for s, c in zip(shard_shape, chunk_shape)):
        raise ValueError(f"shards {shard_shape} must be a multiple of chunks {chunk_shape}")
    dtype, fill, check_na = _zarr_dtype_out(ca)
    kw = {"shape": ca.shape, "dtype": dtype, "chunks": chunk_shape, "shards": shard_shape,
          "compressors": _blosc_codec(cp), "fill_value": fill,
          "attributes": attributes, "overwrite": overwrite}
    if name is None:
        z = zarr.create_array(parent, **kw)
    else:
        z = parent.create_array(name, **kw)
    unit = (shard_shape or chunk_shape)[0]
    blen = block_rows(ca.atomsize, unit)
    n = len(ca)
    for lo in range(0, n, blen):
        block = ca[lo:min(n, lo + blen)]
        if check_na:
            block = _without_na(block, "the carray" if name is None else f"column {name!r}")
        z[lo:lo + len(block)] = block
        report(block.nbytes)
    return z


def _zarr_dtype_out(ca: carray) -> tuple[Any, Any, bool]:
    """``(Zarr data type, fill value, whether blocks may hold missing strings)`` of `ca`."""
    from bcolzx._format import strings

    if strings.is_string(ca.dtype):
        fill = ca.dflt[()]
        return strings.string_dtype(), fill if isinstance(fill, str) else "", \
            hasattr(ca.dtype, "na_object")
    if strings.is_bytes(ca.dtype):
        from zarr.core.dtype import VariableLengthBytes

        return VariableLengthBytes(), ca.dflt[()], False
    return ca.dtype, ca.dflt[()], False


def _without_na(block: np.ndarray, what: str) -> np.ndarray:
    """A block of strings with a missing value as plain StringDType (Zarr's)."""
    from bcolzx._format import strings

    if strings.exact_bounds(block)[2]:
        raise ValueError(f"{what} holds missing strings, which a Zarr string array cannot "
                         "hold; fill them first")
    return block.astype(strings.string_dtype())


def to_zarr(obj, store, chunks=None, shards=None, mode: str = "w", cparams=None, *,
            progress=None, storage_options: dict | None = None):
    """Write a carray to a Zarr v3 array, or a ctable to a Zarr group.

    The data is written in blocks of whole shards (or chunks), so that no
    shard is written twice.  See the module docstring for the mapping.

    At a URL of object storage, the store is written to a local temporary
    directory, then uploaded chunks first and its ``zarr.json`` documents
    last, the top one at the very end, so that no reader opens it, or one of
    its arrays, with chunks missing; a failed upload deletes what it
    uploaded (docs/remote.md).  (A store object of zarr-python over object
    storage, by contrast, is written to directly, as zarr-python writes.)

    Parameters
    ----------
    obj : carray or ctable
    store : str, os.PathLike or zarr store
        Where to write: a directory path, the URL of object storage
        (``s3://bucket/a.zarr``, ``gs://...``), or any store zarr-python
        accepts (``zarr.storage.MemoryStore()``, a ``LocalStore``, a
        ``StorePath``...).
    chunks : int or tuple of int, optional
        Rows per Zarr chunk (or a full chunk shape).  Default: ``chunklen``
        (of each column, for a ctable).
    shards : int or tuple of int, optional
        Rows per shard (a multiple of `chunks`) to write sharded arrays;
        default: no sharding.
    mode : {'w', 'x'}
        'w' replaces what is at `store`; 'x' refuses to.
    cparams : cparams or dict, optional
        Codec, level, shuffle and block size of the Blosc codec (default: the
        carray's, each column's).
    progress : callable, optional
        Called with the uncompressed bytes of each block written (column
        after column for a ctable); the calls add up to ``obj.nbytes``.  A
        callback with a ``set_total`` method is first told that total.
    storage_options : dict, optional
        For a URL: the options of its fsspec filesystem (credentials,
        endpoint...).

    Returns
    -------
    zarr.Array or zarr.Group
        Written; for a URL, opened read-only from the store (replacing or
        adding to a store on object storage would not be atomic).

    Raises
    ------
    ImportError
        If zarr is not installed.
    ValueError
        For bad `chunks`, `shards` or `mode`, (ctable) an attribute named
        ``bcolzx``, or `storage_options` with a local path.
    TypeError
        For a dtype zarr-python cannot write, or bad `cparams`.
    zarr.errors.ContainsArrayError, zarr.errors.ContainsGroupError
        With ``mode='x'`` when `store` holds a node.
    FileExistsError
        With ``mode='x'`` when objects are stored at the URL.
    AppendOnlyError
        With ``mode='w'`` when objects are stored at the URL: a store on
        object storage is not replaced (delete it first).
    RemoteError
        If the object store fails (nothing is published at the URL).

    Examples
    --------
    >>> import numpy as np, bcolzx, zarr
    >>> ca = bcolzx.carray(np.arange(10), chunklen=4, dflt=-1)
    >>> z = ca.to_zarr(zarr.storage.MemoryStore(), shards=8)
    >>> z.chunks, z.shards, z.fill_value
    ((4,), (8,), np.int64(-1))
    >>> bcolzx.from_zarr(z)[:]
    array([0, 1, 2, 3, 4, 5, 6, 7, 8, 9])
    """
    from bcolzx._publish import export_place
    from bcolzx.carray import carray

    refuse_objects(obj, "Zarr", vlen_ok=True)
    zarr = _import_zarr()
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
    where = export_place(store, storage_options, mode, lambda local: to_zarr(
        obj, local, chunks, shards, "w", cparams, progress=progress),
        what="Zarr store", suffix=".zarr", directory=True)
    if where is None:  # published at the URL `store`
        return zarr.open(zarr.storage.FsspecStore.from_url(
            store, storage_options=storage_options, read_only=True), mode="r")
    store = where
    if isinstance(obj, carray):
        return _write_array(store, None, obj, chunks, shards, mode == "w", cparams,
                            obj.attrs.getall(), reporter(progress, obj.nbytes))
    attrs = obj.attrs.getall()
    check_attr_names(attrs, META_KEY, "Zarr groups")
    for name, col in obj.cols.items():
        _check_dtype(col.dtype, f"column {name!r}", shards is not None)
    group = zarr.open_group(store, mode="w" if mode == "w" else "w-",
                            attributes={**attrs, META_KEY: {"names": list(obj.names)}})
    report = reporter(progress, obj.nbytes)
    for name, col in obj.cols.items():
        _write_array(group, name, col, chunks, shards, False, cparams, {}, report)
    return group


# -- reading ---------------------------------------------------------------------------


def _cparams_of(z) -> dict[str, Any] | None:
    from zarr.codecs import BloscCodec

    from bcolzx.params import BITSHUFFLE, NOSHUFFLE, SHUFFLE

    for c in z.compressors:
        if isinstance(c, BloscCodec):
            cname = getattr(c.cname, "value", c.cname)
            shuffle = getattr(c.shuffle, "value", c.shuffle)
            if cname not in _CNAMES:
                return None
            return {"cname": cname, "clevel": int(c.clevel),
                    "shuffle": {"shuffle": SHUFFLE, "bitshuffle": BITSHUFFLE}.get(shuffle,
                                                                                 NOSHUFFLE),
                    "blocksize": int(c.blocksize)}
    return None


def _dtype_in(z) -> np.dtype:
    """The carray dtype of Zarr array `z`: its NumPy dtype, or bcolzx's bytes
    dtype for a ``variable_length_bytes`` array."""
    from bcolzx._format import strings

    dtype = np.dtype(z.dtype)
    if dtype == np.dtype(object) and \
            type(z.metadata.data_type).__name__ == "VariableLengthBytes":
        return strings.BYTES_DTYPE
    return dtype


def _array_defaults(z) -> dict[str, Any]:
    """Constructor defaults for a carray holding Zarr array `z`."""
    from bcolzx._format import strings

    if z.ndim == 0:
        raise ValueError("a 0-d Zarr array cannot be a carray (at least one dimension)")
    dtype = _dtype_in(z)
    if dtype.hasobject and strings.item_kind(dtype) not in ("utf8", "bytes"):
        raise TypeError(f"the Zarr array holds variable-length data ({z.dtype}), which "
                        "bcolzx does not import")
    out: dict[str, Any] = {"expectedlen": max(int(z.shape[0]), 1)}
    if tuple(z.chunks[1:]) == tuple(z.shape[1:]):
        out["chunklen"] = int(z.chunks[0])
    if z.fill_value is not None:
        out["dflt"] = np.asarray(z.fill_value, dtype=dtype).reshape(())
    cp = _cparams_of(z)
    if cp is not None:
        out["cparams"] = cp
    return out


def _unit(z) -> int:
    """Rows of a whole shard (or chunk) of `z`."""
    shards = getattr(z, "shards", None)
    return int((shards or z.chunks)[0])


def _read_array(z, kwargs: dict[str, Any], progress) -> carray:
    ca = new_carray(_dtype_in(z), tuple(z.shape[1:]), _array_defaults(z), kwargs)
    n = int(z.shape[0])
    blen = block_rows(ca.atomsize, _unit(z))
    report = reporter(progress, n * ca.atomsize)
    with discard_on_error(ca):
        for lo in range(0, n, blen):
            block = z[lo:min(n, lo + blen)]
            ca.append(block)
            report(block.nbytes)
        for name, value in json_attrs(z.attrs.asdict().items(),
                                      f"Zarr array {z.name}").items():
            ca.attrs[name] = value
        finish(ca)
    return ca


def _read_group(group, kwargs: dict[str, Any], progress) -> ctable:
    from bcolzx.carray import carray
    from bcolzx.ctable import ctable

    zarr = _import_zarr()
    attrs = group.attrs.asdict()
    meta = attrs.pop(META_KEY, None)
    members = dict(group.members())
    arrays = {k: v for k, v in members.items() if isinstance(v, zarr.Array)}
    others = sorted(set(members) - set(arrays))
    if others:
        warnings.warn(f"Zarr group {group.name}: sub-groups {others} are not read into the "
                      "ctable", stacklevel=3)
    names = sorted(arrays)
    if isinstance(meta, dict) and isinstance(meta.get("names"), list) \
            and sorted(meta["names"]) == names:
        names = list(meta["names"])
    if not names:
        raise ValueError(f"Zarr group {group.name} holds no arrays: a ctable needs a column")
    lengths = {int(arrays[n].shape[0]) if arrays[n].ndim else -1 for n in names}
    if len(lengths) != 1 or -1 in lengths:
        raise ValueError(f"the arrays of Zarr group {group.name} are 0-d or of different "
                         "lengths; a ctable's columns have one length")
    n = lengths.pop()
    # A dict of cparams changes each column's own (merge_cparams); a cparams replaces them.
    given = kwargs.pop("cparams") if isinstance(kwargs.get("cparams"), dict) else None
    empties = []
    for name in names:
        z = arrays[name]
        defaults = _array_defaults(z)
        defaults.pop("expectedlen")
        if given is not None:
            defaults["cparams"] = merge_cparams(defaults.get("cparams"), given)
        empties.append(carray(np.empty((0, *z.shape[1:]), _dtype_in(z)), **defaults))
    kwargs.setdefault("expectedlen", max(n, 1))
    auto_flush = kwargs.pop("auto_flush", kwargs.get("rootdir") is not None)
    ct = ctable(empties, names=names, auto_flush=False, **kwargs)
    unit = max(_unit(arrays[name]) for name in names)
    rowbytes = sum(c.atomsize for c in empties)
    blen = block_rows(rowbytes, unit)
    report = reporter(progress, n * rowbytes)
    with discard_on_error(ct):
        for lo in range(0, n, blen):
            hi = min(n, lo + blen)
            ct.append([arrays[name][lo:hi] for name in names])
            report((hi - lo) * rowbytes)
        for name, value in json_attrs(attrs.items(), f"Zarr group {group.name}").items():
            ct.attrs[name] = value
        ct.auto_flush = auto_flush
        finish(ct)
    return ct


def from_zarr(source, rootdir=None, *, progress=None, **kwargs) -> carray | ctable:
    """Read a Zarr array into a new carray, or a Zarr group into a new ctable.

    Parameters
    ----------
    source : str, os.PathLike, zarr store, zarr.Array or zarr.Group
        A path or store is opened read-only with ``zarr.open``.
    rootdir : str, optional
        Where to store the result (default: in memory).
    progress : callable, optional
        Called with the uncompressed bytes of each block stored; the calls
        add up to the result's ``nbytes``.  A callback with a ``set_total``
        method is first told that total.
    **kwargs
        For the carray or ctable constructor: ``mode``, ``cparams``,
        ``chunklen``, ``expectedlen``, ``dflt`` (``auto_flush`` for a ctable).
        Defaults as the module docstring says; a ``cparams`` dict changes
        only the keys it names of each array's own (a cparams replaces them).

    Returns
    -------
    carray or ctable

    Raises
    ------
    ImportError
        If zarr is not installed.
    FileNotFoundError
        If `source` holds no Zarr node.
    ValueError
        For a 0-d array, or a group whose arrays have different lengths or
        that has none.
    TypeError
        For variable-length data.
    FileExistsError, ReadOnlyError
        As the constructors, for `rootdir` and ``mode``.

    Warns
    -----
    UserWarning
        For attributes JSON cannot hold, and sub-groups of a group (skipped).
    """
    zarr = _import_zarr()
    node = source
    if not isinstance(source, (zarr.Array, zarr.Group)):
        try:
            node = zarr.open(_store(source), mode="r")
        except (FileNotFoundError, KeyError) as exc:
            raise FileNotFoundError(f"no Zarr array or group at {source!r}: {exc}") from None
    kwargs = {"rootdir": rootdir, **kwargs}
    if isinstance(node, zarr.Group):
        return _read_group(node, kwargs, progress)
    return _read_array(node, kwargs, progress)
