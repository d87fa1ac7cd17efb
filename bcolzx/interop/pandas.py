"""Convert between ctables and pandas DataFrames.

:func:`from_dataframe` stores a DataFrame as a ctable, column by column;
:func:`to_dataframe` reads it back.  pandas is imported only when one of them
is called.  What pandas has and a ctable does not (categories, time zones,
extension dtypes, the index) is recorded in the ctable's attrs, so that
``to_dataframe(from_dataframe(df))`` equals ``df`` exactly (as
:func:`pandas.testing.assert_frame_equal` checks it).

How each kind of column is stored
---------------------------------
NumPy dtypes (bool, int8..int64, uint8..uint64, float16..float64, complex,
datetime64 and timedelta64 in any unit)
    As they are, without a copy.  NaN and NaT are ordinary values.
Strings (pandas 3's default ``str`` dtype, ``string``, and ``object``
columns holding only str)
    By default (``strings="vlen"``) a variable-length column of NumPy's
    ``StringDType`` (docs/format/strings.md): each string as UTF-8, no
    padding, never pickled.  Missing values of a ``str`` or ``string``
    column are stored as missing (``StringDType(na_object=nan)``) and read
    back as the column's own missing value; an ``object`` column of str with
    missing values is stored pickled with ``allow_pickle``, else refused.
    With ``strings="fixed"``, a fixed-width ``U<n>`` column, `n` the longest
    string in the column (at least 1), which legacy bcolz can read:
    missing values are then refused with a ValueError naming the column
    (storing them as ``""`` would not round-trip), and trailing NUL
    characters are lost, as always with NumPy fixed-width strings.  Legacy
    bcolz pickled such columns, one file per row; bcolzx does not.
Bytes (``object`` columns holding only bytes)
    By default a variable-length bytes column (``bcolzx.vlen_dtype(bytes)``);
    with ``strings="fixed"`` a fixed-width ``S<n>`` column.  Missing values
    are refused as for fixed-width strings.
Other ``object`` columns (mixed types, decimals, dates, or str with missing values)
    With ``allow_pickle=True`` (or ``bcolzx.defaults.allow_pickle``), an
    object column: each value pickled, read back exactly (missing values
    included), with ``"object"`` in ``attrs["dtype:<col>"]``.  Without it,
    refused with :class:`~bcolzx.PickleNotAllowedError` (a TypeError) naming
    the column; str columns with missing values keep their ValueError.
Nullable extension dtypes (``Int64``, ``UInt8``, ``boolean``, ``Float64``...)
    Without missing values: the matching NumPy dtype.  With missing values:
    refused with a ValueError naming the column (use ``fillna`` or, for
    floats, ``astype("float64")`` to turn NA into NaN yourself).
Categoricals
    The integer codes (``-1`` for a missing value), with the categories, their
    dtype and the ordered flag in ``attrs["categories:<col>"]`` (a JSON object
    ``{"categories": [...], "dtype": "...", "ordered": bool}``).  Categories
    must be str, int, float or bool (JSON can hold them); others are refused
    with a TypeError.
Time-zone-aware datetimes
    The UTC instants as naive ``datetime64`` in the column's unit (``ns``
    unless pandas chose another), with the time zone's name in
    ``attrs["tz:<col>"]``.  A time zone that pandas cannot find again by its
    name (e.g. a ``dateutil`` tzfile) is refused with a ValueError.
Extension and ``object`` dtypes that read back differently
    Their pandas dtype name (``"Int64"``, ``"string"``, ``"object"``...) in
    ``attrs["dtype:<col>"]``, applied again by :func:`to_dataframe`.  The
    storage of a ``string`` column (python or pyarrow) is the reader's default.
Anything else (periods, intervals, sparse, pyarrow-only types)
    Refused with a TypeError.

The index
---------
A default index (a ``RangeIndex`` from 0, step 1, without a name) is dropped.
Any other index is stored as column(s) placed first, as
:meth:`pandas.DataFrame.reset_index` would: named after the index's name, or
``index`` when unnamed (``level_<i>`` for an unnamed level of a MultiIndex).
``attrs["index:columns"]`` lists those columns, ``attrs["index:names"]``
the original names (null for unnamed) and ``attrs["index:freq"]`` the
frequency of a DatetimeIndex or TimedeltaIndex that has one;
:func:`to_dataframe` rebuilds the index from them.  A name that clashes
with a column is refused with a ValueError.

Column names must be non-empty strings that are valid ctable column names
(not starting with ``__``, no ``/``); others are refused with a ValueError,
never converted.  Keys of the form ``<kind>:<column>`` above are reserved in
the ctable's attrs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from bcolzx._format import strings as _strings
from bcolzx.errors import PickleNotAllowedError
from bcolzx.interop._common import column_names

if TYPE_CHECKING:  # pragma: no cover - typing only
    import pandas

    from bcolzx.carray import carray
    from bcolzx.ctable import ctable

__all__ = ["to_dataframe", "from_dataframe"]

#: attrs keys (``<kind>:<column>``) holding what pandas needs to rebuild a column.
CATEGORIES_KEY = "categories:"
TZ_KEY = "tz:"
DTYPE_KEY = "dtype:"
#: attrs keys describing a stored index.
INDEX_COLUMNS_KEY = "index:columns"
INDEX_NAMES_KEY = "index:names"
INDEX_FREQ_KEY = "index:freq"
#: Orientations accepted by :func:`to_dataframe` (as ``DataFrame.from_dict``).
ORIENTS = ("columns", "index")
#: How :func:`from_dataframe` stores text columns (its ``strings`` argument).
STRING_MODES = ("vlen", "fixed")

_NUMPY_KINDS = "biufcmM"


def _import_pandas():
    try:
        import pandas
    except ImportError as exc:
        raise ImportError("converting a ctable to or from a DataFrame needs pandas: "
                          "pip install pandas") from exc
    return pandas


# -- DataFrame -> ctable ---------------------------------------------------------------


def _check_label(label: Any, what: str) -> str:
    if not isinstance(label, str) or not label:
        raise ValueError(f"{what} {label!r} is not a non-empty string; rename it "
                         "(e.g. df.columns = df.columns.astype(str)) before storing")
    return label


def _encode_categorical(name: str, values) -> tuple[np.ndarray, dict[str, Any]]:
    cat = values.array
    categories = cat.categories.tolist()
    for value in categories:
        if not isinstance(value, (str, bool, int, float)):
            raise TypeError(f"column {name!r}: category {value!r} "
                            f"({type(value).__name__}) cannot be stored in attrs; only "
                            "str, int, float or bool categories are supported")
    meta = {"categories": categories, "dtype": str(cat.categories.dtype),
            "ordered": bool(cat.ordered)}
    return np.asarray(cat.codes), {CATEGORIES_KEY + name: meta}


def _encode_tz(pd, name: str, values) -> tuple[np.ndarray, dict[str, Any]]:
    dtype = values.dtype
    tzname = str(dtype.tz)
    try:
        same = pd.DatetimeTZDtype(dtype.unit, tzname) == dtype
    except Exception:  # noqa: BLE001 - any failure means: not found by name
        same = False
    if not same:
        raise ValueError(f"column {name!r}: time zone {dtype.tz!r} cannot be stored by "
                         "name; convert it to a named zone (e.g. 'Europe/Paris') or UTC")
    utc = np.asarray(values.array.tz_convert("UTC").tz_localize(None))
    return utc, {TZ_KEY + name: tzname}


def _encode_strings(pd, name: str, values, pickled: bool,
                    mode: str = "vlen") -> tuple[np.ndarray, dict[str, Any]]:
    dtype = values.dtype
    kind = "bytes" if getattr(dtype, "kind", None) == "S" else "string"
    if dtype == np.dtype(object):
        kind = pd.api.types.infer_dtype(values, skipna=True)
        if pickled and (kind not in ("string", "bytes", "empty") or values.isna().any()):
            return values.to_numpy(dtype=object), {DTYPE_KEY + name: "object"}
        if kind not in ("string", "bytes", "empty"):
            raise PickleNotAllowedError(
                f"storing column {name!r} (object values of kind {kind!r}; only str or bytes "
                "object columns are stored without pickle)")
    missing = values.isna().any()
    if mode == "vlen":
        if kind == "bytes":
            if missing:
                raise ValueError(f"column {name!r} has missing values; a bytes column cannot "
                                 "hold them (fill them first)")
            return values.to_numpy(dtype=object).astype(_strings.BYTES_DTYPE), \
                {DTYPE_KEY + name: str(dtype)}
        if missing and dtype == np.dtype(object):
            raise ValueError(f"column {name!r} (object) has missing values, which are kept "
                             "exactly only pickled (allow_pickle=True); or convert the "
                             "column to pandas' str dtype first")
        text = _strings.string_dtype("nan" if missing else None)
        return values.to_numpy(dtype=text, na_value=np.nan if missing else None), \
            {DTYPE_KEY + name: str(dtype)}
    if missing:
        raise ValueError(f"column {name!r} has missing values; fixed-width strings cannot "
                         "hold them (fill them first, e.g. with fillna(''), or store them "
                         "variable-length: strings='vlen')")
    code = "S" if kind == "bytes" else "U"
    arr = np.asarray(values.to_numpy(dtype=object), dtype=code)
    # NumPy's own width can exceed the longest item (all-empty columns get U2, S8).
    width = max(1, int(np.char.str_len(arr).max())) if len(arr) else 1
    if np.dtype(f"{code}{width}").itemsize != arr.dtype.itemsize:
        arr = arr.astype(f"{code}{width}")
    return arr, {DTYPE_KEY + name: str(dtype)}


def _encode(pd, name: str, values, pickled: bool = False,
            mode: str = "vlen") -> tuple[np.ndarray, dict[str, Any]]:
    """`values` (a Series or an Index) as a NumPy array, plus the attrs that rebuild it;
    `pickled`: object columns that are not plain strings are stored as objects;
    `mode`: text as variable-length ("vlen") or fixed-width ("fixed") items."""
    dtype = values.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        return _encode_categorical(name, values)
    if isinstance(dtype, pd.DatetimeTZDtype):
        return _encode_tz(pd, name, values)
    if dtype == np.dtype(object) or pd.api.types.is_string_dtype(dtype):
        return _encode_strings(pd, name, values, pickled, mode)
    if isinstance(dtype, np.dtype):
        if dtype.kind not in _NUMPY_KINDS:
            raise TypeError(f"column {name!r}: dtype {dtype} is not supported")
        return values.to_numpy(copy=False), {}
    numpy_dtype = getattr(dtype, "numpy_dtype", None)
    if isinstance(numpy_dtype, np.dtype) and numpy_dtype.kind in _NUMPY_KINDS:
        if values.isna().any():
            raise ValueError(f"column {name!r} ({dtype}) has missing values, which "
                             f"{numpy_dtype} cannot hold; fill them first (or, for floats, "
                             "astype('float64') to turn them into NaN)")
        return values.to_numpy(dtype=numpy_dtype), {DTYPE_KEY + name: str(dtype)}
    raise TypeError(f"column {name!r}: dtype {dtype} is not supported")


def _index_levels(pd, df) -> list[tuple[str, Any, Any]]:
    """``(column name, original name, values)`` for each level of a non-default index."""
    index = df.index
    if isinstance(index, pd.RangeIndex) and index.start == 0 and index.step == 1 \
            and index.name is None:
        return []
    levels = []
    for i, label in enumerate(index.names):
        if label is None:
            colname = "index" if index.nlevels == 1 else f"level_{i}"
        else:
            colname = _check_label(label, "index name")
        levels.append((colname, label, index.get_level_values(i)))
    return levels


def from_dataframe(df: pandas.DataFrame, **kwargs) -> ctable:
    """Store a pandas DataFrame as a new ctable.

    The frame is converted one column at a time (never into one structured
    array); NumPy-typed columns are passed on without a copy.  See the
    module docstring for how each dtype and the index are stored.

    Parameters
    ----------
    df : pandas.DataFrame
    **kwargs
        Passed to the :class:`~bcolzx.ctable.ctable` constructor:
        ``rootdir``, ``mode``, ``cparams``, ``chunklen``, ``expectedlen``,
        ``dflt``, ``auto_flush``, ``allow_pickle`` (store object columns that
        are not plain strings pickled; default
        ``bcolzx.defaults.allow_pickle``); and, for this function only,
        ``strings``: ``"vlen"`` (default) stores text and bytes columns as
        variable-length items, ``"fixed"`` as fixed-width ``U``/``S``
        columns (what legacy bcolz directories hold).

    Returns
    -------
    ctable
        With attrs ``categories:<col>``, ``tz:<col>``, ``dtype:<col>``,
        ``index:columns`` and ``index:names`` where needed.

    Raises
    ------
    ImportError
        If pandas is not installed.
    PickleNotAllowedError
        (a TypeError) For an object column of other than str or bytes without
        ``allow_pickle``.
    TypeError
        If `df` is not a DataFrame, or for a column whose dtype cannot be
        stored (periods, intervals, categories that JSON cannot hold...).
    ValueError
        For a column or index name that is not a non-empty string (or is not
        a valid column name, or clashes with another), duplicate names, a
        frame without columns or index to store, missing values in a string
        or nullable column, or a time zone that cannot be stored by name.
    FileExistsError, ReadOnlyError
        As the ctable constructor, for `rootdir` and `mode`.

    Examples
    --------
    >>> import pandas as pd
    >>> from bcolzx.interop.pandas import from_dataframe, to_dataframe
    >>> df = pd.DataFrame({"x": [1.5, 2.5], "s": ["a", "bcd"]})
    >>> ct = from_dataframe(df)
    >>> ct.cols["s"].dtype
    StringDType()
    >>> to_dataframe(ct).equals(df)
    True
    >>> from_dataframe(df, strings="fixed").dtype
    dtype([('x', '<f8'), ('s', '<U3')])
    """
    pd = _import_pandas()
    from bcolzx.ctable import ctable
    from bcolzx.defaults import defaults

    mode = kwargs.pop("strings", "vlen")
    if mode not in STRING_MODES:
        raise ValueError(f"strings must be one of {STRING_MODES}, not {mode!r}")
    allow = kwargs.get("allow_pickle")
    pickled = defaults.allow_pickle if allow is None else bool(allow)
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"from_dataframe needs a pandas DataFrame, not {type(df).__name__}")
    labels = [_check_label(label, "column name") for label in df.columns]
    if len(set(labels)) != len(labels):
        raise ValueError(f"duplicate column names in {labels}")
    levels = _index_levels(pd, df)
    index_cols = [colname for colname, _, _ in levels]
    for colname in index_cols:
        if colname in labels or index_cols.count(colname) > 1:
            raise ValueError(f"the index would be stored as column {colname!r}, which "
                             "already exists; rename the index or the column")
    names, arrays, meta = [], [], {}
    for colname, _, values in levels:
        arr, more = _encode(pd, colname, values, pickled, mode)
        names.append(colname)
        arrays.append(arr)
        meta.update(more)
    for i, label in enumerate(labels):
        arr, more = _encode(pd, label, df.iloc[:, i], pickled, mode)
        names.append(label)
        arrays.append(arr)
        meta.update(more)
    if not arrays:
        raise ValueError("the DataFrame has no columns (and a default index): a ctable "
                         "needs at least one column")
    if levels:
        meta[INDEX_COLUMNS_KEY] = index_cols
        meta[INDEX_NAMES_KEY] = [label for _, label, _ in levels]
        freq = getattr(df.index, "freqstr", None)
        if freq is not None:
            meta[INDEX_FREQ_KEY] = freq
    ct = ctable(arrays, names=names, **kwargs)
    for key, value in meta.items():
        ct.attrs[key] = value
    return ct


# -- ctable -> DataFrame ---------------------------------------------------------------


def _decode(pd, name: str, col: carray, meta: dict[str, Any]):
    """Column `name` as an ndarray or a pandas extension array, as it was stored."""
    if col.ndim != 1:
        raise ValueError(f"column {name!r} has rows of shape {col.shape[1:]}; a DataFrame "
                         "column holds scalars")
    arr = col[:]
    categories = meta.get(CATEGORIES_KEY + name)
    if categories is not None:
        try:
            index = pd.Index(categories["categories"],
                             dtype=pd.api.types.pandas_dtype(categories["dtype"]))
            dtype = pd.CategoricalDtype(index, ordered=bool(categories["ordered"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"attrs[{CATEGORIES_KEY + name!r}] is malformed: {exc}") from None
        return pd.Categorical.from_codes(arr, dtype=dtype)
    tzname = meta.get(TZ_KEY + name)
    if tzname is not None:
        return pd.array(arr).tz_localize("UTC").tz_convert(tzname)
    token = meta.get(DTYPE_KEY + name)
    if token is not None:
        dtype = pd.api.types.pandas_dtype(token)
        if dtype == np.dtype(object):
            return arr.astype(object)
        if dtype != arr.dtype:
            return pd.array(arr, dtype=dtype)
    if _strings.is_string(arr.dtype):  # pandas' own text dtype, missing values as NaN
        return pd.array(arr, dtype=pd.StringDtype(na_value=np.nan))
    return arr


def _as_column(pd, values):
    # An object ndarray given to DataFrame() is inferred as str by pandas 3:
    # a Series with an explicit dtype keeps it object.
    if isinstance(values, np.ndarray) and values.dtype == object:
        return pd.Series(values, dtype=object, copy=False)
    return values


def _as_index_level(pd, values, name):
    return pd.Index(values, dtype=values.dtype, name=name, copy=False)


def to_dataframe(ct: ctable, columns: Sequence[str] | str | None = None,
                 orient: str = "columns") -> pandas.DataFrame:
    """A pandas DataFrame with the data of a ctable.

    Each column is read whole (``col[:]``) into one NumPy array that the frame
    then uses without a copy; no work is done row by row.  Columns stored by
    :func:`from_dataframe` get back their categories, time zones and pandas
    dtypes, and the frame its index (see the module docstring).

    Parameters
    ----------
    ct : ctable
    columns : sequence of str or str, optional
        The columns to read, in this order (a string: comma-separated names).
        Default: all columns except those holding a stored index.  A stored
        index is restored whatever `columns` says.
    orient : {'columns', 'index'}
        As in :meth:`pandas.DataFrame.from_dict` (legacy bcolz passed it
        there): 'columns' makes each ctable column a DataFrame column;
        'index' makes it a row, and then `columns`, if given, labels the
        DataFrame's columns (one label per row of the table; otherwise the
        stored index, if any, labels them).

    Returns
    -------
    pandas.DataFrame

    Raises
    ------
    ImportError
        If pandas is not installed.
    KeyError
        For a name in `columns` that is not a column of `ct`.
    ValueError
        For another `orient`, a column whose rows are not scalars, or
        malformed pandas metadata in ``ct.attrs``.

    Examples
    --------
    >>> import numpy as np, bcolzx
    >>> from bcolzx.interop.pandas import to_dataframe
    >>> ct = bcolzx.ctable([np.arange(3), np.array([0.5, 1.5, 2.5])], names=["i", "x"])
    >>> to_dataframe(ct, columns=["x"])
         x
    0  0.5
    1  1.5
    2  2.5
    """
    pd = _import_pandas()
    if orient not in ORIENTS:
        raise ValueError(f"orient must be one of {ORIENTS}, not {orient!r}")
    meta = ct.attrs.getall()
    index_cols = meta.get(INDEX_COLUMNS_KEY) or []
    labels_given = None
    if orient == "index" and columns is not None:
        # As pandas' from_dict (and legacy bcolz): with orient='index', columns
        # labels the result's columns, one per row of the table.
        labels_given = [columns] if isinstance(columns, str) else list(columns)
        columns = None
    names = column_names(ct, columns, [n for n in ct.names if n not in index_cols])
    data = {name: _decode(pd, name, ct.cols[name], meta) for name in names}
    index = None
    if index_cols:
        labels = meta.get(INDEX_NAMES_KEY) or [None] * len(index_cols)
        if len(labels) != len(index_cols) or not all(c in ct.cols for c in index_cols):
            raise ValueError(f"attrs[{INDEX_COLUMNS_KEY!r}] and attrs[{INDEX_NAMES_KEY!r}] "
                             "do not describe columns of the ctable")
        levels = [_as_index_level(pd, _decode(pd, c, ct.cols[c], meta), label)
                  for c, label in zip(index_cols, labels)]
        index = levels[0] if len(levels) == 1 else pd.MultiIndex.from_arrays(levels)
        freq = meta.get(INDEX_FREQ_KEY)
        if freq is not None and isinstance(index, (pd.DatetimeIndex, pd.TimedeltaIndex)):
            index = type(index)(index, freq=freq)
    if orient == "index":
        df = pd.DataFrame.from_dict(data, orient="index")
        if labels_given is not None:
            if len(labels_given) != len(df.columns):
                raise ValueError(f"{len(labels_given)} labels in columns for the "
                                 f"{len(df.columns)} rows of the table")
            df.columns = labels_given
        elif index is not None and len(df.columns) == len(index):
            df.columns = index
        return df
    df = pd.DataFrame({name: _as_column(pd, values) for name, values in data.items()},
                      copy=False)
    if index is not None:
        if not data:
            return pd.DataFrame(index=index)
        df.index = index
    elif not data:
        df = pd.DataFrame(index=pd.RangeIndex(len(ct)))
    return df
