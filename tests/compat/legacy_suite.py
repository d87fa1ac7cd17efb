"""Run legacy bcolz's own test suite against bcolzx (issue 18: our compatibility spec).

The suite is the ``bcolz/tests/`` package of the ``bcolz-zipline`` wheel
(legacy bcolz 1.2's tests, kept alive by the zipline project).  Nothing of it
is committed here: it is taken at run time from the installed
``bcolz-zipline`` distribution when its version is the expected one (each
file checked against the distribution's ``RECORD`` hashes), and otherwise
from the wheel downloaded from PyPI with ``pip download``.

The tests then run in a fresh interpreter under pytest with the plugin
:mod:`tests.compat.legacy_plugin`, which calls ``bcolzx.compat.install()``
before anything imports ``bcolz``: every ``bcolz`` name the tests use is
bcolzx's.  No stand-in for any legacy module is provided; what the tests
import (``bcolz.py2help``, ``bcolz.utils.to_ndarray``, ...) comes from the
alias modules of :mod:`bcolzx.compat`.

Usage::

    python tests/compat/legacy_suite.py [--json FILE] [pytest options...]

prints the counts (passed, failed, errors, skipped) and the tests that did
not pass.  ``tests/compat/test_legacy_suite.py`` runs it in the test suite
and compares the failures with the list in ``docs/migration.md``.
"""

from __future__ import annotations

import argparse
import base64
import csv
import hashlib
import io
import json
import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

DIST = "bcolz-zipline"
VERSION = "1.13.0"
PREFIX = "bcolz/tests/"
HERE = Path(__file__).resolve().parent


def _from_installed(dest: Path) -> bool:
    """Copy ``bcolz/tests/*.py`` from the installed distribution; False if not usable."""
    import importlib.metadata as md

    try:
        dist = md.distribution(DIST)
    except md.PackageNotFoundError:
        return False
    if dist.version != VERSION:
        return False
    record = dist.read_text("RECORD") or ""
    hashes = {row[0]: row[1] for row in csv.reader(io.StringIO(record)) if len(row) >= 2}
    copied = 0
    for name, digest in hashes.items():
        if not (name.startswith(PREFIX) and name.endswith(".py")):
            continue
        data = Path(dist.locate_file(name)).read_bytes()
        algo, _, want = digest.partition("=")
        got = base64.urlsafe_b64encode(hashlib.new(algo, data).digest()).rstrip(b"=").decode()
        if got != want:
            return False  # modified installation: take the wheel instead
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        copied += 1
    return copied > 0


def _from_wheel(dest: Path) -> None:
    """Download the wheel from PyPI and extract ``bcolz/tests/``."""
    with tempfile.TemporaryDirectory(prefix="bcolz-wheel-") as tmp:
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                        "--only-binary", ":all:", "--dest", tmp, f"{DIST}=={VERSION}"],
                       check=True)
        (wheel,) = Path(tmp).glob("*.whl")
        with zipfile.ZipFile(wheel) as zf:
            for name in zf.namelist():
                if name.startswith(PREFIX) and name.endswith(".py"):
                    target = dest / name
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(zf.read(name))


def extract(dest: Path) -> Path:
    """Put legacy bcolz's ``tests`` package under ``dest/bcolz/tests``; return that path.

    ``dest/bcolz`` gets no ``__init__.py``: ``bcolz`` itself is bcolzx's alias.
    """
    if not _from_installed(dest):
        _from_wheel(dest)
    return dest / "bcolz" / "tests"


def run(pytest_args: list[str], json_path: str | None = None) -> dict:
    """Run the legacy suite in a fresh interpreter; return the counts and failures."""
    with tempfile.TemporaryDirectory(prefix="bcolzx-legacy-suite-") as tmp:
        tests = extract(Path(tmp))
        report = Path(tmp) / "report.json"
        env = dict(os.environ)
        env["BCOLZX_LEGACY_REPORT"] = str(report)
        env["BCOLZX_LEGACY_TESTS"] = str(tests)
        # The plugin is found through PYTHONPATH; the working directory is the
        # temporary one, so the source tree (no compiled extensions) is never
        # imported instead of the installed bcolzx.
        env["PYTHONPATH"] = os.pathsep.join(
            [str(HERE)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
        cmd = [sys.executable, "-m", "pytest", "-p", "legacy_plugin", "-q",
               "-p", "no:cacheprovider", "--rootdir", str(tests), "-c", os.devnull,
               str(tests), *pytest_args]
        proc = subprocess.run(cmd, cwd=tmp, env=env)
        if not report.exists():
            raise RuntimeError(f"the legacy suite did not run (exit status {proc.returncode})")
        result = json.loads(report.read_text())
    result["returncode"] = proc.returncode
    if json_path:
        Path(json_path).write_text(json.dumps(result, indent=1, sort_keys=True))
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", help="write the counts and the failing tests here")
    args, rest = parser.parse_known_args(argv)
    result = run(rest, args.json)
    counts = result["counts"]
    print(f"\nlegacy bcolz {VERSION} test suite on bcolzx: "
          + ", ".join(f"{counts[k]} {k}" for k in ("passed", "failed", "error", "skipped")))
    for nodeid in sorted(result["not_passed"]):
        print(f"  not passed: {nodeid}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
