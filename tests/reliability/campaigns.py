"""The published campaigns: what ``benchmarks/reliability.py`` runs and docs/reliability.md reports.

:func:`corruption_campaign` and :func:`crash_campaign` run the harnesses of
``corruption.py`` and ``crash.py`` at full size and return plain figures
(JSON-serialisable); the stress tests assert on the same figures.
"""

from __future__ import annotations

import os
import random
import shutil
import time

from . import corruption as C
from . import crash
from .datasets import LEGACY, RECIPES

#: Every region of a dataset the exhaustive flips cover.
EXHAUSTIVE = {"header", "index", "other-index", "sizes", "storage", "zonemap", "attrs",
              "rootdirs"}


def corruption_campaign(workdir: str, chunk_flips: int = 10_000, masks: int = 8,
                        seed: int = 0) -> dict:
    """Damage the carray and ctable recipes (bcolzx format) and the legacy fixtures.

    bcolzx format: `masks` random XOR masks on every byte of every header,
    index copy and JSON file (the ctable's 256-slot index copies get one mask
    a byte), `chunk_flips` random flips over chunk data (split between the
    two datasets), every file truncated at 40 offsets, deleted, swapped with
    every other.  Legacy: 2,000 random flips over chunk files, the same
    truncations, deletions and swaps (no claim of detection).
    """
    rng = random.Random(seed)
    start = time.monotonic()
    native, legacy = C.Tally(), C.Tally()
    for kind, tally in (("carray", native), ("ctable", native),
                        ("legacy-carray", legacy), ("legacy-ctable", legacy)):
        path = os.path.join(workdir, kind)
        RECIPES[kind](path)
        if kind.startswith("legacy"):
            muts = C.random_flips(path, "legacy-chunk", 1000, rng)
            muts += C.exhaustive_flips(path, {"sizes", "storage", "attrs", "rootdirs"}, rng)
        else:
            regions = EXHAUSTIVE if kind == "carray" else EXHAUSTIVE - {"index", "other-index"}
            muts = C.exhaustive_flips(path, regions, rng, masks)
            if kind == "ctable":
                muts += C.exhaustive_flips(path, {"index", "other-index"}, rng, 1)
            muts += C.random_flips(path, "chunk", chunk_flips // 2, rng)
            muts += C.random_flips(path, "dead", 200, rng)
        muts += C.truncations(path, rng, per_file=40) + C.deletions(path) + C.swaps(path)
        C.campaign(path, muts, tally)
    flips = native.by("flip", "chunk")
    return {
        "mutations": native.total(), "legacy_mutations": legacy.total(),
        "seconds": round(time.monotonic() - start, 1),
        "outcomes": {f"{k} {r}": dict(native.by(k, r)) for k, r, _ in sorted(native.counts)},
        "legacy_outcomes": {f"{k} {r}": dict(legacy.by(k, r))
                            for k, r, _ in sorted(legacy.counts)},
        "chunk_flips": sum(flips.values()), "chunk_flips_detected": flips["detected"],
        "wrong": native.total("WRONG"), "escaped": native.total("ESCAPED"),
        "unnamed": len(native.unnamed),
        "legacy_wrong": legacy.total("WRONG"), "legacy_escaped": legacy.total("ESCAPED"),
        "bad": [f"{v.outcome}: {v.mutation}: {v.detail[:300]}" for v in native.bad[:20]],
        "table": native.table(), "legacy_table": legacy.table(),
    }


def salvage_campaign(workdir: str, masks: int = 8, ctable_flips: int = 2000,
                     seed: int = 0) -> dict:
    """What damage to superchunk files costs, chunk by chunk, and what repair recovers.

    The carray recipe (3 files of 4 slots): `masks` XOR masks on every byte
    of every header and index copy, runs of 8 and 16 zero bytes at every
    offset of the committed index copies, every file cut at every 5th byte
    of its data region; the ctable recipe (4 columns, 256-slot files):
    `ctable_flips` random flips over headers and index copies; both
    recipes: each superchunk file's header and both index copies zeroed
    (readers lose the file; ``repair`` scans it, run for each of these).  Each
    mutation: every chunk read on its own (lost / wrong); for every 10th,
    ``bcolzx.repair`` into a new directory, and the rows it carries over
    compared with the pristine ones.
    """
    import numpy as np

    import bcolzx

    rng = random.Random(seed)
    start = time.monotonic()
    out: dict = {"wrong": 0, "families": {}}
    repaired = {"runs": 0, "rows": 0, "rows_recovered": 0, "rows_lost": 0, "bad": 0}
    for kind in ("carray", "ctable"):
        path = os.path.join(workdir, "salvage-" + kind)
        RECIPES[kind](path)
        regions = {}
        for cdir in C._carray_dirs(path):
            regions.update(C.superchunk_regions(cdir))
        families: dict[str, list] = {}
        if kind == "carray":
            families["flip header/index"] = C.exhaustive_flips(
                path, {"header", "index", "other-index"}, rng, masks)
            for width in (8, 16):
                families[f"zero {width} bytes of the committed index"] = [
                    C.Mutation("zero", p, "index", off, width)
                    for p, regs in sorted(regions.items()) for r, a, b in regs if r == "index"
                    for off in range(a, b - width + 1)]
            families["truncate in the data region"] = [
                C.Mutation("truncate", p, "superchunk", n)
                for p, regs in sorted(regions.items())
                for n in range(regs[2][2], os.path.getsize(p), 5)]
        else:
            families["flip header/index"] = [
                m for region in ("header", "index", "other-index")
                for m in C.random_flips(path, region, ctable_flips // 3, rng)]
        # Both index copies (and the header) zeroed: readers lose the file, repair scans it.
        families["zero the header and both index copies"] = [
            C.Mutation("zero", p, "index", 0, regs[2][2]) for p, regs in sorted(regions.items())]
        pristine = bcolzx.open(path, mode="r")[:]
        for name, muts in families.items():
            tally = C.salvage_campaign(path, muts)
            out["wrong"] += len(tally.wrong)
            out["families"][f"{kind}: {name}"] = {
                "mutations": tally.mutations, "chunks lost per mutation": dict(
                    sorted(tally.lost.items())), "wrong": len(tally.wrong)}
            for m in (muts if name.startswith("zero the header") else muts[::10]):
                dst = os.path.join(workdir, "repaired")
                with C.applied(m):
                    report = bcolzx.repair(path, dst)
                got = bcolzx.open(dst, mode="r")[:]
                rows = np.ones(len(pristine), bool)
                for ranges in report.lost.values():
                    for a, b in ranges:
                        rows[a:b] = False
                same = got == pristine if kind == "carray" else np.all(
                    [(got[n] == pristine[n]).reshape(len(got), -1).all(axis=1)
                     for n in pristine.dtype.names], axis=0)
                if kind == "carray":
                    same |= np.isnan(got) & np.isnan(pristine)
                repaired["runs"] += 1
                repaired["rows"] += len(pristine)
                repaired["rows_recovered"] += int(rows.sum())
                repaired["rows_lost"] += int((~rows).sum())
                repaired["bad"] += int((~same & rows).sum())
                if name.startswith("zero the header"):
                    scan = out.setdefault("scan", {"files": 0, "rows": 0, "rows_recovered": 0})
                    scan["files"] += 1
                    scan["rows"] += len(pristine)
                    scan["rows_recovered"] += int(rows.sum())
                shutil.rmtree(dst)
    out["repair"] = repaired
    out["seconds"] = round(time.monotonic() - start, 1)
    return out


#: How each crash family's kills are timed: the longest delay after the fork, in s.
DELAYS = {"carray": 0.3, "legacy": 0.3, "ctable": 0.5, "convert": 0.15}


def crash_campaign(workdir: str, kills: int = 1000, seed: int = 0,
                   families: tuple = ("carray", "ctable", "legacy", "convert")) -> dict:
    """`kills` SIGKILLs spread over the families (convert gets a tenth of a share:
    each of its kills copies a dataset)."""
    from .datasets import copy_legacy

    start = time.monotonic()
    tally = crash.CrashTally()
    weights = {f: (0.25 if f == "convert" else 1.0) for f in families}
    total = sum(weights.values())
    with crash.Zygote(workdir) as zygote:
        for i, family in enumerate(families):
            n = max(1, round(kills * weights[family] / total))
            fdir = os.path.join(workdir, family)
            os.mkdir(fdir)
            if family == "convert":
                crash.convert_campaign(fdir, str(LEGACY / "ct_attrs"), n, seed + i,
                                       DELAYS[family], tally, zygote)
                continue
            if family == "legacy":
                copy_legacy("ca_int32_leftover", os.path.join(fdir, "legacy"))
            crash.campaign(fdir, family, n, seed + i, DELAYS[family], tally, zygote)
    out = crash.summary(tally)
    out["seconds"] = round(time.monotonic() - start, 1)
    return out


#: Seconds a harness may run under ``pytest --stress`` (the suite's
#: pytest-timeout of 900 s is for tests that hang; the corruption campaign
#: alone runs 7 minutes on a quiet machine and past 15 beside other runs, the
#: crash-state exploration 28 minutes).
STRESS_TIMEOUT = 7200
