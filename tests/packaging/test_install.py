"""The installed package: loading, linking, import hygiene, coexistence with python-blosc2."""

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest


def _run(code, env=None):
    """Run `code` in a fresh interpreter (this venv's), return its stdout parsed as JSON.

    It runs in a temporary directory so that the source tree (which `python -c`
    would put first on sys.path) never shadows the installed package.
    """
    with tempfile.TemporaryDirectory() as cwd:
        proc = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120,
            cwd=cwd,
        )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_extensions_load_with_an_empty_environment():
    # No LD_LIBRARY_PATH, no PATH, nothing: the extensions must find what they need.
    got = _run(
        "import json, bcolzx, bcolzx._ext.codec as c, bcolzx._ext.checksum as k;"
        "print(json.dumps([bcolzx.__version__, bcolzx.blosc_version()[0], k.crc32c(b'123456789')]))",
        env={},
    )
    assert got[2] == 0xE3069283
    assert any(ch.isdigit() for ch in got[0])


def test_import_has_no_side_effects():
    got = _run(
        "import os, sys, json\n"
        "import numpy  # its BLAS may start threads of its own: not ours to count\n"
        "before_env = dict(os.environ)\n"
        "before = set(sys.modules)\n"
        "base = len(os.listdir('/proc/self/task'))\n"
        "import bcolzx\n"
        "tasks = len(os.listdir('/proc/self/task')) - base + 1\n"
        "maps = open('/proc/self/maps').read()\n"
        "print(json.dumps({'new': sorted(set(sys.modules) - before), 'tasks': tasks,"
        " 'env_same': dict(os.environ) == before_env, 'libblosc2_so': 'libblosc2.so' in maps}))"
    )
    optional = {"blosc2", "pandas", "numexpr", "dask", "zarr", "h5py", "tables", "pyarrow"}
    assert not optional & {m.split(".")[0] for m in got["new"]}
    assert "subprocess" not in got["new"] or "subprocess" in sys.modules  # numpy may import it
    assert got["tasks"] == 1, "importing bcolzx started threads"
    assert got["env_same"], "importing bcolzx changed the environment"
    assert not got["libblosc2_so"], "bcolzx loaded a shared libblosc2"


def test_import_loads_no_exchange_format_until_one_is_used():
    # Optional formats are registered (bcolzx.interop), not imported: `import bcolzx`
    # loads no module of bcolzx.interop, not even the registry; the first use of a
    # format function loads its module, and only that one.
    got = _run(
        "import sys, json\n"
        "import bcolzx\n"
        "loaded = lambda: sorted(m for m in sys.modules if m.startswith('bcolzx.interop'))\n"
        "first = loaded()\n"
        "names = set(dir(bcolzx))\n"
        "still = loaded()\n"
        "bcolzx.from_zarr\n"
        "print(json.dumps({'first': first, 'after_dir': still, 'after_use': loaded(),"
        " 'listed': sorted(names & {'from_zarr', 'from_arrow', 'from_dask', 'interop'})}))"
    )
    assert got["first"] == [] and got["after_dir"] == []
    assert "bcolzx.interop.zarr" in got["after_use"]
    assert not {"bcolzx.interop.arrow", "bcolzx.interop.dask", "bcolzx.interop.pandas",
                "bcolzx.interop.pytables"} & set(got["after_use"])
    assert got["listed"] == ["from_arrow", "from_dask", "from_zarr", "interop"]


def test_c_blosc2_is_linked_statically_with_private_symbols():
    from bcolzx._ext import codec

    if codec.LINKAGE != "static":
        pytest.skip("this bcolzx was built with BCOLZX_BLOSC2_LINK=shared on purpose")
    path = codec.__file__
    with open(path, "rb") as f:
        elf = f.read()
    # The dynamic symbol table exports no C-Blosc2/zstd/lz4 function.
    proc = subprocess.run(["nm", "-D", "--defined-only", path], capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip("binutils' nm is not installed; cannot list dynamic symbols")
    exported = [line.split()[-1] for line in proc.stdout.splitlines()]
    assert [s for s in exported if s.startswith(("blosc", "ZSTD", "LZ4", "zng_"))] == []
    assert b"libblosc2.so" not in elf


@pytest.mark.parametrize("first", ["blosc2", "bcolzx"])
def test_coexists_with_python_blosc2_in_either_import_order(first):
    pytest.importorskip("blosc2", reason="python-blosc2 is a test extra: pip install .[test]")
    second = "bcolzx" if first == "blosc2" else "blosc2"
    got = _run(
        f"import json, numpy as np\nimport {first}\nimport {second}\n"
        "from bcolzx._ext import codec\n"
        "nthreads = blosc2.nthreads\n"
        "a = np.linspace(0, 1, 300_000)\n"
        "ours = codec.Compressor('zstd', 5, codec.BITSHUFFLE, 8).compress(a)\n"
        "theirs = blosc2.compress2(a, codec=blosc2.Codec.LZ4, clevel=5,"
        " filters=[blosc2.Filter.SHUFFLE], typesize=8)\n"
        "ok1 = blosc2.decompress2(ours) == a.tobytes()\n"
        "ok2 = codec.Decompressor(2).decompress(theirs) == a.tobytes()\n"
        "tp = blosc2.compress2(a, typesize=8, filters=[blosc2.Filter.TRUNC_PREC],"
        " filters_meta=[20])\n"
        "ok3 = len(codec.Decompressor().decompress(tp)) == a.nbytes\n"
        "print(json.dumps([ok1, ok2, ok3, nthreads == blosc2.nthreads,"
        " codec.blosc2_version(), blosc2.blosc2_ext.__file__]))"
    )
    assert got[:4] == [True, True, True, True]


def test_importing_an_unbuilt_source_tree_explains_itself(tmp_path):
    import shutil

    import bcolzx

    pkg = Path(bcolzx.__file__).parent
    shutil.copytree(pkg, tmp_path / "bcolzx", ignore=shutil.ignore_patterns("*.so", "*.pyd"))
    proc = subprocess.run(
        [sys.executable, "-c", "import bcolzx"], capture_output=True, text=True, cwd=tmp_path,
        timeout=120,
    )
    assert proc.returncode == 1
    assert "source tree whose Cython extensions are not built" in proc.stderr
