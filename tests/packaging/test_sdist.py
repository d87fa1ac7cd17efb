"""The sdist: it holds what building the wheel and running the tests need, and it builds
a wheel that installs and works.

The sdist is built from a copy of the source tree without its git metadata, so that
MANIFEST.in alone decides (as for a source archive; from a checkout setuptools-scm
adds the files git tracks on top), through setuptools' own build backend, with the
build requirements this environment has (Cython, the blosc2 wheel): no download.
``tools/build_wheels.py`` does the same with isolated builds, for every Python.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
VERSION = "0.1.0.dev0+sdisttest"
#: Build products and caches of a working tree, never part of an sdist.
PRODUCTS = shutil.ignore_patterns(".git", ".venv", "venv", ".tox", ".nox", "build", "dist", "*.egg-info", "__pycache__",
                                  ".pytest_cache", ".mypy_cache", ".ruff_cache", ".hypothesis",
                                  "_build", "*.so", "*.o", "*.pyc", "_version.py")

pytestmark = pytest.mark.skipif(not (ROOT / "setup.py").is_file(),
                                reason="the source tree is not here (an installed bcolzx)")


def _backend(call: str, cwd: Path, outdir: Path, timeout: float) -> str:
    """Run setuptools' build backend's `call` in `cwd`; the file it wrote into `outdir`."""
    env = dict(os.environ, SETUPTOOLS_SCM_PRETEND_VERSION=VERSION)
    env.pop("PYTHONPATH", None)
    code = f"from setuptools import build_meta; print(build_meta.{call}({str(outdir)!r}))"
    proc = subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout.strip().splitlines()[-1]


@pytest.fixture(scope="module")
def sdist(tmp_path_factory) -> Path:
    """An sdist of a copy of the source tree (no git, no build products)."""
    work = tmp_path_factory.mktemp("sdist")
    tree = work / "tree"
    shutil.copytree(ROOT, tree, ignore=PRODUCTS, symlinks=True)
    for generated in (tree / "bcolzx" / "_ext").glob("*.c"):  # Cython's, regenerated
        generated.unlink()
    out = work / "out"
    out.mkdir()
    return out / _backend("build_sdist", tree, out, timeout=300)


def _names(sdist: Path) -> set[str]:
    with tarfile.open(sdist) as tf:
        return {n.split("/", 1)[1] for n in tf.getnames() if "/" in n}


def _tree_files(*tops: str) -> set[str]:
    """The files under `tops` of the source tree that an sdist must carry."""
    out = set()
    for top in tops:
        for path in (ROOT / top).rglob("*"):
            rel = path.relative_to(ROOT)
            if path.is_file() and not any(p in {"__pycache__", "_build", ".hypothesis"}
                                          for p in rel.parts) \
                    and path.suffix not in {".pyc", ".so", ".c", ".o"}:
                out.add(rel.as_posix())
    return out


def test_the_sdist_holds_what_the_build_needs(sdist):
    names = _names(sdist)
    need = {"setup.py", "pyproject.toml", "MANIFEST.in", "README.md", "LICENSE", "PKG-INFO",
            "c-blosc-vendor/find_blosc2.py", "c-blosc-vendor/cblosc2.pxd",
            "bcolzx/py.typed", "bcolzx/_ext/crc32c_x86.h"}
    need |= {p.relative_to(ROOT).as_posix() for p in (ROOT / "bcolzx" / "_ext").iterdir()
             if p.suffix in {".pyx", ".pxd", ".pyi", ".h"}}
    need |= {p.relative_to(ROOT).as_posix() for p in (ROOT / "bcolzx").rglob("*.py")
             if "__pycache__" not in p.parts and p.name != "_version.py"}
    assert not need - names, sorted(need - names)


def test_the_sdist_holds_the_tests_their_data_and_the_docs(sdist):
    names = _names(sdist)
    need = _tree_files("tests", "docs", "tools", "LICENSES")
    assert "tests/data/legacy_bcolz/MANIFEST.json" in need and "docs/conf.py" in need
    assert not need - names, sorted(need - names)[:20]


def test_the_sdist_carries_no_build_products(sdist):
    names = _names(sdist)
    products = [n for n in names if n.endswith((".so", ".o", ".pyc"))
                or (n.startswith("bcolzx/_ext/") and n.endswith(".c"))
                or n.startswith(("build/", "dist/", "docs/_build/"))]
    assert not products, products


@pytest.mark.slow
def test_the_sdist_builds_a_wheel_that_installs_and_works(sdist, tmp_path):
    """The wheel built from the extracted sdist (a user's ``pip install bcolzx-*.tar.gz``):
    its contents, its licence files and metadata, then the smoke test of the wheels,
    installed into a fresh environment."""
    with tarfile.open(sdist) as tf:
        safe = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
        tf.extractall(tmp_path / "src", **safe)
    (src,) = (tmp_path / "src").iterdir()
    out = tmp_path / "wheel"
    out.mkdir()
    wheel = out / _backend("build_wheel", src, out, timeout=1500)
    dist_info = f"bcolzx-{VERSION}.dist-info"
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        meta = Parser().parsestr(zf.read(f"{dist_info}/METADATA").decode())
    licences = {p.name for p in (ROOT / "LICENSES").iterdir()}
    assert {f"{dist_info}/licenses/LICENSES/{n}" for n in licences} <= names
    assert f"{dist_info}/licenses/LICENSE" in names
    assert meta["License-Expression"] == "BSD-3-Clause AND BSD-2-Clause AND MIT AND Zlib"
    assert not [n for n in names if n.endswith((".pyx", ".c")) or n.startswith("tests/")]
    # A fresh environment that sees this one's packages (NumPy), with the wheel in it
    # ahead of any bcolzx installed here.
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", venv], check=True,
                   timeout=300)
    python = venv / "bin" / "python"
    subprocess.run([python, "-m", "pip", "install", "-q", "--no-deps", "--no-index",
                    "--no-build-isolation", wheel], check=True, timeout=600)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    proc = subprocess.run([python, ROOT / "tools" / "wheel_smoke.py", "--installed",
                           "--version", VERSION], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip().splitlines()[-1].startswith("smoke test: all")
