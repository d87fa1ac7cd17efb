"""A ctable as a pyarrow Dataset that query engines scan with projection and filter push-down.

DuckDB (``con.register``) and Polars (``pl.scan_pyarrow_dataset``) scan a
:class:`pyarrow.dataset.Dataset` by calling its ``scanner``/``to_batches``
with the columns a query needs and its filter as an Arrow expression.  The
object made here answers those calls from the ctable, without a copy into
memory:

* *projection*: only the columns the query projects or filters on are read;
* *filter*: the Arrow expression is translated, where it is a tree of
  ``and``/``or`` over comparisons of a column with a constant, into a
  bcolzx condition, and the query planner's zone maps rule out the blocks
  of rows that cannot match (:func:`bcolzx._query.planner.zone_skipper`);
  the translation is checked by rebuilding the Arrow expression from it and
  comparing (anything else, or a mismatch, skips nothing).  The rows read
  are filtered exactly by Arrow itself (``Scanner.from_batches``), so the
  result never depends on the translation.

:attr:`BcolzxDataset.decoded_bytes` says what a scan decompressed.
pyarrow's Dataset is a C++ object: the subclass overrides every public
method (those it cannot offer raise TypeError), so nothing reaches the
empty C++ side.
"""

from __future__ import annotations

import functools
import re
from typing import Any

import numpy as np

from bcolzx._query import planner
from bcolzx._query.expr import compile_expression

__all__ = ["dataset_class", "translate"]

_LEAF = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*) (==|!=|<=|>=|<|>) (.+)$")
_OPS = {"==": "__eq__", "!=": "__ne__", "<": "__lt__", "<=": "__le__", ">": "__gt__",
        ">=": "__ge__"}


def _split(text: str) -> tuple[str, list[str]] | None:
    """``("and"|"or", [left, right])`` of ``(left and right)``; None for a leaf."""
    if not (text.startswith("(") and text.endswith(")")):
        return None
    inner, depth, quote = text[1:-1], 0, False
    for i, ch in enumerate(inner):
        if ch == '"':
            quote = not quote
        elif not quote and ch == "(":
            depth += 1
        elif not quote and ch == ")":
            depth -= 1
        elif not quote and depth == 0:
            for word in (" and ", " or "):
                if inner.startswith(word, i):
                    return word.strip(), [inner[:i], inner[i + len(word):]]
    return None


def _literal(pa, text: str, typ) -> Any:
    """The Arrow scalar of type `typ` that prints as `text`, or None."""
    try:
        if pa.types.is_integer(typ):
            return pa.scalar(int(text), typ)
        if pa.types.is_floating(typ):
            return pa.scalar(float(text), typ)
        if pa.types.is_boolean(typ) and text in ("true", "false"):
            return pa.scalar(text == "true", typ)
        if pa.types.is_timestamp(typ) or pa.types.is_date(typ) or pa.types.is_duration(typ):
            return pa.array([text]).cast(typ)[0]
        if (pa.types.is_string(typ) or pa.types.is_binary(typ)) and \
                len(text) >= 2 and text[0] == text[-1] == '"':
            return pa.scalar(text[1:-1], pa.string()).cast(typ)
    except (ValueError, TypeError, OverflowError, pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    return None


def translate(pa, pc, expression: Any, schema: Any, zoned: set[str]
              ) -> tuple[str, dict] | None:
    """A bcolzx condition (and its scalars) that holds wherever the Arrow
    `expression` does, over the `zoned` columns (others count as True); None
    when the expression is not understood exactly.

    The condition is built with the expression's own tree: leaves are
    ``column op constant``; the Arrow expression rebuilt from them must
    equal `expression`, or nothing is translated.
    """
    if expression is None:
        return None
    scalars: dict[str, Any] = {}

    def walk(text: str):
        parts = _split(text)
        if parts is not None:
            word, (left, right) = parts
            a, b = walk(left), walk(right)
            if a is None or b is None:
                return None
            rebuilt = a[0] & b[0] if word == "and" else a[0] | b[0]
            cond = f"({a[1]}) {'&' if word == 'and' else '|'} ({b[1]})"
            return rebuilt, cond
        if not (text.startswith("(") and text.endswith(")")):
            return None
        m = _LEAF.match(text[1:-1])
        if m is None or m.group(1) not in schema.names:
            return None
        name, op, lit = m.groups()
        value = _literal(pa, lit, schema.field(name).type)
        if value is None:
            return None
        rebuilt = getattr(pc.field(name), _OPS[op])(value)
        if name not in zoned:
            return rebuilt, "True"
        key = f"v{len(scalars)}_"
        scalars[key] = _numpy_value(value, schema.field(name))
        return rebuilt, f"{name} {op} {key}"

    found = walk(str(expression))
    if found is None or not found[0].equals(expression):
        return None
    return found[1], scalars


def _numpy_value(value: Any, field: Any) -> Any:
    """An Arrow scalar as a NumPy value of the column's dtype (from its metadata)."""
    meta = field.metadata or {}
    dtype = np.dtype(meta[b"bcolzx.dtype"].decode()) if b"bcolzx.dtype" in meta else None
    if dtype is not None and dtype.kind in "mM":
        unit = getattr(value.type, "unit", "D")  # date32 counts days
        return np.array(value.value, dtype=f"{dtype.kind}8[{unit}]").astype(dtype)[()]
    return value.as_py()


@functools.lru_cache(maxsize=None)
def dataset_class(pa, ds, pc):
    """The Dataset subclass (made once pyarrow is imported)."""

    class BcolzxDataset(ds.Dataset):
        """A ctable as a :class:`pyarrow.dataset.Dataset`: scans read it block by
        block, only the columns asked for and the blocks its zone maps allow.

        Made by :func:`bcolzx.interop.arrow.to_dataset`.
        """

        def __init__(self, *args, **kwargs):  # noqa: D107 - made by _make
            raise TypeError("use bcolzx.interop.arrow.to_dataset(ctable)")

        @classmethod
        def _make(cls, ct, schema, names, outs):
            self = ds.Dataset.__new__(cls)
            self.__dict__.update(_ct=ct, _schema=schema, _names=names,
                                 _outs=dict(zip(names, outs)),
                                 _base=self_decoded(ct, names))
            return self

        @property
        def schema(self):
            return self._schema

        @property
        def decoded_bytes(self) -> int:
            """Uncompressed bytes of stored rows the scans of this object decompressed."""
            return self_decoded(self._ct, self._names) - self._base

        @property
        def partition_expression(self):
            return pc.scalar(True)

        def scanner(self, columns=None, filter=None, batch_size=None, **kwargs):  # noqa: A002
            """A :class:`pyarrow.dataset.Scanner` over the rows (see the module docstring)."""
            wanted = list(self._names) if columns is None else list(columns)
            for name in wanted:
                if name not in self._outs:
                    raise KeyError(f"no column {name!r}; columns are {self._names}")
            needed = list(dict.fromkeys(wanted + _filter_names(filter, self._names)))
            schema = pa.schema([self._schema.field(n) for n in needed])
            batches = self._batches(needed, schema, filter, batch_size)
            return ds.Scanner.from_batches(batches, schema=schema, columns=wanted,
                                           filter=filter)

        def _batches(self, needed, schema, filter, batch_size):  # noqa: A002
            ct = self._ct
            cols = {n: ct.cols[n] for n in needed}
            zoned = {n for n, c in cols.items() if c.engine.chunk_stats() is not None}
            skip = None
            found = translate(pa, pc, filter, self._schema, zoned)
            if found is not None and found[0] != "True":
                expr = compile_expression(found[0])
                skip = planner.zone_skipper(expr, {n: cols[n] for n in expr.names
                                                   if n in cols}, found[1])
            # Blocks of the finest chunks: zone maps skip as much as they can.
            blen = min((c.chunklen for c in cols.values()), default=1 << 16)
            if batch_size:
                blen = max(1, int(batch_size))
            n = len(ct)
            for lo in range(0, n, blen):
                hi = min(n, lo + blen)
                if skip is not None and skip(lo, hi):
                    continue
                yield pa.RecordBatch.from_arrays(
                    [self._outs[name].convert(cols[name][lo:hi]) for name in needed],
                    schema=schema)

        def to_batches(self, columns=None, filter=None, batch_size=None, **kwargs):  # noqa: A002
            return self.scanner(columns, filter, batch_size).to_batches()

        def to_table(self, columns=None, filter=None, batch_size=None, **kwargs):  # noqa: A002
            return self.scanner(columns, filter, batch_size).to_table()

        def head(self, num_rows, columns=None, filter=None, **kwargs):  # noqa: A002
            return self.scanner(columns, filter).head(num_rows)

        def count_rows(self, filter=None, **kwargs):  # noqa: A002
            if filter is None:
                return len(self._ct)
            return self.scanner([], filter).count_rows()

        def take(self, indices, columns=None, filter=None, **kwargs):  # noqa: A002
            return self.to_table(columns, filter).take(indices)

        def _unsupported(self, *args, **kwargs):
            raise TypeError("a bcolzx dataset supports scans (scanner, to_batches, "
                            "to_table, head, count_rows, take); call to_table() first")

        filter = join = join_asof = replace_schema = sort_by = _unsupported  # noqa: A003
        get_fragments = _get_fragments = _unsupported

        def __reduce__(self):
            return (_rebuild, (self._ct, list(self._names)))

        def __repr__(self) -> str:
            return f"<bcolzx dataset: {len(self._ct)} rows, columns {self._names}>"

    return BcolzxDataset


def self_decoded(ct, names) -> int:
    """Bytes the columns `names` of `ct` decompressed so far."""
    return sum(ct.cols[n].engine.decoded_bytes for n in names)


def _filter_names(expression, names: list[str]) -> list[str]:
    """The columns an Arrow filter names (found in its text; unknown words ignored)."""
    if expression is None:
        return []
    words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", str(expression)))
    return [n for n in names if n in words]


def _rebuild(ct, names):
    from bcolzx.interop.arrow import to_dataset

    return to_dataset(ct, names)
