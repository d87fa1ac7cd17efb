"""The ``meta/sizes`` and ``meta/storage`` files (docs/format/README.md §1–§2)."""

from __future__ import annotations

import base64
import json
import math
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from bcolzx._ext import codec as _codec
from bcolzx._ext import metafiles
from bcolzx._format import files as _files
from bcolzx._format import layout, strings
from bcolzx._format import seal as _seal
from bcolzx._format.jsonfile import Staged, loads_sealed, read_json_sealed, stage_json, write_json
from bcolzx.errors import CorruptDataError, UnsupportedFormatError


def dtype_to_json(dtype: np.dtype) -> Any:
    """The JSON form of a dtype: its string, or its ``descr`` list when structured.

    NumPy's dtype ``metadata`` (h5py puts some on strings and enums) is not
    part of the format and is dropped.
    """
    dtype = _without_metadata(np.dtype(dtype))
    return dtype.descr if dtype.fields is not None else str(dtype)


def _without_metadata(dtype: np.dtype) -> np.dtype:
    """`dtype` with no ``metadata`` at any level (fields, sub-arrays)."""
    if dtype.fields is not None:
        return np.dtype({"names": list(dtype.names),
                         "formats": [_without_metadata(dtype.fields[n][0]) for n in dtype.names],
                         "offsets": [dtype.fields[n][1] for n in dtype.names],
                         "itemsize": dtype.itemsize})
    if dtype.subdtype is not None:
        base, shape = dtype.subdtype
        return np.dtype((_without_metadata(base), shape))
    return np.dtype(dtype.str) if dtype.metadata else dtype


def _tuples(obj):
    if isinstance(obj, list):
        return tuple(_tuples(x) for x in obj) if obj and not isinstance(obj[0], list) else \
            [_tuples(x) for x in obj]
    return obj


def dtype_from_json(obj: Any, path: str | None = None) -> np.dtype:
    """Inverse of :func:`dtype_to_json`.

    Raises
    ------
    CorruptDataError
        If `obj` does not describe a dtype.
    """
    try:
        if isinstance(obj, str):
            return np.dtype(obj)
        if isinstance(obj, list):
            return _from_descr([tuple(_tuples(f)) if isinstance(f, list) else f for f in obj])
    except (TypeError, ValueError) as exc:
        raise CorruptDataError(f"invalid dtype {obj!r}: {exc}", path=path) from None
    raise CorruptDataError(f"invalid dtype {obj!r}", path=path)


def _from_descr(descr: list) -> np.dtype:
    """A structured dtype from its ``descr``; unnamed entries are padding
    (aligned or offset fields), kept as gaps rather than made into fields."""
    if all(f[0] != "" for f in descr):
        return np.dtype(descr)
    names, formats, offsets, pos = [], [], [], 0
    for f in descr:
        ftype = np.dtype(f[1] if len(f) == 2 else (f[1], f[2]))
        if f[0] != "":
            names.append(f[0])
            formats.append(ftype)
            offsets.append(pos)
        pos += ftype.itemsize
    return np.dtype({"names": names, "formats": formats, "offsets": offsets, "itemsize": pos})


def _json_scalar(value: Any) -> bool:
    """Whether `value` is a JSON scalar that reads back as itself."""
    if value is None or isinstance(value, (bool, int, str)):
        return True
    return isinstance(value, float) and math.isfinite(value)


def dflt_to_json(value: np.ndarray) -> Any:
    """The JSON form of a default value (a 0-d array of the dataset's dtype).

    Plain numbers, strings and bools are written as JSON values, as legacy
    bcolz does; anything else as ``{"raw": base64 of its bytes}``.  The
    default of an object-dtype dataset is a JSON scalar (None, a bool, an
    int, a finite float or a str), never a pickle: opening a dataset never
    unpickles.

    Raises
    ------
    ValueError
        For an object default that is not such a scalar.
    """
    kind = value.dtype.kind
    if strings.is_string(value.dtype):  # a str, or null when missing (docs/format/strings.md)
        item = value.item()
        return item if isinstance(item, str) else None
    if strings.is_bytes(value.dtype):
        item = value.item()
        if not isinstance(item, bytes):
            raise ValueError(f"the default of a bytes carray must be bytes, not {item!r}")
        return item.decode("latin-1")
    if kind == "O":
        item = value.item()
        if not _json_scalar(item) or type(item) not in (type(None), bool, int, float, str):
            raise ValueError(f"the default of an object carray must be None, a bool, an int, a "
                             f"finite float or a str, not {item!r}")
        return item
    if value.dtype.fields is None and value.ndim == 0:
        if kind in "biu":
            return value.item()
        if kind == "f":
            v = float(value)
            return v if math.isfinite(v) else {"raw": base64.b64encode(value.tobytes()).decode()}
        if kind == "S":
            return value.item().decode("latin-1")
        if kind == "U":
            return value.item()
    return {"raw": base64.b64encode(value.tobytes()).decode()}


def dflt_from_json(obj: Any, dtype: np.dtype, path: str | None = None) -> np.ndarray:
    """Inverse of :func:`dflt_to_json`: a 0-d array of `dtype`.

    Raises
    ------
    CorruptDataError
        If `obj` cannot be a value of `dtype`.
    """
    if type(obj) in _JSON_NUMBERS and dtype.kind in "biufc":  # (never structured: "V")
        return _dflt_array(obj, dtype, path)  # the common case: a number, a numeric dtype
    if strings.is_string(dtype):
        if obj is None and hasattr(dtype, "na_object"):
            return np.array(dtype.na_object, dtype=dtype)
        if not isinstance(obj, str):
            raise CorruptDataError(f"invalid dflt {obj!r} for {dtype} (a string)", path=path)
        return np.array(obj, dtype=dtype)
    if strings.is_bytes(dtype):
        try:
            item = obj.encode("latin-1")
        except (AttributeError, UnicodeError):
            raise CorruptDataError(f"invalid dflt {obj!r} for bytes (a string of latin-1 "
                                   "characters)", path=path) from None
        out = np.empty((), dtype=dtype)
        out[()] = item
        return out
    if dtype.kind == "O":
        # Never raw bytes: those of an object item are a pointer.
        if not _json_scalar(obj):
            raise CorruptDataError(f"invalid dflt {obj!r} for an object dataset (a JSON "
                                   "scalar)", path=path)
        out = np.empty((), dtype=object)
        out[()] = obj
        return out
    try:
        if isinstance(obj, dict) and set(obj) == {"raw"}:
            raw = base64.b64decode(obj["raw"], validate=True)
            if len(raw) != dtype.itemsize:
                raise ValueError(f"{len(raw)} bytes for an item of {dtype.itemsize}")
            return np.frombuffer(raw, dtype=dtype).reshape(()).copy()
        if dtype.kind == "S" and isinstance(obj, str):
            obj = obj.encode("latin-1")
        if dtype.kind in "Mm" and isinstance(obj, int):
            return np.array(obj, dtype=np.int64).view(dtype).reshape(())
    except (TypeError, ValueError, OverflowError, UnicodeError) as exc:
        raise CorruptDataError(f"invalid dflt {obj!r} for {dtype}: {exc}", path=path) from None
    return _dflt_array(obj, dtype, path)


#: The Python types of JSON's numbers (and booleans).
_JSON_NUMBERS = (int, float, bool)


def _dflt_array(obj: Any, dtype: np.dtype, path: str | None) -> np.ndarray:
    """`obj` as a 0-d array of `dtype` (NumPy's conversion).

    Raises
    ------
    CorruptDataError
        If NumPy cannot convert it.
    """
    try:
        return np.array(obj, dtype=dtype).reshape(())
    except (TypeError, ValueError, OverflowError, UnicodeError) as exc:
        raise CorruptDataError(f"invalid dflt {obj!r} for {dtype}: {exc}", path=path) from None


@dataclass(frozen=True)
class CParams:
    """Compression parameters as ``meta/storage["cparams"]`` stores them."""

    clevel: int = 5
    shuffle: int = 1
    cname: str = "lz4"
    quantize: int = 0

    def to_json(self) -> dict:
        return {"clevel": self.clevel, "shuffle": self.shuffle, "cname": self.cname,
                "quantize": self.quantize}

    @classmethod
    def from_json(cls, obj: Any, path: str | None = None) -> "CParams":
        if not isinstance(obj, dict):
            raise CorruptDataError("cparams must be a JSON object", path=path)
        try:
            shuffle = obj.get("shuffle", 1)
            return _made(cls, {"clevel": int(obj.get("clevel", 5)),
                               "shuffle": int(shuffle),
                               "cname": str(obj.get("cname", "blosclz")),
                               "quantize": int(obj.get("quantize", 0))})
        except (TypeError, ValueError) as exc:
            raise CorruptDataError(f"invalid cparams {obj!r}: {exc}", path=path) from None


@dataclass(frozen=True)
class Storage:
    """Contents of ``meta/storage``: how a dataset's data is stored."""

    dtype: np.dtype
    chunklen: int
    cparams: CParams = field(default_factory=CParams)
    expectedlen: int = 0
    dflt: Any = None  # a 0-d array of dtype; None means zeros
    chunks_per_superchunk: int = layout.DEFAULT_CHUNKS_PER_SUPERCHUNK
    checksum: str = layout.DEFAULT_CHECKSUM
    blocksize: int = layout.DEFAULT_BLOCKSIZE
    bytedelta: str = layout.DEFAULT_BYTEDELTA
    #: How variable-length items are encoded (§2d): "pickle" for object dtype,
    #: "utf8" for StringDType, "bytes" for object declared as bytes
    #: (docs/format/strings.md), None for fixed-size items.
    vlen: str | None = None
    #: The dataset's random identity (§2c): new for every new Storage; None for a
    #: dataset written without one (older bcolzx, legacy bcolz).
    uid: str | None = field(default_factory=_seal.new_uid, compare=False)
    #: Whether the dataset's JSON files are sealed (§2c): always for new datasets.
    sealed: bool = field(default=True, compare=False)
    #: Whether superchunks may continue in part objects (§5): format version 3.
    parted: bool = field(default=False, compare=False)

    def __post_init__(self):
        dtype = np.dtype(self.dtype)
        if self.vlen == "bytes" and dtype == np.dtype(object):
            dtype = strings.BYTES_DTYPE  # declared as bytes, whatever the metadata given
        object.__setattr__(self, "dtype", dtype)
        check_item_kind(self.dtype, self.vlen)
        if self.dflt is None:
            # Object datasets default to None (NumPy's zeros would be the int 0),
            # strings to "" and bytes to b"".
            if self.vlen == "bytes":
                dflt = np.empty((), dtype=self.dtype)
                dflt[()] = b""
            elif self.vlen == "pickle":
                dflt = np.empty((), dtype=object)
            else:
                dflt = np.zeros((), dtype=self.dtype)
            object.__setattr__(self, "dflt", dflt)
        _check_layout(self.chunklen, self.chunks_per_superchunk, self.checksum,
                      self.blocksize, self.bytedelta)

    def replace(self, **changes) -> "Storage":
        return replace(self, **changes)

    def row_unit(self, rowshape: tuple = ()) -> int:
        """What one row counts in the sizes of chunks and indexes: its bytes, or
        1 for a variable-length dataset (whose sizes count rows, §2d).

        Raises
        ------
        None
        """
        return 1 if self.vlen else self.dtype.itemsize * math.prod(rowshape)

    def to_json(self) -> dict:
        out = {
            "dtype": strings.STRING_CHAR if self.vlen == "utf8" else "|O" if self.vlen else
            dtype_to_json(self.dtype),
            "cparams": self.cparams.to_json(),
            "chunklen": self.chunklen,
            "expectedlen": self.expectedlen,
            "dflt": dflt_to_json(self.dflt),
            "format": layout.FORMAT_NAME,
            "format_version": layout.PARTS_FORMAT_VERSION if self.parted else
            layout.VLEN_FORMAT_VERSION if self.vlen else layout.FIXED_FORMAT_VERSION,
            "chunks_per_superchunk": self.chunks_per_superchunk,
            "checksum": self.checksum,
            "blocksize": self.blocksize,
            "bytedelta": self.bytedelta,
        }
        if self.vlen:
            out["vlen"] = self.vlen
        na = strings.na_name(self.dtype) if self.vlen == "utf8" else None
        if na is not None:
            out["na_object"] = na
        return out

    @classmethod
    def from_json(cls, obj: dict, path: str | None = None,
                  seal: "_seal.Seal | None" = None) -> "Storage":
        """Decode ``meta/storage`` (with the `seal` it was read with, its uid
        and whether it is sealed; without, a new uid as for a new dataset).

        Raises
        ------
        UnsupportedFormatError
            For a legacy bcolz (format v1) dataset or a newer format version.
        CorruptDataError
            For missing or invalid keys.
        """
        # The usual kind of file in C (every check of _decode, for what it takes).
        made = metafiles.plain_storage(obj, seal, _PLAIN_STORAGE) \
            if cls is Storage and type(obj) is dict else None
        return cls._decode(obj, path, seal) if made is None else made

    @classmethod
    def _decode(cls, obj: dict, path: str | None, seal: "_seal.Seal | None") -> "Storage":
        """:meth:`from_json` in Python: every kind of file, and what is wrong with one.

        Raises
        ------
        UnsupportedFormatError, CorruptDataError
            As :meth:`from_json`.
        """
        if obj.get("format") != layout.FORMAT_NAME:
            raise UnsupportedFormatError(
                f"{path}: not a bcolzx-format dataset (format {obj.get('format')!r}; legacy "
                "bcolz datasets have no 'format' key)")
        version = obj.get("format_version")
        if not isinstance(version, int) or version < 1:
            raise CorruptDataError(f"invalid format_version {version!r}", path=path)
        if version > layout.FORMAT_VERSION:
            raise UnsupportedFormatError(
                f"{path}: format version {version} is newer than this bcolzx reads "
                f"({layout.FORMAT_VERSION}); upgrade bcolzx")
        if not obj.keys() >= _STORAGE_KEYS:
            missing = [k for k in _STORAGE_KEYS if k not in obj]
            raise CorruptDataError(f"missing keys {missing}", path=path)
        vlen = obj.get("vlen")
        dtype = _stored_dtype(obj, vlen, version, path)
        cparams = CParams.from_json(obj["cparams"], path)
        # What C-Blosc2 would refuse when compressing is damage here, not a bad argument.
        if cparams.cname not in _codec.CODECS or not 0 <= cparams.clevel <= 9 or \
                cparams.shuffle not in (0, 1, 2) or cparams.quantize < 0:
            raise CorruptDataError(f"invalid cparams {obj['cparams']!r}", path=path)
        try:
            fields = {
                "dtype": dtype,
                "chunklen": _int(obj["chunklen"]),
                "cparams": cparams,
                "expectedlen": _int(obj.get("expectedlen", 0)),
                "dflt": dflt_from_json(obj.get("dflt", 0), dtype, path),
                "chunks_per_superchunk": _int(obj["chunks_per_superchunk"]),
                "checksum": obj["checksum"],
                "blocksize": _int(obj.get("blocksize", 0)),
                "bytedelta": obj.get("bytedelta", "off"),
                "vlen": vlen,
                "uid": _seal.new_uid() if seal is None else seal.uid,
                "sealed": True if seal is None else seal.sealed,
                "parted": version >= layout.PARTS_FORMAT_VERSION,
            }
            _check_layout(fields["chunklen"], fields["chunks_per_superchunk"],
                          fields["checksum"], fields["blocksize"], fields["bytedelta"])
        except (TypeError, ValueError) as exc:
            raise CorruptDataError(f"invalid storage metadata: {exc}", path=path) from None
        # Every field is now what __post_init__ would make of it (the dtype and
        # its item encoding checked by _stored_dtype, the default decoded for
        # that dtype): the instance is made without running the checks twice.
        return _made(cls, fields)


#: The most chunks a superchunk file holds.
_MOST_CHUNKS = 1 << 20
#: What metafiles.plain_storage checks a ``meta/storage`` against, and makes.
_PLAIN_STORAGE = (Storage, CParams, np.dtype, np.array, layout.FORMAT_NAME,
                  layout.FORMAT_VERSION, layout.PARTS_FORMAT_VERSION, _codec.CODECS,
                  layout.CHECKSUMS, layout.BYTEDELTA_MODES, _MOST_CHUNKS, strings.string_dtype,
                  layout.VLEN_FORMAT_VERSION)
#: Where the seals of ``meta/storage`` and ``meta/sizes`` start (for read_plain).
_STORAGE_CRC = _seal.name_crc(layout.STORAGE_FILE)
_SIZES_CRC = _seal.name_crc(layout.SIZES_FILE)

#: The keys every ``meta/storage`` of the bcolzx format has (in this order in messages).
_STORAGE_KEYS = dict.fromkeys(("dtype", "cparams", "chunklen", "chunks_per_superchunk",
                               "checksum")).keys()


def _made(cls, fields: dict):
    """An instance of the frozen dataclass `cls` holding `fields` (every one of
    its fields, each already checked), made without its ``__init__``: that sets
    each field through ``object.__setattr__`` and runs ``__post_init__``'s
    checks again, a cost paid at every open."""
    out = object.__new__(cls)
    out.__dict__.update(fields)
    return out


def _check_layout(chunklen: int, chunks_per_superchunk: int, checksum: Any, blocksize: int,
                  bytedelta: Any) -> None:
    """Refuse a chunk layout bcolzx does not write (what :class:`Storage` checks).

    Raises
    ------
    ValueError
        For a value out of range or unknown.
    """
    if chunklen < 1:
        raise ValueError(f"chunklen must be >= 1, not {chunklen}")
    if not 1 <= chunks_per_superchunk <= _MOST_CHUNKS:
        raise ValueError(f"chunks_per_superchunk must be in 1..2**20, "
                         f"not {chunks_per_superchunk}")
    if checksum not in layout.CHECKSUMS:
        raise ValueError(f"checksum must be one of {sorted(layout.CHECKSUMS)}, "
                         f"not {checksum!r}")
    if blocksize < 0:
        raise ValueError(f"blocksize must be >= 0, not {blocksize}")
    if bytedelta not in layout.BYTEDELTA_MODES:
        raise ValueError(f"bytedelta must be one of {layout.BYTEDELTA_MODES}, "
                         f"not {bytedelta!r}")


def check_item_kind(dtype: np.dtype, vlen: str | None) -> None:
    """Refuse a dtype and item encoding that do not go together.

    Python objects are stored only as the items of a one-dimensional
    object-dtype dataset, pickled (``vlen="pickle"``) or, declared as bytes,
    as bytes (``vlen="bytes"``); NumPy's StringDType as UTF-8
    (``vlen="utf8"``); a structured dtype with an object field is not
    supported (nor was it by legacy bcolz).

    Raises
    ------
    TypeError
        For a structured (or sub-array) dtype holding objects, or a
        StringDType whose missing value is not NaN or None.
    ValueError
        For object dtype without ``vlen="pickle"`` or ``"bytes"``, a
        StringDType without ``vlen="utf8"``, or `vlen` with another dtype.
    """
    kind = strings.item_kind(dtype)
    if dtype.hasobject and kind is None:
        raise TypeError(f"dtype {dtype} holds Python objects inside a structured or sub-array "
                        "dtype, which bcolzx does not store (nor did legacy bcolz): use a "
                        "ctable with an object column per field, or dtype object")
    if vlen is not None and vlen not in layout.VLEN_CODECS:
        raise ValueError(f"unknown variable-length encoding {vlen!r} (known: "
                         f"{layout.VLEN_CODECS})")
    if kind == "utf8":
        strings.check_string_dtype(dtype)
        if vlen != "utf8":
            raise ValueError(f"dtype {dtype} with vlen={vlen!r}: StringDType goes with "
                             "vlen='utf8', and only it")
    elif (kind is not None) != (vlen in ("pickle", "bytes")) or \
            (kind == "bytes" and vlen != "bytes"):
        raise ValueError(f"dtype {dtype} with vlen={vlen!r}: object dtype goes with "
                         "vlen='pickle' (or 'bytes', declared by strings.BYTES_DTYPE), and "
                         "only it")


def _stored_dtype(obj: dict, vlen: Any, version: int, path: str | None) -> np.dtype:
    """The dtype of a ``meta/storage`` being read, checked against its item encoding
    (§2d, docs/format/strings.md).

    Raises
    ------
    UnsupportedFormatError
        For a variable-length encoding or a missing value this bcolzx does
        not know, objects inside a structured dtype, or strings on NumPy 1.
    CorruptDataError
        For an invalid dtype, object dtype without ``"vlen"`` (items would be
        read as pointers), ``"vlen"`` with another dtype, ``"vlen"`` in a
        version-1 file, or ``"na_object"`` outside a StringDType dataset.
    """
    if vlen is not None and (not isinstance(vlen, str) or vlen not in layout.VLEN_CODECS):
        raise UnsupportedFormatError(f"{path}: variable-length items encoded as {vlen!r}, "
                                     f"which this bcolzx does not read (it knows "
                                     f"{layout.VLEN_CODECS})")
    raw, na = obj["dtype"], obj.get("na_object")
    if na is not None and vlen != "utf8":
        raise CorruptDataError(f"'na_object' in a dataset of dtype {raw!r}, vlen={vlen!r} "
                               "(only strings have one)", path=path)
    if (raw == strings.STRING_CHAR) != (vlen == "utf8"):
        raise CorruptDataError(f"dtype {raw!r} with vlen={vlen!r}: StringDType "
                               f"({strings.STRING_CHAR!r}) goes with vlen='utf8', and only it",
                               path=path)
    if vlen == "utf8":
        if version < layout.VLEN_FORMAT_VERSION:
            raise CorruptDataError(f"'vlen' in a format_version {version} file "
                                   "(variable-length datasets are version "
                                   f"{layout.VLEN_FORMAT_VERSION})", path=path)
        if na is not None and (not isinstance(na, str) or na not in strings.NA_OBJECTS):
            raise UnsupportedFormatError(f"{path}: strings whose missing value is {na!r}, "
                                         "which this bcolzx does not read (it knows "
                                         f"{sorted(strings.NA_OBJECTS)})")
        try:
            return strings.string_dtype(na)
        except TypeError as exc:
            raise UnsupportedFormatError(f"{path}: {exc}") from None
    dtype = dtype_from_json(raw, path)
    _check_item_kind_json(dtype, vlen, version, path)
    return strings.BYTES_DTYPE if vlen == "bytes" else dtype


def _check_item_kind_json(dtype: np.dtype, vlen: Any, version: int, path: str | None) -> None:
    """:func:`check_item_kind` for the fixed-size or object dtype of a
    ``meta/storage`` being read (`vlen` is known).

    Raises
    ------
    UnsupportedFormatError
        For objects inside a structured dtype.
    CorruptDataError
        For object dtype without ``"vlen"`` (items would be read as pointers),
        ``"vlen"`` with another dtype, or ``"vlen"`` in a version-1 file.
    """
    if dtype.hasobject and dtype != np.dtype(object):
        raise UnsupportedFormatError(f"{path}: dtype {dtype} holds objects inside a structured "
                                     "dtype, which bcolzx does not read")
    if dtype.hasobject and vlen is None:
        raise CorruptDataError(f"dtype {dtype} without the 'vlen' member that says how its "
                               "objects are stored", path=path)
    if vlen is not None and not dtype.hasobject:
        raise CorruptDataError(f"'vlen': {vlen!r} with dtype {dtype}", path=path)
    if vlen is not None and version < layout.VLEN_FORMAT_VERSION:
        raise CorruptDataError(f"'vlen' in a format_version {version} file (variable-length "
                               f"datasets are version {layout.VLEN_FORMAT_VERSION})", path=path)


def _ints(values) -> tuple[int, ...]:
    """A JSON list (or the default empty tuple) of integers, as a tuple."""
    if not isinstance(values, (list, tuple)):
        raise TypeError(f"expected a list of integers, found {values!r}")
    for value in values:
        if type(value) is not int:  # JSON's integers: never a bool, a float or a str
            raise TypeError(f"expected an integer, found {value!r}")
    return tuple(values)


def _int(value) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"expected an integer, found {value!r}")
    return value


@dataclass(frozen=True)
class Sizes:
    """Contents of ``meta/sizes``: the shape and byte counts legacy clients read."""

    shape: tuple[int, ...]
    nbytes: int
    cbytes: int
    #: The index generation of each superchunk file this state was committed with.
    generations: tuple[int, ...] = ()
    #: Truncations the dataset went through (§1): a reader whose commit has
    #: another epoch knows that rows it counts may have been removed.
    epoch: int = 0
    #: Rows the latest truncation kept (with `epoch` > 0).
    cut: int = 0
    #: Part objects continuing superchunks (§5): ``(superchunk, first slot,
    #: generation)``, in order of superchunk, then of writing.
    parts: tuple[tuple[int, int, int], ...] = ()

    def to_json(self) -> dict:
        out = {"shape": list(self.shape), "nbytes": self.nbytes, "cbytes": self.cbytes}
        if self.generations:
            out["generations"] = list(self.generations)
        if self.epoch:
            out["epoch"] = self.epoch
            out["cut"] = self.cut
        if self.parts:
            out["parts"] = [list(p) for p in self.parts]
        return out

    @classmethod
    def from_json(cls, obj: dict, path: str | None = None) -> "Sizes":
        """Decode ``meta/sizes``, every number checked for what it can be.

        Raises
        ------
        CorruptDataError
            For a missing key, a value of the wrong type, or a negative
            count (shape, bytes, epoch, cut) or a generation below 1.
        """
        # The usual kind of file in C (every check of _decode, for what it takes).
        made = metafiles.plain_sizes(obj, Sizes) if cls is Sizes and type(obj) is dict \
            else None
        return cls._decode(obj, path) if made is None else made

    @classmethod
    def _decode(cls, obj: dict, path: str | None) -> "Sizes":
        """:meth:`from_json` in Python: every kind of file, and what is wrong with one.

        Raises
        ------
        CorruptDataError
            As :meth:`from_json`.
        """
        try:
            shape = _ints(obj["shape"])
            if not shape or min(shape) < 0:
                raise ValueError(f"bad shape {shape}")
            gens = _ints(obj.get("generations", ()))
            if gens and min(gens) < 1:
                raise ValueError(f"bad generations {gens}")
            parts = () if "parts" not in obj else \
                tuple(_part(p, len(gens)) for p in obj["parts"])
            if parts and list(parts) != sorted(parts, key=lambda p: p[0]):
                raise ValueError("parts are not in superchunk order")
            counts = {"nbytes": obj.get("nbytes", 0), "cbytes": obj.get("cbytes", 0),
                      "epoch": obj.get("epoch", 0), "cut": obj.get("cut", 0)}
            if min(_ints(tuple(counts.values()))) < 0:
                name = next(k for k, v in counts.items() if v < 0)
                raise ValueError(f"negative {name} {counts[name]}")
        except (KeyError, TypeError, ValueError) as exc:
            raise CorruptDataError(f"invalid sizes metadata: {exc}", path=path) from None
        counts.update(shape=shape, generations=gens, parts=parts)
        return _made(cls, counts)


def _part(obj: Any, nfiles: int) -> tuple[int, int, int]:
    """One ``meta/sizes["parts"]`` entry: ``[superchunk, first slot, generation]``."""
    if not isinstance(obj, list) or len(obj) != 3:
        raise ValueError(f"bad part {obj!r}")
    number, first, gen = (_int(x) for x in obj)
    if not 0 <= number < nfiles or first < 0 or gen < 1:
        raise ValueError(f"bad part {obj!r} (superchunks 0..{nfiles - 1})")
    return number, first, gen


def read_plain(rootdir: str) -> "tuple[Storage, Sizes] | bytes | None":
    """The :class:`Storage` and :class:`Sizes` of a dataset of the usual kind,
    read and checked in one call to C (``metafiles.read_plain``).

    The usual kind: both files sealed with the dataset's uid, a fixed-size
    numeric dtype named by a string and a numeric default (or strings
    without a missing value and a str default), no parts.  The checks are
    those of :func:`read_storage_json`, :meth:`Storage.from_json` and
    :func:`read_sizes` together.  For any other dataset, and any failure,
    the bytes of its ``meta/storage`` when they could be read (else None):
    the caller then decodes them with :func:`read_storage_json`, and reads
    ``meta/sizes`` with :func:`read_sizes`, which accept the dataset or say
    what is wrong.
    """
    return metafiles.read_plain(rootdir, _files.READ_FLAGS, _STORAGE_CRC, _SIZES_CRC,
                                _PLAIN_STORAGE, Sizes)


def column_lengths(rootdir: str, names: list[str]) -> dict[str, int] | None:
    """Each column's committed length, ``{name: rows}``, from the sealed
    ``meta/sizes`` of the table's columns alone (no append journal; all of
    one length), read and checked in one call to C
    (``metafiles.column_lengths``); None when that is not the whole story,
    or anything fails (the caller then opens every column, which checks
    everything and says what is wrong)."""
    return metafiles.column_lengths(rootdir, names, _files.READ_FLAGS, _SIZES_CRC)


def read_storage_json(rootdir: str, raw: bytes | None = None) -> tuple[dict, "_seal.Seal"]:
    """``meta/storage`` as a JSON object, its seal checked (§2c), without
    interpreting it: the one read of the file when a dataset is opened, in
    either format (a legacy one has no ``"format"`` key and no seal); `raw`:
    its bytes, when already read.

    Raises
    ------
    FileNotFoundError
        If the file is missing.
    CorruptDataError
        If it is not a JSON object or its seal does not match.
    UnsupportedFormatError
        If a seal that does not match is that of a newer format version.
    """
    path = layout.meta_path(rootdir, layout.STORAGE_FILE)
    try:
        if raw is not None:
            return loads_sealed(raw, layout.STORAGE_FILE, path)
        return read_json_sealed(path)
    except CorruptDataError as exc:
        _newer_version(path, exc)
        raise


def storage_from_sealed(rootdir: str, obj: dict, seal) -> Storage:
    """The :class:`Storage` of a bcolzx-format ``meta/storage`` read by
    :func:`read_storage_json`.

    Raises
    ------
    CorruptDataError, UnsupportedFormatError
        As :meth:`Storage.from_json`.
    """
    path = layout.meta_path(rootdir, layout.STORAGE_FILE)
    return Storage.from_json(obj, path, seal)


def read_storage(rootdir: str) -> Storage:
    """Read and validate ``meta/storage`` (its seal included, §2c).

    Raises
    ------
    FileNotFoundError
        If the file is missing.
    CorruptDataError, UnsupportedFormatError
        As :meth:`Storage.from_json`, or for a seal that does not match.
    """
    obj, seal = read_storage_json(rootdir)
    return storage_from_sealed(rootdir, obj, seal)


def _newer_version(path: str, exc: CorruptDataError) -> None:
    """Raise UnsupportedFormatError if the file at `path`, whose seal `exc` refused,
    says it is of a newer format version: a newer bcolzx may seal differently."""
    try:
        obj = json.loads(_files.read_regular(path)[0])
        newer = obj.get("format") == layout.FORMAT_NAME and \
            int(obj.get("format_version")) > layout.FORMAT_VERSION
    except (OSError, ValueError, TypeError, AttributeError, RecursionError):
        return
    if newer:
        raise UnsupportedFormatError(
            f"{path}: format version {obj['format_version']} is newer than this bcolzx reads "
            f"({layout.FORMAT_VERSION}); upgrade bcolzx (if no newer bcolzx wrote it, the file "
            f"is damaged: {exc})")


def read_sizes(rootdir: str, storage: Storage | None = None) -> Sizes:
    """Read and validate ``meta/sizes`` (its seal included, §2c).

    With the dataset's `storage`, also check that the file is sealed when
    ``meta/storage`` is and belongs to the same dataset, and that
    ``meta/storage`` is sealed when this file is: a bcolzx writer seals both
    or (before seals) neither, so a seal missing from ``meta/storage`` alone
    was taken off, and what it guarded (the dtype) cannot be trusted (§2c).

    Raises
    ------
    FileNotFoundError
        If the file is missing.
    CorruptDataError
        If it is invalid, or its seal does not match.
    """
    path = layout.meta_path(rootdir, layout.SIZES_FILE)
    obj, seal = read_json_sealed(path)
    return sizes_from_sealed(obj, seal, storage, path)


def sizes_from_sealed(obj: dict, seal, storage: Storage | None, path: str | None) -> Sizes:
    """The :class:`Sizes` of a ``meta/sizes`` object read with its `seal` (§2c),
    checked against the dataset's `storage` when given.

    Raises
    ------
    CorruptDataError
        As :func:`read_sizes`.
    """
    if storage is not None:
        _seal.check_member(seal, _seal.make_seal((storage.sealed, storage.uid)), "meta/sizes",
                           path)
        if seal.sealed and not storage.sealed:
            raise CorruptDataError(
                f"meta/storage has no {_seal.CRC_KEY} checksum although meta/sizes has one: "
                "its seal was removed, and what it describes (the dtype) cannot be trusted",
                path=None if path is None else
                f"{path.rsplit('/', 1)[0]}/{layout.STORAGE_FILE}")
    return Sizes.from_json(obj, path)


def write_storage(rootdir: str, storage: Storage, *, durable: bool = True) -> None:
    """Write ``meta/storage`` atomically (sealed with the dataset's uid, §2c);
    without `durable`, neither it nor its rename is fsynced (the caller
    fsyncs both before the dataset's first commit)."""
    write_json(layout.meta_path(rootdir, layout.STORAGE_FILE), storage.to_json(),
               seal=storage.sealed, uid=storage.uid, durable=durable)


def write_sizes(rootdir: str, sizes: Sizes, storage: Storage | None = None) -> None:
    """Write ``meta/sizes`` atomically, sealed as the dataset's `storage` is (§2c)."""
    write_json(layout.meta_path(rootdir, layout.SIZES_FILE), sizes.to_json(),
               seal=storage is None or storage.sealed,
               uid=storage.uid if storage is not None else None)


def stage_sizes(rootdir: str, sizes: Sizes, storage: Storage) -> Staged:
    """``meta/sizes`` as :func:`write_sizes` writes it, staged (for a commit
    that fsyncs it together with the files it names, then renames it)."""
    return stage_json(layout.meta_path(rootdir, layout.SIZES_FILE), sizes.to_json(),
                      seal=storage.sealed, uid=storage.uid)
