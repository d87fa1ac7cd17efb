"""The packaging metadata of the wheels, and the smoke test they run, on the installed bcolzx.

The wheels themselves are built and checked by ``tools/build_wheels.py`` (CI runs it for
one Python after the test suite); these tests keep its inputs consistent and fast to check.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SUPPORTED = ["3.10", "3.11", "3.12", "3.13"]


def _pyproject() -> dict:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        tomllib = pytest.importorskip("tomli", reason="reading pyproject.toml on 3.10 needs tomli")
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def test_smoke_script_passes_on_this_installation(tmp_path):
    # The same script the wheels run after installation (here: whatever bcolzx this
    # interpreter imports, which may be an editable install).
    proc = subprocess.run([sys.executable, str(ROOT / "tools" / "wheel_smoke.py")],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "smoke test: all 5 checks passed"


def test_classifiers_and_requires_python_name_the_tested_pythons():
    project = _pyproject()["project"]
    assert project["requires-python"] == f">={SUPPORTED[0]}"
    versions = sorted((c.rsplit(" :: ", 1)[1] for c in project["classifiers"]
                       if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)),
                      key=lambda v: tuple(map(int, v.split("."))))
    assert versions == SUPPORTED
    assert "Operating System :: POSIX :: Linux" in project["classifiers"]
    # bcolzx's own licence and those of the code its wheels link in (test_licences.py)
    assert project["license"] == "BSD-3-Clause AND BSD-2-Clause AND MIT AND Zlib"
    assert project["license-files"] == ["LICENSE", "LICENSES/*"]
    assert not [c for c in project["classifiers"] if c.startswith("License ::")]


def test_cibuildwheel_builds_the_same_matrix_and_runs_the_smoke_test():
    cibw = _pyproject()["tool"]["cibuildwheel"]
    assert cibw["build"] == [f"cp{v.replace('.', '')}-manylinux_*" for v in SUPPORTED]
    assert set(cibw["linux"]["archs"]) == {"x86_64", "aarch64"}
    for source in cibw["test-sources"]:
        assert (ROOT / source).exists(), source
    assert "tools/wheel_smoke.py" in cibw["test-command"]
    assert "test-requires" in cibw
    # the build script's default matrix is the same
    text = (ROOT / "tools" / "build_wheels.py").read_text(encoding="utf-8")
    assert f"DEFAULT_PYTHONS = {SUPPORTED!r}".replace("'", '"') in text


def test_wheels_leave_out_cython_and_generated_c_sources():
    setuptools_cfg = _pyproject()["tool"]["setuptools"]
    assert set(setuptools_cfg["exclude-package-data"]["bcolzx._ext"]) >= {"*.pyx", "*.c"}
    assert {"*.pyi", "*.pxd"} <= set(setuptools_cfg["package-data"]["bcolzx._ext"])


def test_the_wheel_check_names_every_extension_setup_py_builds():
    # tools/build_wheels.py checks that each wheel holds a compiled module and a stub
    # for every name in its EXTENSIONS (and the sdist their sources): all setup.py builds.
    built = set(re.findall(r'Extension\(\s*"bcolzx\._ext\.(\w+)"',
                           (ROOT / "setup.py").read_text(encoding="utf-8")))
    text = (ROOT / "tools" / "build_wheels.py").read_text(encoding="utf-8")
    listed = ast.literal_eval(re.search(r"^EXTENSIONS = (\[.*?\])", text, re.M | re.S).group(1))
    assert built and sorted(listed) == sorted(built)
    for name in built:
        assert (ROOT / "bcolzx" / "_ext" / f"{name}.pyx").is_file(), name
        assert (ROOT / "bcolzx" / "_ext" / f"{name}.pyi").is_file(), name
