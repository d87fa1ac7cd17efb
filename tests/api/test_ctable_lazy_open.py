"""A ctable opened in mode 'r' opens each column when it is first used."""

import os

import numpy as np
import pytest

import bcolzx
from bcolzx._columns import Unopened
from bcolzx.errors import ConcurrentModificationError, CorruptDataError


@pytest.fixture
def path(tmp_path):
    p = str(tmp_path / "t")
    bcolzx.ctable([np.arange(5000), np.arange(5000) * 0.5, np.arange(5000) % 7],
                  names=["a", "b", "c"], rootdir=p, mode="w", chunklen=512).flush()
    return p


def _unopened(t):
    return [n for n, c in t.cols._cols.items() if isinstance(c, Unopened)]


def test_opening_reads_no_column_until_one_is_used(path):
    t = bcolzx.open(path, mode="r")
    assert _unopened(t) == ["a", "b", "c"]
    assert len(t) == 5000 and t.names == ["a", "b", "c"] and "b" in t.cols
    assert _unopened(t) == ["a", "b", "c"]
    assert t["a"][7] == 7
    assert _unopened(t) == ["b", "c"]
    np.testing.assert_array_equal(t[10]["b"], 5.0)  # a row reads every column
    assert _unopened(t) == []
    assert t.attrs.getall() == {}


def test_closing_flushing_or_freeing_opens_no_column(path):
    # A reader that used one column: closing, flushing, a context manager's
    # exit and freeing caches concern that column only (each used to open the
    # others, whole, to find nothing to save).
    with bcolzx.open(path, mode="r") as t:
        assert t["b"][3] == 1.5
        t.free_cachemem()
        t.flush()
        t.close()
        assert _unopened(t) == ["a", "c"]
    assert _unopened(t) == ["a", "c"]
    before = bcolzx.set_nthreads(1)
    try:
        assert t["a"][1:3].tolist() == [1, 2]  # a slice follows the thread count
        assert t["a"].engine.nthreads == 1 and _unopened(t) == ["c"]
    finally:
        bcolzx.set_nthreads(before)


def test_damage_in_one_column_costs_only_that_column(path):
    storage = os.path.join(path, "b", "meta", "storage")
    with open(storage, "r+b") as f:
        f.seek(10)
        byte = f.read(1)
        f.seek(10)
        f.write(bytes([byte[0] ^ 0x01]))
    t = bcolzx.open(path, mode="r")
    np.testing.assert_array_equal(t["a"][:], np.arange(5000))
    with pytest.raises(CorruptDataError):
        t["b"]
    with pytest.raises(CorruptDataError):
        t[:]
    assert not bcolzx.verify(path).ok


def test_a_reader_sees_the_table_as_it_was_opened(path):
    reader = bcolzx.open(path, mode="r")
    writer = bcolzx.open(path, mode="a")
    writer.append([np.arange(5000, 5100), np.zeros(100), np.zeros(100, dtype=int)])
    writer.flush()
    assert len(reader) == 5000
    np.testing.assert_array_equal(reader["b"][:], np.arange(5000) * 0.5)
    assert len(reader["c"]) == 5000
    writer.close()
    assert len(bcolzx.open(path, mode="r")) == 5100


def test_rows_removed_under_a_reader_are_not_invented(path):
    reader = bcolzx.open(path, mode="r")
    writer = bcolzx.open(path, mode="a")
    writer.trim(1000)
    writer.flush()
    writer.close()
    with pytest.raises(ConcurrentModificationError):
        reader["a"]


def test_columns_of_different_lengths_are_opened_at_once_and_evened(path):
    col = bcolzx.open(os.path.join(path, "c"), mode="a")  # a crash between two commits
    col.append(np.arange(10))
    col.flush()
    col.close()
    t = bcolzx.open(path, mode="r")
    assert _unopened(t) == [] and len(t) == 5000 and len(t["c"]) == 5000


def test_a_journal_makes_the_columns_open_at_once(path):
    t = bcolzx.open(path, mode="a")
    t.append((1, 2.0, 3))  # one row, journaled (auto_flush)
    t2 = bcolzx.open(path, mode="r")
    assert _unopened(t2) == [] and len(t2) == 5001
    assert tuple(t2[-1]) == (1, 2.0, 3)


def test_opening_reads_each_metadata_file_once_and_nothing_more(path, tmp_path, monkeypatch):
    """A carray opens with one read of meta/storage and one of meta/sizes; a table in
    mode 'r' with one of __rootdirs__ and one meta/sizes per column; neither reads
    a chunk, and what is missing is still named as before."""
    from bcolzx._ext import metafiles
    from bcolzx._format import files

    read = []
    for reader in ("read_regular", "read_whole"):  # every read of a whole small file
        real = getattr(files, reader)
        monkeypatch.setattr(files, reader, lambda p, *a, real=real, **k: (
            read.append(os.path.relpath(p, path)), real(p, *a, **k))[1])
    real_plain = metafiles.read_plain  # both files of a carray in one call

    def read_plain(p, *a):
        read.extend(os.path.relpath(os.path.join(p, "meta", n), path) for n in ("storage", "sizes"))
        return real_plain(p, *a)
    monkeypatch.setattr(metafiles, "read_plain", read_plain)
    real_lengths = metafiles.column_lengths  # a table's columns' meta/sizes in one call

    def column_lengths(p, names, *a):
        read.extend(os.path.relpath(os.path.join(p, n, "meta", "sizes"), path) for n in names)
        return real_lengths(p, names, *a)
    monkeypatch.setattr(metafiles, "column_lengths", column_lengths)
    t = bcolzx.open(path, mode="r")
    assert len(t) == 5000
    t.close()
    assert read == ["__rootdirs__", "a/meta/sizes", "b/meta/sizes", "c/meta/sizes"]
    del read[:]
    c = bcolzx.open(os.path.join(path, "b"), mode="r")
    assert len(c) == 5000 and c.dtype == np.float64
    assert c.engine._decoder is None  # no codec context either, until a chunk is read
    assert c.engine._zonemap is None  # nor a zone map, until a query or a change
    assert c[4999] == 2499.5 and c.engine._decoder is not None
    assert c.engine._zonemap is None and c.engine._zones is c.engine._zonemap
    c.close()
    assert read == ["b/meta/storage", "b/meta/sizes"]
    for missing in (str(tmp_path / "nothing"), str(tmp_path), os.path.join(path, "a", "meta")):
        with pytest.raises(FileNotFoundError, match="no bcolzx carray or ctable"):
            bcolzx.open(missing, mode="r")
    with pytest.raises(FileNotFoundError, match="no dataset directory"):
        bcolzx.carray(rootdir=str(tmp_path / "nothing"), mode="r")
    with pytest.raises(FileNotFoundError, match="no dataset directory"):
        bcolzx.carray(rootdir=os.path.join(path, "__rootdirs__"), mode="r")


# -- the columns' lengths, read in C: what the Python reading of them gave -------------

def _reference_lengths(rootdir, names):
    """The columns' lengths as they were read in Python (the definition): None
    unless every column has a sealed meta/sizes with a length, no non-empty
    journal, and all agree."""
    from bcolzx._format import files, jsonfile, layout

    lengths = {}
    for name in names:
        path = os.path.join(rootdir, name)
        try:
            journal = files.stat_file(layout.meta_path(path, layout.JOURNAL_FILE))
        except (OSError, ValueError):
            return None
        if journal is not None and journal[2]:
            return None
        try:
            sizes, seal = jsonfile.read_json_sealed(layout.meta_path(path, layout.SIZES_FILE))
        except (OSError, ValueError):
            return None
        shape = sizes.get("shape") if isinstance(sizes, dict) else None
        if not (seal.sealed and isinstance(shape, list) and shape
                and type(shape[0]) is int and shape[0] >= 0):
            return None
        lengths[name] = shape[0]
    return lengths if len(set(lengths.values())) <= 1 else None


_SHAPES = [[5000], [0], [], [-1], [True], [1.5], ["5000"], [5000, 3], [4999], [2 ** 70], None,
           "5000", {"0": 5000}]


@pytest.mark.parametrize("case", range(40))
def test_column_lengths_are_those_the_python_reading_gave(path, case):
    import json
    import random

    from bcolzx._format import meta
    from bcolzx._format.seal import seal

    rng = random.Random(case)
    names = ["a", "b", "c"]
    for name in rng.sample(names, rng.randint(1, 3)):
        sizes = f"{path}/{name}/meta/sizes"
        raw = open(sizes, "rb").read()
        kind = rng.choice(["shape", "shape-unsealed", "bytes", "journal", "empty-journal",
                           "missing", "directory", "uid"])
        obj = json.loads(raw)
        del obj["__crc32c__"]
        uid = obj.pop("__uid__")
        if kind in ("shape", "shape-unsealed"):
            shape = rng.choice(_SHAPES)
            if shape is None:
                del obj["shape"]
            else:
                obj["shape"] = shape
            raw = seal(obj, "sizes", uid) if kind == "shape" else json.dumps(obj).encode()
        elif kind == "bytes":
            at = rng.randrange(len(raw))
            raw = raw[:at] + bytes([rng.randrange(256)]) + raw[at + 1:]
        elif kind == "uid":  # sealed without a uid, or with another one
            raw = seal(obj, "sizes", rng.choice([None, "fedcba9876543210"]))
        elif kind in ("journal", "empty-journal"):
            with open(f"{path}/{name}/meta/journal", "wb") as f:
                f.write(b"x" * (kind == "journal"))
        if kind == "missing":
            os.remove(sizes)
        elif kind == "directory":
            os.remove(sizes)
            os.mkdir(sizes)
        elif kind not in ("journal", "empty-journal"):
            with open(sizes, "wb") as f:
                f.write(raw)
    assert meta.column_lengths(path, names) == _reference_lengths(path, names)


def test_column_lengths_of_a_usual_table(path):
    from bcolzx._format import meta

    assert meta.column_lengths(path, ["a", "b", "c"]) == {"a": 5000, "b": 5000, "c": 5000}
    assert meta.column_lengths(path, ["a", "nothing"]) is None
    assert meta.column_lengths(path + "/", ["a"]) == {"a": 5000}
