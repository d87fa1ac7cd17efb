"""Damage is detected: every byte flip, truncation, deletion and swap, never a wrong value.

The default run judges a few thousand mutations of small datasets (see
``corruption.py`` for the outcomes): exhaustive single-byte flips over every
superchunk header, both index copies and every JSON file of a carray,
random flips over its chunk data, every file truncated at random offsets,
deleted, and swapped with every other; samples of the same over a ctable,
whose columns look alike; and what legacy bcolz (format v1) directories
allow.  ``pytest --stress`` runs the published campaign
(``benchmarks/reliability.py corruption``).
"""

from __future__ import annotations

import os
import random

import numpy as np
import pytest

import bcolzx
from bcolzx.errors import CorruptDataError

from . import corruption as C
from .campaigns import STRESS_TIMEOUT
from .datasets import RECIPES, copy_legacy

JSON_REGIONS = {"sizes", "storage", "zonemap", "attrs", "rootdirs"}
#: What each region's damage may lead to in a bcolzx-format dataset.
ALLOWED = {
    "header": {"salvaged"},            # the index copy proves the file (format §6)
    "index": {"salvaged"},             # corrected through its crc (format §6)
    "other-index": {"noted"},          # no read uses it; verify notes it
    "chunk": {"detected"},
    "dead": {"harmless"},              # bytes no index references
    "sizes": {"detected", "refused"},  # refused: format_version / deletion
    "storage": {"detected", "refused"},
    "rootdirs": {"detected", "refused"},
    "attrs": {"detected"},
    # salvaged: a carray's zone map, which no read uses; harmless: deleted (an accelerator)
    "zonemap": {"detected", "salvaged", "harmless"},
    "superchunk": {"detected"},
    "other": {"harmless"},             # the writer's lock file
}


def _dataset(kind, tmp_path_factory):
    path = str(tmp_path_factory.mktemp(kind) / "ds")
    RECIPES[kind](path)
    return path


def _check(tally: C.Tally) -> None:
    assert not tally.bad, "\n".join(
        f"{v.outcome}: {v.mutation}: read {v.read}, verify {v.verify} {v.detail}"
        for v in tally.bad[:10])
    assert not tally.unnamed, "\n".join(f"{v.mutation}: {v.detail}" for v in tally.unnamed[:10])
    for (kind, region, outcome), n in tally.counts.items():
        key = region.split("<->")[0] if kind == "swap" else region
        allowed = {"detected"} if kind == "swap" else ALLOWED[key]
        assert outcome in allowed, f"{n} {kind} of {region}: {outcome}\n{tally.table()}"


@pytest.fixture(scope="module")
def carray_path(tmp_path_factory):
    return _dataset("carray", tmp_path_factory)


@pytest.fixture(scope="module")
def ctable_path(tmp_path_factory):
    return _dataset("ctable", tmp_path_factory)


def test_every_byte_of_headers_and_indexes_is_checked(carray_path):
    muts = C.exhaustive_flips(carray_path, {"header", "index", "other-index"}, random.Random(1))
    tally = C.campaign(carray_path, muts)
    _check(tally)
    assert tally.by(region="header")["salvaged"] == 3 * 32
    assert tally.by(region="index")["salvaged"] == tally.by(region="other-index")["noted"] > 0


def test_every_byte_of_the_metadata_files_is_checked(carray_path):
    muts = C.exhaustive_flips(carray_path, JSON_REGIONS, random.Random(2))
    tally = C.campaign(carray_path, muts)
    _check(tally)
    for region in ("sizes", "storage", "attrs"):
        assert set(tally.by("flip", region)) == {"detected"}, tally.table()


def test_flips_in_chunk_data_raise_checksum_errors(carray_path):
    tally = C.campaign(carray_path, C.random_flips(carray_path, "chunk", 300, random.Random(3)))
    _check(tally)
    assert tally.by("flip", "chunk") == {"detected": 300}


def test_truncations_deletions_and_swaps(carray_path):
    rng = random.Random(4)
    muts = C.truncations(carray_path, rng, per_file=12) + C.deletions(carray_path) + \
        C.swaps(carray_path)
    tally = C.campaign(carray_path, muts)
    _check(tally)
    assert tally.by("swap")["detected"] == len(C.swaps(carray_path))


def test_ctable_columns_that_look_alike_are_told_apart(ctable_path):
    """Two int64/float64 columns of one table: a file moved from one to the other is
    detected (the seal's uid, the random first generation of superchunk files)."""
    rng = random.Random(5)
    muts = C.swaps(ctable_path) + C.deletions(ctable_path)
    muts += rng.sample(C.exhaustive_flips(ctable_path, JSON_REGIONS, rng), 300)
    muts += C.random_flips(ctable_path, "header", 40, rng)
    muts += C.random_flips(ctable_path, "index", 100, rng)
    muts += C.random_flips(ctable_path, "chunk", 100, rng)
    tally = C.campaign(ctable_path, muts)
    _check(tally)


@pytest.mark.parametrize("kind", ["legacy-carray", "legacy-ctable"])
def test_legacy_damage_never_escapes_the_hierarchy(kind, tmp_path_factory):
    """Format v1 has no checksums: damage C-Blosc does not notice gives wrong values
    (docs/reliability.md says so).  What is checked: reading and verify never raise
    anything but bcolzx's errors, and damage to the metadata is detected."""
    path = _dataset(kind, tmp_path_factory)
    rng = random.Random(6)
    muts = C.random_flips(path, "legacy-chunk", 150, rng) + C.truncations(path, rng, 3)
    muts += rng.sample(C.exhaustive_flips(path, {"sizes", "storage"}, rng), 100)
    tally = C.campaign(path, muts)
    assert not [v for v in tally.bad if v.outcome == "ESCAPED"], tally.bad[:3]
    assert tally.by("truncate", "legacy-chunk").keys() == {"detected"}
    assert tally.by("flip", "legacy-chunk")["detected"] > 0


@pytest.mark.stress
@pytest.mark.timeout(STRESS_TIMEOUT)
def test_published_corruption_campaign(tmp_path):
    """The figures of docs/reliability.md: >= 10,000 random chunk flips, exhaustive
    flips (8 masks a byte) over headers, indexes and metadata, 100% detected."""
    from .campaigns import corruption_campaign

    result = corruption_campaign(str(tmp_path), chunk_flips=10_000, masks=8)
    print(result["table"])
    assert result["wrong"] == 0 and result["escaped"] == 0 and result["unnamed"] == 0
    assert result["chunk_flips_detected"] == result["chunk_flips"] >= 10_000


def test_a_damaged_legacy_chunk_does_not_spoil_reads_of_other_datasets(tmp_path, monkeypatch):
    """Legacy chunks carry no checksum, so a damaged one reaches C-Blosc2's decoder,
    which kept state from it in the reading thread's decompression context (the
    one that thread's reads of several chunks share, whatever the dataset): a
    flags byte turned into an extended header left its filters' metadata there,
    and every shuffled legacy chunk that thread decoded later came out wrong.  The
    published corruption campaign then failed its own check ("the harness did not
    restore the dataset"), and the crash campaign, run after it in the same
    process, read its legacy datasets wrong.  With one thread, every read below
    decodes on the calling thread."""
    monkeypatch.setattr(bcolzx.defaults, "nthreads", 1)
    good, bad = str(tmp_path / "good"), str(tmp_path / "bad")
    copy_legacy("ca_int32_leftover", good)
    copy_legacy("ca_int32_leftover", bad)
    want = bcolzx.open(good, mode="r")[:]
    with open(os.path.join(bad, "data", "__0.blp"), "r+b") as f:
        raw = bytearray(f.read())
        raw[16 + 2] |= 0x05  # the blosc flags: both shuffle bits, an extended header
        f.seek(0)
        f.write(raw)
    with pytest.raises(CorruptDataError):
        bcolzx.open(bad, mode="r")[:]
    np.testing.assert_array_equal(bcolzx.open(good, mode="r")[:], want)
