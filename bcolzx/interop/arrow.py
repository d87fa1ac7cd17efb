"""Convert ctables to and from Apache Arrow tables and Parquet files, by record batches.

:func:`to_arrow` (``ctable.to_arrow``) builds a :class:`pyarrow.Table` from
record batches of about ``chunklen`` rows; :func:`to_reader` gives the same
batches as a :class:`pyarrow.RecordBatchReader` without building the table;
:func:`to_parquet` (``ctable.to_parquet``) streams them into a Parquet file.
:func:`from_arrow` (``bcolzx.from_arrow``) stores a Table, a RecordBatch, a
RecordBatchReader or any object exporting an Arrow C stream as a new
ctable, and :func:`from_parquet` (``bcolzx.from_parquet``) reads a Parquet
file, both batch by batch: a Parquet file is never in memory as a whole.
pyarrow is imported only when one of them is called
(``pip install 'bcolzx[arrow]'``).

The round trip ``from_arrow(to_arrow(ct))`` (or through Parquet) gives back
the same columns, dtypes, values and attrs.  Data that bcolzx cannot hold
exactly is refused with an error naming the column, never altered.

Column types
------------
=============================  ==============================================
ctable column                  Arrow type
=============================  ==============================================
bool, int8..uint64,            bool, int8..uint64, halffloat, float, double
float16..float64               (big-endian dtypes are converted)
``datetime64[s|ms|us|ns]``     ``timestamp(unit)``; NaT is null
``datetime64[D]``              ``date32``; NaT is null
``timedelta64[s|ms|us|ns]``    ``duration(unit)``; NaT is null
``S<n>``                       ``binary``
``U<n>``                       ``string`` (UTF-8)
``StringDType``                ``string`` (UTF-8; a missing value is null)
``vlen_dtype(bytes)``          ``binary``
rows of shape ``(a, b, ...)``  nested ``fixed_size_list`` of the above
=============================  ==============================================

Other dtypes (complex, other datetime units, structured) are refused with a
TypeError.  Every field records the column's NumPy dtype in its metadata
(``bcolzx.dtype``), which gives back the string widths and byte order, and
that a column was variable-length (``T``, ``T:nan``, ``T:none`` for
``StringDType`` with its missing value, ``|O:bytes`` for bytes).

Columns with pandas metadata in the ctable's attrs (as
:mod:`bcolzx.interop.pandas` writes them) become the matching Arrow type:
an integer column with ``attrs["categories:<col>"]`` becomes a
``dictionary`` (code -1 is null), a ``datetime64`` column with
``attrs["tz:<col>"]`` a ``timestamp`` with that time zone.  Reading, these
types give back the codes and the attrs, so ``todataframe`` works on the
result as on a ctable made by ``fromdataframe``.  The other attrs travel as
JSON in the schema metadata (``bcolzx.attrs``).

Reading other Arrow data
------------------------
Besides the types above: ``date64`` becomes ``datetime64[ms]``,
``string``, ``large_string`` and ``string_view`` become ``U<n>``,
``binary``, ``large_binary`` and ``binary_view`` become ``S<n>`` - or,
with ``strings="vlen"``, variable-length columns: ``StringDType(na_object=nan)``
(nulls become missing values) and ``vlen_dtype(bytes)``, filled from the
Arrow buffers without a Python object per row (docs/format/strings.md);
columns that bcolzx wrote variable-length always come back so -
``fixed_size_binary(n)`` becomes ``S<n>``,
unsigned dictionary indices become the next wider signed integers.  A
string or binary column becomes as wide as its longest value (at least 1),
which needs one more pass over that column: over the Table, or over the
Parquet file reading only those columns; a stream (a RecordBatchReader)
that lacks bcolzx's widths is first copied to a temporary Arrow IPC file
(zstd-compressed) in the system's temporary directory.  Refused:

* nulls, except in temporal columns (they become NaT) and dictionary
  columns (code -1) - fill them first (``pyarrow.compute.fill_null``);
* strings or bytes ending in NUL characters, which NumPy's fixed-width
  strings cannot hold;
* dictionaries whose values are not strings, integers, floats or booleans,
  or hold nulls;
* every other type (decimal, variable-length lists, struct, map, time of
  day...) - TypeError naming the column.

Column names must be valid ctable column names.  Schema metadata other
than bcolzx's (e.g. pandas') is not kept.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from bcolzx._format import strings as _strings
from bcolzx.interop._arrow_in import (
    BYTES_TOKEN,
    FIELD_CATEGORIES,
    FIELD_DTYPE,
    SCHEMA_ATTRS,
    Source,
    build,
    needs_width,
    plan_in,
    spooled,
    string_mode,
    table_source,
)
from bcolzx.interop._arrow_in import (
    STRING_MODES as STRING_MODES,
)
from bcolzx.interop._common import column_names, import_optional, remove_quietly, reporter
from bcolzx.interop.pandas import CATEGORIES_KEY, TZ_KEY

if TYPE_CHECKING:  # pragma: no cover - typing only
    import pyarrow

    from bcolzx.ctable import ctable

__all__ = ["to_arrow", "to_reader", "to_dataset", "to_parquet", "from_arrow", "from_parquet"]

# FIELD_DTYPE, FIELD_CATEGORIES, SCHEMA_ATTRS (the metadata bcolzx writes) and STRING_MODES
# are defined with the reading half, bcolzx.interop._arrow_in, and importable from here.
UNITS = ("s", "ms", "us", "ns")
MODES = ("w", "x")
#: Most uncompressed bytes of the rows in one Parquet row group.
ROW_GROUP_BYTES = 64 << 20
#: Most rows in one Parquet row group (pyarrow's default).
ROW_GROUP_ROWS = 1 << 20
#: Parquet codecs for bcolzx codecs.
PARQUET_CODECS = {"zstd": "zstd", "lz4": "lz4", "lz4hc": "lz4", "zlib": "gzip",
                  "blosclz": "snappy"}


def _import_pyarrow():
    return import_optional("pyarrow", "arrow", "converting to or from Arrow")


def _import_parquet():
    _import_pyarrow()
    return import_optional("pyarrow.parquet", "arrow", "reading or writing Parquet")


# -- ctable -> Arrow -------------------------------------------------------------------


def _fixed_to_binary(pa, values: np.ndarray, typ):
    """Fixed-width bytes (``S<n>``, trailing NULs not part of a value) as an Arrow
    binary or string array, embedded NULs kept."""
    n, width = len(values), values.dtype.itemsize
    raw = values.view(np.uint8).reshape(n, width)
    nonzero = raw != 0
    lengths = np.where(nonzero.any(axis=1), width - np.argmax(nonzero[:, ::-1], axis=1), 0)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    if offsets[-1] >= 2**31:
        raise ValueError(f"a batch of {offsets[-1]} bytes of strings is too large; use "
                         "smaller batches")
    data = raw[np.arange(width) < lengths[:, None]]
    return pa.Array.from_buffers(typ, n, [None, pa.py_buffer(offsets.astype(np.int32)),
                                          pa.py_buffer(np.ascontiguousarray(data))])


def _category_type(pa, token: str):
    if token in ("str", "string", "object"):
        return pa.string()
    dtype = np.dtype(token)
    if dtype.kind not in "biuf":
        raise ValueError(f"categories of dtype {token!r} are not supported")
    return pa.from_numpy_dtype(dtype)


def _dictionary_out(pa, name: str, dtype: np.dtype, meta: Any):
    if dtype.kind != "i":
        raise ValueError(f"column {name!r} has categories in attrs but holds {dtype}, not "
                         "integer codes")
    try:
        values = pa.array(meta["categories"], type=_category_type(pa, meta["dtype"]))
        ordered = bool(meta["ordered"])
    except (KeyError, TypeError, ValueError, pa.ArrowException) as exc:
        raise ValueError(f"attrs[{CATEGORIES_KEY + name!r}] is malformed: {exc}") from None
    index_type = pa.from_numpy_dtype(dtype.newbyteorder("="))

    def convert(codes: np.ndarray):
        if len(codes) and (codes.min() < -1 or codes.max() >= len(values)):
            raise ValueError(f"column {name!r} holds codes outside -1..{len(values) - 1}")
        codes = codes.astype(dtype.newbyteorder("="), copy=False)
        indices = pa.array(codes, type=index_type, mask=codes < 0)
        return pa.DictionaryArray.from_arrays(indices, values)

    return pa.dictionary(index_type, values.type, ordered), convert


def _leaf_out(pa, name: str, dtype: np.dtype, attrs: dict[str, Any]):
    """(Arrow type, converter of 1-D values) for items of `dtype`."""
    native = dtype.newbyteorder("=") if dtype.byteorder not in "=|" else dtype
    if CATEGORIES_KEY + name in attrs:
        return _dictionary_out(pa, name, dtype, attrs[CATEGORIES_KEY + name])
    if _strings.is_string(dtype):  # pyarrow reads StringDType (NA as null) natively
        return pa.string(), lambda v: pa.array(v, type=pa.string())
    if _strings.is_bytes(dtype):
        return pa.binary(), lambda v: pa.array(v, type=pa.binary())
    kind = dtype.kind
    if kind in "biuf":
        return pa.from_numpy_dtype(native), \
            lambda v: pa.array(v.astype(native, copy=False))
    if kind in "Mm":
        unit = np.datetime_data(dtype)[0]
        if kind == "M" and unit == "D":
            typ = pa.date32()
        elif unit in UNITS and np.datetime_data(dtype)[1] == 1:
            typ = pa.timestamp(unit, tz=attrs.get(TZ_KEY + name)) if kind == "M" \
                else pa.duration(unit)
        else:
            raise TypeError(f"column {name!r}: {dtype} has no Arrow type (units s, ms, us, "
                            "ns, and D for dates)")
        return typ, lambda v: pa.array(v.astype(native, copy=False), type=typ,
                                       mask=np.isnat(v))
    if kind == "S":
        return pa.binary(), lambda v: _fixed_to_binary(pa, v, pa.binary())
    if kind == "U":
        return pa.string(), lambda v: _fixed_to_binary(
            pa, np.char.encode(v, "utf-8") if len(v) else np.empty(0, "S1"), pa.string())
    raise TypeError(f"column {name!r}: dtype {dtype} has no Arrow type bcolzx maps to")


def _dtype_token(dtype: np.dtype) -> str:
    """The ``bcolzx.dtype`` field metadata of a column of `dtype`."""
    if _strings.is_string(dtype):
        na = _strings.na_name(dtype)
        return "T" if na is None else f"T:{na}"
    if _strings.is_bytes(dtype):
        return BYTES_TOKEN
    return dtype.str


@dataclass
class _Out:
    """How one column becomes an Arrow field and arrays."""

    field: Any
    convert: Any


def _column_out(pa, name: str, col, attrs: dict[str, Any]) -> _Out:
    dims = col.shape[1:]
    if dims and CATEGORIES_KEY + name in attrs:
        raise TypeError(f"column {name!r}: categorical columns must be one-dimensional")
    leaf_type, leaf = _leaf_out(pa, name, col.dtype, attrs)
    typ = leaf_type
    for d in reversed(dims):
        typ = pa.list_(typ, d)

    def convert(block: np.ndarray):
        arr = leaf(block.reshape(-1))
        for d in reversed(dims):
            arr = pa.FixedSizeListArray.from_arrays(arr, d)
        return arr

    meta = {FIELD_DTYPE: _dtype_token(col.dtype).encode()}
    if CATEGORIES_KEY + name in attrs:
        meta[FIELD_CATEGORIES] = json.dumps(attrs[CATEGORIES_KEY + name]).encode()
    return _Out(pa.field(name, typ, metadata=meta), convert)


def _plan_out(pa, ct: ctable, columns) -> tuple[Any, list[str], list[_Out]]:
    names = column_names(ct, columns, ct.names)
    attrs = ct.attrs.getall()
    outs = [_column_out(pa, name, ct.cols[name], attrs) for name in names]
    consumed = {k + n for n, o in zip(names, outs)
                for k in (CATEGORIES_KEY, TZ_KEY) if k + n in attrs}
    carried = {k: v for k, v in attrs.items() if k not in consumed}
    meta = {SCHEMA_ATTRS: json.dumps(carried).encode()} if carried else None
    return pa.schema([o.field for o in outs], metadata=meta), names, outs


def _batches(pa, ct: ctable, schema, names: list[str], outs: list[_Out],
             rows: int | None, report: Callable[[int], Any] | None = None) -> Iterator:
    """The record batches of `names`; `report` is called with a batch's uncompressed
    bytes once the consumer asks for the next one (it has done with that batch)."""
    if rows is None:
        rows = min(ct.cols[n].chunklen for n in names) if names else 1
    rows = int(rows)
    if rows < 1:
        raise ValueError(f"batch rows must be positive, not {rows}")
    n = len(ct)
    rowbytes = sum(ct.cols[name].atomsize for name in names)
    for lo in range(0, n, rows):
        hi = min(n, lo + rows)
        yield pa.RecordBatch.from_arrays([o.convert(ct.cols[name][lo:hi])
                                          for name, o in zip(names, outs)], schema=schema)
        if report is not None:
            report((hi - lo) * rowbytes)


def to_reader(ct: ctable, columns: Sequence[str] | str | None = None,
              batch_rows: int | None = None) -> pyarrow.RecordBatchReader:
    """The rows of a ctable as a stream of Arrow record batches.

    Each batch is read from the columns when the reader asks for it.

    Parameters
    ----------
    ct : ctable
    columns : sequence of str or str, optional
        The columns, in order (a string: comma-separated names); default all.
    batch_rows : int, optional
        Rows per batch (default: the shortest ``chunklen`` of the columns).

    Returns
    -------
    pyarrow.RecordBatchReader

    Raises
    ------
    ImportError
        If pyarrow is not installed.
    KeyError
        For an unknown column.
    TypeError
        For a column dtype Arrow cannot hold (see the module docstring).
    ValueError
        For bad `batch_rows` or malformed categories in attrs.
    """
    pa = _import_pyarrow()
    schema, names, outs = _plan_out(pa, ct, columns)
    return pa.RecordBatchReader.from_batches(schema,
                                             _batches(pa, ct, schema, names, outs, batch_rows))


def to_dataset(data, columns: Sequence[str] | str | None = None):
    """A ctable (or a carray, as a table of one column) as a :class:`pyarrow.dataset.Dataset`
    that query engines scan without a copy into memory.

    DuckDB (``con.register(name, ds)``, or :func:`bcolzx.interop.duckdb.register`)
    and Polars (``polars.scan_pyarrow_dataset(ds)``) call its ``scanner`` /
    ``to_batches`` with the columns a query needs and its filter: only those
    columns are read, block by block, and the blocks whose zone maps rule
    the filter out are not read at all (see
    :mod:`bcolzx.interop._arrow_dataset`).  ``ds.decoded_bytes`` counts the
    bytes its scans decompressed.

    Parameters
    ----------
    data : ctable or carray
    columns : sequence of str or str, optional
        The columns offered (default all).

    Returns
    -------
    pyarrow.dataset.Dataset
        Made here without reading a row; every scan reads anew.

    Raises
    ------
    TypeError
        If `data` is neither a ctable nor a carray, or a column's dtype has
        no Arrow type.
    KeyError
        If a name in `columns` is not a column.
    ImportError
        Without pyarrow.

    Examples
    --------
    >>> import numpy as np, bcolzx
    >>> from bcolzx.interop.arrow import to_dataset
    >>> ct = bcolzx.ctable([np.arange(10), np.arange(10) * 0.5], names=["i", "x"])
    >>> import pyarrow.dataset as ds
    >>> to_dataset(ct).to_table(columns=["x"], filter=ds.field("i") > 7).to_pydict()
    {'x': [4.0, 4.5]}
    """
    from bcolzx.carray import carray
    from bcolzx.ctable import ctable as _ctable
    from bcolzx.interop._arrow_dataset import dataset_class

    pa = _import_pyarrow()
    ds = import_optional("pyarrow.dataset", "arrow", "scanning a ctable as a dataset")
    pc = import_optional("pyarrow.compute", "arrow", "scanning a ctable as a dataset")
    if isinstance(data, carray):
        data = _ctable([data], names=[columns if isinstance(columns, str) else "values"])
        columns = None
    if not isinstance(data, _ctable):
        raise TypeError(f"a dataset is made of a ctable or a carray, not {type(data).__name__}")
    schema, names, outs = _plan_out(pa, data, columns)
    return dataset_class(pa, ds, pc)._make(data, schema, names, outs)


def to_arrow(ct: ctable, columns: Sequence[str] | str | None = None,
             batch_rows: int | None = None) -> pyarrow.Table:
    """A pyarrow Table with the data of a ctable, made of record batches.

    Parameters
    ----------
    ct : ctable
    columns : sequence of str or str, optional
        The columns, in order (a string: comma-separated names); default all.
    batch_rows : int, optional
        Rows per record batch (default: the shortest ``chunklen`` of the
        columns).

    Returns
    -------
    pyarrow.Table

    Raises
    ------
    ImportError
        If pyarrow is not installed.
    KeyError
        For an unknown column.
    TypeError
        For a column dtype Arrow cannot hold (see the module docstring).
    ValueError
        For bad `batch_rows` or malformed categories in attrs.

    Examples
    --------
    >>> import numpy as np, bcolzx
    >>> ct = bcolzx.ctable([np.arange(3), np.array(["a", "bc", ""])], names=["i", "s"])
    >>> t = ct.to_arrow()
    >>> t.schema.types
    [DataType(int64), DataType(string)]
    >>> t.column("s").to_pylist()
    ['a', 'bc', '']
    >>> bcolzx.from_arrow(t).dtype
    dtype([('i', '<i8'), ('s', '<U2')])
    """
    pa = _import_pyarrow()
    schema, names, outs = _plan_out(pa, ct, columns)
    return pa.Table.from_batches(list(_batches(pa, ct, schema, names, outs, batch_rows)),
                                 schema=schema)


def to_parquet(ct: ctable, path, columns: Sequence[str] | str | None = None,
               compression: str | None = None, row_group_rows: int | None = None,
               mode: str = "w", *, progress=None, storage_options: dict | None = None,
               **writer_kwargs) -> None:
    """Write a ctable to a Parquet file, streaming record batches.

    Batches of about ``chunklen`` rows are gathered into row groups of at
    most `row_group_rows` rows (and about 64 MiB), each written as soon as
    it is full; the file is written under a temporary name and renamed to
    `path` when complete.  At a URL of object storage, it is written to a
    local temporary directory, then uploaded as one object (docs/remote.md).

    Parameters
    ----------
    ct : ctable
    path : str or os.PathLike
        The file, or its URL (``s3://bucket/t.parquet``, ``gs://...``).
    columns : sequence of str or str, optional
        The columns (default all).
    compression : str, optional
        A Parquet codec (``'zstd'``, ``'lz4'``, ``'snappy'``, ``'gzip'``,
        ``'none'``...).  Default: the one nearest the ctable's cparams codec
        (zstd for zstd, lz4 for lz4/lz4hc, gzip for zlib, snappy for blosclz).
    row_group_rows : int, optional
        Most rows per row group (default: 1 Mi rows, fewer for wide rows).
    mode : {'w', 'x'}
        'w' replaces an existing file; 'x' refuses to.
    progress : callable, optional
        Called with the uncompressed bytes of each record batch converted
        (batches are then written by row groups); the calls add up to the
        ``nbytes`` of the columns written.  A callback with a ``set_total`` method is first
        told that total.
    storage_options : dict, optional
        For a URL: the options of its fsspec filesystem (credentials,
        endpoint...).
    **writer_kwargs
        Passed to :class:`pyarrow.parquet.ParquetWriter`.

    Raises
    ------
    ImportError
        If pyarrow is not installed.
    KeyError
        For an unknown column.
    TypeError
        For a column dtype Arrow cannot hold.
    ValueError
        For a bad `mode` or `row_group_rows`, or `storage_options` with a
        local path.
    FileExistsError
        With ``mode='x'`` when `path` exists.
    RemoteError
        If the object store fails (nothing is published at the URL).
    OSError
        If the file cannot be written.
    """
    from bcolzx._publish import export_place

    pa = _import_pyarrow()
    pq = _import_parquet()
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
    path = export_place(path, storage_options, mode, lambda local: to_parquet(
        ct, local, columns, compression, row_group_rows, progress=progress, **writer_kwargs),
        what="Parquet file", suffix=".parquet")
    if path is None:
        return
    if mode == "x" and os.path.lexists(path):
        raise FileExistsError(f"{path} exists (mode 'x')")
    schema, names, outs = _plan_out(pa, ct, columns)
    if compression is None:
        compression = PARQUET_CODECS.get(ct.cparams.cname, "zstd")
    rowbytes = sum(ct.cols[n].atomsize for n in names) or 1
    if row_group_rows is None:
        row_group_rows = max(1, min(ROW_GROUP_ROWS, ROW_GROUP_BYTES // rowbytes))
    elif int(row_group_rows) < 1:
        raise ValueError(f"row_group_rows must be positive, not {row_group_rows}")
    row_group_rows = int(row_group_rows)
    batch_rows = min(row_group_rows, min(ct.cols[n].chunklen for n in names))
    report = reporter(progress, len(ct) * sum(ct.cols[n].atomsize for n in names))
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        with pq.ParquetWriter(tmp, schema, compression=compression, **writer_kwargs) as w:
            pending, held = [], 0
            for batch in _batches(pa, ct, schema, names, outs, batch_rows, report):
                pending.append(batch)
                held += batch.num_rows
                if held >= row_group_rows:
                    table = pa.Table.from_batches(pending, schema=schema)
                    w.write_table(table.slice(0, row_group_rows), row_group_size=row_group_rows)
                    rest = table.slice(row_group_rows)
                    pending, held = rest.to_batches(), rest.num_rows
            if held:
                w.write_table(pa.Table.from_batches(pending, schema=schema),
                              row_group_size=row_group_rows)
        os.replace(tmp, path)
    except BaseException:
        remove_quietly(tmp)
        raise


# -- Arrow -> ctable (the conversions: bcolzx.interop._arrow_in) -----------------------


def from_arrow(data, rootdir=None, **kwargs) -> ctable:
    """Store Arrow data as a new ctable, record batch by record batch.

    See the module docstring for the types, nulls, string widths and attrs.

    Parameters
    ----------
    data : pyarrow.Table, pyarrow.RecordBatch, pyarrow.RecordBatchReader
        Or any object exporting an Arrow C stream (``__arrow_c_stream__``:
        polars and DuckDB results...), read once.
    rootdir : str, optional
        Where to store the ctable (default: in memory).
    **kwargs
        For the :class:`~bcolzx.ctable.ctable` constructor: ``mode``,
        ``cparams``, ``chunklen``, ``expectedlen`` (default: the row count,
        when known), ``dflt``, ``auto_flush``; and ``strings``: ``"fixed"``
        (default) or ``"vlen"``, how string and binary columns that bcolzx
        did not write are stored (see the module docstring).

    Returns
    -------
    ctable

    Raises
    ------
    ImportError
        If pyarrow is not installed.
    TypeError
        For `data` of another kind, or a column of a type a ctable cannot hold.
    ValueError
        For nulls where they are refused, strings ending in NUL characters,
        no columns, bad column names.
    CorruptDataError
        If bcolzx's schema metadata is not valid JSON.
    FileExistsError, ReadOnlyError
        As the ctable constructor, for `rootdir` and ``mode``.
    """
    pa = _import_pyarrow()
    kwargs = {"rootdir": rootdir, **kwargs}
    mode = string_mode(kwargs)
    if isinstance(data, pa.RecordBatch):
        data = pa.Table.from_batches([data])
    if isinstance(data, pa.Table):
        return build(pa, table_source(data), kwargs, mode=mode)
    if not isinstance(data, pa.RecordBatchReader):
        if not hasattr(data, "__arrow_c_stream__"):
            raise TypeError(f"from_arrow needs a pyarrow Table, RecordBatch, "
                            f"RecordBatchReader or an Arrow C stream, not "
                            f"{type(data).__name__}")
        data = pa.RecordBatchReader.from_stream(data)
    cols = [plan_in(pa, f, mode) for f in data.schema]
    if not needs_width(cols):
        once = iter(data)
        return build(pa, Source(data.schema, lambda columns, rows: once, None), kwargs,
                      mode=mode)
    with tempfile.TemporaryDirectory(prefix="bcolzx-arrow-") as tmpdir:
        return build(pa, spooled(pa, data, tmpdir), kwargs, mode=mode)


def from_parquet(path, rootdir=None, columns: Sequence[str] | None = None, *,
                 progress=None, **kwargs) -> ctable:
    """Read a Parquet file into a new ctable, record batch by record batch.

    The file is read in batches of about 8 MiB of rows (a second pass reads
    only the string and binary columns whose width bcolzx did not record).
    See the module docstring for the types.

    Parameters
    ----------
    path : str or os.PathLike
    rootdir : str, optional
        Where to store the ctable (default: in memory).
    columns : sequence of str, optional
        Read only these columns, in this order.
    progress : callable, optional
        Called with the uncompressed bytes of each record batch stored; the
        calls add up to the ctable's ``nbytes``.  A callback with a
        ``set_total`` method is first told that total.
    **kwargs
        For the :class:`~bcolzx.ctable.ctable` constructor, as
        :func:`from_arrow`.

    Returns
    -------
    ctable

    Raises
    ------
    ImportError
        If pyarrow is not installed.
    FileNotFoundError
        If `path` does not exist.
    KeyError
        For a name in `columns` that is not in the file.
    TypeError, ValueError, CorruptDataError, FileExistsError, ReadOnlyError
        As :func:`from_arrow`.

    Examples
    --------
    >>> import os, tempfile, numpy as np, bcolzx
    >>> ct = bcolzx.ctable([np.arange(4), np.array([b"x", b"yz", b"", b"a"])], names=["i", "b"])
    >>> path = os.path.join(tempfile.mkdtemp(), "t.parquet")
    >>> ct.to_parquet(path)
    >>> back = bcolzx.from_parquet(path, columns=["b"])
    >>> back.names, back["b"][:]
    (['b'], array([b'x', b'yz', b'', b'a'], dtype='|S2'))
    """
    pa = _import_pyarrow()
    pq = _import_parquet()
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"no Parquet file {path}")
    with pq.ParquetFile(path) as pf:
        schema = pf.schema_arrow
        if columns is not None:
            columns = list(columns)
            for name in columns:
                if schema.get_field_index(name) < 0:
                    raise KeyError(f"no column {name!r} in {path}; columns are "
                                   f"{schema.names}")
            schema = pa.schema([schema.field(n) for n in columns], metadata=schema.metadata)
        wanted = columns

        def batches(cols, rows):
            return pf.iter_batches(batch_size=rows, columns=cols if cols is not None else wanted)

        kwargs = {"rootdir": rootdir, **kwargs}
        mode = string_mode(kwargs)
        return build(pa, Source(schema, batches, pf.metadata.num_rows), kwargs, progress,
                      mode)
