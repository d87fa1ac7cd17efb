"""``meta/zonemap``: per-chunk bounds of a dataset's values (docs/format/README.md, §2b).

A zone map holds, for each stored chunk, the minimum and maximum of its
non-NaN values and whether it holds NaN (NaT), as :func:`bounds_of` computes
them.  Queries skip chunks whose
bounds prove they cannot match.  The file is JSON: the arrays are the raw
little-endian bytes, base64-encoded, with a crc32c over them, so that a
damaged zone map is detected instead of silently skipping matching chunks.

A StringDType dataset's zone map holds, for each chunk, prefix bounds of its
smallest and largest string (:func:`bcolzx._format.strings.bounds`: UTF-8,
at most :data:`~bcolzx._format.strings.BOUND_BYTES` bytes each, compared as
bytes, which is code point order) and whether it holds a missing value; its
``min`` and ``max`` are stored as :data:`~bcolzx._format.vlen.PLANAR` tables
(docs/format/strings.md), a missing length for a chunk of missing values only.

Bounds only ever *widen* while a chunk number exists (a rewritten chunk's
bounds are the union of old and new), so a zone map written before a crash
still bounds whatever data the committed metadata describes.  An optional
``exact`` flag per chunk says that its bounds are values the chunk holds
(not only bounds of them), so that a full chunk's min and max are read from
the file alone (:func:`load`).
"""

from __future__ import annotations

import base64
import os
from typing import Any

import numpy as np

from bcolzx._ext import checksum
from bcolzx._format import jsonfile, layout, strings, vlen
from bcolzx._format import seal as _seal
from bcolzx._format.meta import dtype_from_json, dtype_to_json
from bcolzx.errors import CorruptDataError

__all__ = ["KINDS", "bounds_of", "has_zonemap", "load", "read", "stage", "stats_dtype", "write"]

#: dtype kinds that get a zone map.
KINDS = "biufMm"
VERSION = 1


def bounds_of(values: np.ndarray) -> tuple[Any, Any, bool]:
    """The ``(min, max, has_nan)`` bounds of an array: what the zone map records for a chunk.

    The same form :func:`bcolzx._query.zonemap.may_match` takes for a block.

    Parameters
    ----------
    values : numpy.ndarray
        A non-empty array of booleans, numbers, datetime64 or timedelta64.

    Returns
    -------
    tuple
        ``(min, max, has_nan)``: NumPy scalars of the array's dtype over its
        non-NaN values (NaN when there are none), and whether it holds NaN or NaT.

    Raises
    ------
    ValueError
        If `values` is empty.
    TypeError
        If its dtype has no order (strings, structured, object).

    Examples
    --------
    >>> import numpy as np
    >>> bounds_of(np.array([3.0, np.nan, 1.0]))
    (np.float64(1.0), np.float64(3.0), True)
    """
    values = np.asarray(values)
    if values.size == 0:
        raise ValueError("an empty array has no bounds")
    if values.dtype.kind not in KINDS:
        raise TypeError(f"bounds of {values.dtype} values are not supported")
    if values.dtype.kind in "fc":
        missing = np.isnan(values)
    elif values.dtype.kind in "Mm":
        missing = np.isnat(values)
    else:
        return values.min(), values.max(), False
    present = values[~missing]
    if present.size == 0:
        nan = np.array(np.nan if values.dtype.kind in "fc" else "NaT", values.dtype)[()]
        return nan, nan, True
    return present.min(), present.max(), bool(missing.any())


def has_zonemap(dtype: np.dtype) -> bool:
    """Whether a 1-D dataset of `dtype` (bcolzx format) keeps a zone map: an
    ordered kind (:data:`KINDS`) or NumPy's StringDType."""
    return strings.is_string(dtype) or np.dtype(dtype).kind in KINDS


def stats_dtype(dtype: np.dtype) -> np.dtype:
    """The record of one chunk's bounds for values of `dtype` (for strings:
    ``bytes`` or None bounds, in object fields)."""
    if strings.is_string(dtype):
        return np.dtype([("min", object), ("max", object), ("nan", np.bool_)])
    base = np.dtype(dtype).newbyteorder("<")
    return np.dtype([("min", base), ("max", base), ("nan", np.bool_)])


def _path(rootdir: str) -> str:
    return layout.meta_path(rootdir, layout.ZONEMAP_FILE)


def write(rootdir: str, stats: np.ndarray, *, durable: bool = True, storage=None,
          exact: np.ndarray | None = None) -> None:
    """Write the zone map of `rootdir` atomically, sealed as the dataset's
    `storage` (a :class:`~bcolzx._format.meta.Storage`) says (§2c).

    `exact`, when given, is one bool per chunk: its bounds are values the
    chunk holds (§2b, ``exact``).

    Raises
    ------
    OSError
        If the file system refuses.
    """
    jsonfile.write_json(_path(rootdir), to_json(stats, exact), durable=durable,
                        seal=storage is None or storage.sealed,
                        uid=storage.uid if storage is not None else None)


def stage(rootdir: str, stats: np.ndarray, *, storage,
          exact: np.ndarray | None = None) -> jsonfile.Staged:
    """The zone map as :func:`write` writes it, staged (for a commit that
    fsyncs it together with other files before it renames it)."""
    return jsonfile.stage_json(_path(rootdir), to_json(stats, exact), seal=storage.sealed,
                               uid=storage.uid)


def to_json(stats: np.ndarray, exact: np.ndarray | None = None) -> dict:
    """The JSON object of ``meta/zonemap`` holding `stats` and, when given, the
    per-chunk `exact` flags (unsealed; see :func:`write`).

    Raises
    ------
    ValueError
        If `exact` does not have one flag per chunk.
    """
    text = stats.dtype["min"] == np.dtype(object)
    if text:  # prefix bounds of strings (bytes, None for no string): planar tables
        parts = [vlen.encode_planar(stats[f].tolist()) for f in ("min", "max")]
        parts.append(np.ascontiguousarray(stats["nan"]).astype(np.bool_).tobytes())
    else:
        parts = [np.ascontiguousarray(stats[f]).astype(stats.dtype[f]).tobytes()
                 for f in ("min", "max", "nan")]
    crc = 0
    for part in parts:
        crc = checksum.crc32c(part, crc)
    obj = {
        "version": VERSION,
        "dtype": strings.STRING_CHAR if text else dtype_to_json(stats.dtype["min"]),
        "nchunks": len(stats),
        "min": base64.b64encode(parts[0]).decode("ascii"),
        "max": base64.b64encode(parts[1]).decode("ascii"),
        "nan": base64.b64encode(parts[2]).decode("ascii"),
        "crc32c": crc,
    }
    if exact is not None:
        flags = np.ascontiguousarray(exact, dtype=np.bool_).tobytes()
        if len(flags) != len(stats):
            raise ValueError(f"{len(flags)} exact flags for {len(stats)} chunks")
        obj["exact"] = base64.b64encode(flags).decode("ascii")
        obj["exact_crc32c"] = checksum.crc32c(flags, crc)
    return obj


def read(rootdir: str, dtype: np.dtype, storage=None) -> np.ndarray | None:
    """The zone map of `rootdir` for values of `dtype`; None when there is none.

    Raises
    ------
    CorruptDataError
        If the file is damaged or does not match `dtype`.
    """
    return load(rootdir, dtype, storage)[0]


def load(rootdir: str, dtype: np.dtype, storage=None
         ) -> tuple[np.ndarray | None, np.ndarray | None]:
    """The zone map of `rootdir` for values of `dtype` and its exact flags:
    ``(stats, exact)``, each None when absent (``exact``: written by an
    older version, or a file without flags).

    With the dataset's `storage`, the file must be sealed when ``meta/storage``
    is, and belong to the same dataset (§2c).

    Raises
    ------
    CorruptDataError
        If the file is damaged or does not match `dtype`.
    """
    path = _path(rootdir)
    if not os.path.exists(path):
        return None, None
    obj, found = jsonfile.read_json_sealed(path)
    return from_json(obj, found, dtype, storage, path)


def from_json(obj: dict, found, dtype: np.dtype, storage=None,
              path: str | None = None) -> tuple[np.ndarray, np.ndarray | None]:
    """The zone map in the ``meta/zonemap`` object `obj`, read with its seal `found`,
    and its exact flags: ``(stats, exact)`` as :func:`load` returns them
    (`path` names the file in messages).

    Raises
    ------
    CorruptDataError
        As :func:`read`.
    """
    if storage is not None:
        _seal.check_member(found, _seal.Seal(storage.sealed, storage.uid), "meta/zonemap", path)
    want = stats_dtype(dtype)
    try:
        if obj.get("version") != VERSION:
            raise ValueError(f"unknown version {obj.get('version')!r}")
        text = strings.is_string(dtype)
        if text:
            if obj["dtype"] != strings.STRING_CHAR:
                raise ValueError(f"dtype {obj['dtype']!r}, expected {strings.STRING_CHAR!r}")
        elif dtype_from_json(obj["dtype"], path) != want["min"]:
            raise ValueError(f"dtype {obj['dtype']!r}, expected {want['min']}")
        n = obj["nchunks"]
        if not isinstance(n, int) or n < 0:
            raise ValueError(f"bad nchunks {n!r}")
        parts = [base64.b64decode(obj[f], validate=True) for f in ("min", "max", "nan")]
        crc = 0
        for part in parts:
            crc = checksum.crc32c(part, crc)
        if crc != obj["crc32c"]:
            raise ValueError("crc32c mismatch")
        out = np.empty(n, want)
        if text:
            for f, part in zip(("min", "max"), parts):
                out[f] = vlen.items(part, n, vlen.PLANAR, na_ok=True)
            out["nan"] = np.frombuffer(parts[2], dtype=np.bool_, count=n)
        else:
            for f, part in zip(("min", "max", "nan"), parts):
                out[f] = np.frombuffer(part, dtype=want[f], count=n)
        exact = None
        if "exact" in obj:
            flags = base64.b64decode(obj["exact"], validate=True)
            if checksum.crc32c(flags, crc) != obj["exact_crc32c"]:
                raise ValueError("crc32c mismatch of the exact flags")
            if len(flags) != n or flags.strip(b"\x00\x01"):
                raise ValueError(f"bad exact flags ({len(flags)} bytes for {n} chunks)")
            exact = np.frombuffer(flags, dtype=np.bool_).copy()
    except (KeyError, TypeError, ValueError, AttributeError) as exc:  # CorruptDataError too
        raise CorruptDataError(f"invalid zone map: {exc}", path=path) from None
    return out, exact
