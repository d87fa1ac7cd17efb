#!/usr/bin/env python
"""Dask over bcolzx: reading with ``to_dask()``, writing with ``from_dask()``.

Cases (every timing is the best of ``--repeat`` runs):

1. ``sum`` of an on-disk carray of ``--n`` float64 items: ``c.sum()`` (our
   own, ``bcolzx.defaults.nthreads`` threads) next to
   ``c.to_dask().sum()`` with Dask's threaded scheduler and on a
   ``LocalCluster`` of ``--workers`` processes (one thread each).
   ``ratio`` = Dask time / our time (the target: at most 1.3 threaded).
2. The same for a ctable of ``--rows`` rows: ``ct.cols["v"].sum()`` next to
   ``ct.to_dask()["v"].sum()``, and a group-by (``groupby("g").v.agg(...)``)
   with pandas on ``ct.todataframe()`` next to the Dask dataframe.
3. Writing the carray again: ``from_dask(c.to_dask(), ...)`` on the cluster
   (``--workers`` processes), with the threaded scheduler, and with the
   synchronous one (one process, one thread), next to the single-process
   writes ``c.copy(rootdir=...)`` with one thread and with
   ``defaults.nthreads``.  ``speedup`` = single-process time / cluster time
   (the target: at least 1.5 with 2 workers against one process).
4. Peak memory of the cluster's workers during 1 and 3: the largest growth
   of a worker's peak RSS (``VmHWM``, reset through ``/proc/self/clear_refs``
   where possible, else ``ru_maxrss``) over its RSS before, in superchunks of
   the dataset read or written.

Files are read right after they are written, so they come from the OS page
cache: the disk is not what is measured.  The machine's other load shows in
every figure: compare ratios taken in the same run.

Run from outside the source tree so that the installed bcolzx is imported::

    cd /tmp && python /path/to/benchmarks/bench_dask.py --n 1e8 --rows 1e7
"""

import argparse
import gc
import json
import os
import platform
import resource
import shutil
import sys
import tempfile
import time

import numpy as np


def best_of(fn, repeat, setup=None):
    """Best wall time of `repeat` calls of fn(), and its last result."""
    best, result = float("inf"), None
    for _ in range(repeat):
        if setup is not None:
            setup()
        gc.collect()
        t0 = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t0)
    return best, result


def rmtree(path):
    shutil.rmtree(path, ignore_errors=True)


def _status(key):
    """A ``/proc/self/status`` value in bytes (``VmRSS``, ``VmHWM``), or None."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def _reset_peak():
    """Reset this process's peak RSS (Linux >= 4.0) and return its RSS now.

    Where the peak cannot be reset, the peak so far (``ru_maxrss``) is the
    starting point, and the growth measured is that of the high-water mark.
    """
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return _status("VmRSS")
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _peak():
    return _status("VmHWM") or resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


class PeakGrowth:
    """Largest growth of a worker's peak RSS over its RSS at the start, in bytes."""

    def __init__(self, client):
        self.client = client

    def __enter__(self):
        self.start = self.client.run(_reset_peak)
        return self

    def __exit__(self, *exc):
        peaks = self.client.run(_peak)
        self.bytes = max(peaks[w] - self.start[w] for w in peaks)


def prices(n, seed=0):
    """A random walk rounded to cents: compresses like typical market data."""
    rng = np.random.default_rng(seed)
    return (100 + np.cumsum(rng.normal(0, 0.01, int(n)))).round(2)


def cluster(workers):
    from distributed import Client, LocalCluster

    lc = LocalCluster(processes=True, n_workers=workers, threads_per_worker=1,
                      dashboard_address=None, silence_logs=40)
    return lc, Client(lc, set_as_default=False)


def carray_cases(args, base, out):
    import bcolzx

    n = int(args.n)
    path = os.path.join(base, "c")
    t0 = time.perf_counter()
    c = bcolzx.carray(prices(n), rootdir=path)
    out["build_s"] = time.perf_counter() - t0
    c = bcolzx.carray(rootdir=path, mode="r")
    st = c._engine.store.storage
    sc_bytes = st.chunklen * st.chunks_per_superchunk * c.atomsize
    out["carray"] = {"n": n, "nbytes": c.nbytes, "cbytes": c.cbytes,
                     "chunklen": c.chunklen, "superchunk_bytes": sc_bytes,
                     "nthreads": bcolzx.defaults.nthreads}
    own, total = best_of(c.sum, args.repeat)
    x = c.to_dask()
    threaded, dtotal = best_of(lambda: x.sum().compute(scheduler="threads"), args.repeat)
    assert np.isclose(total, dtotal), (total, dtotal)
    lc, client = cluster(args.workers)
    try:
        with PeakGrowth(client) as read_peak:
            clustered, ctotal = best_of(lambda: client.compute(x.sum()).result(),
                                        args.repeat)
        assert np.isclose(total, ctotal)
        dest = os.path.join(base, "w")
        with PeakGrowth(client) as write_peak:
            write_cluster, _ = best_of(
                lambda: bcolzx.from_dask(x, dest, mode="w", scheduler=client), args.repeat)
        written = bcolzx.carray(rootdir=dest, mode="r")
        wst = written._engine.store.storage
        w_sc_bytes = wst.chunklen * wst.chunks_per_superchunk * written.atomsize
        assert len(written) == n and written[n // 2] == c[n // 2]
    finally:
        client.close()
        lc.close()
    write_threads, _ = best_of(
        lambda: bcolzx.from_dask(x, dest, mode="w", scheduler="threads"), args.repeat)
    write_sync, _ = best_of(
        lambda: bcolzx.from_dask(x, dest, mode="w", scheduler="sync"), args.repeat)
    copy_dest = os.path.join(base, "copy")
    copies = {}
    for nthreads in sorted({1, bcolzx.defaults.nthreads}):
        with bcolzx.defaults_ctx():
            bcolzx.set_nthreads(nthreads)
            copies[nthreads], _ = best_of(lambda: c.copy(rootdir=copy_dest, mode="w"),
                                          args.repeat, setup=lambda: rmtree(copy_dest))
    one = copies[1]
    out["sum"] = {"own_s": own, "dask_threads_s": threaded, "dask_cluster_s": clustered,
                  "ratio_threads": threaded / own, "ratio_cluster": clustered / own}
    out["write"] = {
        "from_dask_cluster_s": write_cluster, "from_dask_threads_s": write_threads,
        "from_dask_sync_s": write_sync,
        **{f"copy_nthreads{k}_s": v for k, v in copies.items()},
        "speedup_cluster_vs_one_thread_copy": one / write_cluster,
        "speedup_cluster_vs_sync": write_sync / write_cluster,
        "speedup_cluster_vs_default_copy": copies[max(copies)] / write_cluster,
        "superchunk_bytes": w_sc_bytes,
    }
    out["worker_peak"] = {"read_bytes": read_peak.bytes,
                          "read_superchunks": read_peak.bytes / sc_bytes,
                          "read_block_bytes": x.chunks[0][0] * c.atomsize,
                          "write_bytes": write_peak.bytes,
                          "write_superchunks": write_peak.bytes / w_sc_bytes}


def ctable_cases(args, base, out):
    import bcolzx

    rows = int(args.rows)
    rng = np.random.default_rng(1)
    path = os.path.join(base, "t")
    ct = bcolzx.ctable([np.arange(rows), rng.integers(0, 100, rows), prices(rows, 2)],
                       names=["t", "g", "v"], rootdir=path)
    ct = bcolzx.ctable(rootdir=path, mode="r")
    own, total = best_of(ct.cols["v"].sum, args.repeat)
    ddf = ct.to_dask()
    threaded, dtotal = best_of(lambda: ddf["v"].sum().compute(scheduler="threads"),
                               args.repeat)
    assert np.isclose(total, dtotal)

    def pandas_groupby():
        return ct.todataframe(columns=["g", "v"]).groupby("g").v.agg(["sum", "mean", "max"])

    def dask_groupby():
        return ddf.groupby("g").v.agg(["sum", "mean", "max"]).compute(scheduler="threads")

    pandas_s, expect = best_of(pandas_groupby, args.repeat)
    dask_s, got = best_of(dask_groupby, args.repeat)
    assert np.allclose(got.sort_index().to_numpy(), expect.to_numpy())
    out["ctable"] = {"rows": rows, "npartitions": ddf.npartitions,
                     "sum_own_s": own, "sum_dask_threads_s": threaded,
                     "ratio_sum_threads": threaded / own,
                     "groupby_pandas_s": pandas_s, "groupby_dask_threads_s": dask_s,
                     "ratio_groupby": dask_s / pandas_s}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=float, default=1e8, help="carray items (float64)")
    parser.add_argument("--rows", type=float, default=1e7, help="ctable rows")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--dir", default=None, help="where to write (default: a temp dir)")
    parser.add_argument("--json", default=None, help="also write the results here")
    args = parser.parse_args(argv)

    import bcolzx
    import dask

    base = tempfile.mkdtemp(prefix="bench-dask-", dir=args.dir)
    out = {"python": platform.python_version(), "bcolzx": bcolzx.__version__,
           "dask": dask.__version__, "cores": os.cpu_count(), "workers": args.workers}
    try:
        carray_cases(args, base, out)
        ctable_cases(args, base, out)
    finally:
        rmtree(base)
    s, w, p, t = out["sum"], out["write"], out["worker_peak"], out["ctable"]
    print(f"carray: {out['carray']['n']:.0e} float64, {out['carray']['nbytes'] / 1e6:.0f} MB, "
          f"ratio {out['carray']['nbytes'] / out['carray']['cbytes']:.1f}x, "
          f"own nthreads {out['carray']['nthreads']}")
    print(f"  sum: own {s['own_s']:.3f} s | to_dask threads {s['dask_threads_s']:.3f} s "
          f"(ratio {s['ratio_threads']:.2f}) | cluster {s['dask_cluster_s']:.3f} s "
          f"(ratio {s['ratio_cluster']:.2f})")
    copies = " | ".join(f"copy() nthreads={k[len('copy_nthreads'):-2]} {v:.3f} s"
                        for k, v in w.items() if k.startswith("copy_nthreads"))
    print(f"  write: from_dask cluster({args.workers}) {w['from_dask_cluster_s']:.3f} s | "
          f"threads {w['from_dask_threads_s']:.3f} s | sync {w['from_dask_sync_s']:.3f} s | "
          f"{copies}")
    print(f"    speedup of the cluster: {w['speedup_cluster_vs_one_thread_copy']:.2f}x vs "
          f"one-thread copy(), {w['speedup_cluster_vs_sync']:.2f}x vs from_dask sync, "
          f"{w['speedup_cluster_vs_default_copy']:.2f}x vs copy() at default threads")
    print(f"  worker peak RSS growth: read {p['read_bytes'] / 2**20:.0f} MiB "
          f"({p['read_superchunks']:.2f} superchunks of the source, blocks of "
          f"{p['read_block_bytes'] / 2**20:.0f} MiB), write {p['write_bytes'] / 2**20:.0f} MiB "
          f"({p['write_superchunks']:.2f} superchunks of "
          f"{w['superchunk_bytes'] / 2**20:.0f} MiB)")
    print(f"ctable: {t['rows']:.0e} rows, {t['npartitions']} partitions")
    print(f"  v.sum: own {t['sum_own_s']:.3f} s | to_dask threads {t['sum_dask_threads_s']:.3f} s "
          f"(ratio {t['ratio_sum_threads']:.2f})")
    print(f"  groupby(g).v.agg: pandas {t['groupby_pandas_s']:.3f} s | to_dask threads "
          f"{t['groupby_dask_threads_s']:.3f} s (ratio {t['ratio_groupby']:.2f})")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    return out


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
