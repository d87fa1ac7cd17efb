"""The self-check behind ``bcolzx.test()``: a smoke test of an installed bcolzx.

Legacy ``bcolz.test()`` ran bcolz's unittest suite, which was installed with
it; bcolzx's suite lives in its source tree, so :func:`selftest` instead
creates, reopens and queries carrays and ctables and prints one line per
check.
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Callable

__all__ = ["selftest"]


def _checks(tmp: str, heavy: bool) -> list[tuple[str, Callable[[], None]]]:
    """The self-checks: (description, function raising on failure)."""
    import numpy as np

    import bcolzx

    n = 2_000_000 if heavy else 50_000

    def same(a, b) -> None:
        if not np.array_equal(np.asarray(a), np.asarray(b)):
            raise AssertionError(f"{a!r} != {b!r}")

    def codecs() -> None:
        data = np.arange(n, dtype=np.int64) % 1000
        for cname in bcolzx.blosc_compressor_list():
            for shuffle in (bcolzx.NOSHUFFLE, bcolzx.SHUFFLE, bcolzx.BITSHUFFLE):
                ca = bcolzx.carray(data, cparams=bcolzx.cparams(clevel=5, shuffle=shuffle,
                                                                cname=cname))
                same(ca[:], data)

    def carray_memory() -> None:
        ca = bcolzx.arange(n, dtype="i8", chunklen=1000)
        same(ca[10:20], np.arange(10, 20))
        if ca[-1] != n - 1 or ca.sum() != np.arange(n, dtype="i8").sum():
            raise AssertionError("indexing or sum")
        ca.append(np.arange(5))
        ca.trim(5)
        ca.resize(n + 3)
        same(ca[n:], [0, 0, 0])
        ca[[0, 1]] = [7, 8]
        same(ca[:3], [7, 8, 2])
        same(list(bcolzx.eval("ca < 3").wheretrue()), [2, n, n + 1, n + 2])
        same(list(ca.where(ca[:] > n - 3)), [n - 2, n - 1])

    def carray_disk() -> None:
        path = os.path.join(tmp, "carray")
        data = np.linspace(0, 1, n)
        ca = bcolzx.carray(data, rootdir=path, mode="w")
        ca.attrs["unit"] = "m"
        ca.append([2.0])
        ca.flush()
        again = bcolzx.open(path, mode="r")
        same(again[:], np.append(data, 2.0))
        if again.attrs["unit"] != "m":
            raise AssertionError("attrs not persisted")
        try:
            again.append([1.0])
        except OSError:
            pass
        else:
            raise AssertionError("a write in mode 'r' did not raise")

    def ndim() -> None:
        data = np.arange(n * 4, dtype="f4").reshape(n, 2, 2)
        ca = bcolzx.carray(data)
        same(ca[3], data[3])
        same(ca[5:9, 1], data[5:9, 1])
        same(ca.reshape((n * 4,))[:], data.ravel())

    def ctable_disk() -> None:
        path = os.path.join(tmp, "ctable")
        a = np.arange(n)
        b = a * 0.5
        ct = bcolzx.ctable([a, b], names=["a", "b"], rootdir=path, mode="w")
        ct.addcol(a % 7, name="c")
        ct.flush()
        ct = bcolzx.open(path, mode="r")
        hits = ct.fetchwhere("(a > 10) & (c == 3)", outcols=["nrow__", "b"],
                             out_flavor="numpy")
        expect = np.flatnonzero((a > 10) & (a % 7 == 3))
        same(hits["nrow__"], expect)
        same(hits["b"], expect * 0.5)
        same(ct.eval("a + b", out_flavor="numpy"), a + b)
        row = next(ct.where("a == 5", outcols="a,c"))
        if (row.a, row.c) != (5, 5):
            raise AssertionError(f"where gave {row}")

    return [
        ("codecs and shuffles round-trip", codecs),
        ("in-memory carray: index, append, trim, resize, where", carray_memory),
        ("persistent carray: flush, reopen read-only, attrs", carray_disk),
        ("N-D carray: rows, slices, reshape", ndim),
        ("persistent ctable: addcol, reopen, fetchwhere, eval, where", ctable_disk),
    ]


def selftest(verbose: bool = False, heavy: bool = False) -> bool:
    """Check that this installation of bcolzx works (what ``bcolzx.test()`` runs).

    The test suite is not installed with bcolzx (it lives in the source
    tree: run ``pytest`` there).  This is a smoke check of the installed
    package: it prints the versions, then creates, reopens and queries
    carrays and ctables, in memory and in a temporary directory that is
    removed afterwards, and prints one line per check.

    Parameters
    ----------
    verbose : bool
        Also print the traceback of a failed check.
    heavy : bool
        Use 2,000,000 rows instead of 50,000.

    Returns
    -------
    bool
        True when every check passed.  (Legacy ``bcolz.test()`` ran its
        unittest suite and then called ``sys.exit``; this returns.)

    Raises
    ------
    None
        A failing check is reported and counted, not raised.
    """
    import time
    import traceback

    import bcolzx

    bcolzx.print_versions()
    failures = 0
    with tempfile.TemporaryDirectory(prefix="bcolzx-test-") as tmp:
        checks = _checks(tmp, heavy)
        for description, check in checks:
            start = time.perf_counter()
            try:
                check()
            except Exception as exc:  # noqa: BLE001 - every failure is reported
                failures += 1
                print(f"FAIL  {description}: {type(exc).__name__}: {exc}")
                if verbose:
                    traceback.print_exc(file=sys.stdout)
            else:
                print(f"ok    {description} ({time.perf_counter() - start:.2f} s)")
    print(f"{len(checks) - failures} of {len(checks)} checks passed"
          + ("" if failures else " (the full test suite is in the bcolzx source tree)"))
    return failures == 0

