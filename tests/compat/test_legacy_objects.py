"""Legacy bcolz object carrays (one pickle per chunk file), read and written both ways.

bcolzx modifies a copy of the ``ca_object_optional`` fixture (append,
assignment, trim, resize, attributes) and adds object columns to a copy of
the legacy ctable ``ct_mixed``; each result is checked to be exactly legacy's
layout (legacy-v1.md §5: one ``data/__N.blp`` per row holding one pickle,
``meta/storage`` untouched, ``meta/sizes`` as legacy writes it) and is read
by the real legacy bcolz (``bcolz-zipline``) in a subprocess, which also
appends to what bcolzx created.  The other way round, legacy bcolz writes
object carrays and a ctable with an object column, and bcolzx reads them.
Values travel between the processes as pickles in files the tests wrote.

Also here: ``bcolzx.compat.install(allow_pickle=...)`` and the shim's
``--allow-pickle``, which let a legacy program that stores objects run
unchanged.
"""

import json
import os
import pickle
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import bcolzx
import bcolzx.compat as compat
from bcolzx._ext import codec
from bcolzx._format import legacy as v1
from bcolzx._format.layout import LOCK_FILE
from bcolzx._storage import legacy as legacy_store

from ..conftest import LEGACY
from .test_legacy_write import LEGACY_MISSING, needs_legacy, pyblosc, writable_copy

OBJECT = "ca_object_optional"
MANIFEST = json.loads((LEGACY / "MANIFEST.json").read_text())
FIXTURE = next(ds for ds in MANIFEST["datasets"] if ds["path"] == OBJECT)
CHUNK_NAME = re.compile(r"__(0|[1-9][0-9]*)\.blp\Z")
BCOLZX_PARENT = os.path.dirname(os.path.dirname(bcolzx.__file__))

#: Values both libraries store (compared with ==; no NaN, no arrays).
VALUES = [None, "s", "é" * 40, b"\x00b", [1, [2, None]], {"k": (1, 2)}, {3, 4}, 10**25, -2.5,
          ("t",), "x" * 70_000]


def objects(values):
    out = np.empty(len(values), dtype=object)
    for i, v in enumerate(values):
        out[i] = v
    return out


@pytest.fixture(autouse=True)
def switch_off():
    with bcolzx.defaults_ctx(allow_pickle=False):
        yield


def legacy_run(code, workdir, **inputs):
    """Run `code` with legacy bcolz in a subprocess started in `workdir`.

    `inputs` are pickled into ``IN[name]``; the code fills the dict ``OUT``,
    returned (unpickled) to the caller.
    """
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "in.pickle").write_bytes(pickle.dumps(inputs))
    script = textwrap.dedent('''
        import pickle, sys
        import numpy as np
        import bcolz
        assert hasattr(bcolz, "carray_ext"), bcolz
        with open("in.pickle", "rb") as f:
            IN = pickle.load(f)
        OUT = {}
    ''') + textwrap.dedent(code) + textwrap.dedent('''
        with open("out.pickle", "wb") as f:
            pickle.dump(OUT, f, protocol=4)
    ''')
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run([sys.executable, "-c", script], cwd=str(workdir), env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"legacy bcolz failed:\n{proc.stdout}\n{proc.stderr}"
    return pickle.loads((workdir / "out.pickle").read_bytes())


LEGACY_READ = '''
    def values(c):
        # One by one: legacy's c[:] makes np.array() of the objects (lists nest).
        return [c[i] for i in range(len(c))]

    c = bcolz.open(IN["path"], mode="r")
    OUT["len"], OUT["values"], OUT["attrs"] = len(c), values(c), c.attrs.getall()
'''


def decode_chunk_file(path):
    """The pickle inside a legacy chunk file, decoded by C-Blosc 1.x (python-blosc)
    when installed, else by C-Blosc2."""
    with open(path, "rb") as f:
        chunk = v1.unpack_chunk(f.read(), path)
    assert chunk[3] == 1  # the typesize legacy bcolz used for pickles
    if pyblosc is not None:
        return pyblosc.decompress(bytes(chunk))
    return bytes(codec.Decompressor().decompress(chunk))


def check_v1_objects(path, values, protocol_max=4, new_from=None, sizes_by_bcolzx=True):
    """`path` is exactly a legacy object carray holding `values`: one chunk file per
    row, each a pickle; ``meta/sizes`` as bcolzx writes it (legacy bcolz's own
    ``nbytes`` adds up pickle sizes).  Files from row `new_from` on (written by
    bcolzx) hold protocol-4 pickles."""
    names = {e.name for e in (path / "data").iterdir()}
    assert all(CHUNK_NAME.match(n) for n in names)
    assert names == {f"__{i}.blp" for i in range(len(values))}
    assert {e.name for e in path.iterdir()} <= {"__attrs__", "meta", "data", LOCK_FILE}
    cbytes = 0
    for i, want in enumerate(values):
        raw = decode_chunk_file(path / "data" / f"__{i}.blp")
        assert pickle.loads(raw) == want, i
        if new_from is not None and i >= new_from:
            assert raw[:2] == bytes([0x80, protocol_max]), i
        cbytes += os.path.getsize(path / "data" / f"__{i}.blp") - v1.BLPK_HEADER.size
    sizes = json.loads((path / "meta" / "sizes").read_text())
    assert sizes["shape"] == [len(values)] and sizes["cbytes"] == cbytes
    if sizes_by_bcolzx:
        assert sizes["nbytes"] == 8 * len(values)
    storage = json.loads((path / "meta" / "storage").read_text())
    assert "format" not in storage and storage["dtype"] == "object"


def fixture_values():
    # The fixture's values, as its MANIFEST records them.
    return [1, "two", [3, 4], {"five": 5}, None]


# -- bcolzx writes, legacy reads -------------------------------------------------------


def modify_fixture(path):
    """Append, assign, trim, resize and set attributes; returns the expected values."""
    c = bcolzx.open(str(path), mode="a", allow_pickle=True)
    c.append(objects(VALUES[:6]))
    c[1] = "TWO"
    c[[0, 7]] = [{"first": 1}, ["eight"]]
    c.flush()
    c.trim(2)
    c.resize(len(c) + 2)  # the dataset's dflt, 0 (legacy's zero of object dtype)
    c.append(VALUES[6:])
    c.attrs["who"] = "bcolzx"
    c.flush()
    want = fixture_values() + VALUES[:6]
    want[1], want[0], want[7] = "TWO", {"first": 1}, ["eight"]
    return want[:-2] + [0, 0] + VALUES[6:]


def test_bcolzx_writes_into_a_legacy_object_carray_keeping_v1(tmp_path):
    path = writable_copy(OBJECT, tmp_path)
    storage_before = (path / "meta" / "storage").read_bytes()
    want = modify_fixture(path)
    check_v1_objects(path, want, new_from=5)
    assert (path / "meta" / "storage").read_bytes() == storage_before
    got = bcolzx.open(str(path), mode="r", allow_pickle=True)
    assert got[:].tolist() == want and got.attrs["who"] == "bcolzx" and got.chunklen == 1
    assert bcolzx.verify(str(path)).ok


def test_without_python_blosc_new_object_chunks_are_memcpyed(tmp_path, monkeypatch):
    monkeypatch.setattr(legacy_store, "_blosc", None)
    path = writable_copy(OBJECT, tmp_path)
    c = bcolzx.open(str(path), mode="a", allow_pickle=True)
    c.append(objects(["new", {"d": [1]}]))
    c.flush()
    for i in (5, 6):
        with open(path / "data" / f"__{i}.blp", "rb") as f:
            chunk = v1.unpack_chunk(f.read())
        assert chunk[2] & v1.BLOSC1_MEMCPYED and chunk[3] == 1
    check_v1_objects(path, fixture_values() + ["new", {"d": [1]}], new_from=5)
    if LEGACY_MISSING is None:
        out = legacy_run(LEGACY_READ, tmp_path / "run", path=str(path))
        assert out["values"] == fixture_values() + ["new", {"d": [1]}]


@needs_legacy
def test_legacy_reads_what_bcolzx_wrote(tmp_path):
    path = writable_copy(OBJECT, tmp_path)
    want = modify_fixture(path)
    out = legacy_run(LEGACY_READ, tmp_path / "run", path=str(path))
    assert out["len"] == len(want) and out["values"] == want
    assert out["attrs"] == {"who": "bcolzx"}


@needs_legacy
def test_addcol_gives_a_legacy_ctable_an_object_column_legacy_reads_and_extends(tmp_path):
    path = writable_copy("ct_mixed", tmp_path)
    t = bcolzx.open(str(path), mode="a", allow_pickle=True)
    n = len(t)
    col = objects([{"row": i} if i % 3 else [i] for i in range(n)])
    t.addcol(col, name="obj")
    t.append(t[:2])
    t.flush()
    want = list(col) + list(col[:2])
    check_v1_objects(path / "obj", want, new_from=0)
    storage = json.loads((path / "obj" / "meta" / "storage").read_text())
    assert storage["chunklen"] == 1 and storage["dflt"] is None
    out = legacy_run('''
        t = bcolz.open(IN["path"], mode="a")
        OUT["names"], OUT["len"] = list(t.names), len(t)
        OUT["obj"] = [t["obj"][i] for i in range(len(t))]
        OUT["row"] = t[len(t) - 1]["obj"]
        # legacy appends to the column bcolzx created (chunklen 1: its flush works)
        row = np.empty(2, dtype=t.dtype)
        for name in t.names[:-1]:
            row[name] = t[name][:2]
        row["obj"] = [{"legacy": 1}, None]
        t.append(row)
        t.flush()
    ''', tmp_path / "run", path=str(path))
    assert out["names"][-1] == "obj" and out["len"] == n + 2
    assert out["obj"] == want and out["row"] == want[-1]
    back = bcolzx.open(str(path), mode="r", allow_pickle=True)
    assert len(back) == n + 4
    assert back["obj"][:].tolist() == want + [{"legacy": 1}, None]
    check_v1_objects(path / "obj", want + [{"legacy": 1}, None], sizes_by_bcolzx=False)


# -- legacy writes, bcolzx reads -------------------------------------------------------


@needs_legacy
def test_bcolzx_reads_object_carrays_and_columns_legacy_wrote(tmp_path):
    values = objects(VALUES)
    out = legacy_run('''
        import os
        arr = np.empty(len(IN["values"]), dtype=object)
        for i, v in enumerate(IN["values"]):
            arr[i] = v
        c = bcolz.carray(arr[:5], dtype=np.dtype("O"), rootdir="ca", mode="w")
        c.append(arr[5:])
        c.resize(len(c) + 2)
        c.attrs["by"] = "legacy"
        c.flush()
        rows = np.empty(len(arr), dtype=[("i", "i8"), ("o", object)])
        rows["i"] = np.arange(len(arr))
        rows["o"] = arr
        t = bcolz.ctable(rows[:3], rootdir="ct", mode="w")
        t.append(rows[3:])
        t.flush()
        OUT["cwd"] = os.getcwd()
    ''', tmp_path / "run", values=list(VALUES))
    ca = os.path.join(out["cwd"], "ca")
    c = bcolzx.open(ca, mode="r", allow_pickle=True)
    assert c[:].tolist() == VALUES + [0, 0] and c.attrs["by"] == "legacy"
    assert (c.chunklen, c.nchunks) == (1, len(VALUES) + 2)
    assert bcolzx.verify(ca).ok
    t = bcolzx.open(os.path.join(out["cwd"], "ct"), mode="r", allow_pickle=True)
    assert t["o"][:].tolist() == VALUES and t["i"][:].tolist() == list(range(len(values)))
    assert [r.o for r in t.where("i >= 9")] == VALUES[9:]
    # bcolzx writes on, legacy reads it all back
    c = bcolzx.open(ca, mode="a", allow_pickle=True)
    c[0] = "zero"
    c.append("last")
    c.flush()
    again = legacy_run(LEGACY_READ, tmp_path / "run2", path=ca)
    assert again["values"] == ["zero"] + VALUES[1:] + [0, 0, "last"]


def test_converting_a_legacy_object_carray_copies_the_pickles(tmp_path):
    src = writable_copy(OBJECT, tmp_path)
    with pytest.raises(bcolzx.PickleNotAllowedError):
        bcolzx.convert(src, tmp_path / "out")
    assert not (tmp_path / "out").exists()
    out = bcolzx.convert(src, tmp_path / "out", allow_pickle=True)
    c = bcolzx.open(out, mode="r", allow_pickle=True)
    assert c[:].tolist() == fixture_values() and c.dflt[()] == 0
    storage = json.loads((tmp_path / "out" / "meta" / "storage").read_text())
    assert storage["vlen"] == "pickle" and storage["format_version"] == 2
    # The pickles are those legacy wrote, byte for byte (never unpickled and redone).
    stored = [decode_chunk_file(src / "data" / f"__{i}.blp") for i in range(5)]
    assert c._engine.read(0, 5).tolist() == stored
    bcolzx.convert(src, allow_pickle=True)  # in place
    assert bcolzx.open(str(src), allow_pickle=True)[:].tolist() == fixture_values()


# -- compat ----------------------------------------------------------------------------


@pytest.fixture
def clean_modules():
    saved = {name: sys.modules.pop(name) for name in list(sys.modules)
             if name == "bcolz" or name.startswith("bcolz.")}
    yield
    compat.uninstall()
    for name in [n for n in sys.modules if n == "bcolz" or n.startswith("bcolz.")]:
        del sys.modules[name]
    sys.modules.update(saved)


def test_install_allow_pickle_turns_the_default_on(clean_modules):
    bcolz = compat.install()
    assert bcolzx.defaults.allow_pickle is False  # the default stays off
    with pytest.raises(TypeError, match="allow_pickle"):
        bcolz.carray([{}], dtype=object)
    compat.install(allow_pickle=True)
    assert bcolzx.defaults.allow_pickle is True
    assert bcolz.carray([{"a": 1}], dtype=object)[0] == {"a": 1}
    with pytest.raises(TypeError):
        compat.install(allow_pickle="yes")


def _run(code, *pythonpath):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(str(p) for p in pythonpath)
    env.pop("BCOLZX_ALLOW_PICKLE", None)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env,
                          cwd=str(pythonpath[0]), capture_output=True, text=True, timeout=120)


LEGACY_PROGRAM = '''
    import numpy as np
    import bcolz
    c = bcolz.carray(np.array([{"a": 1}, [2, 3], None], dtype=object), rootdir="objs",
                     mode="w")
    c.append("four")
    c.flush()
    print(bcolz.open("objs")[:].tolist())
'''


@pytest.mark.parametrize("allow", [False, True])
def test_shim_with_allow_pickle_runs_a_legacy_object_program(tmp_path, allow):
    site = tmp_path / "site"
    site.mkdir()
    argv = ["install-shim", "--target", str(site)] + (["--allow-pickle"] if allow else [])
    assert compat.main(argv) == 0
    init = (site / "bcolz" / "__init__.py").read_text()
    assert ("install(allow_pickle=True)" in init) is allow
    proc = _run(LEGACY_PROGRAM, site, BCOLZX_PARENT)
    if allow:
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.strip() == "[{'a': 1}, [2, 3], None, 'four']"
    else:
        assert proc.returncode != 0 and "PickleNotAllowedError" in proc.stderr
        assert "allow_pickle=True" in proc.stderr
    assert compat.uninstall_shim(site)


def test_a_damaged_pickle_in_a_legacy_directory_is_reported_and_refused(tmp_path):
    path = writable_copy(OBJECT, tmp_path)
    good = decode_chunk_file(path / "data" / "__2.blp")
    bad = good[:-3]  # legacy directories have no checksums: the pickle itself is cut
    (path / "data" / "__2.blp").write_bytes(v1.pack_chunk(v1.memcpyed_chunk(bad, 1)))
    report = bcolzx.verify(str(path))
    assert [p.chunk for p in report.problems] == [2]
    assert "row 2" in report.problems[0].message
    c = bcolzx.open(str(path), mode="r", allow_pickle=True)
    assert c[3] == {"five": 5}
    with pytest.raises(bcolzx.CorruptDataError, match="cannot be unpickled"):
        c[2]
    with pytest.raises(bcolzx.CorruptDataError):
        c[:]
