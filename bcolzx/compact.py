"""Reclaim the dead space of a dataset's superchunk files: :func:`compact`.

A rewrite (``c[i] = x``, a re-flushed leftover) stores the new chunk after
all live data of its superchunk file and a truncation only forgets chunks:
the old bytes stay in the file, unreferenced, until the file is compacted
(docs/format/superchunk.md).  Compaction rewrites each file with its live
chunks back to back; every file is written beside the old one, fsynced and
renamed over it, then the directory is fsynced, so that a crash leaves the
old or the new file, both complete.
"""

from __future__ import annotations

import os

from bcolzx.errors import UnsupportedFormatError

__all__ = ["compact", "compact_carray", "compact_ctable"]

_LEGACY = ("is in the legacy bcolz format (v1): each chunk is a file of its own, rewritten "
           "in place, so there is no dead space to reclaim; convert it to the bcolzx format "
           "with bcolzx.convert (or 'bcolzx convert')")


def compact_carray(ca, progress=None) -> int:
    """Compact one carray (see :func:`compact`); returns the bytes reclaimed.

    Raises
    ------
    UnsupportedFormatError
        If `ca` is stored in a legacy bcolz directory.
    ReadOnlyError
        If `ca` was opened in mode ``'r'``.
    OSError
        If the file system refuses.
    """
    engine = ca.engine
    if not engine.store.native:
        raise UnsupportedFormatError(f"{ca.rootdir} {_LEGACY}")
    return engine.compact(progress)


def compact_ctable(ct, progress=None) -> int:
    """Compact every bcolzx-format column of a ctable; returns the bytes reclaimed.

    Legacy (v1) columns of a ctable that mixes both formats are left as they
    are: they have no dead space.

    Raises
    ------
    UnsupportedFormatError
        If every column is in the legacy format.
    ReadOnlyError
        If `ct` was opened in mode ``'r'``.
    OSError
        If the file system refuses.
    """
    columns = list(ct.cols.values())
    native = [c for c in columns if c.engine.store.native]
    if columns and not native:
        raise UnsupportedFormatError(f"{ct.rootdir} {_LEGACY}")
    return sum(compact_carray(c, progress) for c in native)


def compact(rootdir, *, progress=None) -> int:
    """Reclaim the space that rewrites and truncations left in a dataset's files.

    Parameters
    ----------
    rootdir : str or os.PathLike
        A carray or ctable directory in the bcolzx format (every column of a
        ctable is compacted).
    progress : callable, optional
        Called with 1 after each superchunk file is compacted.

    Returns
    -------
    int
        Bytes reclaimed (0 when there was nothing to reclaim).

    Raises
    ------
    FileNotFoundError
        If `rootdir` holds no carray or ctable.
    UnsupportedFormatError
        (a ValueError) For a legacy bcolz (format v1) dataset: its chunks are
        files of their own and leave no dead space; nothing is written.
    CorruptDataError
        If the metadata or an index is damaged (run :func:`bcolzx.verify`).
    PermissionError
        If the files cannot be written.
    OSError
        If the file system refuses.

    Notes
    -----
    Each superchunk file is rewritten beside the old one (``__N.bin.compact``),
    fsynced, renamed over it and the directory fsynced: a crash at any point
    leaves a complete dataset.  The chunk bytes and their checksums are
    copied as they are, so damage is neither repaired nor hidden.  Nobody
    else may have the dataset open meanwhile: readers elsewhere keep the old
    chunk offsets.

    Examples
    --------
    >>> import bcolzx, tempfile, os
    >>> d = os.path.join(tempfile.mkdtemp(), "a")
    >>> c = bcolzx.arange(100_000, rootdir=d, chunklen=10_000)
    >>> c[5] = -1                                     # the chunk is stored again
    >>> c.flush()
    >>> bcolzx.compact(d) > 0
    True
    >>> bcolzx.compact(d)                             # nothing left to reclaim
    0
    """
    from bcolzx.ctable import ctable
    from bcolzx.toplevel import open as _open

    rootdir = os.fspath(rootdir)
    dataset = _open(rootdir, mode="a")  # FileNotFoundError when there is none
    if isinstance(dataset, ctable):
        return compact_ctable(dataset, progress)
    return compact_carray(dataset, progress)
