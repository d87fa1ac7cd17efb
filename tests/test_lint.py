"""Lint and types: ``ruff check bcolzx`` and ``mypy`` (the public API), configured in
pyproject.toml, run on the source tree as part of the test suite."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]


def _source_tree() -> None:
    if not (ROOT / "pyproject.toml").is_file() or not (ROOT / "bcolzx").is_dir():
        pytest.skip("lint runs on the bcolzx source tree, which is not here")


def _tool(module: str) -> None:
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed (pip install 'bcolzx[test]' installs it)")


def _run(args: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)


def test_ruff_finds_nothing_in_the_package():
    _source_tree()
    _tool("ruff")
    proc = _run(["ruff", "check", "--no-cache", "--output-format", "concise", "bcolzx"])
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.slow
def test_mypy_passes_on_the_public_api(tmp_path):
    _source_tree()
    _tool("mypy")
    # The files and options are [tool.mypy] of pyproject.toml; a fresh cache keeps the
    # run independent of earlier ones (and writes nothing into the source tree).
    proc = _run(["mypy", "--cache-dir", str(tmp_path / "cache")])
    assert proc.returncode == 0, proc.stdout + proc.stderr
