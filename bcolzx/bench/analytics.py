"""The ``groupby`` and ``reduce`` workload groups of ``bcolzx bench``: analytics on
compressed data against pandas, NumPy, DuckDB and Polars, on the same data.

The data is a table of ``n`` rows: ``k``, an int64 key of :data:`NGROUPS` values,
and ``v``, a float64 value (normal), made block by block from the seed.  Every
system gets the same rows:

========================  =================================================
``bcolzx-disk``           a ctable on disk, opened in mode 'r'
``bcolzx-mem``            a ctable in memory (compressed)
``pandas``                a DataFrame in memory (the reduce group: a Series)
``numpy``                 NumPy arrays in memory (reduce only)
``duckdb-mem``            a DuckDB table in an in-memory database
``duckdb-disk``           a DuckDB table in a database file
``duckdb-bcolzx``         DuckDB scanning the on-disk ctable (bcolzx.duckdb)
``polars-mem``            a Polars DataFrame
``polars-disk``           a Parquet file scanned lazily by Polars
========================  =================================================

Each measurement runs in a fresh process: the data is loaded (or the on-disk
dataset opened) first, then the peak of the resident memory is reset, and
the workload runs ``repeat`` times (the best time is reported, the first
run's memory).  ``peak_mb`` is the growth of the resident memory during the
workload; ``rss_mb`` the process's high-water mark, the data held in memory
included: what a machine must have to answer.  Results are checked against
each other (the first system that answered; float sums within 1e-9).

Workloads: ``groupby`` (sum, mean and count of ``v`` per ``k``), ``reduce-sum``,
``reduce-std`` and ``reduce-max`` of ``v``.
"""

from __future__ import annotations

import gc
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from bcolzx.bench.runner import read_peak, reset_peak, run_json_child

#: Distinct keys of the data.
NGROUPS = 1000
#: Rows made at once.
BLOCK = 1 << 20

GROUPBY = ("groupby",)
REDUCE = ("reduce-sum", "reduce-std", "reduce-max")
#: The workload groups, by name (``bcolzx bench --workloads groupby,reduce``).
GROUPS = {"groupby": GROUPBY, "reduce": REDUCE}
WORKLOADS = GROUPBY + REDUCE

SYSTEMS = ("bcolzx-disk", "bcolzx-mem", "pandas", "numpy", "duckdb-mem", "duckdb-disk",
           "duckdb-bcolzx", "polars-mem", "polars-disk")
#: The package each system needs (bcolzx's own need NumPy only).
NEEDS = {"pandas": "pandas", "duckdb-mem": "duckdb", "duckdb-disk": "duckdb",
         "duckdb-bcolzx": "duckdb", "polars-mem": "polars", "polars-disk": "polars"}
#: Where each system's data lives.
WHERE = {s: ("disk" if s.endswith(("-disk", "-bcolzx")) else "memory") for s in SYSTEMS}


def blocks(n: int, seed: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """The rows, ``(k, v)`` block by block."""
    for b, lo in enumerate(range(0, n, BLOCK)):
        rng = np.random.default_rng([seed, b])
        m = min(BLOCK, n - lo)
        yield rng.integers(0, NGROUPS, m, dtype=np.int64), rng.normal(size=m)


def make(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """All the rows in memory."""
    k, v = np.empty(n, np.int64), np.empty(n, np.float64)
    lo = 0
    for bk, bv in blocks(n, seed):
        k[lo:lo + len(bk)], v[lo:lo + len(bk)] = bk, bv
        lo += len(bk)
    return k, v


def available(system: str) -> str | None:
    """Why `system` cannot run here, or None."""
    need = NEEDS.get(system)
    if system.startswith("polars") or system == "duckdb-bcolzx":
        for mod in ("pyarrow",) + ((need,) if need else ()):
            try:
                __import__(mod)
            except ImportError:
                return f"needs {mod}"
    if need:
        try:
            __import__(need)
        except ImportError:
            return f"needs {need}"
    return None


def supports(system: str, workload: str) -> bool:
    return not (system == "numpy" and workload == "groupby")


# -- the datasets on disk (built once per size, untimed) -------------------------------


def paths(workdir: str, n: int) -> dict:
    return {"bcolzx": os.path.join(workdir, f"t{n}.bcolzx"),
            "parquet": os.path.join(workdir, f"t{n}.parquet"),
            "duckdb": os.path.join(workdir, f"t{n}.duckdb")}


def build(system: str, n: int, seed: int, where: dict) -> None:
    """Write the on-disk dataset `system` reads, unless written already."""
    import bcolzx

    if system in ("bcolzx-disk", "duckdb-bcolzx") and not os.path.exists(where["bcolzx"]):
        ct = bcolzx.ctable([np.empty(0, np.int64), np.empty(0)], names=["k", "v"],
                           rootdir=where["bcolzx"], mode="w")
        for k, v in blocks(n, seed):
            ct.append([k, v])
        ct.flush()
        ct.close()
    if system in ("polars-disk", "duckdb-disk") and not os.path.exists(where["parquet"]):
        import pyarrow as pa
        import pyarrow.parquet as pq

        schema = pa.schema([("k", pa.int64()), ("v", pa.float64())])
        with pq.ParquetWriter(where["parquet"], schema) as w:
            for k, v in blocks(n, seed):
                w.write_table(pa.table({"k": k, "v": v}, schema=schema))
    if system == "duckdb-disk" and not os.path.exists(where["duckdb"]):
        import duckdb

        con = duckdb.connect(where["duckdb"])
        con.execute("CREATE TABLE t AS SELECT * FROM read_parquet(?)", [where["parquet"]])
        con.close()


# -- one measurement, in a child process -------------------------------------------------


def _operation(system: str, workload: str, n: int, seed: int, where: dict,
               nthreads: int) -> Callable[[], Any]:
    """Set the data up; the workload as a function returning a checkable result."""
    col = workload.split("-")[1] if workload != "groupby" else None
    if system.startswith("bcolzx"):
        import bcolzx

        bcolzx.set_nthreads(nthreads)
        if system == "bcolzx-disk":
            ct = bcolzx.open(where["bcolzx"], mode="r")
        else:
            k, v = make(n, seed)
            ct = bcolzx.ctable([k, v], names=["k", "v"])
            del k, v
        if workload == "groupby":
            def op():
                g = ct.groupby("k", {"sum": ("v", "sum"), "mean": ("v", "mean"),
                                     "count": ("v", "count")})
                return g["k"][:], g["sum"][:], g["mean"][:], g["count"][:]
            return op
        return lambda: getattr(ct.cols["v"], col)()
    if system in ("pandas", "numpy"):
        k, v = make(n, seed)
        if system == "numpy":
            return lambda: getattr(np, col)(v)
        import pandas as pd

        if workload != "groupby":
            s = pd.Series(v)
            return lambda: getattr(s, col)(ddof=0) if col == "std" else getattr(s, col)()
        df = pd.DataFrame({"k": k, "v": v})
        del k, v

        def op():
            g = df.groupby("k")["v"].agg(["sum", "mean", "count"])
            return (g.index.to_numpy(), g["sum"].to_numpy(), g["mean"].to_numpy(),
                    g["count"].to_numpy())
        return op
    if system.startswith("duckdb"):
        import duckdb

        if system == "duckdb-disk":
            con = duckdb.connect(where["duckdb"], read_only=True)
        else:
            con = duckdb.connect()
        con.execute(f"SET threads TO {nthreads}")
        if system == "duckdb-mem":
            k, v = make(n, seed)
            import pyarrow as pa

            arrow_table = pa.table({"k": k, "v": v})
            con.register("src", arrow_table)
            con.execute("CREATE TABLE t AS SELECT * FROM src")
            con.unregister("src")
            del arrow_table, k, v
        elif system == "duckdb-bcolzx":
            import bcolzx

            bcolzx.set_nthreads(nthreads)
            bcolzx.duckdb.register(con, "t", bcolzx.open(where["bcolzx"], mode="r"))
        return _sql(con, workload, col)
    import polars as pl

    if system == "polars-disk":
        lf = pl.scan_parquet(where["parquet"])
    else:
        k, v = make(n, seed)
        lf = pl.DataFrame({"k": k, "v": v}).lazy()
        del k, v
    if workload == "groupby":
        def op():
            g = lf.group_by("k").agg(pl.col("v").sum().alias("sum"),
                                     pl.col("v").mean().alias("mean"),
                                     pl.col("v").count().alias("count")).sort("k").collect()
            return (g["k"].to_numpy(), g["sum"].to_numpy(), g["mean"].to_numpy(),
                    g["count"].to_numpy())
        return op
    expr = {"sum": pl.col("v").sum(), "std": pl.col("v").std(ddof=0),
            "max": pl.col("v").max()}[col]
    return lambda: lf.select(expr).collect().item()


def _sql(con, workload: str, col: str | None) -> Callable[[], Any]:
    if workload == "groupby":
        def op():
            rows = con.execute("SELECT k, sum(v), avg(v), count(v) FROM t GROUP BY k "
                               "ORDER BY k").fetchnumpy()
            return tuple(np.asarray(rows[c]) for c in rows)
        return op
    fn = {"sum": "sum(v)", "std": "stddev_pop(v)", "max": "max(v)"}[col]
    return lambda: con.execute(f"SELECT {fn} FROM t").fetchone()[0]


def measure(spec: dict) -> dict:
    """Run in the child: set up, reset the peak, time `repeat` runs."""
    op = _operation(spec["system"], spec["workload"], spec["n"], spec["seed"],
                    spec["paths"], spec["nthreads"])
    gc.collect()
    method, before = reset_peak()
    times, out = [], None
    for i in range(spec["repeat"]):
        t0 = time.perf_counter()
        out = op()
        times.append(time.perf_counter() - t0)
        if i == 0:
            after = read_peak(method)
    result: Any
    if isinstance(out, tuple):
        result = [np.asarray(x, dtype=np.float64).tolist() for x in out]
    else:
        result = float(out)
    return {"seconds": min(times), "times": times, "peak_mb": max(0.0, after - before),
            "rss_mb": after, "method": method, "result": result}


def run_child(spec: dict, timeout: float = 7200) -> dict:
    """:func:`measure` in a fresh process; its record, or ``{"error": ...}``."""
    return run_json_child("bcolzx.bench.analytics", spec, timeout, "error")


def agrees(a: Any, b: Any) -> bool:
    """Two results of one workload agree (float sums within 1e-9, counts exactly)."""
    if isinstance(a, list):
        return len(a) == len(b) and all(
            len(x) == len(y) and np.allclose(x, y, rtol=1e-9, atol=1e-9) for x, y in zip(a, b))
    return bool(np.isclose(a, b, rtol=1e-9, atol=1e-12))


# -- the run and its report -------------------------------------------------------------


def run(sizes: list[int], workloads: list[str], systems: list[str] | None = None, *,
        repeat: int = 3, nthreads: int = 2, seed: int = 0, workdir: str | None = None,
        keep: bool = False, progress: Callable[[str], None] | None = None) -> dict:
    """Measure `workloads` for `systems` (default all installed) at each size.

    Returns
    -------
    dict
        ``results``: one record per (size, workload, system) with ``seconds``,
        ``peak_mb``, ``rss_mb`` and ``agrees`` (or ``error``); ``skipped``:
        the systems that cannot run, and why.
    """
    systems = list(SYSTEMS if systems is None else systems)
    for name in systems:
        if name not in SYSTEMS:
            raise ValueError(f"unknown system {name!r}; choose from {', '.join(SYSTEMS)}")
    for name in workloads:
        if name not in WORKLOADS:
            raise ValueError(f"unknown workload {name!r}; choose from {', '.join(WORKLOADS)}")
    skipped = {s: why for s in systems if (why := available(s)) is not None}
    systems = [s for s in systems if s not in skipped]
    base = workdir or tempfile.mkdtemp(prefix="bcolzx-bench-analytics-")
    os.makedirs(base, exist_ok=True)
    results = []
    t0 = time.perf_counter()
    try:
        for n in sizes:
            where = paths(base, n)
            for wl in workloads:
                reference = None
                for s in systems:
                    if not supports(s, wl):
                        continue
                    if progress:
                        progress(f"{wl} {s} n={n:,}")
                    rec = {"size": n, "workload": wl, "system": s, "where": WHERE[s]}
                    try:
                        build(s, n, seed, where)
                    except Exception as exc:  # noqa: BLE001 - reported, the others run
                        rec["error"] = f"build: {type(exc).__name__}: {exc}"
                        results.append(rec)
                        continue
                    rec.update(run_child({"system": s, "workload": wl, "n": n, "seed": seed,
                                          "paths": where, "nthreads": nthreads,
                                          "repeat": repeat}))
                    if "result" in rec:
                        reference = rec["result"] if reference is None else reference
                        rec["agrees"] = agrees(rec.pop("result"), reference)
                    results.append(rec)
    finally:
        if not keep and workdir is None:
            shutil.rmtree(base, ignore_errors=True)
    return {"bcolzx_bench_analytics": 1, "sizes": sizes, "workloads": workloads,
            "systems": systems, "skipped": skipped, "nthreads": nthreads, "repeat": repeat,
            "load": os.getloadavg(), "results": results,
            "total_seconds": time.perf_counter() - t0}


def text_report(doc: dict) -> str:
    """One table per (workload, size): time, memory, and bcolzx-disk's advantage."""
    lines = []
    by: dict = {}
    for r in doc["results"]:
        by.setdefault((r["workload"], r["size"]), []).append(r)
    for (wl, n), recs in by.items():
        lines.append(f"\n{wl}, {n:,} rows ({NGROUPS} keys)" if wl == "groupby"
                     else f"\n{wl}, {n:,} rows")
        base = next((r for r in recs if r["system"] == "bcolzx-disk" and "seconds" in r), None)
        lines.append(f"  {'system':<14} {'where':<7} {'seconds':>9} {'peak MB':>9} "
                     f"{'RSS MB':>9} {'time/bcolzx-disk':>17} {'RSS/bcolzx-disk':>16}")
        for r in recs:
            if "error" in r:
                lines.append(f"  {r['system']:<14} {r['where']:<7} error: {r['error']}")
                continue
            t_ratio = f"{r['seconds'] / base['seconds']:.2f}x" if base else "-"
            m_ratio = f"{r['rss_mb'] / base['rss_mb']:.2f}x" if base else "-"
            flag = "" if r.get("agrees", True) else "  RESULT DIFFERS"
            lines.append(f"  {r['system']:<14} {r['where']:<7} {r['seconds']:9.3f} "
                         f"{r['peak_mb']:9.0f} {r['rss_mb']:9.0f} {t_ratio:>17} "
                         f"{m_ratio:>16}{flag}")
    if doc["skipped"]:
        lines.append("\nnot run: " + ", ".join(f"{s} ({why})" for s, why in
                                                doc["skipped"].items()))
    lines.append(f"\nthreads {doc['nthreads']}, best of {doc['repeat']}, load average "
                 f"{' '.join(f'{x:.2f}' for x in doc['load'])}")
    return "\n".join(lines).lstrip("\n")


def _expand(text: str, names: tuple, groups: dict, what: str) -> list[str]:
    out: list[str] = []
    for word in (w.strip() for w in text.split(",") if w.strip()):
        if word == "all":
            out.extend(names)
        elif word in groups:
            out.extend(groups[word])
        elif word in names:
            out.append(word)
        else:
            raise ValueError(f"unknown {what} {word!r} for the groupby/reduce workloads; "
                             f"choose from {', '.join([*groups, *names])}")
    return list(dict.fromkeys(out))


#: ``--systems`` words: a package's name stands for all its systems.
SYSTEM_GROUPS = {p: tuple(s for s in SYSTEMS if s.startswith(p))
                 for p in ("bcolzx", "duckdb", "polars")}


def run_from_args(args: Any) -> int | None:
    """``bcolzx bench --workloads groupby,reduce ...``: run these workloads and
    return the exit status; None when the workloads asked for are not these."""
    words = [w.strip() for w in args.workloads.split(",") if w.strip()]
    ours = [w for w in words if w in GROUPS or w in WORKLOADS]
    if not ours:
        return None
    try:
        if len(ours) != len(words):
            raise ValueError("the groupby/reduce workloads run on their own data: ask for "
                             "them in a separate run")
        workloads = _expand(args.workloads, WORKLOADS, GROUPS, "workload")
        systems = _expand(args.systems, SYSTEMS, SYSTEM_GROUPS, "system")
    except ValueError as exc:
        print(f"bcolzx bench: error: {exc}", file=sys.stderr)
        return 2
    sizes = args.size or ([10**7, 10**8] if args.full else [10**6])
    progress = None if args.quiet else (lambda label: print(f"... {label}", file=sys.stderr,
                                                            flush=True))
    doc = run(sizes, workloads, systems, repeat=args.repeat or 3,
              nthreads=args.threads or min(os.cpu_count() or 1, 8), seed=args.seed,
              workdir=args.dir, keep=args.keep, progress=progress)
    doc["command"] = "bcolzx bench " + " ".join(getattr(args, "argv", []) or [])
    print(text_report(doc))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=1)
        print(f"wrote {args.json}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """The child process: ``python -m bcolzx.bench.analytics SPEC`` prints one JSON line."""
    argv = sys.argv[1:] if argv is None else argv
    print(json.dumps(measure(json.loads(argv[0]))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
