"""Python objects as items of a dataset: one pickle per object (docs/format/README.md §2d).

An object-dtype dataset stores each value as its own pickle: in the bcolzx
format, many to a variable-length chunk (:mod:`bcolzx._format.vlen`); in a
legacy bcolz (v1) directory, one per chunk file, as legacy bcolz did.
Writers use :data:`PROTOCOL` in the bcolzx format and
:data:`LEGACY_PROTOCOL` in legacy directories; readers accept any protocol
:func:`pickle.loads` reads.

Unpickling runs whatever code the data names, so nothing here is called
without the caller's consent: :func:`require` raises
:class:`~bcolzx.PickleNotAllowedError` unless the switch is on, and the
public classes call it before every pickle and unpickle.
"""

from __future__ import annotations

import pickle
import pickletools

import numpy as np

from bcolzx.errors import CorruptDataError, PickleNotAllowedError

__all__ = ["PROTOCOL", "LEGACY_PROTOCOL", "require", "dumps", "dump_one", "loads", "load_one",
           "check_item"]

#: Pickle protocol of the objects bcolzx writes in its own format (Python >= 3.8).
PROTOCOL = 5
#: Pickle protocol of the objects bcolzx writes into legacy bcolz directories: 4,
#: which every Python 3 that runs legacy bcolz reads (3.4 and later).
LEGACY_PROTOCOL = 4
#: What a damaged pickle raises (other errors, e.g. a class that cannot be
#: imported here, are the reader's environment, not damage).
_DAMAGE = (pickle.UnpicklingError, EOFError)


def require(allowed: bool, action: str, path: str | None = None) -> None:
    """Raise :class:`PickleNotAllowedError` unless `allowed`.

    Parameters
    ----------
    allowed : bool
        The caller's switch, resolved (``allow_pickle`` or
        ``bcolzx.defaults.allow_pickle``).
    action : str
        What would pickle or unpickle, for the message.
    path : str, optional
        The dataset.

    Raises
    ------
    PickleNotAllowedError
        If `allowed` is false.
    """
    if not allowed:
        raise PickleNotAllowedError(action, path)


def dump_one(value, protocol: int = PROTOCOL) -> bytes:
    """The pickle of one object.

    Raises
    ------
    pickle.PicklingError, TypeError, AttributeError
        If `value` cannot be pickled (a lambda, a lock, an open file...).
    """
    return pickle.dumps(value, protocol=protocol)


def dumps(values: np.ndarray, protocol: int = PROTOCOL) -> np.ndarray:
    """The pickles of `values` (a 1-D object array), as a 1-D object array of bytes.

    Raises
    ------
    pickle.PicklingError, TypeError, AttributeError
        If a value cannot be pickled.
    """
    out = np.empty(len(values), dtype=object)
    for i, value in enumerate(values):
        out[i] = pickle.dumps(value, protocol=protocol)
    return out


def load_one(item) -> object:
    """The object pickled in `item` (bytes).

    Raises
    ------
    CorruptDataError
        If `item` is not a complete pickle.
    """
    try:
        return pickle.loads(item)
    except _DAMAGE as exc:
        raise CorruptDataError(f"a stored object cannot be unpickled: {exc}") from None


def loads(items: np.ndarray) -> np.ndarray:
    """The objects pickled in `items` (a 1-D object array of bytes), as an object array.

    Raises
    ------
    CorruptDataError
        If an item is not a complete pickle.
    """
    out = np.empty(len(items), dtype=object)
    for i, item in enumerate(items.tolist()):
        out[i] = load_one(item)
    return out


def check_item(item) -> None:
    """Check that `item` is one complete, well-formed pickle, without unpickling it.

    The opcodes are parsed (:func:`pickletools.genops`), never executed: this
    is safe on untrusted data, and finds most damage in datasets that have no
    checksums (legacy bcolz directories).

    Raises
    ------
    CorruptDataError
        If the opcodes are malformed, the pickle is cut short, or bytes
        follow its end.
    """
    data = bytes(item)
    end = None
    try:
        for opcode, _, pos in pickletools.genops(data):
            if opcode.name == "STOP":
                end = pos + 1
    except (ValueError, EOFError, UnicodeDecodeError) as exc:
        raise CorruptDataError(f"a stored object is not a well-formed pickle: {exc}") from None
    if end != len(data):
        raise CorruptDataError(f"a stored pickle of {len(data)} bytes ends at byte {end}")
