"""The index copies of a superchunk file as :func:`bcolzx.verify` reports them.

The committed copy (and the header) must be intact even when reads no
longer need it to be: a damaged one is salvaged by readers
(docs/format/superchunk.md §6), so :func:`committed_copy_problem` is how
the damage is still reported.

Readers use exactly the copy whose generation ``meta/sizes`` names
(docs/format/superchunk.md §3); the other one, the *spare*, holds an older
or an uncommitted state and is overwritten by the next commit.  Damage to
it loses nothing, but it is damage: :func:`spare_copy_note` reports it
without failing the check, since a writer killed while writing the spare
leaves it torn in exactly the same way.
"""

from __future__ import annotations

import os

from bcolzx._ext import index as _index
from bcolzx._format import files as _files
from bcolzx.errors import BcolzxError, CorruptDataError

__all__ = ["spare_copy_note", "committed_copy_problem"]


def spare_copy_note(path: str, geometry, generation: int) -> str | None:
    """What is wrong with the spare index copy of the superchunk file `path`, or None.

    Parameters
    ----------
    path : str
        The superchunk file.
    geometry : Geometry
        The dataset's (:class:`bcolzx._format.superchunk.Geometry`).
    generation : int
        The generation ``meta/sizes`` names for the file.

    Returns
    -------
    str or None
        A sentence for the report, or None when the spare copy is valid (or
        the file cannot be read: that is reported as a problem elsewhere).
    """
    isize = _index.index_size(geometry.nslots)
    try:
        head, st = _files.read_regular(path, _index.HEADER_SIZE + 2 * isize)
        size, copies = st.st_size, head[_index.HEADER_SIZE:]
    except OSError:  # UnsafeFileError (a FIFO...) included
        return None
    if len(copies) != 2 * isize:
        return None
    decoded, errors = [], []
    for which in (0, 1):
        try:
            decoded.append(_index.Index.decode(
                copies[which * isize:(which + 1) * isize], geometry.nslots, size,
                geometry.checksum_size, geometry.header_typesize, path=path,
                chunk_size=geometry.chunk_size))
        except CorruptDataError as exc:
            decoded.append(None)
            errors.append(exc)
    used = [i for i, idx in enumerate(decoded) if idx is not None and idx.generation == generation]
    if not used:
        return None  # the committed copy is damaged: a problem, reported by the reader
    spare = 1 - used[0]
    if decoded[spare] is not None:
        return None
    return (f"index copy {'AB'[spare]}, which the dataset does not use, is invalid "
            f"({errors[-1]}): damaged, or torn by a writer that stopped while writing it; "
            "no data depends on it and the next commit rewrites it")


def committed_copy_problem(path: str, number: int, geometry, generation: int) -> str | None:
    """What is wrong with the header or the committed index copy of `path`, or None.

    Readers get past such damage through what the file still proves (the
    chunks they cannot prove raise on their own); this is the one report of
    the damage itself.  A missing file is reported elsewhere (None).
    """
    from bcolzx._format.superchunk import SuperchunkFile

    if not os.path.exists(path):
        return None
    try:
        SuperchunkFile.load(path, number, geometry, generation)
    except BcolzxError as exc:  # damage, or a file that is not ours to read (a FIFO)
        return (f"the header or the committed index copy is damaged ({exc}); reads use what "
                "the file still proves; `bcolzx repair` rebuilds the dataset")
    return None
