"""User attributes of a carray/ctable: the legacy ``attrs`` accessor.

An :class:`attrs` object behaves like a small dictionary of JSON values.  For
a persistent container (``rootdir`` given) the attributes live in the file
``rootdir/__attrs__`` (docs/format, "Attributes"), a JSON object; every change
is written through at once, atomically (temporary file, then rename), so a
crash leaves the old or the new attributes, never half of them.

As in legacy bcolz 1.2 the attributes are read once, when the accessor is
created, and cached: changes made to the file by another process afterwards
are not seen, and two writers of the same ``rootdir`` overwrite each other.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

import numpy as np

from bcolzx._format.jsonfile import FLOAT_KEY, is_float_object, read_json_sealed, write_json
from bcolzx._format.layout import ATTRS_FILE
from bcolzx._format.seal import CRC_KEY, UID_KEY, Seal, check_member, dataset_seal
from bcolzx.errors import CorruptDataError, ReadOnlyError

__all__ = ["attrs"]

_MODES = ("r", "w", "a")


def _json_default(obj: Any) -> Any:
    """``json.dumps`` hook: NumPy scalars become Python scalars, the rest is refused."""
    if isinstance(obj, np.generic):
        # np.int64(3) -> 3, np.bool_(True) -> True, np.str_('a') -> 'a'.  What
        # .item() returns that JSON cannot hold (complex, datetime, bytes) comes
        # back here and is refused below.
        return obj.item()
    if isinstance(obj, np.ndarray):
        raise TypeError(
            f"a NumPy array (shape {obj.shape}, dtype {obj.dtype}) is not JSON-serialisable; "
            "store arr.tolist() instead"
        )
    raise TypeError(f"an object of type {type(obj).__name__} is not JSON-serialisable")


def _json_key(key: Any) -> str:
    """The name a key of a dict becomes in JSON (what ``json.dumps`` makes of it).

    Raises
    ------
    TypeError
        For a key JSON cannot hold.
    """
    if isinstance(key, np.generic):
        key = key.item()
    if isinstance(key, str):
        return key
    if key is None or isinstance(key, (bool, int, float)):
        return json.dumps(key, allow_nan=True)
    raise TypeError(f"a dict key of type {type(key).__name__} is not JSON-serialisable")


def _check_keys(obj: Any, depth: int = 0) -> None:
    """Refuse dicts (at any depth) whose keys would merge in JSON: ``{1: 'a', '1': 'b'}``
    would be stored as ``{'1': 'b'}``, one value silently lost.

    Raises
    ------
    ValueError
        For two keys with the same JSON name.
    TypeError
        For a key JSON cannot hold, or nesting too deep to store.
    """
    if depth > 500:
        raise TypeError("attribute value is nested too deeply to store")
    if isinstance(obj, dict):
        seen: dict[str, Any] = {}
        for key, value in obj.items():
            name = _json_key(key)
            if name in seen:
                raise ValueError(f"the keys {seen[name]!r} and {key!r} both become {name!r} in "
                                 "JSON, and one value would be lost: use distinct str keys")
            seen[name] = key
            _check_keys(value, depth + 1)
    elif isinstance(obj, (list, tuple)):
        for value in obj:
            _check_keys(value, depth + 1)


def _to_json_value(obj: Any) -> Any:
    """The value `obj` becomes once stored: its JSON form, decoded again.

    NaN and infinities are kept, so that they round-trip: a bcolzx-format
    (sealed) ``__attrs__`` stores them as ``{"$float": "NaN"}`` objects, so the
    file stays standard JSON, and a legacy directory's as legacy bcolz writes
    them (Python's ``NaN``, ``Infinity``) for legacy bcolz to read.  Dict keys
    that would merge in JSON are refused, and so is a dict that is exactly a
    ``{"$float": ...}`` stand-in (it would read back as a number).

    Raises
    ------
    TypeError
        If `obj` (or anything inside it) cannot be represented in JSON.
    ValueError
        If it holds a dict whose keys merge in JSON (``{1: 'a', '1': 'b'}``).
    """
    try:
        text = json.dumps(obj, allow_nan=True, default=_json_default)
    except ValueError as exc:  # circular reference
        raise TypeError(f"attribute value is not JSON-serialisable: {exc}") from None
    except TypeError as exc:
        raise TypeError(f"attribute value is not JSON-serialisable: {exc}") from None
    _check_keys(obj)  # after dumps, which refuses a cycle
    value = json.loads(text)
    _check_float_objects(value)
    return value


def _check_float_objects(obj: Any) -> None:
    """Refuse a dict that has the shape of a non-finite stand-in (``{"$float": x}``).

    Raises
    ------
    ValueError
        If `obj` holds one.
    """
    stack = [obj]
    while stack:
        item = stack.pop()
        if is_float_object(item):
            raise ValueError(f"a dict whose only key is {FLOAT_KEY!r} is reserved (it stands "
                             "for a non-finite float in the attributes file): add another key "
                             "or rename it")
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


class attrs:  # noqa: N801 - legacy name
    """Accessor for the user attributes of a carray or ctable.

    Behaves like a small dictionary::

        attrs['myattr'] = value     # set (written through to disk)
        value = attrs['myattr']     # get
        del attrs['myattr']         # remove
        'myattr' in attrs           # membership, by name

    Iterating yields ``(name, value)`` pairs, as in legacy bcolz (not the
    names, as a dict would); :meth:`getall` returns all attributes as a dict.

    Parameters
    ----------
    rootdir : str or os.PathLike, optional
        Directory of a persistent container: the attributes are kept in the
        file ``rootdir/__attrs__``.  None (or ``''``) keeps them in memory.
    mode : {'a', 'w', 'r'}
        The container's mode.  In ``'r'`` every change raises
        :class:`~bcolzx.errors.ReadOnlyError` (also for in-memory attributes).
    _new : bool
        The container is being created: start from no attributes and (unless
        `mode` is ``'r'``) write an empty ``__attrs__``.
    _seal : Seal, optional
        How the container's files are sealed (docs/format/README.md §2c),
        given by a container being created; by default read from its
        ``meta/storage`` or ``__rootdirs__``.
    _io : optional
        For a container on object storage (`rootdir` unused): what reads and
        writes its ``__attrs__`` (:class:`bcolzx._storage.remote.AttrsIO`).
    _unsynced : list, optional
        With `_new`, on disk: the empty ``__attrs__`` is written without an
        fsync and its path appended to this list, for the container's
        creation to fsync before it publishes the container.

    Raises
    ------
    ValueError
        If `mode` is not one of ``'r'``, ``'w'``, ``'a'``.
    TypeError
        If `rootdir` is not a path.
    CorruptDataError
        If ``__attrs__`` exists but is not a JSON object or fails its seal, or
        is missing from a dataset whose files are sealed.
    OSError
        If ``__attrs__`` cannot be read or created.

    Notes
    -----
    Values must be JSON-serialisable.  They are stored in their JSON form, in
    memory as on disk, so that what is read back never depends on whether
    the container was reopened: tuples read back as lists, dict keys as
    strings, and NumPy scalars (``np.int64(3)``, ``np.float32(0.5)``,
    ``np.bool_(True)``) are converted to the equal Python scalar.  NumPy
    arrays are refused with a TypeError (store ``arr.tolist()``).

    Differences from legacy bcolz 1.2: writes are atomic; ``name in attrs``
    tests names (legacy compared against ``(name, value)`` pairs and was
    always False); names must be strings; a damaged ``__attrs__`` raises
    :class:`~bcolzx.errors.CorruptDataError` (a ValueError) instead of
    IOError; a missing ``__attrs__`` reads as empty in mode ``'r'`` and is
    created otherwise; ``str()`` puts one attribute per line.

    Examples
    --------
    >>> from bcolzx.attrs import attrs
    >>> a = attrs()
    >>> a['units'] = 'm/s'
    >>> a['scale'] = (1, 2)
    >>> a['scale']
    [1, 2]
    >>> list(a)
    [('units', 'm/s'), ('scale', [1, 2])]
    >>> 'units' in a, len(a)
    (True, 2)
    >>> del a['units']
    >>> a.getall()
    {'scale': [1, 2]}
    """

    def __init__(
        self,
        rootdir: str | os.PathLike[str] | None = None,
        mode: str = "a",
        _new: bool = False,
        _seal: Seal | None = None,
        _io: Any = None,
        _unsynced: list | None = None,
    ) -> None:
        if mode not in _MODES:
            raise ValueError(f"mode must be one of {_MODES}, not {mode!r}")
        self._io = _io
        self._rootdir = _io.url if _io is not None else os.fspath(rootdir) if rootdir else None
        self._mode = mode
        self._attrs: dict[str, Any] = {}
        self._attrsfile = _io.path if _io is not None else (
            os.path.join(self._rootdir, ATTRS_FILE) if self._rootdir is not None else None
        )
        self._seal = Seal()
        if self._rootdir is None:  # in memory: no file
            return
        if _io is not None and _seal is None:
            raise ValueError("attributes on object storage need the dataset's seal")
        self._seal = _seal if _seal is not None else dataset_seal(self._rootdir)
        if _new:
            if mode != "r" and _unsynced is not None and _io is None:
                # fsynced with the rest of the new container, before it is published
                assert self._attrsfile is not None
                write_json(self._attrsfile, {}, seal=self._seal.sealed, uid=self._seal.uid,
                           durable=False)
                _unsynced.append(self._attrsfile)
            elif mode != "r":
                self._write({})
        else:
            self._open()

    def _write(self, obj: dict[str, Any]) -> None:
        assert self._attrsfile is not None
        if self._io is not None:
            self._io.write(obj, self._seal)
            return
        write_json(self._attrsfile, obj, seal=self._seal.sealed, uid=self._seal.uid)

    def _read(self):
        assert self._attrsfile is not None
        if self._io is not None:
            got = self._io.read()
            if got is None:
                raise FileNotFoundError(self._attrsfile)
            return got
        return read_json_sealed(self._attrsfile, kind=dict)

    def _open(self) -> None:
        assert self._attrsfile is not None
        try:
            obj, found = self._read()
        except FileNotFoundError:
            if self._seal.sealed:  # a sealed dataset always has its __attrs__
                raise CorruptDataError("the attributes file is missing", path=self._attrsfile
                                       ) from None
            self._attrs = {}
            if self._mode != "r":
                self._write({})
            return
        check_member(found, self._seal, ATTRS_FILE, self._attrsfile)
        self._seal = Seal(self._seal.sealed or found.sealed, self._seal.uid or found.uid)
        self._attrs = obj

    # -- read-only properties (legacy attribute names) -------------------------

    @property
    def rootdir(self) -> str | None:
        """The container's directory, or None for in-memory attributes."""
        return self._rootdir

    @property
    def mode(self) -> str:
        """The mode: ``'r'``, ``'w'`` or ``'a'``."""
        return self._mode

    @property
    def attrsfile(self) -> str | None:
        """The path of ``__attrs__``, or None for in-memory attributes."""
        return self._attrsfile

    # -- changes ---------------------------------------------------------------

    def _check_writable(self, action: str) -> None:
        if self._mode == "r":
            raise ReadOnlyError(f"Cannot {action} an attribute when in 'r'ead-only mode")

    def _commit(self, new: dict[str, Any]) -> None:
        """Write `new` through (if persistent), then make it current (in the
        same dict object, which :attr:`attrs` hands out)."""
        if self._attrsfile is not None:
            self._write(new)
        self._attrs.clear()
        self._attrs.update(new)

    @property
    def attrs(self) -> dict[str, Any]:
        """The attributes, as the dict legacy bcolz kept in ``attrs.attrs``.

        It is the live dict: it follows every change made through this
        accessor.  Change attributes with ``attrs[name] = value`` (written
        through); changing this dict directly is not saved (as in legacy).
        """
        return self._attrs

    def __setitem__(self, name: str, obj: Any) -> None:
        """Set attribute `name` to `obj`, writing it through.

        Raises
        ------
        ReadOnlyError
            In mode ``'r'``.
        TypeError
            If `name` is not a string or `obj` is not JSON-serialisable;
            nothing is changed.
        ValueError
            If `name` is ``'__crc32c__'`` or ``'__uid__'`` (reserved), or `obj`
            holds a dict whose keys would merge in JSON (``{1: 'a', '1': 'b'}``)
            or whose only key is ``'$float'`` (reserved); nothing is changed.
        OSError
            If ``__attrs__`` cannot be written; nothing is changed.
        """
        self._check_writable("modify")
        if not isinstance(name, str):
            raise TypeError(f"attribute names must be str, not {type(name).__name__}")
        if name in (CRC_KEY, UID_KEY):
            raise ValueError(f"{name!r} is reserved for the checksum of the attributes file; "
                             "choose another name")
        value = _to_json_value(obj)
        new = dict(self._attrs)
        new[name] = value
        self._commit(new)

    def __delitem__(self, name: str) -> None:
        """Remove attribute `name`, writing the change through.

        Raises
        ------
        ReadOnlyError
            In mode ``'r'``.
        KeyError
            If there is no attribute `name`.
        OSError
            If ``__attrs__`` cannot be written; nothing is changed.
        """
        self._check_writable("remove")
        new = dict(self._attrs)
        del new[name]
        self._commit(new)

    # -- reading ---------------------------------------------------------------

    def __getitem__(self, name: str) -> Any:
        """The value of attribute `name`.

        Raises
        ------
        KeyError
            If there is no attribute `name`.
        """
        return self._attrs[name]

    def __contains__(self, name: object) -> bool:
        return name in self._attrs

    def __len__(self) -> int:
        return len(self._attrs)

    def __iter__(self) -> Iterator[tuple[str, Any]]:
        """Iterate over ``(name, value)`` pairs (legacy semantics)."""
        return iter(list(self._attrs.items()))

    def getall(self) -> dict[str, Any]:
        """All attributes, as a new dict.

        Returns
        -------
        dict
            A shallow copy: changing it does not change the attributes.

        Raises
        ------
        None
        """
        return dict(self._attrs)

    def __str__(self) -> str:
        if not self._attrs:
            return "*no attrs*"
        return "\n".join(f"{name} : {value}" for name, value in self._attrs.items())

    def __repr__(self) -> str:
        if not self._attrs:
            return "*no attrs*"
        return "".join(f"{name} : {value!r}\n" for name, value in self._attrs.items())
