"""What the interop modules share: lazy imports, attributes, new containers.

Nothing here imports an optional dependency at module level.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import math
import os
import warnings
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # pragma: no cover - typing only
    from bcolzx.carray import carray

#: Rows of a block moved at once, in uncompressed bytes, when a source has no
#: chunking of its own to follow.
BLOCK_BYTES = 8 << 20


def import_optional(module: str, extra: str, what: str):
    """Import `module`, or raise ImportError naming the pip extra that installs it.

    Raises
    ------
    ImportError
        If `module` cannot be imported.
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(f"{what} needs {module.split('.')[0]}: "
                          f"pip install 'bcolzx[{extra}]'") from exc


def python_value(value: Any) -> Any:
    """A NumPy scalar/array or bytes attribute value as plain Python (str for bytes)."""
    if isinstance(value, np.ndarray):
        value = value.tolist()
    elif isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, bytes):
        value = value.decode("utf-8")
    return value


def json_attrs(items: Iterable[tuple[str, Any]], source: str) -> dict[str, Any]:
    """The attributes among `items` that ctable/carray attrs (JSON) can hold.

    Values are made plain Python first (:func:`python_value`); the others are
    skipped with one warning naming them and `source`.

    Warns
    -----
    UserWarning
        For skipped attributes.
    """
    out, skipped = {}, []
    for name, value in items:
        try:
            value = python_value(value)
            json.dumps(value, allow_nan=True)
        except (TypeError, ValueError, UnicodeDecodeError):
            skipped.append(name)
            continue
        out[name] = value
    if skipped:
        warnings.warn(f"attributes {skipped} of {source} cannot be held by bcolzx attrs "
                      "(JSON) and were skipped", stacklevel=3)
    return out


def column_names(ct, columns, default: list[str]) -> list[str]:
    """The ctable columns `columns` names (a sequence, or a comma-separated string), in
    that order; `default` when None.

    Raises
    ------
    KeyError
        For a name that is not a column of `ct`.
    """
    if columns is None:
        return list(default)
    if isinstance(columns, str):
        columns = [c.strip() for c in columns.split(",") if c.strip()]
    names = list(columns)
    for name in names:
        if name not in ct.cols:
            raise KeyError(f"no column {name!r}; columns are {ct.names}")
    return names


def check_attr_names(attrs: dict[str, Any], reserved: str, where: str) -> None:
    """Refuse attribute names that clash with the metadata bcolzx writes into `where`.

    Raises
    ------
    ValueError
        For a name equal to `reserved` or starting with ``reserved + "_"``.
    """
    for name in attrs:
        if name == reserved or name.startswith(reserved + "_"):
            raise ValueError(f"attribute {name!r}: the name is reserved for bcolzx's own "
                             f"metadata in {where}")


def refuse_objects(obj, where: str, names=None, vlen_ok: bool = False) -> None:
    """Refuse to export Python objects (object dtype, pickled in bcolzx) to `where`,
    and variable-length strings and bytes unless `where` holds them (`vlen_ok`).

    Parameters
    ----------
    obj : carray or ctable
        What is exported.
    where : str
        The format, for the message.
    names : sequence of str, optional
        For a ctable, the columns exported (default all).
    vlen_ok : bool
        Whether `where` stores variable-length strings and bytes
        (``StringDType``, ``vlen_dtype(bytes)``).

    Raises
    ------
    TypeError
        If `obj` (or one of the columns) has object dtype, or holds strings
        or bytes `where` cannot hold.
    """
    from bcolzx._format.strings import item_kind

    cols = getattr(obj, "cols", None)
    found = {"pickle": [], "text": []}
    for label, dtype in ([("the carray", obj.dtype)] if cols is None else
                         [(f"column {n!r}", cols[n].dtype)
                          for n in (cols if names is None else names)]):
        kind = item_kind(dtype)
        if kind == "pickle":
            found["pickle"].append(label)
        elif kind is not None and not vlen_ok:
            found["text"].append(label)
    if found["pickle"]:
        raise TypeError(f"{', '.join(found['pickle'])} holds Python objects (object dtype, "
                        f"pickled), which {where} cannot hold; export the other columns, or "
                        "convert the objects to a fixed-size dtype first")
    if found["text"]:
        raise TypeError(f"{', '.join(found['text'])} holds variable-length strings or bytes, "
                        f"which bcolzx does not export to {where}; convert them to a "
                        "fixed-width dtype ('U' or 'S') first, or export the other columns")


def merge_cparams(source: dict[str, Any] | None, given: Any) -> Any:
    """The cparams of a new container: the caller's `given` over what the source records.

    A dict `given` names only what it changes, as in :func:`bcolzx.convert.convert`:
    its keys replace those of `source` (the cparams keywords the source records,
    or None when it records none, and bcolzx's defaults fill the rest).  A
    :class:`~bcolzx.params.cparams` `given` is used whole; None leaves `source`.
    """
    if given is None:
        return source
    if isinstance(given, dict) and source is not None:
        return {**source, **given}
    return given


def new_carray(dtype: np.dtype, rowshape: tuple, defaults: dict[str, Any],
               kwargs: dict[str, Any]) -> carray:
    """An empty carray of `dtype` and `rowshape`: the caller's `kwargs` over `defaults`
    (a ``cparams`` dict over the default ``cparams``: :func:`merge_cparams`).

    Raises
    ------
    TypeError, ValueError, FileExistsError, ReadOnlyError
        As the :class:`~bcolzx.carray.carray` constructor.
    """
    from bcolzx._format.strings import item_kind
    from bcolzx.carray import carray

    if np.dtype(dtype).hasobject and item_kind(dtype) not in ("utf8", "bytes"):
        raise TypeError(f"dtype {dtype} holds Python objects, which are not imported from "
                        "other formats (store them with carray(..., allow_pickle=True))")
    merged = {**defaults, **kwargs}
    if "cparams" in kwargs:
        merged["cparams"] = merge_cparams(defaults.get("cparams"), kwargs["cparams"])
    return carray(np.empty((0, *rowshape), dtype=dtype), **merged)


def block_rows(rowbytes: int, unit: int = 1, most: int = BLOCK_BYTES) -> int:
    """Rows per block: a multiple of `unit` rows, about `most` bytes (at least `unit`)."""
    unit = max(1, int(unit))
    return unit * max(1, most // max(1, rowbytes * unit))


def _ignore(nbytes: int) -> None:
    """A progress callback that does nothing."""


def reporter(progress: Callable[[int], Any] | None,
             total: int | None) -> Callable[[int], Any]:
    """The callback a copy loop calls with the uncompressed bytes of each block it moved.

    This is how every ``progress=`` of the interop functions behaves: the
    loop calls the result after each block (chunk, record batch) with that
    block's uncompressed bytes, which add up to `total`.

    Parameters
    ----------
    progress : callable or None
        The caller's callback.  If it has a ``set_total`` method (as the
        command line's progress bar has), that is called with `total` first.
    total : int or None
        Uncompressed bytes of all the data to come (None: not known, and
        ``set_total`` is not called).

    Returns
    -------
    callable
        `progress`, or a callback doing nothing when it is None.

    Raises
    ------
    Exception
        Whatever ``progress.set_total`` raises.
    """
    if progress is None:
        return _ignore
    set_total = getattr(progress, "set_total", None)
    if set_total is not None and total is not None:
        set_total(int(total))
    return progress


def remove_quietly(path: str) -> None:
    """Remove `path` if it exists (a file or a directory tree)."""
    import shutil

    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)
    elif os.path.lexists(path):
        os.unlink(path)


@contextlib.contextmanager
def discard_on_error(container):
    """Remove `container`'s directory (a dataset this import created) if the block fails.

    A failed import leaves no half-written dataset behind.
    """
    try:
        yield container
    except BaseException:
        if container.rootdir is not None:
            remove_quietly(container.rootdir)
        raise


def finish(container) -> None:
    """Flush a container written on disk (a no-op in memory)."""
    if container.rootdir is not None:
        container.flush()


def nrows_of(nbytes: int, rowbytes: int, what: str) -> int:
    """Rows in `nbytes` bytes of rows of `rowbytes` bytes.

    Raises
    ------
    ValueError
        If `nbytes` is not a whole number of rows.
    """
    n, rest = divmod(int(nbytes), rowbytes)
    if rest:
        raise ValueError(f"{what} holds {nbytes} bytes, not a whole number of "
                         f"{rowbytes}-byte rows")
    return n


def prod(shape) -> int:
    return math.prod(int(x) for x in shape)
