"""Checksummed JSON files: the seal of docs/format/README.md §2c.

A *sealed* JSON object ends with the member ``"__crc32c__": N``, where N is
the CRC-32C of the file's name (``sizes``, ``__attrs__``...) and a NUL byte
followed by the file's bytes without that member: the object as
``json.dumps`` wrote it, from ``{`` to ``}``.  Any damaged byte is found,
including in whitespace or in a number that still parses, and so is a file
of the dataset put in another one's place.  A member
``"__uid__"`` (the dataset's random identity, from ``meta/storage`` or
``__rootdirs__``) ties the file to its dataset, so that a file swapped in
from another dataset (another column of a ctable) is found too.

The seal is plain JSON: clients that read the files with ``json`` see two
more keys and ignore them.  Legacy bcolz (format v1) datasets are never
sealed, because legacy bcolz rewrites their files without the seal.
"""

from __future__ import annotations

import json
import re
import secrets
from functools import partial
from typing import Any, NamedTuple

from bcolzx._ext import checksum, metafiles
from bcolzx.errors import CorruptDataError

__all__ = ["CRC_KEY", "UID_KEY", "Seal", "make_seal", "name_crc", "new_uid", "seal", "unseal"]

CRC_KEY = "__crc32c__"
UID_KEY = "__uid__"
_UID = re.compile(r"[0-9a-f]{16}\Z")


class Seal(NamedTuple):
    """What a JSON file's seal said: whether it had one, and the dataset it names
    (an immutable record, made at every open: a named tuple is made fastest)."""

    sealed: bool = False
    uid: str | None = None


#: ``Seal(sealed, uid)`` of a ``(sealed, uid)`` pair, without the named tuple's
#: ``__new__`` (a Python function): a seal is made several times per open.
make_seal = partial(tuple.__new__, Seal)


def new_uid() -> str:
    """A new random dataset identity: 16 lowercase hex digits."""
    return secrets.token_hex(8)


#: The checksum of each file name and its NUL, the start of every seal of that
#: name (a handful of names: every file of a dataset is one of them).
_NAME_CRC: dict[str, int] = {}


def name_crc(name: str) -> int:
    """The CRC-32C of the file name `name` and a NUL: where its seal's checksum starts."""
    start = _NAME_CRC.get(name)
    if start is None:
        start = checksum.crc32c(name.encode("utf-8") + b"\0")
        if len(_NAME_CRC) < 64:
            _NAME_CRC[name] = start
    return start


def _crc(name: str, body: bytes) -> int:
    return checksum.crc32c(body, name_crc(name))


def seal(obj: dict, name: str, uid: str | None = None) -> bytes:
    """The bytes of the sealed JSON file `name` (its base name) holding `obj`
    (and `uid`, when given).

    Raises
    ------
    ValueError
        If `obj` already holds a seal member, `uid` is malformed, or `obj`
        holds a NaN or an infinity (not standard JSON).
    TypeError
        If `obj` cannot be represented in JSON.
    """
    if CRC_KEY in obj or UID_KEY in obj:
        raise ValueError(f"{CRC_KEY!r} and {UID_KEY!r} are reserved keys")
    if uid is not None:
        if not isinstance(uid, str) or not _UID.match(uid):
            raise ValueError(f"a dataset uid is 16 lowercase hex digits, not {uid!r}")
        obj = {**obj, UID_KEY: uid}
    # Standard JSON only (RFC 8259): a NaN or infinity here is a bug of the caller
    # (attributes encode theirs, docs/format/README.md §2c), refused with ValueError.
    body = json.dumps(obj, allow_nan=False).encode("utf-8")
    crc = _crc(name, body)
    sep = b", " if obj else b""
    return body[:-1] + sep + b'"__crc32c__": %d}' % crc


def unseal(raw: bytes, obj: Any, name: str, path: str | None = None) -> tuple[Any, Seal]:
    """Check the seal of a JSON file and take it off.

    Parameters
    ----------
    raw : bytes
        The file's bytes.
    obj : object
        `raw` decoded (``json.loads``).
    name : str
        The file's base name (part of what the checksum covers).
    path : str, optional
        The file, for error messages.

    Returns
    -------
    (object, Seal)
        `obj` with the seal members taken off (in place: it is the caller's
        fresh decoding of `raw`), and what the seal said.

    Raises
    ------
    CorruptDataError
        If the seal does not match the bytes, is malformed, or a uid comes
        without a checksum.
    """
    if not isinstance(obj, dict):
        return obj, Seal()
    # Checked, and the members taken off, in C (_ext/metafiles.pyx).
    found, stored, crc, uid = metafiles.unseal(raw, obj, name_crc(name))
    if found == metafiles.SEALED:
        return obj, make_seal((True, uid))
    if found == metafiles.UNSEALED:
        return obj, _UNSEALED
    raise CorruptDataError(_FAILURES[found].format(stored=stored, crc=crc, uid=uid), path=path)


_UNSEALED = Seal()
#: Why a seal was refused, by what metafiles.unseal found.
_FAILURES = {
    metafiles.NO_CHECKSUM: f"the file names a dataset ({UID_KEY}) but has no {CRC_KEY} "
                           "checksum: it was damaged",
    metafiles.NO_TAIL: f"the {CRC_KEY} checksum is not the file's last member: the file was "
                       "damaged",
    metafiles.MALFORMED: f"malformed {CRC_KEY} member: the file was damaged",
    metafiles.MISMATCH: "checksum mismatch (stored {stored:#010x}, computed {crc:#010x}): "
                        "the file was damaged, or is another file of the dataset",
    metafiles.BAD_UID: "malformed dataset uid {uid!r}",
}


def check_member(found: Seal, dataset: Seal, what: str, path: str | None) -> None:
    """Check a file's seal against its dataset's: a sealed dataset's files are all
    sealed, and name no other dataset.

    Raises
    ------
    CorruptDataError
        If `found` breaks either rule.
    """
    if dataset.sealed and not found.sealed:
        raise CorruptDataError(f"{what} has no {CRC_KEY} checksum although the dataset's "
                               "metadata has one: it was damaged or replaced", path=path)
    if found.uid is not None and dataset.uid is not None and found.uid != dataset.uid:
        raise CorruptDataError(f"{what} belongs to another dataset (uid {found.uid}, this "
                               f"dataset's is {dataset.uid}): it was swapped or copied in",
                               path=path)


def dataset_seal(rootdir: str) -> Seal:
    """The seal of the dataset at `rootdir`: its ``meta/storage`` (a carray) or
    ``__rootdirs__`` (a ctable); an unsealed Seal for anything else, and for a
    dataset whose file cannot be read (that damage is reported by whoever
    reads it)."""
    import os

    from bcolzx._format import layout
    from bcolzx._format.jsonfile import read_json_sealed

    for path in (layout.meta_path(rootdir, layout.STORAGE_FILE),
                 os.path.join(rootdir, layout.ROOTDIRS_FILE)):
        try:
            return read_json_sealed(path)[1]
        except (OSError, CorruptDataError):
            continue
    return Seal()
