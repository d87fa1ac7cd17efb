"""Smoke test of an installed bcolzx: what a user does in the first minute.

It needs only NumPy and bcolzx, so it can run in a fresh environment where a
wheel was just installed (``tools/build_wheels.py`` and cibuildwheel's
``test-command`` run it that way), and it runs from a temporary directory so
that a source tree never shadows the installed package.

    python tools/wheel_smoke.py [--installed] [--version V]

``--installed`` also requires that bcolzx was imported from an installation
(site-packages), not from a source checkout (an editable install is one);
``--version`` requires that exact ``bcolzx.__version__``.  Exits 0 when every
check passed, 1 otherwise; prints one line per check.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path


def check(name):
    """Name a check (``Smoke.run`` prints it with ``ok``/``FAIL`` and its time)."""

    def wrap(fn):
        fn.check_name = name
        return fn

    return wrap


def _cli() -> list[str]:
    """The ``bcolzx`` console script of this interpreter's environment."""
    scripts = Path(sysconfig.get_path("scripts"))
    exe = scripts / "bcolzx"
    if exe.is_file():
        return [str(exe)]
    found = shutil.which("bcolzx")
    if found is None:
        raise AssertionError(f"no 'bcolzx' console script in {scripts} nor on PATH")
    return [found]


def _run(cmd: list[str], cwd: str, timeout: float = 300) -> str:
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} exited {proc.returncode}:\n"
                             f"{proc.stdout}\n{proc.stderr}")
    return proc.stdout


class Smoke:
    def __init__(self, work: str, installed: bool, version: str | None):
        self.work = work
        self.installed = installed
        self.version = version

    @check("import bcolzx (location, version)")
    def t_import(self):
        import bcolzx

        pkg = Path(bcolzx.__file__).resolve().parent
        print(f"     bcolzx {bcolzx.__version__} from {pkg}")
        if self.installed:
            # A source checkout has setup.py beside the package; an installation has not.
            assert not (pkg.parent / "setup.py").exists(), f"{pkg} is a source tree"
            purelib = {Path(sysconfig.get_path(k)).resolve() for k in ("purelib", "platlib")}
            assert pkg.parent in purelib, f"{pkg} is not under {sorted(map(str, purelib))}"
        if self.version:
            assert bcolzx.__version__ == self.version, (bcolzx.__version__, self.version)

    @check("extensions: C-Blosc2 linked in statically, no libblosc2.so loaded")
    def t_extensions(self):
        import numpy as np

        import bcolzx
        from bcolzx._ext import checksum, codec

        assert codec.LINKAGE == "static", codec.LINKAGE
        assert checksum.crc32c(b"123456789") == 0xE3069283
        a = np.linspace(0, 1, 100_000)
        chunk = codec.Compressor("zstd", 5, codec.SHUFFLE, typesize=8).compress(a)
        assert codec.Decompressor(2).decompress(chunk) == a.tobytes()
        with open("/proc/self/maps") as f:
            assert "libblosc2.so" not in f.read()
        print(f"     C-Blosc2 {bcolzx.blosc_version()[0]}, codecs {bcolzx.blosc_compressor_list()}")

    @check("carray on disk: create, append, flush, reopen, verify")
    def t_carray(self):
        import numpy as np

        import bcolzx

        path = os.path.join(self.work, "prices")
        base = np.linspace(0, 100, 300_000)
        c = bcolzx.carray(base, rootdir=path, mode="w")
        c.append(np.arange(1000.0))
        c.flush()
        del c
        c = bcolzx.open(path, mode="a")
        assert len(c) == 301_000
        c.append(np.full(5, -1.0))
        c.flush()
        del c
        c = bcolzx.open(path, mode="r")
        want = np.concatenate([base, np.arange(1000.0), np.full(5, -1.0)])
        assert len(c) == len(want)
        assert np.array_equal(c[:], want)
        assert c[150_000] == want[150_000] and np.array_equal(c[-7:], want[-7:])
        assert c.cbytes < c.nbytes
        report = bcolzx.verify(path)
        assert report.ok, report.problems

    @check("ctable on disk: create, append, flush, reopen, query")
    def t_ctable(self):
        import numpy as np

        import bcolzx

        path = os.path.join(self.work, "trades")
        n = 200_000
        ids, px = np.arange(n), np.linspace(0, 1, n)
        t = bcolzx.ctable([ids, px], names=["id", "px"], rootdir=path, mode="w")
        t.append([np.arange(n, n + 10), np.full(10, 2.0)])
        t.flush()
        del t
        t = bcolzx.open(path, mode="r")
        assert len(t) == n + 10 and t.names == ["id", "px"]
        all_ids = np.concatenate([ids, np.arange(n, n + 10)])
        all_px = np.concatenate([px, np.full(10, 2.0)])
        got = t.fetchwhere("(id % 1000 == 0) & (px > 0.5)", out_flavor="numpy")["id"]
        want = all_ids[(all_ids % 1000 == 0) & (all_px > 0.5)]
        assert np.array_equal(got, want), (got[:5], want[:5])
        assert [r.id for r in t.where("px > 1.5")] == list(range(n, n + 10))
        assert bcolzx.verify(path).ok

    @check("command line: bcolzx --version, info, demo")
    def t_cli(self):
        import bcolzx

        exe = _cli()
        out = _run(exe + ["--version"], self.work)
        assert bcolzx.__version__ in out, out
        out = _run([sys.executable, "-m", "bcolzx", "--version"], self.work)
        assert bcolzx.__version__ in out, out
        info = json.loads(_run(exe + ["info", "--json", os.path.join(self.work, "prices")],
                               self.work))
        assert info, info
        out = _run(exe + ["demo", "--rows", "200000", "--dir", os.path.join(self.work, "demo")],
                   self.work)
        assert "every value read back verified" in out, out
        print("     " + out.strip().splitlines()[-1])

    def run(self) -> int:
        failed = 0
        for name in CHECKS:
            fn = getattr(self, name)
            t0 = time.perf_counter()
            try:
                fn()
            except Exception as exc:  # report every check, then fail
                failed += 1
                print(f"FAIL {fn.check_name}: {type(exc).__name__}: {exc}", flush=True)
            else:
                print(f"ok   {fn.check_name} ({time.perf_counter() - t0:.2f} s)", flush=True)
        if failed:
            print(f"smoke test: {failed} of {len(CHECKS)} checks FAILED")
            return 1
        print(f"smoke test: all {len(CHECKS)} checks passed")
        return 0


CHECKS = ["t_import", "t_extensions", "t_carray", "t_ctable", "t_cli"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--installed", action="store_true",
                        help="require bcolzx to be imported from site-packages")
    parser.add_argument("--version", help="require this bcolzx.__version__")
    args = parser.parse_args(argv)
    # Never import from the current directory (a checkout's root would shadow
    # the installed package): drop it, and work in a temporary directory.
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if p not in ("", os.getcwd(), here)]
    with tempfile.TemporaryDirectory(prefix="bcolzx-smoke-") as work:
        os.chdir(work)
        return Smoke(work, args.installed, args.version).run()


if __name__ == "__main__":
    sys.exit(main())
