"""Opening a dataset directory of either format: ``meta/storage`` read once, the right store.

A dataset is in the bcolzx format when its ``meta/storage`` has a
``"format"`` key, and legacy bcolz's (format v1) otherwise.  That file is
read and its seal checked once; the store is made from what was read (and
``meta/sizes``), and the seal it implies is passed on to whoever reads the
dataset's other files (its attributes).  The usual dataset has both files
read, checked and decoded in one call to C (``meta.read_plain``); any other
(legacy, parted, unsealed, damaged) is decoded the long way from the bytes
of ``meta/storage`` that call read, which accepts it or says what is wrong.
"""

from __future__ import annotations

import os

from bcolzx._format.meta import read_plain, read_storage_json, storage_from_sealed
from bcolzx._format.seal import Seal, make_seal
from bcolzx._storage.base import ChunkStore
from bcolzx._storage.directory import DirectoryStore
from bcolzx._storage.legacy import LegacyStore

__all__ = ["open_store", "seal_of"]


def open_store(rootdir: str, readonly: bool = False) -> ChunkStore:
    """The store of the dataset directory `rootdir`, in either format.

    Raises
    ------
    FileNotFoundError
        If `rootdir` or its metadata does not exist.
    CorruptDataError, UnsupportedFormatError
        If its metadata is damaged, or of a format or version bcolzx cannot read.
    """
    rootdir = os.fspath(rootdir)
    plain = read_plain(rootdir)  # the usual dataset: both files read and checked in C
    if type(plain) is tuple:
        return DirectoryStore.open(rootdir, readonly, *plain)
    try:  # any other: the long way, from meta/storage's bytes when they were read
        obj, seal = read_storage_json(rootdir, plain)
    except (FileNotFoundError, NotADirectoryError):
        if not os.path.isdir(rootdir):  # asked only when it matters
            raise FileNotFoundError(f"no dataset directory at {rootdir}") from None
        raise
    if "format" not in obj:
        return LegacyStore.open(rootdir, readonly, storage_json=obj)
    return DirectoryStore.open(rootdir, readonly, storage_from_sealed(rootdir, obj, seal))


def seal_of(store: ChunkStore) -> Seal:
    """How the files of `store`'s dataset are sealed (docs/format/README.md §2c)."""
    st = store.storage
    return make_seal((bool(getattr(st, "sealed", False)), getattr(st, "uid", None)))
