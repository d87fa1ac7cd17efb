#!/usr/bin/env python
"""ctable benchmark: bcolzx next to legacy bcolz and pandas, same data, same process.

The table has ``--n`` rows (default 1e7) and three columns: ``f0`` int64
``arange``, ``f1`` float64 uniform in [0, 1), ``f2`` int32 uniform in 0..999.
Each timing is the best of ``--repeat`` runs; ``ratio`` is bcolzx's speed
divided by the anchor's (above 1: bcolzx is faster).

Cases (memory and disk for bcolzx and legacy bcolz):

- build ``ctable(columns)`` from the NumPy columns (disk: with ``rootdir``, flushed; the
  previous build is deleted before the clock starts);
- ``fetchwhere('(f0 < 5000) & (f1 > 0.5)')`` (the issue's query: only the
  first chunk of ``f0`` can match, so zone maps skip the rest);
- a broad query ``fetchwhere('(f2 < 100) & (f1 > 0.5)')`` (every chunk can
  match; about 5% of the rows do), and ``whereblocks`` of it;
- a selective query on a sorted column, ``(f0 > a) & (f0 < a + 20000)`` in
  the middle of the table (< 1% of the chunks can match);
- ``todataframe()`` (when pandas is installed);
- compound selective queries of several shapes (bcolzx only, memory and
  disk), the rows as a NumPy array (the query, not the building of a result
  table): the range ``(f0 > a) & (f0 < a + 20000)`` with an equality on the
  unsorted ``f2``, the same written as a chained comparison, with its
  comparisons turned round, with ``~``, with the bounds in user variables,
  and an isin-like ``|`` of equalities ``& (f2 < 500)``: each next to its
  most selective single term, the range (or one ``f0 == v``), with the
  ratio compound / term (target: at most 1.5); and ``|`` of two ranges,
  next to the *sum* of its two terms' single queries (target: at most
  1.1).  A disjunction's answer holds the rows of both its terms and must
  read the chunks of both: no plan can do less than running each term on
  its own chunks, so the honest baseline is the cost of its terms together,
  not of one of them (against one term alone it would look 2x slow however
  well it is planned); the table also shows it against its first term;
- ``--onerow`` appends (default 20,000) of one row each to a persistent table
  with the default ``auto_flush`` (legacy bcolz's tutorial does exactly this),
  timed per row; bcolzx saves them in the append journal (safe when the process
  is killed), legacy rewrites its leftover files (not even that);
- pandas ``DataFrame.query`` of the same expressions on the uncompressed
  frame held in memory.

Run from outside the source tree so the installed bcolzx is imported::

    cd /tmp && python /path/to/benchmarks/bench_ctable.py --n 1e7
"""

import argparse
import gc
import os
import shutil
import sys
import tempfile
import time

import numpy as np

QUERY = "(f0 < 5000) & (f1 > 0.5)"
BROAD = "(f2 < 100) & (f1 > 0.5)"


def shapes(n):
    """``{label: (compound, [terms])}`` on `n` rows: a conjunction's one term
    is its most selective; a disjunction's terms are all of its parts, whose
    single queries' times add up to its baseline."""
    a, b = n // 2, n // 2 + 20000
    c, d = n // 4, n // 4 + 20000
    term = f"(f0 > {a}) & (f0 < {b})"
    eq = f"f0 == {a + 3}"
    return {
        "range & equality": (f"{term} & (f2 == 7)", [term]),
        "chained range & equality": (f"({a} < f0 < {b}) & (f2 == 7)", [term]),
        "turned round & equality": (f"({b} > f0) & (f2 == 7) & ({a} < f0)", [term]),
        "~ of a disjunction": (f"~((f0 <= {a}) | (f0 >= {b}) | (f2 != 7))", [term]),
        "user variables": ("(f0 > lo) & (f0 < hi) & (f2 == k)", [term]),
        "| of two ranges": (f"{term} | ((f0 > {c}) & (f0 < {d}))",
                            [term, f"(f0 > {c}) & (f0 < {d})"]),
        "isin-like & comparison": (f"((f0 == {a + 3}) | (f0 == {a + 500}) | (f0 == {a + 9000}))"
                                   " & (f2 < 500)", [eq]),
    }


#: A compound query's target: at most this many times its baseline (its one
#: term; for a disjunction, the sum of its terms).
TARGET = {1: 1.5, 2: 1.1}


def user_variables(n):
    """The values of the names in the ``user variables`` shape on `n` rows."""
    return {"lo": n // 2, "hi": n // 2 + 20000, "k": 7}


def best_of(fn, repeat, setup=None):
    """Best wall time of `repeat` calls of fn() (setup() untimed, before each)."""
    best = float("inf")
    for _ in range(repeat):
        if setup is not None:
            setup()
        gc.collect()
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def columns(n, seed=0):
    rng = np.random.default_rng(seed)
    return [np.arange(n, dtype=np.int64), rng.random(n),
            rng.integers(0, 1000, n).astype(np.int32)]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=float, default=1e7)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--onerow", type=int, default=20000,
                   help="one-row appends with auto_flush (0: skip)")
    p.add_argument("--dir", default=None)
    args = p.parse_args(argv)
    n = int(args.n)
    workdir = args.dir or tempfile.mkdtemp(prefix="bench_ctable-")
    os.makedirs(workdir, exist_ok=True)
    import bcolzx
    systems = {"bcolzx": bcolzx}
    try:
        from bcolzx.compat import import_legacy  # the real one, shim or not

        systems["bcolz"] = import_legacy()
    except ImportError:
        print("# legacy bcolz (bcolz-zipline) not installed: no legacy column")
    try:
        import pandas as pd
    except ImportError:
        pd = None
        print("# pandas not installed: no pandas column")
    cols = columns(n)
    names = ["f0", "f1", "f2"]
    mid = n // 2
    selective = f"(f0 > {mid}) & (f0 < {mid + 20000})"
    print(f"# bench_ctable: n={n:,} rows x 3 columns, best of {args.repeat}, "
          f"workdir {workdir}")
    print(f"# python {sys.version.split()[0]}, numpy {np.__version__}, "
          + ", ".join(f"{k} {m.__version__}" for k, m in systems.items())
          + (f", pandas {pd.__version__}" if pd else "")
          + f"; bcolzx vm {bcolzx.defaults.vm}")
    res = {}

    def record(case, system, seconds):
        res.setdefault(case, {})[system] = seconds

    tables = {}
    for name, mod in systems.items():
        for where in ("memory", "disk"):
            path = os.path.join(workdir, f"{name}.{where}")

            def build():
                if where == "disk":
                    ct = mod.ctable(cols, names=names, rootdir=path, mode="w")
                    ct.flush()
                else:
                    ct = mod.ctable(cols, names=names)
                tables[name, where] = ct
            def clear():  # untimed: deleting the last build is not building
                tables.pop((name, where), None)
                shutil.rmtree(path, ignore_errors=True)
            record(f"build ({where})", name, best_of(build, args.repeat, setup=clear))
        # queries on the disk table, reopened read-only (data from the page cache)
        tables[name, "disk"] = mod.open(os.path.join(workdir, f"{name}.disk"), mode="r")
        for where in ("memory", "disk"):
            ct = tables[name, where]
            for label, expr in (("fetchwhere issue query", QUERY), ("fetchwhere broad", BROAD),
                                ("fetchwhere selective", selective)):
                record(f"{label} ({where})", name,
                       best_of(lambda: ct.fetchwhere(expr), args.repeat))
            record(f"whereblocks broad ({where})", name,
                   best_of(lambda: sum(len(b) for b in ct.whereblocks(BROAD)), args.repeat))
            if pd is not None and hasattr(ct, "todataframe"):
                record(f"todataframe ({where})", name,
                       best_of(lambda: ct.todataframe(), args.repeat))
    compound = shapes(n)
    for where in ("memory", "disk"):
        ct = tables["bcolzx", where]
        for label, (expr, terms) in compound.items():
            for case, text in ((f"compound {label} ({where})", expr),
                               *((f"term {i} of {label} ({where})", term)
                                 for i, term in enumerate(terms))):
                record(case, "bcolzx", best_of(lambda: ct.fetchwhere(
                    text, out_flavor="numpy", user_dict=user_variables(n)), args.repeat))
    if args.onerow:
        rows = [(int(i), float(i) * 0.5, int(i % 1000)) for i in range(args.onerow)]
        empty = np.empty(0, dtype=[("f0", "i8"), ("f1", "f8"), ("f2", "i4")])
        for name, mod in systems.items():
            path = os.path.join(workdir, f"{name}.onerow")

            def one_at_a_time():
                ct = mod.ctable(empty, rootdir=path, mode="w")  # auto_flush: the default
                for row in rows:
                    ct.append(row)
            def clear():
                shutil.rmtree(path, ignore_errors=True)
            record(f"append 1 row x {args.onerow} (disk)", name,
                   best_of(one_at_a_time, max(1, args.repeat // 2), setup=clear))
            assert len(mod.open(path, mode="r")) == args.onerow
    # sanity: same answers
    for expr in (QUERY, BROAD, selective, *(e for compound_query, terms in compound.values()
                                            for e in (compound_query, *terms))):
        got = tables["bcolzx", "disk"].fetchwhere(expr, out_flavor="numpy",
                                                  user_dict=user_variables(n))
        mask = bcolzx.eval(expr, user_dict={**dict(zip(names, cols)), **user_variables(n)},
                           out_flavor="numpy")
        assert np.array_equal(got["f0"], cols[0][mask]), expr
    if pd is not None:
        df = pd.DataFrame(dict(zip(names, cols)))
        for where in ("memory", "disk"):
            for label, expr in (("fetchwhere issue query", QUERY), ("fetchwhere broad", BROAD),
                                ("fetchwhere selective", selective)):
                record(f"{label} ({where})", "pandas", best_of(lambda: df.query(expr),
                                                               args.repeat))
            record(f"whereblocks broad ({where})", "pandas",
                   best_of(lambda: df.query(BROAD), args.repeat))
    report(res, {label: len(terms) for label, (_, terms) in compound.items()})
    if args.dir is None:
        shutil.rmtree(workdir, ignore_errors=True)


def baseline(res, label, nterms, where):
    """A compound query's baseline in seconds: the sum of its terms' times
    (one term: that term's), and its first term's."""
    times = [res[f"term {i} of {label} ({where})"]["bcolzx"] for i in range(nterms)]
    return sum(times), times[0]


def report(res, compound=None):
    compound = compound or {}
    anchors = [s for s in ("bcolz", "pandas") if any(s in v for v in res.values())]
    print()
    print(f"{'case':<36}{'bcolzx ms':>12}" + "".join(f"{a + ' ms':>12}{'ratio':>8}"
                                                      for a in anchors))
    for case, row in res.items():
        if "bcolzx" not in row or case.startswith(("compound ", "term ")):
            continue
        line = f"{case:<36}{row['bcolzx'] * 1e3:>12.1f}"
        for a in anchors:
            if a in row:
                line += f"{row[a] * 1e3:>12.1f}{row[a] / row['bcolzx']:>7.2f}x"
            else:
                line += f"{'-':>12}{'':>8}"
        print(line)
    if compound:
        print()
        print("baseline: a conjunction's most selective term; a disjunction's terms "
              "together (the sum of their single queries)")
        print(f"{'compound selective query (bcolzx)':<44}{'ms':>8}{'baseline ms':>13}"
              f"{'/baseline':>11}{'/first term':>13}")
        for where in ("memory", "disk"):
            for label, nterms in compound.items():
                spent = res[f"compound {label} ({where})"]["bcolzx"]
                base, first = baseline(res, label, nterms, where)
                what = "" if nterms == 1 else f" ({nterms} terms)"
                print(f"{label + ' (' + where + ')' + what:<44}{spent * 1e3:>8.2f}"
                      f"{base * 1e3:>13.2f}{spent / base:>10.2f}x{spent / first:>12.2f}x")
    print()
    print("Targets (ratio = anchor time / bcolzx time; a compound query's anchor is its "
          "baseline: >= 0.67x is within 1.5x, >= 0.91x within 1.1x):")

    def ratio(case, anchor):
        row = res.get(case, {})
        return row[anchor] / row["bcolzx"] if anchor in row and "bcolzx" in row else None

    checks = []
    for where in ("memory", "disk"):
        checks += [
            (f"build ({where}) >= 2x legacy", ratio(f"build ({where})", "bcolz"), 2.0),
            (f"fetchwhere issue query ({where}) >= 2x legacy",
             ratio(f"fetchwhere issue query ({where})", "bcolz"), 2.0),
            (f"fetchwhere broad ({where}) >= 2x legacy",
             ratio(f"fetchwhere broad ({where})", "bcolz"), 2.0),
            (f"whereblocks broad ({where}) >= 2x legacy",
             ratio(f"whereblocks broad ({where})", "bcolz"), 2.0),
            (f"fetchwhere issue query ({where}) >= pandas query",
             ratio(f"fetchwhere issue query ({where})", "pandas"), 1.0),
            (f"fetchwhere broad ({where}) >= pandas query",
             ratio(f"fetchwhere broad ({where})", "pandas"), 1.0),
            (f"selective query ({where}) >= 10x legacy",
             ratio(f"fetchwhere selective ({where})", "bcolz"), 10.0),
            (f"todataframe ({where}) >= 1.5x legacy",
             ratio(f"todataframe ({where})", "bcolz"), 1.5),
        ]
    for where in ("memory", "disk"):
        for label, nterms in compound.items():
            spent = res[f"compound {label} ({where})"]["bcolzx"]
            base, _ = baseline(res, label, nterms, where)
            goal = TARGET[min(nterms, 2)]
            what = "its term" if nterms == 1 else "its terms' sum"
            checks.append((f"{label} ({where}) within {goal}x {what}", base / spent, 1 / goal))
    onerow = [c for c in res if c.startswith("append 1 row")]
    checks += [(f"{c} >= legacy", ratio(c, "bcolz"), 1.0) for c in onerow]
    met = known = 0
    for desc, value, goal in checks:
        status = "n/a" if value is None else ("MET" if value >= goal else "NOT MET")
        known += value is not None
        met += status == "MET"
        shown = "-" if value is None else f"{value:.2f}x"
        print(f"  {desc:<52}{shown:>10}   {status}")
    print(f"SUMMARY: {met}/{known} targets met")


if __name__ == "__main__":
    main()
