"""Reclaim the dead space of a dataset's superchunk files: :func:`compact`.

A rewrite (``c[i] = x``, a re-flushed leftover) stores the new chunk after
all live data of its superchunk file and a truncation only forgets chunks:
the old bytes stay in the file, unreferenced, until the file is compacted
(docs/format/superchunk.md).  Compaction rewrites each file with its live
chunks back to back; every file is written beside the old one, fsynced and
renamed over it, then the directory is fsynced, so that a crash leaves the
old or the new file, both complete.

On object storage objects are never changed in place, so a dataset there is
compacted into a new place: ``compact(url, dst)`` writes a copy with the
same parameters whose superchunks are each one object holding only live
chunks (appends had continued them in part objects, docs/format §5), and
publishes it last, as :func:`bcolzx.convert` does (that is the code path);
`dst` may be local, and a local dataset may be compacted to a URL.
"""

from __future__ import annotations

from bcolzx.errors import AppendOnlyError, UnsupportedFormatError

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


def compact(rootdir, dst=None, *, progress=None, storage_options=None, verify=True) -> int:
    """Reclaim the space that rewrites and truncations left in a dataset's files.

    Parameters
    ----------
    rootdir : str or os.PathLike
        A carray or ctable directory in the bcolzx format (every column of a
        ctable is compacted), or its URL on object storage (``s3://...``,
        any fsspec URL or mapper; docs/remote.md), which needs a `dst`.
    dst : str or os.PathLike, optional
        Write the compacted dataset there (a directory or a URL; nothing may
        be there yet) instead of compacting in place; `rootdir` is left as it
        is.  The copy has the same parameters, every superchunk in one file
        or object with its live chunks back to back, and is verified against
        `rootdir` (unless `verify` is False) before it is installed or
        published.
    progress : callable, optional
        Called with 1 after each superchunk file is compacted; with `dst`,
        with the uncompressed bytes written (then compared), as
        :func:`bcolzx.convert` calls it.
    storage_options : dict, optional
        The options of the fsspec filesystem of a URL `rootdir` or `dst`.
    verify : bool, optional
        With `dst`: compare the copy with `rootdir` before publishing it
        (default True).

    Returns
    -------
    int
        Bytes reclaimed (0 when there was nothing to reclaim); with `dst`,
        how many fewer bytes `dst` stores than `rootdir` (0 if not fewer).

    Raises
    ------
    FileNotFoundError
        If `rootdir` holds no carray or ctable.
    FileExistsError
        If something is stored at `dst` already.
    UnsupportedFormatError
        (a ValueError) For a legacy bcolz (format v1) dataset: its chunks are
        files of their own and leave no dead space; nothing is written.
    AppendOnlyError
        (a PermissionError) For a dataset on object storage without `dst`:
        its objects cannot be rewritten in place; nothing is written.
    CorruptDataError
        If the metadata or an index is damaged (run :func:`bcolzx.verify`),
        or the copy at `dst` does not verify (it is then discarded).
    PermissionError
        If the files cannot be written.
    RemoteError
        (an OSError) If the object store fails; nothing is published at `dst`.
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

    With `dst` the rows are read and written again (recompressed with the
    same parameters), as ``bcolzx.convert`` with the dataset's own cparams
    and chunklen would; on object storage the copy is published only once
    complete and verified (docs/remote.md).  Readers of `rootdir` are not
    disturbed; to replace it, point them at `dst`.

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
    if dst is not None:
        return _compact_to(rootdir, dst, progress, storage_options, verify)
    from bcolzx._storage.objects import Objects, resolve
    from bcolzx.ctable import ctable
    from bcolzx.toplevel import open as _open

    where = resolve(rootdir, storage_options)
    if isinstance(where, Objects):
        raise AppendOnlyError(
            f"cannot compact {where.url} in place: objects on object storage are never "
            "changed in place; compact it into a new location instead (bcolzx.compact(url, "
            "dst), 'bcolzx compact SRC DST'): each superchunk becomes one object holding "
            "its live chunks, published once complete")
    dataset = _open(where, mode="a")  # FileNotFoundError when there is none
    if isinstance(dataset, ctable):
        return compact_ctable(dataset, progress)
    return compact_carray(dataset, progress)


def _compact_to(rootdir, dst, progress, storage_options, verify: bool) -> int:
    """:func:`compact` into `dst`: a verified copy with the source's own parameters."""
    from bcolzx._publish import check_destination, write_plan
    from bcolzx.convert import _is_legacy, _locate, _plan

    source, target = _locate(rootdir, dst, storage_options)
    assert target is not None
    check_destination(source, target)
    plan = _plan(source, None, None, rewrite=True)
    if any(_is_legacy(c.source) for c in plan[2]):
        raise UnsupportedFormatError(f"{_label(source)} {_LEGACY}")
    before = _usage(source)
    write_plan(plan, source, target, dst, verify, progress)
    return max(0, before - _usage(target))


def _label(where) -> str:
    return getattr(where, "url", where)


def _usage(where) -> int:
    """Bytes stored at `where` (a directory or objects)."""
    from bcolzx._storage.objects import LocalObjects

    objects = where if not isinstance(where, str) else LocalObjects(where)
    return objects.usage()[1]
