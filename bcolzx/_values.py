"""Values as the rows a carray stores, and back: conversions, pickles, strings and bytes.

The module functions turn what a caller gives (lists, arrays, carrays,
single objects) into NumPy arrays; :class:`Values` is the carray's side of
it (a mixin): its rows converted, broadcast and quantized for the engine,
its objects pickled on the way in and unpickled on the way out, each time
with the carray's ``allow_pickle`` checked first.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from bcolzx._format import pickles, strings
from bcolzx._format.meta import check_item_kind, dflt_to_json
from bcolzx._storage.encoding import quantize
from bcolzx.defaults import defaults

if TYPE_CHECKING:
    from bcolzx._hosts import ArrayHost
else:
    ArrayHost = object

__all__ = ["Values", "as_bytes", "as_objects", "conversion_error", "is_carray", "is_sequence",
           "item_size"]


def is_carray(value) -> bool:
    """Whether `value` is a :class:`bcolzx.carray` (looked up when called: the
    class is built on this module)."""
    from bcolzx.carray import carray

    return isinstance(value, carray)


def is_sequence(value) -> bool:
    """Whether `value` holds several objects (for object carrays): a list, a tuple,
    a range, an array of at least one dimension or a carray; anything else
    (a str, a dict, a number...) is one object."""
    return isinstance(value, (list, tuple, range)) or \
        (isinstance(value, np.ndarray) and value.ndim >= 1) or is_carray(value)


def as_objects(values) -> np.ndarray:
    """`values` as a 1-D object array, split along the first axis only.

    A sequence (see :func:`is_sequence`) gives one object per element, so
    that a list of lists or tuples gives a list or tuple per row (as legacy
    bcolz); a 1-D array of another dtype gives Python scalars (tuples for a
    structured dtype), as ``astype(object)``; anything else is one object.
    """
    if is_carray(values):
        values = values[:]
    if isinstance(values, np.ndarray) and values.ndim >= 1:
        if values.ndim == 1:
            return values if values.dtype == object else values.astype(object)
        out = np.empty(len(values), dtype=object)
        for i in range(len(values)):
            out[i] = values[i]
        return out
    if isinstance(values, (list, tuple, range)):
        out = np.empty(len(values), dtype=object)
        for i, value in enumerate(values):
            out[i] = value
        return out
    out = np.empty(1, dtype=object)
    out[0] = values
    return out


def item_size(data: np.ndarray, kind: str, sample: int = 64) -> float | None:
    """Mean stored size of the first `sample` items of `data` (None if empty):
    their pickles, UTF-8 or bytes, as `kind` says."""
    if kind == "pickle":
        return _pickled_size(data, sample)
    head = data[:sample]
    if not len(head):
        return None
    if kind == "utf8":
        return sum(len(s.encode("utf-8")) for s in head.tolist() if isinstance(s, str)) / len(head)
    return sum(len(b) for b in head.tolist()) / len(head)


def as_bytes(values, dtype: np.dtype = strings.BYTES_DTYPE) -> np.ndarray:
    """`values` as a 1-D array of `dtype` (object declared as bytes) holding
    ``bytes``: a sequence gives one item per element, anything else one item.

    Raises
    ------
    TypeError
        For an item that is not bytes-like (a str is not: encode it first).
    """
    if isinstance(values, (bytes, bytearray, memoryview)) or not is_sequence(values):
        values = [values]
    objs = values.tolist() if isinstance(values, np.ndarray) else list(values)
    out = np.empty(len(objs), dtype=dtype)
    for i, v in enumerate(objs):
        if isinstance(v, bytes):
            out[i] = v
        elif isinstance(v, (bytearray, memoryview, np.bytes_)):
            out[i] = bytes(v)
        else:
            raise TypeError(f"item {i} of a bytes column is {type(v).__name__}, not bytes "
                            "(encode text first, or use a StringDType column)")
    return out


def _pickled_size(data: np.ndarray, sample: int = 64) -> float | None:
    """Mean size of the pickles of the first `sample` objects of `data` (None if empty)."""
    if not len(data):
        return None
    head = data[:sample]
    return sum(len(pickles.dump_one(v)) for v in head) / len(head)


def conversion_error(exc: Exception, what: str) -> Exception:
    """NumPy's conversion failure `exc` as its builtin class (``ValueError`` or
    ``TypeError``, as legacy bcolz let through), with `what` failed in front.

    Not ``type(exc)``: NumPy may raise subclasses whose constructors take
    other arguments (``UnicodeEncodeError``, its ufunc errors).
    """
    cls = ValueError if isinstance(exc, ValueError) else TypeError
    return cls(f"{what}: {exc}")


class Values(ArrayHost):
    """How a carray's values become its engine's rows, and back (a mixin of
    :class:`bcolzx.carray`, over its ``engine``, ``_cparams`` and ``_allow_pickle``)."""

    # -- conversions -------------------------------------------------------------

    @staticmethod
    def _convert(array, dtype) -> np.ndarray:
        want = np.dtype(dtype) if dtype is not None else None
        if want is not None and want.hasobject:
            # TypeError for objects in structured/sub-arrays
            check_item_kind(want, strings.item_kind(want))
        if strings.is_bytes(want) or (want is None and
                                      strings.is_bytes(getattr(array, "dtype", None))):
            return as_bytes(array[:] if is_carray(array) else array)
        objects = np.dtype(object)
        if want == objects or (want is None and getattr(array, "dtype", None) == objects):
            return as_objects(array)
        if is_carray(array):
            array = array[:]
        try:
            data = np.ascontiguousarray(array, dtype=want)
        except (TypeError, ValueError) as exc:  # NumPy's class, as append (and legacy)
            raise conversion_error(exc, f"cannot make an array of dtype {dtype} from the "
                                        "data") from None
        if data.dtype == object and data.ndim > 1:  # NumPy's guess: rows are the objects
            return as_objects(array)
        return data

    @staticmethod
    def _dflt(dflt, dtype: np.dtype) -> np.ndarray:
        if isinstance(dflt, np.ndarray) and dflt.shape == () and \
                strings.item_kind(dtype) in ("utf8", "bytes"):
            dflt = dflt[()]
        if strings.is_bytes(dtype):
            return as_bytes(b"" if dflt is None else [dflt], dtype).reshape(())
        if strings.is_string(dtype) and dflt is None:
            return np.array("", dtype=dtype)
        if dtype == np.dtype(object):
            if isinstance(dflt, np.ndarray) and dflt.shape == ():
                dflt = dflt[()]
            out = np.empty((), dtype=object)  # None unless given
            out[()] = dflt
            dflt_to_json(out)  # ValueError unless a JSON scalar: it goes to meta/storage
            return out
        if dflt is None:
            return np.zeros((), dtype=dtype)
        try:
            return np.array(dflt, dtype=dtype).reshape(())
        except (TypeError, ValueError) as exc:
            raise ValueError(f"dflt {dflt!r} is not a value of dtype {dtype}: {exc}") from None

    # -- objects (pickled) -----------------------------------------------------------

    def _pickle_ok(self) -> bool:
        """This carray's ``allow_pickle``, or the global default when not given."""
        return defaults.allow_pickle if self._allow_pickle is None else self._allow_pickle

    def _pickles_refused(self) -> bool:
        """Whether this carray holds objects whose values may not be read now."""
        return self._objects and not self._pickle_ok()

    def _require_pickle(self, action: str) -> None:
        pickles.require(self._pickle_ok(), f"{action} of an object carray", self._rootdir)

    def _protocol(self) -> int:
        return pickles.PROTOCOL if self.engine.store.native else pickles.LEGACY_PROTOCOL

    def _object_rows(self, values, n: int | None, single: bool) -> np.ndarray:
        """The pickles of `values`, as engine rows (an object array of bytes).

        `single`: `values` is one object (``c[i] = v``).  Else a sequence gives
        one row per element (exactly `n` when given) and anything else one
        row (broadcast to `n` rows).
        """
        self._require_pickle("storing the values")
        protocol = self._protocol()
        if single or (n is not None and not is_sequence(values)):
            item = pickles.dump_one(values, protocol)
            out = np.empty(1 if n is None else n, dtype=object)
            out.fill(item)
            return out
        objs = as_objects(values)
        if n is not None and len(objs) != n:
            raise ValueError(f"cannot put {len(objs)} values into {n} rows (wrap a sequence "
                             "meant as one object in a list of one)")
        return pickles.dumps(objs, protocol)

    def _out(self, rows: np.ndarray) -> np.ndarray:
        """Engine rows as values: the objects unpickled (with consent), else `rows`."""
        if not self._objects:
            return rows
        self._require_pickle("reading the values")
        return pickles.loads(rows)

    def _fill_value(self, growing: bool = True):
        """What the engine fills new rows with: ``dflt``, pickled for objects."""
        if not self._objects or not growing:
            return self.dflt
        self._require_pickle("enlarging")
        return pickles.dump_one(self.dflt[()], self._protocol())

    def _rows(self, values, n: int | None = None, single: bool = False) -> np.ndarray:
        """`values` as rows of this array (converted, broadcast to `n` rows if given);
        for objects, their pickles (`single`: `values` is one object)."""
        eng = self.engine
        if self._objects:
            return self._object_rows(values, n, single)
        if strings.is_bytes(eng.dtype):
            arr = as_bytes([values] if single else values, eng.dtype)
            if n is not None and len(arr) != n:
                if len(arr) != 1:
                    raise ValueError(f"cannot put {len(arr)} values into {n} rows")
                arr = np.repeat(arr, n).astype(eng.dtype)
            return arr
        try:
            arr = np.asarray(values, dtype=eng.dtype)
        except (TypeError, ValueError) as exc:  # the same class as legacy bcolz's
            raise conversion_error(exc, f"cannot convert to {eng.dtype}") from None
        if n is None:
            if arr.shape == eng.rowshape:
                arr = arr.reshape((1, *eng.rowshape))
            elif arr.shape[1:] != eng.rowshape:
                raise ValueError(f"data of shape {arr.shape} does not fit rows of shape "
                                 f"{eng.rowshape}")
        else:
            try:
                arr = np.broadcast_to(arr, (n, *eng.rowshape))
            except ValueError:
                raise ValueError(f"cannot put values of shape {arr.shape} into {n} rows of "
                                 f"shape {eng.rowshape}") from None
        q = self._cparams.quantize
        if q:  # floats only: TypeError otherwise, as legacy bcolz
            arr = quantize(arr, q).astype(eng.dtype, copy=False)
        return np.ascontiguousarray(arr)
