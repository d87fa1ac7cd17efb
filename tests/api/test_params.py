"""bcolzx.params: cparams, defaults, thread settings and version report."""

import doctest
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import bcolzx
from bcolzx import params as params_module
from bcolzx._ext.codec import CODECS, blosc2_version
from bcolzx.params import (
    blosc_set_nthreads,
    cparams,
    defaults,
    defaults_ctx,
    detect_number_of_cores,
    filters,
    print_versions,
    set_nthreads,
)

# the directory holding the bcolzx under test (installed or built in place)
BCOLZX_PARENT = Path(bcolzx.__file__).parents[1]


@pytest.fixture(autouse=True)
def restore_defaults():
    """Every test leaves the global defaults as it found them."""
    saved = (dict(defaults.cparams), defaults._vm, defaults._out_flavor, defaults._nthreads)
    yield
    defaults._cparams, defaults._vm, defaults._out_flavor, defaults._nthreads = saved


# -- cparams -------------------------------------------------------------------


def test_cparams_defaults_match_legacy():
    assert defaults.cparams == {"clevel": 5, "shuffle": 1, "cname": "lz4", "quantize": 0}
    cp = cparams()
    assert (cp.clevel, cp.shuffle, cp.cname, cp.quantize) == (5, 1, "lz4", 0)
    assert repr(cp) == "cparams(clevel=5, shuffle=1, cname='lz4', quantize=0)"


def test_cparams_explicit_values():
    cp = cparams(clevel=9, shuffle=2, cname="zstd", quantize=3)
    assert cp.to_dict() == {"clevel": 9, "shuffle": 2, "cname": "zstd", "quantize": 3}
    assert repr(cp) == "cparams(clevel=9, shuffle=2, cname='zstd', quantize=3)"


@pytest.mark.parametrize("cname", sorted(CODECS))
def test_cparams_accepts_every_codec(cname):
    assert cparams(cname=cname).cname == cname


@pytest.mark.parametrize("flag, expected", [(True, 1), (False, 0)])
def test_cparams_shuffle_accepts_bools(flag, expected):
    cp = cparams(shuffle=flag)
    assert cp.shuffle == expected and type(cp.shuffle) is int


def test_cparams_accepts_numpy_integers():
    cp = cparams(clevel=np.int64(3), shuffle=np.uint8(0), quantize=np.int32(2))
    assert cp.to_dict() == {"clevel": 3, "shuffle": 0, "cname": "lz4", "quantize": 2}
    assert type(cp.clevel) is int


@pytest.mark.parametrize(
    "kwargs",
    [
        {"clevel": -1},
        {"clevel": 10},
        {"clevel": 5.0},
        {"clevel": "5"},
        {"clevel": True},
        {"shuffle": 3},
        {"shuffle": -1},
        {"shuffle": "shuffle"},
        {"cname": "snappy"},
        {"cname": b"lz4"},
        {"cname": ["lz4"]},
        {"quantize": -1},
        {"quantize": 1.5},
    ],
)
def test_cparams_rejects_invalid_values(kwargs):
    with pytest.raises(ValueError):
        cparams(**kwargs)
    with pytest.raises(ValueError):
        cparams.setdefaults(**kwargs)
    assert defaults.cparams == {"clevel": 5, "shuffle": 1, "cname": "lz4", "quantize": 0}


def test_unknown_codec_message_lists_the_codecs():
    with pytest.raises(ValueError) as info:
        cparams(cname="nope")
    for cname in CODECS:
        assert cname in str(info.value)


def test_cparams_properties_are_read_only():
    cp = cparams()
    with pytest.raises(AttributeError):
        cp.clevel = 1


def test_cparams_equality_and_hash():
    assert cparams() == cparams(clevel=5, shuffle=1, cname="lz4", quantize=0)
    assert cparams(clevel=1) != cparams(clevel=2)
    assert hash(cparams(cname="zstd")) == hash(cparams(cname="zstd"))
    assert cparams() != {"clevel": 5, "shuffle": 1, "cname": "lz4", "quantize": 0}


def test_setdefaults_changes_later_cparams_only():
    before = cparams()
    cparams.setdefaults(clevel=9, cname="zlib")
    assert defaults.cparams == {"clevel": 9, "shuffle": 1, "cname": "zlib", "quantize": 0}
    assert cparams().to_dict() == {"clevel": 9, "shuffle": 1, "cname": "zlib", "quantize": 0}
    assert before.clevel == 5  # existing objects are immutable
    cparams.setdefaults(shuffle=False, quantize=2)
    assert defaults.cparams == {"clevel": 9, "shuffle": 0, "cname": "zlib", "quantize": 2}


def test_setdefaults_is_all_or_nothing():
    with pytest.raises(ValueError):
        cparams.setdefaults(clevel=1, cname="nope")
    assert defaults.cparams["clevel"] == 5


# -- defaults ------------------------------------------------------------------


def test_assigning_default_cparams_validates():
    defaults.cparams = {"clevel": 1, "shuffle": 2, "cname": "zstd", "quantize": 0}
    assert cparams().to_dict() == {"clevel": 1, "shuffle": 2, "cname": "zstd", "quantize": 0}
    defaults.cparams = cparams(clevel=7)
    assert defaults.cparams["clevel"] == 7
    for bad in (
        {"clevel": 1},
        {"clevel": 1, "shuffle": 1, "cname": "lz4", "quantize": 0, "extra": 1},
        {"clevel": 11, "shuffle": 1, "cname": "lz4", "quantize": 0},
        {"clevel": None, "shuffle": 1, "cname": "lz4", "quantize": 0},
        [5, 1, "lz4", 0],
    ):
        with pytest.raises(ValueError):
            defaults.cparams = bad
    assert defaults.cparams["clevel"] == 7


def test_defaults_vm_and_out_flavor():
    assert defaults.out_flavor == "bcolz"  # legacy default
    for flavor in ("bcolz", "carray", "numpy"):
        defaults.out_flavor = flavor
        assert defaults.out_flavor == defaults.eval_out_flavor == flavor
    defaults.eval_out_flavor = "bcolz"
    assert defaults.out_flavor == "bcolz"
    defaults.vm = "python"
    assert defaults.vm == defaults.eval_vm == "python"
    for attr, bad in [("vm", "Numexpr"), ("vm", "java"), ("vm", None), ("out_flavor", "pandas")]:
        with pytest.raises(ValueError):
            setattr(defaults, attr, bad)
    assert defaults.vm == "python" and defaults.out_flavor == "bcolz"


def test_default_vm_follows_numexpr_availability(monkeypatch):
    defaults._vm = None
    monkeypatch.setattr(params_module, "_numexpr_usable", lambda: False)
    assert defaults.vm == "python"
    with pytest.raises(ValueError):
        defaults.vm = "numexpr"
    defaults._vm = None
    monkeypatch.setattr(params_module, "_numexpr_usable", lambda: True)
    assert defaults.vm == "numexpr"


def test_version_tuple_parsing():
    vt = params_module._version_tuple
    assert vt("2.5.2") == (2, 5, 2)
    assert vt("2.10.0rc1") == (2, 10, 0) > vt("2.5.2")
    assert vt("2.4") < vt("2.5.2")


def test_default_nthreads():
    defaults._nthreads = None
    assert defaults.nthreads == min(detect_number_of_cores(), 8)
    defaults.nthreads = 3
    assert defaults.nthreads == 3
    for bad in (0, -1, 1.5, "2", True):
        with pytest.raises(ValueError):
            defaults.nthreads = bad
    assert defaults.nthreads == 3


# -- defaults_ctx --------------------------------------------------------------


def test_defaults_ctx_sets_and_restores():
    new = {"clevel": 9, "shuffle": 0, "cname": "zstd", "quantize": 1}
    with defaults_ctx(cparams=new, vm="python", out_flavor="numpy"):
        assert defaults.cparams == new
        assert defaults.vm == "python" and defaults.out_flavor == "numpy"
        assert cparams().cname == "zstd"
    assert defaults.cparams == {"clevel": 5, "shuffle": 1, "cname": "lz4", "quantize": 0}
    assert defaults.out_flavor == "bcolz"


def test_defaults_ctx_restores_on_exception():
    defaults.vm = "python"
    with pytest.raises(RuntimeError):
        with defaults_ctx(cparams=cparams(clevel=0), out_flavor="numpy"):
            cparams.setdefaults(cname="zlib")  # changes inside the block are undone too
            raise RuntimeError("boom")
    assert defaults.cparams == {"clevel": 5, "shuffle": 1, "cname": "lz4", "quantize": 0}
    assert defaults.out_flavor == "bcolz" and defaults.vm == "python"


def test_defaults_ctx_invalid_value_changes_nothing():
    with pytest.raises(ValueError):
        with defaults_ctx(cparams=cparams(clevel=1), out_flavor="nope"):
            pytest.fail("the block must not run")
    assert defaults.cparams["clevel"] == 5 and defaults.out_flavor == "bcolz"


# -- threads -------------------------------------------------------------------


def test_detect_number_of_cores():
    n = detect_number_of_cores()
    assert isinstance(n, int) and n >= 1
    if hasattr(os, "sched_getaffinity"):
        assert n == len(os.sched_getaffinity(0))


def test_set_nthreads_returns_previous():
    defaults.nthreads = 2
    assert set_nthreads(3) == 2
    assert defaults.nthreads == 3
    assert blosc_set_nthreads(1) == 3
    assert defaults.nthreads == 1


@pytest.mark.parametrize("func", [set_nthreads, blosc_set_nthreads])
@pytest.mark.parametrize(
    "bad, exc",
    [(0, ValueError), (-1, ValueError), (1.5, TypeError), ("2", TypeError), (None, TypeError)],
)
def test_set_nthreads_validates(func, bad, exc):
    defaults.nthreads = 2
    with pytest.raises(exc):
        func(bad)
    assert defaults.nthreads == 2


def test_set_nthreads_sets_numexpr_only_if_imported(monkeypatch):
    calls = []

    class FakeNumexpr:
        @staticmethod
        def set_num_threads(n):
            calls.append(n)

    monkeypatch.delitem(sys.modules, "numexpr", raising=False)
    set_nthreads(2)
    assert calls == [] and "numexpr" not in sys.modules
    monkeypatch.setitem(sys.modules, "numexpr", FakeNumexpr)
    set_nthreads(3)
    assert calls == [3]
    blosc_set_nthreads(4)
    assert calls == [3]


# -- versions, filters, imports --------------------------------------------------


def test_print_versions(capsys):
    print_versions()
    out = capsys.readouterr().out
    assert f"bcolzx version:    {bcolzx.__version__}" in out
    assert f"C-Blosc2 version:  {blosc2_version()}" in out
    assert f"NumPy version:     {np.__version__}" in out
    assert "Numexpr version:" in out and "pandas version:" in out
    assert f"Python version:    {sys.version}" in out
    assert f"Detected cores:    {detect_number_of_cores()}" in out
    lines = out.splitlines()
    assert lines[0] == lines[-1] == "-=" * 38


def test_filters_match_legacy():
    assert filters == {0: "noshuffle", 1: "shuffle", 2: "bitshuffle"}
    assert (params_module.NOSHUFFLE, params_module.SHUFFLE, params_module.BITSHUFFLE) == (0, 1, 2)
    assert (bcolzx.NOSHUFFLE, bcolzx.SHUFFLE, bcolzx.BITSHUFFLE) == (0, 1, 2)


def test_import_has_no_side_effects():
    code = (
        "import sys, threading\n"
        "import bcolzx.params, bcolzx.attrs\n"
        "from bcolzx.params import defaults\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('numexpr', 'pandas'))\n"
        "assert not bad, bad\n"
        "assert defaults._vm is None and defaults._nthreads is None\n"
        "assert threading.active_count() == 1\n"
        "print('ok')\n"
    )
    path = [str(BCOLZX_PARENT), os.environ.get("PYTHONPATH", "")]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in path if p))
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=env,
        cwd=str(BCOLZX_PARENT),
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def test_docstring_examples_run():
    result = doctest.testmod(params_module, verbose=False)
    assert result.attempted > 0 and result.failed == 0


def test_cparams_blocksize_and_bytedelta():
    cp = cparams(blocksize=8192, bytedelta=True)
    assert (cp.blocksize, cp.bytedelta) == (8192, "on")
    assert cparams(bytedelta=False).bytedelta == "off"
    assert cparams().bytedelta == "auto" and cparams().blocksize == 32768
    assert cp != cparams() and cp == cparams(blocksize=8192, bytedelta="on")
    assert "blocksize=8192" in repr(cp) and "blocksize" not in repr(cparams())


@pytest.mark.parametrize("kwargs", [{"blocksize": -1}, {"blocksize": 1.5}, {"blocksize": True},
                                    {"blocksize": 1 << 40}, {"bytedelta": "yes"},
                                    {"bytedelta": 1}])
def test_cparams_rejects_bad_blocking(kwargs):
    with pytest.raises(ValueError):
        bcolzx.cparams(**kwargs)


def test_blocking_persists_with_the_dataset(tmp_path):
    path = str(tmp_path / "c")
    cp = bcolzx.cparams(blocksize=4096, bytedelta="off")
    c = bcolzx.carray(np.arange(10.0), rootdir=path, mode="w", cparams=cp)
    c.flush()
    assert bcolzx.open(path, mode="r").cparams == cp
