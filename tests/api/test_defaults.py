"""bcolzx.defaults: the global defaults, defaults_ctx, thread settings, version report."""

import doctest
import importlib
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import bcolzx
from bcolzx._ext.codec import blosc2_version
from bcolzx.defaults import (
    Defaults,
    blosc_set_nthreads,
    defaults,
    defaults_ctx,
    detect_number_of_cores,
    print_versions,
    set_nthreads,
)
from bcolzx.params import cparams

#: The module (``bcolzx.defaults``, the attribute, is the instance, as in legacy bcolz).
defaults_module = importlib.import_module("bcolzx.defaults")

# the directory holding the bcolzx under test (installed or built in place)
BCOLZX_PARENT = Path(bcolzx.__file__).parents[1]


@pytest.fixture(autouse=True)
def restore_defaults():
    """Every test leaves the global defaults as it found them."""
    saved = (dict(defaults.cparams), defaults._vm, defaults._out_flavor, defaults._nthreads)
    yield
    defaults._cparams, defaults._vm, defaults._out_flavor, defaults._nthreads = saved

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
    monkeypatch.setattr(defaults_module, "_numexpr_usable", lambda: False)
    assert defaults.vm == "python"
    with pytest.raises(ValueError):
        defaults.vm = "numexpr"
    defaults._vm = None
    monkeypatch.setattr(defaults_module, "_numexpr_usable", lambda: True)
    assert defaults.vm == "numexpr"


def test_version_tuple_parsing():
    vt = defaults_module._version_tuple
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


def test_import_has_no_side_effects():
    code = (
        "import sys, threading\n"
        "import bcolzx.params, bcolzx.defaults, bcolzx.attrs\n"
        "from bcolzx.defaults import defaults\n"
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




def _fresh(code: str) -> subprocess.CompletedProcess:
    path = [str(BCOLZX_PARENT), os.environ.get("PYTHONPATH", "")]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in path if p))
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, cwd=str(BCOLZX_PARENT))


@pytest.mark.parametrize("first", ["import bcolzx.defaults", "from bcolzx import defaults",
                                   "import bcolzx; import bcolzx.defaults"])
def test_bcolzx_defaults_is_the_instance_after_importing_the_module(first):
    # Legacy bcolz had both a module bcolz/defaults.py and the instance bcolz.defaults;
    # the package attribute must stay the instance whichever import comes first.
    code = (f"{first}\n"
            "import bcolzx, importlib\n"
            "from bcolzx.defaults import Defaults\n"
            "assert isinstance(bcolzx.defaults, Defaults), type(bcolzx.defaults)\n"
            "assert bcolzx.defaults.vm in ('numexpr', 'python')\n"
            "import bcolzx.defaults as d\n"
            "assert d is bcolzx.defaults\n"
            "assert importlib.import_module('bcolzx.defaults').defaults is bcolzx.defaults\n"
            "print('ok')\n")
    result = _fresh(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def test_defaults_is_the_single_instance():
    assert isinstance(bcolzx.defaults, Defaults)
    assert bcolzx.defaults is defaults is defaults_module.defaults


def test_docstring_examples_run():
    result = doctest.testmod(defaults_module, verbose=False)
    assert result.attempted > 0 and result.failed == 0
