"""Fixtures of the command-line tests: runners and small datasets.

``cli`` runs ``bcolzx.__main__.main`` in-process (fast: most tests);
``run`` starts ``python -m bcolzx`` as a subprocess, in a directory outside
the source tree, importing the bcolzx these tests import (CI tests the
installed package).
"""

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import bcolzx
from bcolzx.__main__ import main

from ..api.test_verify import _flip as flip  # noqa: F401 - damages one byte of a file

LEGACY = Path(__file__).resolve().parents[1] / "data" / "legacy_bcolz"


class Result:
    """What a run of the command printed and returned."""

    def __init__(self, code, out, err):
        self.code, self.out, self.err = code, out, err

    def __repr__(self):
        return f"Result(code={self.code}, out={self.out!r}, err={self.err!r})"


@pytest.fixture
def cli(capsys, monkeypatch, tmp_path):
    """``cli(*words)``: run ``bcolzx words...`` in-process, in `tmp_path`; a Result."""
    monkeypatch.chdir(tmp_path)

    def call(*words):
        capsys.readouterr()
        try:
            code = main([str(w) for w in words])
        except SystemExit as exc:  # --help, --version, usage errors
            code = exc.code
        out, err = capsys.readouterr()
        return Result(code, out, err)

    return call


def subprocess_env():
    env = dict(os.environ)
    root = os.path.dirname(os.path.dirname(bcolzx.__file__))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    return env


@pytest.fixture
def run(tmp_path):
    """``run(*words)``: ``python -m bcolzx words...`` in a subprocess, in `tmp_path`."""

    def call(*words, command=(sys.executable, "-m", "bcolzx")):
        proc = subprocess.run([*command, *map(str, words)], cwd=tmp_path,
                              env=subprocess_env(), capture_output=True, text=True, timeout=120)
        return Result(proc.returncode, proc.stdout, proc.stderr)

    return call


def copy_legacy(name, where):
    """A writable copy of legacy fixture `name` under `where`."""
    dst = Path(where) / name
    shutil.copytree(LEGACY / name, dst)
    for root, _dirs, files in os.walk(dst):
        for entry in [root, *(os.path.join(root, f) for f in files)]:
            os.chmod(entry, os.stat(entry).st_mode | stat.S_IWUSR)
    return dst


@pytest.fixture
def carray_dir(tmp_path):
    """A carray of 200,000 float64 in 20 chunks, one of them rewritten (dead space)."""
    path = tmp_path / "a"
    c = bcolzx.carray(np.linspace(0, 1, 200_000), rootdir=str(path), chunklen=10_000)
    c[12_345] = 7.0
    c.flush()
    c.attrs["unit"] = "m"
    return path


@pytest.fixture
def ctable_dir(tmp_path):
    """A ctable of 3 columns (one of 2-D rows) and 5,000 rows."""
    path = tmp_path / "t"
    rng = np.random.default_rng(1)
    bcolzx.ctable([np.arange(5000), rng.random(5000), np.zeros((5000, 2), "i2")],
                  names=["i", "f", "m"], rootdir=str(path))
    return path


def tree(path):
    """Every file under `path` with its bytes (to show nothing changed)."""
    out = {}
    for root, _dirs, files in os.walk(path):
        for f in files:
            p = os.path.join(root, f)
            out[os.path.relpath(p, path)] = Path(p).read_bytes()
    return out
