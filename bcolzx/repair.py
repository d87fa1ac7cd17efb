"""Rebuild a damaged carray or ctable from everything that verifies: :func:`repair`.

How a repair runs (docs/guide/reliability and docs/cli.md, ``bcolzx repair``):

1. *Read*: the dataset is opened read-only, as any reader does; a damaged
   superchunk index is read through what it still proves
   (docs/format/superchunk.md §6).  A superchunk file in which readers lose
   chunks (neither index copy usable, slots a damaged copy does not prove,
   chunks that fail their checksums) is first searched for them (§6,
   Proofs 3 and 4: :func:`bcolzx._format.salvage.scan` and
   :func:`~bcolzx._format.salvage.recover`), and rebuilt in a private copy
   of the dataset with every chunk the file proves.  Every column is read
   chunk by chunk; a chunk that raises :class:`~bcolzx.errors.CorruptDataError`
   (checksum, lost index entry, truncated file, undecodable data) is *lost*:
   its rows are recorded, per column, as ``[start, stop)`` ranges.  Nothing
   else is ever taken for data.
2. *Write* (not with ``dry_run``): a new dataset, in the bcolzx format, with
   the same dtype, shape, compression parameters, chunk length, default value
   and attributes, is written into a hidden temporary directory beside the
   target, verified with :func:`bcolzx.verify`, and installed by a rename
   (``dst``), or traded with the damaged dataset by one atomic exchange (in
   place), after which the damaged original is kept beside it, renamed
   ``<name>.damaged-<hex>`` (``keep_damaged=False`` removes it).  The
   original is never written to.
3. *Lost rows*: with ``lost="fill"`` (default) they hold the column's default
   value (``dflt``), so that every other row keeps its row number, and the
   repaired dataset's attributes record the ranges under the key
   ``"bcolzx.repair"``; with ``lost="cut"`` the dataset ends before the first
   lost row of any column, so that every value it holds was read back.
"""

from __future__ import annotations

import dataclasses
import datetime
import errno
import os
import secrets
import shutil

import numpy as np

from bcolzx._format import layout
from bcolzx._format.jsonfile import fsync_dir, write_json
from bcolzx._format.meta import Sizes, read_storage, write_storage
from bcolzx._format.salvage import NEWER
from bcolzx._storage import writer
from bcolzx.carray import carray as _carray
from bcolzx.defaults import defaults
from bcolzx.errors import BcolzxError, CorruptDataError, UnsupportedFormatError
from bcolzx.params import cparams as _cparams

__all__ = ["RepairReport", "repair", "ATTR"]

#: The attribute of a repaired dataset that lists the rows it lost.
ATTR = "bcolzx.repair"
#: Uncompressed bytes read per attempt before falling back to one chunk at a time.
BLOCK_BYTES = 8 << 20
_MODES = ("fill", "cut")


@dataclasses.dataclass
class RepairReport:
    """What :func:`repair` found and did.

    Attributes
    ----------
    rootdir : str
        The damaged dataset.
    kind : str
        ``"carray"`` or ``"ctable"``.
    rows : int
        Rows of the damaged dataset (as its metadata says).
    lost : dict
        ``{column: [(start, stop), ...]}`` the rows that could not be read
        (the column is ``""`` for a carray); empty when nothing was lost.
    problems : list of str
        What else was wrong: damage that cost no row (a zone map, rebuilt; a
        superchunk header or index copy read through what it proves; a
        ``meta/sizes`` rebuilt from the data) and attributes that could not
        be read (the repaired copy has none).
    written : str or None
        Where the repaired dataset is (None with ``dry_run``).
    rows_written : int
        Rows of the repaired dataset (``lost="cut"`` may make it shorter).
    damaged : str or None
        Where the damaged original was kept, after an in-place repair.
    """

    rootdir: str
    kind: str = "carray"
    rows: int = 0
    lost: dict = dataclasses.field(default_factory=dict)
    problems: list = dataclasses.field(default_factory=list)
    written: str | None = None
    rows_written: int = 0
    damaged: str | None = None

    @property
    def lost_rows(self) -> int:
        """Rows lost in at least one column."""
        return sum(b - a for a, b in _merge([r for rs in self.lost.values() for r in rs]))

    def to_json(self) -> dict:
        return {"path": self.rootdir, "kind": self.kind, "rows": self.rows,
                "lost_rows": self.lost_rows,
                "lost": {k: [list(r) for r in v] for k, v in self.lost.items()},
                "problems": list(self.problems), "written": self.written,
                "rows_written": self.rows_written, "damaged": self.damaged}

    def __str__(self) -> str:
        lines = [f"{self.rootdir}: {self.kind}, {self.rows} rows, "
                 + (f"{self.lost_rows} rows lost" if self.lost else "nothing lost")]
        for col, ranges in self.lost.items():
            where = f"column {col!r}" if col else "rows"
            lines.append(f"  {where}: " + ", ".join(f"{a}..{b - 1}" for a, b in ranges))
        lines.extend(f"  problem: {p}" for p in self.problems)
        if self.written:
            lines.append(f"  repaired copy: {self.written} ({self.rows_written} rows)")
        else:
            lines.append("  dry run: nothing written")
        if self.damaged:
            lines.append(f"  damaged original kept at {self.damaged}")
        return "\n".join(lines)


def _merge(ranges: list) -> list:
    out: list = []
    for a, b in sorted(ranges):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


# -- reading what verifies ---------------------------------------------------------------


def _read(col, lo: int, hi: int):
    if col.dtype == object:
        return list(col.engine.read(lo, hi))
    return np.asarray(col[lo:hi])


def _scan(col, length: int, progress=None) -> tuple[list, list]:
    """(blocks ``(start, values or None)`` covering rows 0..length, lost ranges)."""
    chunklen = col.chunklen
    rowbytes = max(1, col.atomsize if col.dtype != object else layout.VLEN_ROW_NBYTES)
    blen = chunklen * max(1, BLOCK_BYTES // max(1, chunklen * rowbytes))
    blocks: list = []
    lost: list = []
    for lo in range(0, length, blen):
        hi = min(length, lo + blen)
        try:
            blocks.append((lo, _read(col, lo, hi)))
        except (CorruptDataError, UnsupportedFormatError):
            for a in range(lo, hi, chunklen):  # one chunk at a time: keep what verifies
                b = min(hi, a + chunklen)
                try:
                    blocks.append((a, _read(col, a, b)))
                except (CorruptDataError, UnsupportedFormatError):
                    blocks.append((a, None))
                    lost.append((a, b))
        if progress is not None:
            progress((hi - lo) * rowbytes)
    return blocks, _merge(lost)


def _damage_repair_fixes(col, where: str, problems: list) -> None:
    """Report the damage that costs no row and that the repaired copy does not carry
    over: a damaged zone map (rebuilt from the data), superchunk headers and
    committed index copies read through what they still prove."""
    from bcolzx._format.meta import read_sizes
    from bcolzx._format.spare import committed_copy_problem

    stats = getattr(col.engine, "chunk_stats", None)
    if stats is not None:
        try:
            stats()
        except CorruptDataError as exc:
            problems.append(f"{where}: the zone map is damaged ({exc}); the repaired copy's "
                            "is rebuilt from the data")
    store = col.engine.store
    if not store.native:
        return
    try:
        generations = read_sizes(store.rootdir).generations
    except (CorruptDataError, OSError):
        return  # rebuilt, and reported, by _shadow
    for number, generation in enumerate(generations):
        damage = committed_copy_problem(layout.data_path(store.rootdir, number), number,
                                        store.geometry, generation)
        if damage is not None:
            problems.append(f"{layout.data_path(where, number)}: {damage}")


def _attrs_of(obj, where: str, problems: list) -> dict:
    try:
        return dict(obj.attrs.getall())
    except (BcolzxError, OSError, ValueError) as exc:
        problems.append(f"the attributes of {where} cannot be read ({exc}); the repaired "
                        "copy has none")
        return {}


# -- writing -------------------------------------------------------------------------------


def _write_column(col, blocks: list, stop: int, rootdir: str, attrs: dict) -> None:
    """The repaired copy of `col` at `rootdir`: rows 0..stop of `blocks`, lost ones as dflt."""
    from bcolzx.convert import _target_cparams

    cp = _target_cparams(col, None)
    # Stored values were quantized when they were written: never quantized again.
    write_cp = _cparams(clevel=cp.clevel, shuffle=cp.shuffle, cname=cp.cname, quantize=0,
                        blocksize=cp.blocksize, bytedelta=cp.bytedelta)
    objects = col.dtype == object
    out = _carray(np.empty((0, *col.shape[1:]), col.dtype), rootdir=rootdir, mode="w",
                  cparams=write_cp, chunklen=col.chunklen, dflt=col.dflt,
                  expectedlen=stop or None, allow_pickle=True if objects else None)
    for start, values in blocks:
        if start >= stop:
            break
        n = min(stop, start + (len(values) if values is not None else col.chunklen)) - start
        if values is None:
            values = [col.dflt] * n if objects else np.full((n, *col.shape[1:]), col.dflt,
                                                              dtype=col.dtype)
        if objects:
            out.engine.append(values[:n])
        else:
            out.append(values[:n])
    out.flush()
    for name, value in attrs.items():
        out.attrs[name] = value
    del out
    if cp.quantize:
        storage = read_storage(rootdir)
        write_storage(rootdir, storage.replace(
            cparams=dataclasses.replace(storage.cparams, quantize=cp.quantize)))


def _record(report: RepairReport, lost_mode: str) -> dict:
    return {"source": os.path.abspath(report.rootdir),
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "lost": {k: [list(r) for r in v] for k, v in report.lost.items()},
            "lost_rows": lost_mode}


def _reserve(parent: str, base: str) -> str:
    """A new empty hidden directory ``parent/.base.bcolzx-repair-XXXX``."""
    from bcolzx.convert import _reserve as reserve

    return reserve(parent, base, ".bcolzx-repair-")


def repair(rootdir, dst=None, *, dry_run: bool = False, lost: str = "fill",
           keep_damaged: bool = True, progress=None, allow_pickle=None) -> RepairReport:
    """Rebuild a damaged carray or ctable from everything that verifies.

    Every chunk of every column is read as a reader reads it (checksums
    checked, a damaged index read through what it still proves); the rows of
    a chunk that cannot be read are *lost* and reported, never guessed.

    Parameters
    ----------
    rootdir : str or os.PathLike
        The damaged dataset (bcolzx format, or a legacy bcolz directory: the
        repaired copy is in the bcolzx format).
    dst : str or os.PathLike, optional
        Write the repaired dataset there (it must not exist); `rootdir` is
        left untouched.  None (default) repairs in place: the repaired copy
        replaces `rootdir` in one atomic exchange once it is complete and
        verified, and the damaged original is kept beside it as
        ``<name>.damaged-<hex>``.
    dry_run : bool, optional
        Only read and report: nothing is written.
    lost : {'fill', 'cut'}, optional
        What the repaired dataset holds where rows were lost: ``'fill'``
        (default) the column's ``dflt``, every other row keeping its row
        number, the lost ranges recorded in the attribute ``"bcolzx.repair"``
        of the repaired dataset; ``'cut'``: the dataset ends before the first
        lost row of any column.
    keep_damaged : bool, optional
        In place: keep the damaged original (default) or remove it once the
        repaired copy is installed and durable.
    progress : callable, optional
        Called with the uncompressed bytes of each block read.
    allow_pickle : bool, optional
        As for :func:`bcolzx.open` (object dtype).

    Returns
    -------
    RepairReport
        The lost rows per column, and where the repaired copy is.

    Raises
    ------
    FileNotFoundError
        If `rootdir` is not a carray or ctable directory.
    CorruptDataError
        If the dataset cannot even be opened (its ``meta/storage``,
        ``meta/sizes`` or ``__rootdirs__`` is damaged): nothing is written.
    FileExistsError
        If `dst` exists.
    LockedError
        In place, if a writer holds the dataset.
    ValueError
        For an unknown `lost`.

    Examples
    --------
    >>> import bcolzx, os, tempfile
    >>> d = os.path.join(tempfile.mkdtemp(), "a")
    >>> _ = bcolzx.arange(10_000, rootdir=d)
    >>> bcolzx.repair(d, dry_run=True).lost
    {}
    """
    if lost not in _MODES:
        raise ValueError(f"lost must be one of {_MODES}, not {lost!r}")
    src = os.fspath(rootdir)
    if not os.path.isdir(src):
        raise FileNotFoundError(errno.ENOENT, "no dataset directory at", src)
    if dst is not None and os.path.lexists(os.fspath(dst)):
        raise FileExistsError(errno.EEXIST, "the destination exists", os.fspath(dst))
    locks = [] if dry_run or dst is not None else writer.lock_tree(src, defaults.lock_timeout)
    try:
        return _repair_locked(src, dst, dry_run, lost, keep_damaged, progress, allow_pickle)
    finally:
        writer.release_all(locks)


def _repair_locked(src, dst, dry_run, lost, keep_damaged, progress, allow_pickle):
    report = RepairReport(src)
    try:
        shadow = _shadow(src, report.problems)
    except (CorruptDataError, OSError, ValueError):
        shadow = None  # opening the dataset says what is wrong
    try:
        return _repair_from(report, shadow or src, dst, dry_run, lost, keep_damaged, progress,
                            allow_pickle)
    finally:
        if shadow is not None:
            shutil.rmtree(shadow, ignore_errors=True)


def _repair_from(report, source, dst, dry_run, lost, keep_damaged, progress, allow_pickle):
    """:func:`repair`, reading `source` (the dataset, or its shadow with rebuilt sizes)."""
    from bcolzx.convert import _install
    from bcolzx.toplevel import open as _open

    src = report.rootdir
    dataset = _open(source, mode="r", allow_pickle=allow_pickle)
    if isinstance(dataset, _carray):
        columns = {"": dataset}
    else:
        report.kind = "ctable"
        columns = {n: dataset.cols[n] for n in dataset.names}
    report.rows = len(dataset)
    for name, col in columns.items():
        _damage_repair_fixes(col, os.path.join(src, name) if name else src, report.problems)
    scans = {}
    for name, col in columns.items():
        blocks, gone = _scan(col, report.rows, progress)
        scans[name] = blocks
        if gone:
            report.lost[name] = gone
    stop = report.rows
    if lost == "cut" and report.lost:
        stop = min(r[0][0] for r in report.lost.values())
    report.rows_written = stop
    table_attrs = _attrs_of(dataset, src, report.problems)
    col_attrs = {n: (_attrs_of(c, os.path.join(src, n), report.problems) if n else table_attrs)
                 for n, c in columns.items()}
    if dry_run:
        return report
    if report.lost and lost == "fill":
        table_attrs = dict(table_attrs, **{ATTR: _record(report, lost)})
        if "" in col_attrs:
            col_attrs[""] = table_attrs
    target = os.path.realpath(src) if dst is None else os.path.abspath(os.fspath(dst))
    parent, base = os.path.split(target)
    tmp = _reserve(parent, base)
    try:
        if report.kind == "carray":
            _write_column(columns[""], scans[""], stop, tmp, col_attrs[""])
        else:
            for name, col in columns.items():
                _write_column(col, scans[name], stop, os.path.join(tmp, name), col_attrs[name])
            write_json(os.path.join(tmp, layout.ATTRS_FILE), table_attrs)
            write_json(os.path.join(tmp, layout.ROOTDIRS_FILE), {"names": list(columns)})
            fsync_dir(tmp)
        from bcolzx.verify import verify

        check = verify(tmp)
        if not check.ok:  # pragma: no cover - a bug: the copy was written from verified reads
            raise CorruptDataError(f"the repaired copy does not verify: {check}", path=tmp)
        old = _install(tmp, target, in_place=dst is None)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    fsync_dir(parent)  # the repaired copy is durable under its name: the original may move
    report.written = src if dst is None else os.fspath(dst)
    if old is not None:
        if keep_damaged:
            kept = os.path.join(parent, f"{base}.damaged-{secrets.token_hex(4)}")
            os.rename(old, kept)
            fsync_dir(parent)
            report.damaged = kept
        else:
            shutil.rmtree(old, ignore_errors=True)
    return report


# -- metadata the data proves ----------------------------------------------------------


def _sizes_from_data(cdir: str, storage) -> tuple[Sizes, str]:
    """A ``meta/sizes`` for the carray `cdir` rebuilt from its superchunk files.

    Each file is read through its valid index copy of the highest generation
    (as a tool without metadata does, docs/format/superchunk.md §3); the
    dataset ends at the first file that is missing, unreadable or not full.
    The row shape comes from the chunk size in the first header.

    Returns
    -------
    (Sizes, str)
        The sizes, and a sentence for the report.

    Raises
    ------
    CorruptDataError
        If not even the first superchunk file can be read.
    """
    from bcolzx._ext import index as _index
    from bcolzx._format.superchunk import Geometry, SuperchunkFile

    itemsize = storage.dtype.itemsize
    first = layout.data_path(cdir, 0)
    if not os.path.exists(first):
        return Sizes((0,), 0, 0), "meta/sizes was rebuilt: no superchunk file, no rows"
    with open(first, "rb") as f:
        head = _index.decode_header(f.read(_index.HEADER_SIZE), first)
    rowbytes, rest = divmod(head["chunk_size"], storage.chunklen)
    items, rest2 = (1, 0) if storage.vlen else divmod(rowbytes, itemsize)
    if rest or rest2 or not items:
        raise CorruptDataError("meta/sizes is damaged and the chunk size of the first "
                               "superchunk file does not fit meta/storage", path=first)
    rowshape = () if items == 1 else (items,)
    geometry = Geometry(storage.chunks_per_superchunk, head["chunk_size"],
                        1 if storage.vlen else itemsize, layout.CHECKSUMS[storage.checksum])
    gens, chunks, last, cbytes, number, why = [], 0, 0, 0, 0, "no further superchunk file"
    while os.path.exists(layout.data_path(cdir, number)):
        try:
            sc = SuperchunkFile.load(layout.data_path(cdir, number), number, geometry)
        except CorruptDataError as exc:
            why = f"superchunk file {number} cannot be read ({exc})"
            break
        idx = sc.index
        if not idx.nchunks:
            break
        gens.append(idx.generation)
        chunks = number * geometry.nslots + idx.nchunks
        last = idx.last_chunk_size
        cbytes += sum(sc.stored_nbytes(s) for s in range(idx.nchunks))
        number += 1
        if idx.nchunks < geometry.nslots:
            why = "the last superchunk file is not full"
            break
    length = (chunks - 1) * storage.chunklen + last // rowbytes if chunks else 0
    note = (f"meta/sizes is damaged: {length} rows of shape {rowshape} were rebuilt from the "
            f"superchunk files' latest valid indexes ({why}); rows of a commit a crash cut "
            "short may be among them" + (", and a row shape of more than one dimension is "
                                         "flattened" if items > 1 else ""))
    return Sizes((length, *rowshape), length * rowbytes, cbytes, tuple(gens)), note


def _unprovable(path: str, number: int, geometry, generation: int, needed: int,
                last: int) -> bool:
    """Whether a reader can prove nothing of superchunk file `path`: neither index copy
    can be used, even through salvage, and its header does not name another file."""
    from bcolzx._ext import index as _index
    from bcolzx._format.salvage import salvage
    from bcolzx._format.superchunk import SuperchunkFile, header_mismatch

    if not os.path.isfile(path) or not needed:
        return False
    try:
        SuperchunkFile.load(path, number, geometry, generation)
        return False
    except CorruptDataError:
        pass
    except BcolzxError:  # not ours to read (a FIFO, a newer format)
        return False
    try:
        salvage(path, number, geometry, generation, needed, last)
        return False
    except CorruptDataError:
        pass
    with open(path, "rb") as f:
        raw = f.read(_index.HEADER_SIZE)
    try:
        head = _index.decode_header(raw, path)
    except CorruptDataError:
        return True  # damaged too: meta/storage's geometry stands
    return header_mismatch(head, number, geometry) is None  # else another file: not scanned


def _scan_files(cdir: str, storage, sizes: Sizes, problems: list) -> dict:
    """``{number: (chunks, needed, last size)}`` for the superchunk files of `cdir` to
    rebuild, `chunks` ``{slot: chunk bytes or Special}`` what each still proves: a
    file of which nothing can be proved through an index is scanned for the chunks
    whose checksums verify (docs/format/superchunk.md §6, "Proof 3"); in a file a
    reader opens, the chunks it loses are looked for in the file ("Proof 4").  What
    was recovered and lost goes to `problems`."""
    from bcolzx._format.salvage import scan
    from bcolzx._storage.directory import geometry_of

    if sizes.parts or not sizes.generations:  # object storage parts; legacy: no index
        return {}
    geometry, rowbytes = geometry_of(storage, tuple(sizes.shape[1:]), cdir)
    length, chunklen, k = sizes.shape[0], storage.chunklen, geometry.nslots
    nchunks = -(-length // chunklen)
    out = {}
    for number, generation in enumerate(sizes.generations):
        needed = max(0, min(k, nchunks - number * k))
        last = (length - (nchunks - 1) * chunklen) * rowbytes \
            if number * k + needed == nchunks else geometry.chunk_size
        path = layout.data_path(cdir, number)
        first = number * k
        if not _unprovable(path, number, geometry, generation, needed, last):
            got = _recovered(cdir, storage, sizes, path, number, geometry, generation, needed,
                             last, problems)
            if got is not None:
                out[number] = (got, needed, last)
            continue
        found = scan(path, number, geometry, needed, last, vlen=bool(storage.vlen))
        _against_zonemap(cdir, storage, sizes, found, first)
        _confirm(cdir, storage, sizes, found, first, list(found.chunks))
        got = [first + s for s in sorted(found.chunks)]
        several = {first + s: n for s, n in sorted(found.versions.items())
                   if n > 1 and s in found.chunks}
        text = (f"{path}: neither index copy can be used; a scan of its data region "
                f"recovered {len(got)} of {needed} chunks ({_spans(got) or 'none'}) whose "
                "checksums verify")
        if several:
            text += (f"; of chunks {_spans(sorted(several))} several versions verify and the "
                     "one written last was taken (an unflushed rewrite, if a writer was killed "
                     "during it, may be that one)")
        if found.lost:
            text += f"; chunks {_spans([first + s for s in sorted(found.lost)])} are lost"
            text += _reasons(found.lost, first, (_OLDER, _UNCONFIRMED, NEWER))
        problems.append(text)
        if found.chunks:
            out[number] = (found.chunks, needed, last)
    return out


def _recovered(cdir: str, storage, sizes: Sizes, path: str, number: int, geometry,
               generation: int, needed: int, last: int, problems: list) -> dict | None:
    """The chunks of a superchunk file a reader opens, with those it loses that the
    file still proves (:func:`bcolzx._format.salvage.recover`), or None when there
    is none such; what was recovered goes to `problems`."""
    from bcolzx._format.salvage import recover

    got = recover(path, number, geometry, generation, needed, last, vlen=bool(storage.vlen))
    if got is None or not got.recovered:
        return None
    first = number * geometry.nslots
    _against_zonemap(cdir, storage, sizes, got.found, first)
    _confirm(cdir, storage, sizes, got.found, first, sorted(got.unconfirmed))
    for slot in got.found.lost:
        got.recovered.pop(slot, None)
    if not got.recovered:
        return None
    losing = sorted(set(got.recovered) | set(got.found.lost))
    text = (f"{path}: a reader loses chunks {_spans([first + s for s in losing])} "
            f"({got.how or 'they fail their checksums'}); a search of the file recovered "
            f"{len(got.recovered)} of the {len(losing)} chunks: "
            + "; ".join(f"chunk {first + s}: {how}" for s, how in sorted(got.recovered.items())))
    several = [first + s for s, n in sorted(got.found.versions.items())
               if n > 1 and s in got.recovered]
    if several:
        text += (f"; of chunks {_spans(several)} several versions verify and the one written "
                 "last was taken (an unflushed rewrite, if a writer was killed during it, may "
                 "be that one)")
    if got.found.lost:
        text += f"; chunks {_spans([first + s for s in sorted(got.found.lost)])} are lost"
        text += _reasons(got.found.lost, first, (_OLDER, _UNCONFIRMED, NEWER))
    problems.append(text)
    return {**got.kept, **got.found.chunks}


def _reasons(lost: dict, first: int, reasons: tuple) -> str:
    """`` (chunks: reason)`` for each of `reasons` some slots of `lost` were lost for."""
    text = ""
    for why in reasons:
        which = [first + s for s, w in sorted(lost.items()) if w.endswith(why)]
        if which:
            text += f" ({_spans(which)}: {why})"
    return text


#: Why the chunk found for a slot a reader loses, its entry unproved, is not taken.
_UNCONFIRMED = ("the chunk found may have been rewritten as a constant since (no bytes), and "
                "neither the index copy's crc nor exact bounds in the zone map prove that it "
                "was not")


def _confirm(cdir: str, storage, sizes: Sizes, found, first: int, slots: list) -> None:
    """Move to ``found.lost`` those of `slots` (chunks found whose entry nothing proved)
    that may have been rewritten as a constant since they were written: a constant
    stores no bytes, so only the zone map's exact bounds, the chunk's and not one
    value's, rule it out.  Variable-length items are never stored as constants."""
    if storage.vlen:
        return
    for slot in slots:
        if slot in found.chunks and not _exactly(cdir, storage, sizes, found.chunks[slot],
                                                 first + slot):
            del found.chunks[slot], found.offsets[slot]
            found.lost[slot] = _UNCONFIRMED


def _zonemap_of(cdir: str, storage, sizes: Sizes) -> tuple:
    """``(stats, exact)`` of the zone map of `cdir`, each None when there is none."""
    from bcolzx._format import zonemap

    dtype = np.dtype(storage.dtype)
    if storage.vlen or len(sizes.shape) != 1 or dtype.kind not in zonemap.KINDS:
        return None, None
    try:
        return zonemap.load(cdir, dtype, storage)
    except (CorruptDataError, OSError):
        return None, None


def _exactly(cdir: str, storage, sizes: Sizes, chunk: bytes, number: int) -> bool:
    """Whether the committed zone map's exact bounds of chunk `number` are those of the
    compressed `chunk`, which is not a constant: then the committed chunk is not
    a constant (its bounds would be one value)."""
    from bcolzx._ext import codec
    from bcolzx._format import zonemap

    stats, exact = _zonemap_of(cdir, storage, sizes)
    if stats is None or exact is None or number >= len(stats) or not exact[number]:
        return False
    try:
        values = np.frombuffer(codec.Decompressor(1).decompress(chunk), np.dtype(storage.dtype))
    except CorruptDataError:
        return False
    if len(values) != storage.chunklen:
        return False
    lo, hi, nan = zonemap.bounds_of(values)
    rec = stats[number]
    return not _missing(lo) and bool(lo != hi and lo == rec["min"] and hi == rec["max"]) \
        and bool(nan) == bool(rec["nan"])


#: Why a chunk a scan found is not taken although its checksum verifies.
_OLDER = "the zone map describes other values: it is an older version of the chunk"


def _missing(x) -> bool:
    kind = np.asarray(x).dtype.kind
    return bool(np.isnan(x)) if kind in "fc" else bool(np.isnat(x)) if kind in "Mm" else False


def _fits(got: tuple, rec, exact: bool) -> bool:
    """Whether a chunk of bounds `got` (``bounds_of``) is one the zone map record
    `rec` describes: inside its bounds, on them when they are exact."""
    lo, hi, nan = got
    if nan and not rec["nan"]:
        return False
    if _missing(lo):  # NaN or NaT only
        return not exact or _missing(rec["min"])
    if exact:
        return bool(lo == rec["min"] and hi == rec["max"])
    return bool(rec["min"] <= lo and hi <= rec["max"])


def _against_zonemap(cdir: str, storage, sizes: Sizes, found, first: int) -> list:
    """Check the full chunks `found` (a scan's) against the zone map of `cdir`; those it
    rules out (an older version of the chunk: the current one may be a constant,
    which stores no bytes) move to ``found.lost``.  Returns the chunk numbers of
    those that could not be checked (no zone map, a kind of values without one)."""
    from bcolzx._ext import codec
    from bcolzx._format import zonemap

    dtype = np.dtype(storage.dtype)
    stats, exact = _zonemap_of(cdir, storage, sizes)
    unchecked = []
    dec = codec.Decompressor(1)
    for slot in sorted(found.chunks):
        c = first + slot
        if stats is None or c >= len(stats):
            unchecked.append(c)
            continue
        try:
            raw = dec.decompress(found.chunks[slot])
        except CorruptDataError:
            unchecked.append(c)  # the read will fail on it, and say so
            continue
        values = np.frombuffer(raw, dtype)
        if len(values) != storage.chunklen:  # the last, partial chunk: not in the zone map
            unchecked.append(c)
            continue
        if not _fits(zonemap.bounds_of(values), stats[c], bool(exact is not None and exact[c])):
            del found.chunks[slot], found.offsets[slot]
            found.lost[slot] = _OLDER
    return unchecked


def _spans(numbers: list) -> str:
    """``[1, 2, 3, 7]`` as ``'1..3, 7'``."""
    runs: list = []
    for n in numbers:
        if runs and n == runs[-1][1] + 1:
            runs[-1][1] = n
        else:
            runs.append([n, n])
    return ", ".join(f"{a}..{b}" if b > a else f"{a}" for a, b in runs)


def _shadow(src: str, problems: list) -> str | None:
    """A hidden copy of `src` (hard links; nothing is written to the source) in which
    what readers cannot get past is rebuilt from the data: a damaged ``meta/sizes``
    (from the superchunk files' indexes), a superchunk file whose index copies are
    both destroyed, or in which readers lose chunks that the file still proves
    (from the chunks a search of it finds).  None when there is nothing to
    rebuild."""
    from bcolzx._format import journal as _journal
    from bcolzx._format.jsonfile import read_json
    from bcolzx._format.meta import read_sizes, write_sizes
    from bcolzx._format.superchunk import SuperchunkFile
    from bcolzx._storage.directory import geometry_of

    rootdirs = os.path.join(src, layout.ROOTDIRS_FILE)
    if os.path.isfile(rootdirs):
        cdirs = [os.path.join(src, n)
                 for n in layout.column_names(read_json(rootdirs), rootdirs)]
    else:
        cdirs = [src]
    rebuilt: dict[str, tuple] = {}
    for cdir in cdirs:
        note = None
        try:
            sizes = read_sizes(cdir)
        except (CorruptDataError, OSError):
            storage = read_storage(cdir)  # raises when meta/storage is damaged too: reported
            sizes, note = _sizes_from_data(cdir, storage)
        else:
            try:
                storage = read_storage(cdir)
            except (CorruptDataError, OSError, UnsupportedFormatError):
                continue  # opening the dataset says what is wrong
        if note is not None:
            problems.append(f"{cdir}: {note}")
        scans = _scan_files(cdir, storage, sizes, problems)
        if note is not None or scans:
            rebuilt[cdir] = (storage, sizes, note is not None, scans)
    if not rebuilt:
        return None
    parent, base = os.path.split(os.path.realpath(src))
    shadow = _reserve(parent, base + ".shadow")
    for root, _dirs, files in os.walk(src):
        rel = os.path.relpath(root, src)
        os.makedirs(os.path.join(shadow, rel), exist_ok=True)
        for name in files:
            if name == layout.LOCK_FILE:
                continue
            try:
                os.link(os.path.join(root, name), os.path.join(shadow, rel, name))
            except OSError:
                shutil.copy2(os.path.join(root, name), os.path.join(shadow, rel, name))
    for cdir, (storage, sizes, _, scans) in rebuilt.items():
        where = os.path.join(shadow, os.path.relpath(cdir, src))
        if scans:  # new files in place of the links, each naming its generation
            geometry = geometry_of(storage, tuple(sizes.shape[1:]), cdir)[0]
            gens = list(sizes.generations)
            for number, (chunks, needed, last) in scans.items():
                sc = SuperchunkFile.rebuild(layout.data_path(where, number), number, geometry,
                                            chunks, needed, last)
                gens[number] = sc.index.generation
            sizes = dataclasses.replace(sizes, generations=tuple(gens))
            journal = layout.meta_path(cdir, layout.JOURNAL_FILE)
            if os.path.isfile(journal) and os.path.getsize(journal) > _journal.HEADER_SIZE:
                problems.append(f"{journal}: rows appended since the last flush are not "
                                "carried over (the journal extends the damaged commit)")
        write_sizes(where, sizes, storage)  # a new file renamed over the link
    return shadow
