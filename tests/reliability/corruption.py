"""Damage a dataset on disk in every way one file can be damaged, and judge what bcolzx does.

A *mutation* changes the files of a dataset directory in one way: one byte
flipped (XOR with a non-zero mask), a file truncated, a file deleted, two
files swapped.  :func:`judge` applies it, reads the dataset through the
public API and runs :func:`bcolzx.verify`, then undoes it (so one pristine
copy serves thousands of mutations), and classifies the result:

``detected``
    reading raised :class:`bcolzx.CorruptDataError` (or a subclass) and
    ``verify`` reported at least one problem;
``salvaged``
    reading returned exactly the pristine values and ``verify`` reported
    the damage as a problem (a damaged header or committed index copy that
    the data still proves, docs/format/superchunk.md §6; a zone map no read uses);
``noted``
    reading returned exactly the pristine values and ``verify`` reported
    the damage as a note (a part no read uses: the index copy that is not
    committed);
``harmless``
    reading returned exactly the pristine values and ``verify`` found
    nothing (damage to bytes no reader ever looks at: dead space);
``refused``
    reading raised another exception of bcolzx's hierarchy, or a
    FileNotFoundError for a dataset left without its defining file, and
    ``verify`` reported it;
``WRONG``
    reading succeeded with other values than the pristine dataset's;
``ESCAPED``
    reading or verify raised an exception outside bcolzx's hierarchy (a
    crash of the interpreter kills the harness itself), or ``verify`` found
    nothing although reading failed.

The regions of a superchunk file (header, the committed and the other index
copy, live chunks, dead space) are found from docs/format alone, without
bcolzx's code, so that a bug in bcolzx cannot hide itself from the harness.
"""

from __future__ import annotations

import json
import os
import random
import struct
from collections import Counter
from dataclasses import dataclass, field

import bcolzx
from bcolzx.errors import BcolzxError, CorruptDataError

from .datasets import observe

HEADER = 32
EMPTY = 2**64 - 1


# -- regions of a dataset --------------------------------------------------------------


def dataset_files(rootdir: str) -> list[str]:
    """Every regular file under `rootdir`, sorted."""
    out = []
    for root, dirs, files in os.walk(rootdir):
        dirs.sort()
        out.extend(os.path.join(root, f) for f in sorted(files))
    return sorted(out)


def _carray_dirs(rootdir: str) -> list[str]:
    rootdirs = os.path.join(rootdir, "__rootdirs__")
    if os.path.exists(rootdirs):
        with open(rootdirs) as f:
            return [os.path.join(rootdir, n) for n in json.load(f)["names"]]
    return [rootdir]


def superchunk_regions(carray_dir: str) -> dict[str, list[tuple[str, int, int]]]:
    """``{path: [(region, start, stop), ...]}`` for each superchunk file of a carray.

    Regions: ``header``, ``index`` (the copy ``meta/sizes`` names),
    ``other-index`` (the other copy), ``chunk`` (a live chunk and its
    checksum), ``dead`` (the rest of the data region).  Read from the spec:
    docs/format/superchunk.md.
    """
    with open(os.path.join(carray_dir, "meta", "storage")) as f:
        storage = json.load(f)
    with open(os.path.join(carray_dir, "meta", "sizes")) as f:
        sizes = json.load(f)
    if storage.get("format") != "bcolzx":
        return {}
    k = storage["chunks_per_superchunk"]
    csize = 0 if storage["checksum"] == "none" else 4
    isize = 24 + 16 * k
    nchunks = -(-sizes["shape"][0] // storage["chunklen"])
    out = {}
    for n, generation in enumerate(sizes.get("generations", [])):
        path = os.path.join(carray_dir, "data", f"__{n}.bin")
        with open(path, "rb") as f:
            raw = f.read()
        regions = [("header", 0, HEADER)]
        live = []
        for copy in (0, 1):
            base = HEADER + copy * isize
            gen, = struct.unpack_from("<Q", raw, base)
            committed = gen == generation
            regions.append(("index" if committed else "other-index", base, base + isize))
            if committed:
                for slot in range(min(k, nchunks - n * k)):
                    off, nb = struct.unpack_from("<QQ", raw, base + 16 + 16 * slot)
                    if off >> 63 == 0 and off != EMPTY:
                        live.append((off, off + nb + csize))
        pos = HEADER + 2 * isize
        for a, b in sorted(live):
            if a > pos:
                regions.append(("dead", pos, a))
            regions.append(("chunk", a, b))
            pos = b
        if pos < len(raw):
            regions.append(("dead", pos, len(raw)))
        out[path] = regions
    return out


def file_roles(rootdir: str) -> dict[str, str]:
    """A role for every file of the dataset: ``superchunk``, ``storage``, ``sizes``,
    ``zonemap``, ``attrs``, ``rootdirs``, ``legacy-chunk`` or ``other``."""
    roles = {}
    for path in dataset_files(rootdir):
        name = os.path.basename(path)
        parent = os.path.basename(os.path.dirname(path))
        if name.endswith(".bin") and parent == "data":
            roles[path] = "superchunk"
        elif name.endswith(".blp") and parent == "data":
            roles[path] = "legacy-chunk"
        elif parent == "meta" and name in ("storage", "sizes", "zonemap"):
            roles[path] = name
        elif name == "__attrs__":
            roles[path] = "attrs"
        elif name == "__rootdirs__":
            roles[path] = "rootdirs"
        else:
            roles[path] = "other"
    return roles


# -- mutations -------------------------------------------------------------------------


@dataclass(frozen=True)
class Mutation:
    """One way of damaging a dataset: ``kind`` is flip, zero (`mask` bytes from
    `offset`), truncate, delete or swap."""

    kind: str
    path: str
    region: str
    offset: int = 0       # flip: the byte; truncate: the new size
    mask: int = 0         # flip: XOR mask
    other: str = ""       # swap: the other file

    def __str__(self) -> str:
        if self.kind == "flip":
            return f"flip {self.path}[{self.offset}] ^ {self.mask:#04x} ({self.region})"
        if self.kind == "zero":
            return f"zero {self.path}[{self.offset}:{self.offset + self.mask}] ({self.region})"
        if self.kind == "truncate":
            return f"truncate {self.path} to {self.offset} ({self.region})"
        if self.kind == "swap":
            return f"swap {self.path} <-> {self.other}"
        return f"delete {self.path}"


def _xor(path: str, offset: int, mask: int) -> None:
    with open(path, "r+b") as f:
        f.seek(offset)
        b = f.read(1)[0]
        f.seek(offset)
        f.write(bytes([b ^ mask]))


class applied:
    """Context manager: the mutation is in effect inside, undone on exit."""

    def __init__(self, m: Mutation):
        self.m = m
        self._saved: dict[str, bytes] = {}

    def _save(self, path):
        with open(path, "rb") as f:
            self._saved[path] = f.read()

    def __enter__(self):
        m = self.m
        if m.kind == "flip":
            _xor(m.path, m.offset, m.mask)
        elif m.kind == "zero":  # `mask` bytes from `offset` set to zero
            self._save(m.path)
            with open(m.path, "r+b") as f:
                f.seek(m.offset)
                f.write(bytes(m.mask))
        elif m.kind == "truncate":
            self._save(m.path)
            os.truncate(m.path, m.offset)
        elif m.kind == "delete":
            self._save(m.path)
            os.unlink(m.path)
        elif m.kind == "swap":
            self._save(m.path)
            self._save(m.other)
            with open(m.path, "wb") as f:
                f.write(self._saved[m.other])
            with open(m.other, "wb") as f:
                f.write(self._saved[m.path])
        else:  # pragma: no cover - programming error
            raise ValueError(m.kind)
        return self

    def __exit__(self, *exc):
        m = self.m
        if m.kind == "flip":  # XOR again: the byte is back
            _xor(m.path, m.offset, m.mask)
        for path, data in self._saved.items():
            with open(path, "wb") as f:
                f.write(data)


def _mask(rng: random.Random) -> int:
    return rng.randrange(1, 256)


def _regions(rootdir: str) -> dict[str, list[tuple[str, int, int]]]:
    """Regions of every file: superchunk files by :func:`superchunk_regions`,
    every other file one region named after its role."""
    out = {}
    for cdir in _carray_dirs(rootdir):
        if os.path.isdir(os.path.join(cdir, "meta")):
            out.update(superchunk_regions(cdir))
    for path, role in file_roles(rootdir).items():
        if path not in out:
            out[path] = [(role, 0, os.path.getsize(path))]
    return out


def exhaustive_flips(rootdir: str, regions: set[str], rng: random.Random,
                     masks: int = 1) -> list[Mutation]:
    """`masks` random XOR masks on every byte of every region named in `regions`."""
    out = []
    for path, regs in sorted(_regions(rootdir).items()):
        for region, a, b in regs:
            if region in regions:
                for off in range(a, b):
                    for _ in range(masks):
                        out.append(Mutation("flip", path, region, off, _mask(rng)))
    return out


def random_flips(rootdir: str, region: str, count: int, rng: random.Random) -> list[Mutation]:
    """`count` flips at random bytes (uniform over the bytes) of the regions called `region`."""
    spans = [(path, a, b) for path, regs in sorted(_regions(rootdir).items())
             for r, a, b in regs if r == region and b > a]
    total = sum(b - a for _, a, b in spans)
    out = []
    for _ in range(count):
        x = rng.randrange(total)
        for path, a, b in spans:
            if x < b - a:
                out.append(Mutation("flip", path, region, a + x, _mask(rng)))
                break
            x -= b - a
    return out


def truncations(rootdir: str, rng: random.Random, per_file: int | None = None) -> list[Mutation]:
    """Every file cut short: at every offset (`per_file` None) or at `per_file` random ones
    (always including 0 and size - 1)."""
    out = []
    for path, role in file_roles(rootdir).items():
        size = os.path.getsize(path)
        if per_file is None or size <= per_file:
            sizes = range(size)
        else:
            sizes = sorted({0, size - 1, *rng.sample(range(size), per_file)})
        out.extend(Mutation("truncate", path, role, s) for s in sizes)
    return out


def deletions(rootdir: str) -> list[Mutation]:
    """Every file deleted, one at a time."""
    return [Mutation("delete", p, role) for p, role in file_roles(rootdir).items()]


def swaps(rootdir: str) -> list[Mutation]:
    """Every pair of different files swapped (contents exchanged)."""
    files = dataset_files(rootdir)
    roles = file_roles(rootdir)
    out = []
    for i, a in enumerate(files):
        for b in files[i + 1:]:
            if _same_bytes(a, b):
                continue
            out.append(Mutation("swap", a, f"{roles[a]}<->{roles[b]}", other=b))
    return out


def _same_bytes(a: str, b: str) -> bool:
    with open(a, "rb") as fa, open(b, "rb") as fb:
        return fa.read() == fb.read()


# -- judging ---------------------------------------------------------------------------


@dataclass
class Verdict:
    """What bcolzx did with one mutation."""

    mutation: Mutation
    outcome: str
    read: str          # 'same', 'different' or the exception's class name
    verify: str        # 'ok', 'N problems' or the exception's class name
    detail: str = ""
    names_file: bool = False   # the read error names a file (or directory) of the dataset
    names_chunk: bool = False  # ... and a chunk number


def _names(exc: BaseException, rootdir: str) -> tuple[bool, bool]:
    """(the error names a file or directory of the dataset, it names a chunk).

    Not always the damaged file itself: a swapped ``meta/storage`` is found
    through the ``meta/sizes`` beside it, a flipped generation in
    ``meta/sizes`` through the superchunk file it then does not match."""
    path = getattr(exc, "path", None)
    if not path:
        return False, False
    path, root = os.path.abspath(str(path)), os.path.abspath(rootdir)
    named = path == root or path.startswith(root + os.sep)
    return named, getattr(exc, "chunk", None) is not None


def judge(rootdir: str, m: Mutation, pristine: dict) -> Verdict:
    """Apply `m`, read and verify the dataset, undo `m`; classify what happened."""
    with applied(m):
        read_exc = None
        try:
            seen = observe(rootdir)
            read = "same" if seen == pristine else "different"
        except Exception as exc:  # noqa: BLE001 - classified below
            read_exc = exc
            read = type(exc).__name__
        noted = False
        try:
            report = bcolzx.verify(rootdir)
            verify = "ok" if report.ok else f"{len(report.problems)} problems"
            verify_ok, noted = report.ok, bool(report.notes)
        except Exception as exc:  # noqa: BLE001 - classified below
            verify, verify_ok = f"raised {type(exc).__name__}: {exc}", None
    detail = f"{type(read_exc).__name__}: {read_exc}" if read_exc is not None else ""
    named = _names(read_exc, rootdir) if read_exc is not None else (False, False)
    if verify_ok is None:
        outcome = "ESCAPED"
        detail = verify
    elif read_exc is None:
        if read == "different":
            outcome = "WRONG"
        else:
            outcome = "salvaged" if not verify_ok else "noted" if noted else "harmless"
    elif isinstance(read_exc, CorruptDataError) and not verify_ok:
        outcome = "detected"
    elif isinstance(read_exc, (BcolzxError, FileNotFoundError)) and not verify_ok:
        outcome = "refused"
    else:
        outcome = "ESCAPED"
    return Verdict(m, outcome, read, verify, detail, *named)


@dataclass
class Tally:
    """Outcomes of a campaign, by mutation kind and region."""

    counts: Counter = field(default_factory=Counter)
    bad: list = field(default_factory=list)      # WRONG and ESCAPED verdicts
    #: Detected, but the error names no file of the dataset (or, for damage to
    #: chunk data, no chunk).
    unnamed: list = field(default_factory=list)

    def add(self, v: Verdict) -> None:
        self.counts[(v.mutation.kind, v.mutation.region, v.outcome)] += 1
        if v.outcome in ("WRONG", "ESCAPED"):
            self.bad.append(v)
        elif v.outcome == "detected" and (not v.names_file or (
                v.mutation.region == "chunk" and not v.names_chunk)):
            self.unnamed.append(v)

    def total(self, outcome: str | None = None) -> int:
        return sum(n for (_, _, o), n in self.counts.items() if outcome in (None, o))

    def by(self, kind: str | None = None, region: str | None = None) -> Counter:
        out = Counter()
        for (k, r, o), n in self.counts.items():
            if kind in (None, k) and region in (None, r):
                out[o] += n
        return out

    def table(self) -> str:
        """A text table: one line per (kind, region) with the count of each outcome."""
        keys = sorted({(k, r) for k, r, _ in self.counts})
        lines = []
        for k, r in keys:
            c = self.by(k, r)
            lines.append(f"{k:9s} {r:28s} " + ", ".join(f"{o} {n}" for o, n in sorted(c.items())))
        return "\n".join(lines)


def campaign(rootdir: str, mutations: list[Mutation], tally: Tally | None = None) -> Tally:
    """Judge every mutation of `rootdir` (restored after each); returns the tally."""
    tally = tally or Tally()
    pristine = observe(rootdir)
    for m in mutations:
        tally.add(judge(rootdir, m, pristine))
    if observe(rootdir) != pristine:  # pragma: no cover - the harness must undo everything
        raise AssertionError("the harness did not restore the dataset")
    return tally


# -- salvage: what each chunk costs ------------------------------------------------------


def chunk_reads(rootdir: str) -> dict[tuple[str, int], object]:
    """Every chunk of every column read on its own, through the public API.

    ``{(column directory, chunk): values}``; a chunk whose read raises
    :class:`CorruptDataError` maps to None (lost).  Other exceptions propagate.
    """
    import numpy as np

    out: dict[tuple[str, int], object] = {}
    for cdir in _carray_dirs(rootdir):
        c = bcolzx.carray(rootdir=cdir, mode="r")
        step = c.chunklen
        try:  # the common case, in one read: everything is readable
            whole = np.array(c[:])
        except CorruptDataError:
            whole = None
        for n, start in enumerate(range(0, len(c), step)):
            if whole is not None:
                out[(cdir, n)] = whole[start:start + step]
                continue
            try:
                out[(cdir, n)] = np.array(c[start:start + step])
            except CorruptDataError:
                out[(cdir, n)] = None
    return out


@dataclass
class ChunkTally:
    """Chunks lost and chunks wrong after each mutation (:func:`salvage_campaign`)."""

    mutations: int = 0
    lost: Counter = field(default_factory=Counter)   # chunks lost per mutation -> count
    wrong: list = field(default_factory=list)        # (mutation, chunk key)
    worst: tuple = (0, None)                         # (most chunks lost, its mutation)


def _same(a, b) -> bool:
    import numpy as np

    return a.dtype == b.dtype and a.shape == b.shape and (
        np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))


def salvage_campaign(rootdir: str, mutations: list[Mutation],
                     tally: ChunkTally | None = None) -> ChunkTally:
    """Apply each mutation, read every chunk on its own, count the chunks lost; a chunk
    read with other values than the pristine one is recorded as wrong."""
    tally = tally or ChunkTally()
    pristine = chunk_reads(rootdir)
    if any(v is None for v in pristine.values()):  # pragma: no cover - a broken recipe
        raise AssertionError("the pristine dataset has unreadable chunks")
    for m in mutations:
        with applied(m):
            seen = chunk_reads(rootdir)
        lost = 0
        for key, want in pristine.items():
            got = seen.get(key)
            if got is None:
                lost += 1
            elif not _same(got, want):
                tally.wrong.append((m, key))
        tally.mutations += 1
        tally.lost[lost] += 1
        if lost > tally.worst[0]:
            tally.worst = (lost, m)
    return tally
