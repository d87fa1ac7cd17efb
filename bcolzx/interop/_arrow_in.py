"""Arrow data as ctable columns: each field's type planned, batches converted, the table built.

The reading half of :mod:`bcolzx.interop.arrow` (its docstring lists the
types and what is refused): :func:`plan_in` turns an Arrow field into a
column (a dtype, or a string width still to measure), :func:`build` stores
every batch of a :class:`Source` in a new ctable, converting each batch's
columns with NumPy and bcolzx's string kernel.  Also here: what bcolzx
records in Arrow metadata, which the writing half writes.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from bcolzx._format import strings as _strings
from bcolzx.interop._common import block_rows, discard_on_error, finish, prod, reporter
from bcolzx.interop.pandas import CATEGORIES_KEY, TZ_KEY

if TYPE_CHECKING:  # pragma: no cover - typing only
    from bcolzx.ctable import ctable

__all__ = ["BYTES_TOKEN", "FIELD_CATEGORIES", "FIELD_DTYPE", "SCHEMA_ATTRS", "STRING_MODES",
           "VLEN_TOKENS", "Source", "build", "needs_width", "plan_in", "spooled", "string_mode",
           "table_source"]

#: Field metadata: the column's NumPy dtype.
FIELD_DTYPE = b"bcolzx.dtype"
#: Field metadata of a categorical column: its ``categories:<col>`` attr as JSON.
FIELD_CATEGORIES = b"bcolzx.categories"
#: Schema metadata: the ctable's attrs as JSON.
SCHEMA_ATTRS = b"bcolzx.attrs"
#: How :func:`~bcolzx.interop.arrow.from_arrow` and
#: :func:`~bcolzx.interop.arrow.from_parquet` store string and binary
#: columns bcolzx did not write: fixed-width (default) or variable-length.
STRING_MODES = ("fixed", "vlen")
#: Field metadata (``bcolzx.dtype``) of variable-length columns: strings, bytes.
VLEN_TOKENS = {"T": None, "T:nan": "nan", "T:none": "none"}
BYTES_TOKEN = "|O:bytes"


@dataclass
class _In:
    """How one Arrow field becomes a column."""

    name: str
    kind: str  # 'plain', 'temporal', 'string', 'binary', 'fixed', 'dict', 'recode',
    #            'vstring', 'vbinary'
    dtype: np.dtype | None     # None until a string width is known
    dims: tuple
    tz: str | None = None
    ordered: bool = False
    category_dtype: str = ""
    categories: list = field(default_factory=list)
    codes: dict = field(default_factory=dict)

    def where(self) -> str:
        return f"column {self.name!r}"


def _recorded(fld) -> np.dtype | None:
    raw = (fld.metadata or {}).get(FIELD_DTYPE)
    if raw is None:
        return None
    try:
        token = raw.decode()
        if token in VLEN_TOKENS:
            return _strings.string_dtype(VLEN_TOKENS[token])
        if token == BYTES_TOKEN:
            return _strings.BYTES_DTYPE
        return np.dtype(token)
    except (TypeError, ValueError, UnicodeDecodeError):
        return None


def _signed_index(pa, typ) -> np.dtype:
    dtype = np.dtype(typ.to_pandas_dtype())
    if dtype.kind == "u":
        return np.dtype(f"i{min(8, dtype.itemsize * 2)}")
    return dtype


def plan_in(pa, fld, mode: str = "fixed") -> _In:
    """The column for Arrow field `fld` (string widths still unknown); `mode`:
    how to store string and binary columns bcolzx did not record."""
    t = pa.types
    typ, dims = fld.type, []
    while t.is_fixed_size_list(typ):
        dims.append(typ.list_size)
        typ = typ.value_type
    dims = tuple(dims)
    recorded = _recorded(fld)
    name = fld.name
    if t.is_dictionary(typ):
        vt = typ.value_type
        if t.is_string(vt) or t.is_large_string(vt) or t.is_string_view(vt):
            token = "str"
        elif t.is_integer(vt) or t.is_floating(vt) or t.is_boolean(vt):
            token = str(np.dtype(vt.to_pandas_dtype()))
        else:
            raise TypeError(f"column {name!r}: dictionary values of type {vt} cannot be "
                            "categories (strings, integers, floats or booleans)")
        if dims:
            raise TypeError(f"column {name!r}: dictionaries inside fixed-size lists are not "
                            "supported")
        dtype = _signed_index(pa, typ.index_type)
        if recorded is not None and recorded.kind == "i" and recorded.itemsize >= dtype.itemsize:
            dtype = recorded
        return _seeded(_In(name, "dict", dtype, dims, ordered=bool(typ.ordered),
                           category_dtype=token), fld)
    if not dims and FIELD_CATEGORIES in (fld.metadata or {}) and recorded is not None \
            and recorded.kind == "i" and (t.is_integer(typ) or t.is_floating(typ)
                                          or t.is_boolean(typ) or t.is_string(typ)
                                          or t.is_large_string(typ)):
        # A categorical column whose values were written without their dictionary
        # (Parquet keeps dictionaries of strings only): the codes are found again.
        col = _seeded(_In(name, "recode", recorded, dims), fld)
        if col.categories:
            return col
    if t.is_boolean(typ) or t.is_integer(typ) or t.is_floating(typ):
        dtype = np.dtype(typ.to_pandas_dtype())
        if recorded is not None and recorded.kind == dtype.kind \
                and recorded.itemsize == dtype.itemsize:
            dtype = recorded
        return _In(name, "plain", dtype, dims)
    if t.is_timestamp(typ) or t.is_duration(typ) or t.is_date(typ):
        if t.is_date32(typ):
            dtype = np.dtype("M8[D]")
        elif t.is_date64(typ):
            dtype = np.dtype("M8[ms]")
        else:
            dtype = np.dtype(f"{'M' if t.is_timestamp(typ) else 'm'}8[{typ.unit}]")
        if recorded is not None and recorded.kind == dtype.kind:
            # Parquet has no seconds: timestamp[s] comes back as [ms], and is
            # converted back (only where exact, see _to_numpy).
            dtype = recorded
        tz = typ.tz if t.is_timestamp(typ) else None
        return _In(name, "temporal", dtype, dims, tz=tz)
    if t.is_fixed_size_binary(typ):
        return _In(name, "fixed", np.dtype(f"S{typ.byte_width}"), dims)
    for kind, code, checks in (("string", "U", (t.is_string, t.is_large_string,
                                                t.is_string_view)),
                               ("binary", "S", (t.is_binary, t.is_large_binary,
                                                t.is_binary_view))):
        if any(check(typ) for check in checks):
            if not dims and (recorded is not None and _strings.item_kind(recorded) in (
                    "utf8", "bytes") or recorded is None and mode == "vlen"):
                if kind == "string":
                    text = recorded if _strings.is_string(recorded) else \
                        _strings.string_dtype("nan")
                    return _In(name, "vstring", text, dims)
                if recorded is None or _strings.is_bytes(recorded):
                    return _In(name, "vbinary", _strings.BYTES_DTYPE, dims)
            dtype = recorded if recorded is not None and recorded.kind == code else None
            return _In(name, kind, dtype, dims)
    raise TypeError(f"column {name!r}: Arrow type {fld.type} has no ctable column type "
                    "(see bcolzx.interop.arrow)")


def _seeded(col: _In, fld) -> _In:
    """`col` with the categories recorded in the field's metadata, if any, first."""
    raw = (fld.metadata or {}).get(FIELD_CATEGORIES)
    if raw is None:
        return col
    try:
        meta = json.loads(raw)
        categories = list(meta["categories"])
        token, ordered = str(meta["dtype"]), bool(meta["ordered"])
    except (TypeError, ValueError, KeyError, UnicodeDecodeError):
        return col  # not ours to trust: the data's own dictionaries decide
    if col.kind == "dict" and col.category_dtype != token and not (
            col.category_dtype == "str" and token in ("object", "string")):
        return col
    col.categories = categories
    col.codes = {v: i for i, v in enumerate(categories)}
    col.category_dtype, col.ordered = token, ordered
    return col


def _leaf(arr, col: _In):
    """The values of `arr` below its fixed-size lists (list-level nulls refused), string
    and binary views as plain (large) strings and binaries, which compute kernels take."""
    import pyarrow as pa

    for _ in col.dims:
        if arr.null_count:
            raise ValueError(f"{col.where()} has null lists; a ctable cannot hold them")
        arr = arr.flatten()
    if pa.types.is_string_view(arr.type):
        arr = arr.cast(pa.large_string())
    elif pa.types.is_binary_view(arr.type):
        arr = arr.cast(pa.large_binary())
    return arr


def _lengths(pc, leaf, col: _In):
    return pc.utf8_length(leaf) if col.kind == "string" else pc.binary_length(leaf)


def _null_error(col: _In, n: int) -> ValueError:
    return ValueError(f"{col.where()} has {n} nulls, which a ctable column of "
                      f"{col.dtype or col.kind} cannot hold; fill them first "
                      "(pyarrow.compute.fill_null)")


def _to_numpy(pc, arr, col: _In) -> np.ndarray:
    """Rows of a batch's column as a NumPy array of the column's dtype and row shape."""
    n = len(arr)
    leaf = _leaf(arr, col)
    if col.kind == "dict":
        values = _dict_codes(pc, leaf, col)
    elif col.kind == "recode":
        values = _recoded(leaf, col)
    elif col.kind == "vstring":
        values = _vlen_strings(leaf, col)
    elif col.kind == "vbinary":
        if leaf.null_count:
            raise _null_error(col, leaf.null_count)
        values = leaf.to_numpy(zero_copy_only=False).astype(col.dtype)
    elif col.kind == "temporal":
        raw = leaf.to_numpy(zero_copy_only=False)
        values = raw.astype(col.dtype, copy=False)
        if values.dtype.newbyteorder("=") != raw.dtype and not np.array_equal(
                values.astype(raw.dtype).view("i8"), raw.view("i8")):
            raise ValueError(f"{col.where()} holds {raw.dtype} values that {col.dtype}, its "
                             "recorded dtype, cannot hold exactly")
    else:
        if leaf.null_count:
            raise _null_error(col, leaf.null_count)
        values = leaf.to_numpy(zero_copy_only=False)
        if col.kind in ("string", "binary"):
            values = values.astype(col.dtype)
            want = _lengths(pc, leaf, col).to_numpy(zero_copy_only=False)
            if len(values) and not np.array_equal(np.char.str_len(values), want):
                raise ValueError(f"{col.where()} holds values longer than {col.dtype} or "
                                 "ending in NUL characters, which fixed-width NumPy strings "
                                 "cannot hold")
        else:
            values = values.astype(col.dtype, copy=False)
    return values.reshape((n, *col.dims))


def _vlen_strings(leaf, col: _In) -> np.ndarray:
    """A string array as a StringDType array, packed straight from its offsets and
    UTF-8 buffer by bcolzx's kernel (each value checked to be UTF-8)."""
    import pyarrow as pa

    from bcolzx._format import vlen

    if not pa.types.is_large_string(leaf.type):
        leaf = leaf.cast(pa.large_string())
    n = len(leaf)
    out = np.empty(n, dtype=col.dtype)
    if not n:
        return out
    _, offsets_buf, data_buf = leaf.buffers()
    offsets = np.frombuffer(offsets_buf, dtype=np.int64, count=leaf.offset + n + 1,
                            )[leaf.offset:]
    data = np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None and \
        data_buf.size else np.empty(0, np.uint8)
    na = None
    if leaf.null_count:
        if not hasattr(col.dtype, "na_object"):
            raise _null_error(col, leaf.null_count)
        na = leaf.is_null().to_numpy(zero_copy_only=False).view(np.uint8)
    _strings.pack_rows(data, vlen.Located(np.ascontiguousarray(offsets), na), out, 0)
    return out


def _dict_codes(pc, leaf, col: _In) -> np.ndarray:
    dictionary = leaf.dictionary
    if dictionary.null_count:
        raise ValueError(f"{col.where()}: dictionary holds nulls; categories cannot")
    lookup = np.empty(len(dictionary), dtype=np.int64)
    for j, value in enumerate(dictionary.to_pylist()):
        code = col.codes.get(value)
        if code is None:
            code = col.codes[value] = len(col.categories)
            col.categories.append(value)
        lookup[j] = code
    if len(col.categories) - 1 > np.iinfo(col.dtype).max:
        raise ValueError(f"{col.where()}: {len(col.categories)} categories do not fit codes "
                         f"of {col.dtype}")
    indices = pc.fill_null(leaf.indices, 0).to_numpy(zero_copy_only=False)
    codes = lookup[indices] if len(lookup) else np.zeros(len(indices), np.int64)
    if leaf.null_count:
        codes[leaf.is_null().to_numpy(zero_copy_only=False)] = -1
    return codes.astype(col.dtype)


def _recoded(leaf, col: _In) -> np.ndarray:
    """Codes of the values of a categorical column stored without its dictionary."""
    codes = np.full(len(leaf), -1, dtype=np.int64)
    valid = ~leaf.is_null().to_numpy(zero_copy_only=False)
    values = leaf.drop_null().to_pylist()
    try:
        codes[valid] = [col.codes[v] for v in values]
    except KeyError as exc:
        raise ValueError(f"{col.where()} holds {exc.args[0]!r}, which is not one of its "
                         "recorded categories") from None
    return codes.astype(col.dtype)


class Source:
    """Record batches that can be read more than once (`batches`), and their schema."""

    def __init__(self, schema, batches, nrows: int | None):
        self.schema = schema
        self.batches = batches   # callable(columns, rows) -> iterator of RecordBatch
        self.nrows = nrows


def table_source(table) -> Source:
    def batches(columns, rows):
        t = table.select(columns) if columns is not None else table
        return iter(t.to_batches(max_chunksize=rows))

    return Source(table.schema, batches, table.num_rows)


def needs_width(cols: list[_In]) -> list[_In]:
    return [c for c in cols if c.dtype is None]


def _measure(pc, source: Source, cols: list[_In]) -> None:
    """Give the string and binary columns without a width the longest value's."""
    todo = needs_width(cols)
    if not todo:
        return
    widest = {c.name: 1 for c in todo}
    for batch in source.batches([c.name for c in todo], 1 << 16):
        for c in todo:
            leaf = _leaf(batch.column(c.name), c)
            if len(leaf):
                longest = pc.max(_lengths(pc, leaf, c)).as_py()
                widest[c.name] = max(widest[c.name], longest or 1)
    for c in todo:
        c.dtype = np.dtype(f"{'U' if c.kind == 'string' else 'S'}{widest[c.name]}")


def _attrs_of(schema, cols: list[_In]) -> dict[str, Any]:
    from bcolzx.errors import CorruptDataError

    out: dict[str, Any] = {}
    raw = (schema.metadata or {}).get(SCHEMA_ATTRS)
    if raw is not None:
        try:
            out = json.loads(raw)
        except (TypeError, ValueError, UnicodeDecodeError) as exc:
            raise CorruptDataError(f"schema metadata {SCHEMA_ATTRS.decode()!r} is not "
                                   f"JSON: {exc}") from None
        if not isinstance(out, dict):
            raise CorruptDataError(f"schema metadata {SCHEMA_ATTRS.decode()!r} is not a "
                                   "JSON object")
    for c in cols:
        if c.tz is not None:
            out[TZ_KEY + c.name] = c.tz
        if c.kind in ("dict", "recode"):
            out[CATEGORIES_KEY + c.name] = {"categories": c.categories,
                                            "dtype": c.category_dtype, "ordered": c.ordered}
    return out


def string_mode(kwargs: dict[str, Any]) -> str:
    """The ``strings`` argument of :func:`from_arrow` (taken out of `kwargs`).

    Raises
    ------
    ValueError
        For a value not in :data:`STRING_MODES`.
    """
    mode = kwargs.pop("strings", "fixed")
    if mode not in STRING_MODES:
        raise ValueError(f"strings must be one of {STRING_MODES}, not {mode!r}")
    return mode


def build(pa, source: Source, kwargs: dict[str, Any], progress=None,
           mode: str = "fixed") -> ctable:
    """A new ctable holding every batch of `source` (`progress` as :func:`from_parquet`'s)."""
    import pyarrow.compute as pc

    from bcolzx.ctable import ctable

    cols = [plan_in(pa, f, mode) for f in source.schema]
    if not cols:
        raise ValueError("the Arrow data has no columns: a ctable needs at least one")
    _measure(pc, source, cols)
    if source.nrows is not None:
        kwargs.setdefault("expectedlen", max(source.nrows, 1))
    auto_flush = kwargs.pop("auto_flush", kwargs.get("rootdir") is not None)
    ct = ctable([np.empty((0, *c.dims), c.dtype) for c in cols], names=[c.name for c in cols],
                auto_flush=False, **kwargs)
    rowbytes = sum(c.dtype.itemsize * prod(c.dims) for c in cols)
    report = reporter(progress, None if source.nrows is None else source.nrows * rowbytes)
    with discard_on_error(ct):
        for batch in source.batches(None, block_rows(rowbytes)):
            if batch.num_rows:
                ct.append([_to_numpy(pc, batch.column(c.name), c) for c in cols])
                report(batch.num_rows * rowbytes)
        for name, value in _attrs_of(source.schema, cols).items():
            ct.attrs[name] = value
        ct.auto_flush = auto_flush
        finish(ct)
    return ct


def spooled(pa, reader, tmpdir: str) -> Source:
    """A single-pass stream copied to an Arrow IPC file, to be read twice."""
    path = os.path.join(tmpdir, "spool.arrow")
    options = pa.ipc.IpcWriteOptions(compression="zstd")
    with pa.OSFile(path, "wb") as sink, \
            pa.ipc.new_file(sink, reader.schema, options=options) as writer:
        for batch in reader:
            writer.write_batch(batch)

    def batches(columns, rows):
        with pa.memory_map(path) as mm:
            spool = pa.ipc.open_file(mm)
            for i in range(spool.num_record_batches):
                batch = spool.get_batch(i)
                yield batch.select(columns) if columns is not None else batch

    return Source(reader.schema, batches, None)
