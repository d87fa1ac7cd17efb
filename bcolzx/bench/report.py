"""Reports of a benchmark run: text tables, Markdown tables, a scaling summary.

Every table is built once as a header and rows of strings, then rendered as
aligned text (:func:`render_text`) or Markdown (:func:`render_markdown`).
"""

from __future__ import annotations

import math
import textwrap

import numpy as np

from bcolzx.bench.data import SHAPE_DOC
from bcolzx.bench.runner import (
    STREAMING,
    UNIT,
    UNSTABLE_SPREAD,
    WORKLOAD_DOC,
    WORKLOADS,
    _fmt_n,
)
from bcolzx.bench.systems import SYSTEMS

VARIANT_DOC = {
    "same": "comparable settings: LZ4, clevel 5, byte shuffle, ~1 MiB chunks",
    "default": "each system at its own defaults",
}


def _index(doc: dict, experiment: str = "main") -> dict:
    """{(size, variant, shape, workload, system): record} of one experiment."""
    return {(r["size"], r["variant"], r["shape"], r["workload"], r["system"]): r
            for r in doc["results"] if r["experiment"] == experiment}


def _order(doc: dict, key: str) -> list:
    seen = []
    for r in doc["results"]:
        if r["experiment"] == "main" and r[key] not in seen:
            seen.append(r[key])
    return seen


def systems_in(doc: dict) -> list[str]:
    """Systems that have results, in the report order (bcolzx first)."""
    present = {r["system"] for r in doc["results"]}
    return [k for k in SYSTEMS if k in present]


def value(rec: dict | None):
    """The figure a record shows: MB/s, µs or ms (None when missing or failed)."""
    if not rec or "error" in rec or rec.get("seconds") is None:
        return None
    unit = UNIT[rec["workload"]]
    if unit == "MB/s":
        return rec.get("mbps")
    if unit == "µs":
        return rec["median_us"]
    return rec["seconds"] * 1e3


def fmt_value(v, unit: str) -> str:
    if v is None:
        return "-"
    if unit == "MB/s":
        return f"{v:,.0f} MB/s"
    if unit == "µs":
        return f"{v:,.1f} µs" if v < 1000 else f"{v / 1e3:,.1f} ms"
    return f"{v:,.2f} ms" if v < 100 else f"{v:,.0f} ms"


def unstable(rec: dict | None) -> bool:
    """Whether a record's repeats disagree by more than ``UNSTABLE_SPREAD``."""
    return bool(rec) and "error" not in rec and (rec.get("spread") or 0) > UNSTABLE_SPREAD


def fmt_spread(rec: dict | None) -> str:
    """A record's spread as a percentage (``'-'`` when measured once, or missing)."""
    if not rec or "error" in rec or rec.get("spread") is None:
        return "-"
    return f"{rec['spread'] * 100:.0f}%"


def _marked(text: str, *recs) -> str:
    """`text`, with ``~`` in front when one of `recs` is unstable."""
    return "~" + text if text not in ("-", "err") and any(unstable(r) for r in recs) else text


STABILITY_TEXT = (f"spread: how far the repeats of bcolzx's figure disagree, (max - min) / "
                  f"median (of three or more, the first, a warm-up, left out; latencies: of the "
                  f"medians of three thirds of the calls; -: one run); ~: bcolzx's or the "
                  f"anchor's repeats spread over {UNSTABLE_SPREAD:.0%}, an unstable cell (run "
                  f"again, or raise --repeat and --budget)")


def stability(doc: dict, size: int, variant: str) -> str:
    """How many figures of one size and variant are unstable, in a sentence."""
    recs = [r for r in doc["results"] if r["experiment"] == "main" and r["size"] == size
            and r["variant"] == variant and "error" not in r]
    measured = [r for r in recs if r.get("spread") is not None]
    if not measured:
        return ("stability: not recorded (measured once each, or by a bcolzx bench older "
                "than the spreads)")
    bad = sum(unstable(r) for r in measured)
    return (f"stability: {bad} of {len(measured)} figures unstable (repeats spread over "
            f"{UNSTABLE_SPREAD:.0%}, marked ~)" + ("; read those cells as rough" if bad else ""))


def ratio(rec_x: dict | None, rec_anchor: dict | None):
    """bcolzx's advantage: anchor time / bcolzx time (None if either is missing)."""
    if not rec_x or not rec_anchor or "error" in rec_x or "error" in rec_anchor:
        return None
    tx, ta = rec_x.get("seconds"), rec_anchor.get("seconds")
    if not tx or not ta:
        return None
    return ta / tx


def fmt_ratio(r, rec_anchor=None) -> str:
    if rec_anchor is not None and "error" in rec_anchor:
        return "err"
    if r is None:
        return "-"
    return f"{r:.2f}x" if r < 100 else f"{r:,.0f}x"


def render_text(header: list[str], rows: list[list[str]], first_cols: int = 2) -> str:
    """Aligned text: the first `first_cols` columns left-aligned, the rest right."""
    widths = [max(len(str(c)) for c in col) for col in zip(header, *rows)]
    lines = []
    for k, row in enumerate([header] + rows):
        cells = [str(c).ljust(w) if i < first_cols else str(c).rjust(w)
                 for i, (c, w) in enumerate(zip(row, widths))]
        lines.append("  ".join(cells).rstrip())
        if k == 0:
            lines.append("-" * len(lines[0]))
    return "\n".join(lines)


def render_markdown(header: list[str], rows: list[list[str]], first_cols: int = 2) -> str:
    """A Markdown table (numbers right-aligned)."""
    out = ["| " + " | ".join(header) + " |",
           "|" + "|".join(":---" if i < first_cols else "---:" for i in range(len(header)))
           + "|"]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(out)


# ----------------------------------------------------------------- tables


def ratio_table(doc: dict, size: int, variant: str) -> tuple[list, list]:
    """bcolzx's figure and its advantage over every anchor, one row per workload and shape."""
    idx = _index(doc)
    systems = systems_in(doc)
    anchors = [s for s in systems if s != "bcolzx"]
    header = ["workload", "data", "bcolzx", "spread"] + anchors
    rows = []
    for wl in WORKLOADS:
        for shape in _order(doc, "shape"):
            x = idx.get((size, variant, shape, wl, "bcolzx"))
            recs = {a: idx.get((size, variant, shape, wl, a)) for a in anchors}
            if x is None and not any(recs.values()):
                continue
            cell = "err" if x and "error" in x else fmt_value(value(x), UNIT[wl])
            rows.append([wl, shape, cell, fmt_spread(x)]
                        + [_marked(fmt_ratio(ratio(x, recs[a]), recs[a]), x, recs[a])
                           if recs[a] else "-" for a in anchors])
    return header, rows


def absolute_table(doc: dict, size: int, variant: str) -> tuple[list, list]:
    """Every system's own figure (MB/s, µs or ms), one row per workload and shape."""
    idx = _index(doc)
    systems = systems_in(doc)
    header = ["workload", "data", "unit"] + systems
    rows = []
    for wl in WORKLOADS:
        for shape in _order(doc, "shape"):
            recs = {s: idx.get((size, variant, shape, wl, s)) for s in systems}
            if not any(recs.values()):
                continue
            unit = UNIT[wl]
            cells = []
            for s in systems:
                r = recs[s]
                if r is None:
                    cells.append("-")
                elif "error" in r:
                    cells.append("err")
                else:
                    v = value(r)
                    cells.append("-" if v is None else _marked(
                        f"{v:,.0f}" if unit == "MB/s" or v >= 100 else f"{v:,.2f}", r))
            rows.append([wl, shape, unit] + cells)
    return header, rows


def storage_table(doc: dict, size: int, variant: str) -> tuple[list, list]:
    """Compression ratio (uncompressed / bytes on disk) and files, from the disk builds."""
    idx = _index(doc)
    systems = [s for s in systems_in(doc) if SYSTEMS[s].where != "memory"]
    header = ["data", "what"] + systems
    rows = []
    for shape in _order(doc, "shape"):
        wl = "ct-build" if shape == "table" else "build-disk"
        recs = {s: idx.get((size, variant, shape, wl, s)) for s in systems}
        if not any(r and r.get("disk_bytes") for r in recs.values()):
            continue
        rows.append([shape, "ratio"] + [f"{r['cratio']:.2f}x" if r and r.get("cratio") else "-"
                                        for r in recs.values()])
        rows.append(["", "MB on disk"] + [f"{r['disk_bytes'] / 1e6:,.1f}"
                                          if r and r.get("disk_bytes") else "-"
                                          for r in recs.values()])
        rows.append(["", "files"] + [str(r["files"]) if r and r.get("files") else "-"
                                     for r in recs.values()])
    return header, rows


def memory_table(doc: dict, size: int, variant: str) -> tuple[list, list]:
    """Peak RSS growth (MB) of each workload, measured in a child process."""
    idx = _index(doc)
    systems = systems_in(doc)
    header = ["workload", "data"] + systems
    rows = []
    for wl in WORKLOADS:
        for shape in _order(doc, "shape"):
            recs = {s: idx.get((size, variant, shape, wl, s)) for s in systems}
            if not any(r and ("peak_mb" in r or "peak_error" in r) for r in recs.values()):
                continue
            cells = []
            for r in recs.values():
                if r is None:
                    cells.append("-")
                elif "peak_mb" in r:
                    cells.append(f"{r['peak_mb']:,.1f}")
                else:
                    cells.append("err" if "peak_error" in r else "-")
            rows.append([wl, shape] + cells)
    return header, rows


def scaling_table(doc: dict, variant: str, system: str = "bcolzx") -> tuple[list, list]:
    """Cost per item across sizes for one system, with the fitted exponent and peak memory.

    The exponent is the slope of log(time) against log(size): 1 is linear
    (throughput workloads), 0 is constant (single-item and slice latencies).
    """
    idx = _index(doc)
    sizes = sorted({r["size"] for r in doc["results"] if r["experiment"] == "main"})
    header = (["workload", "data"] + [f"{_fmt_n(n)}" for n in sizes] + ["exponent"]
              + [f"MB {_fmt_n(n)}" for n in sizes])
    rows = []
    for wl in WORKLOADS:
        for shape in _order(doc, "shape"):
            recs = [idx.get((n, variant, shape, wl, system)) for n in sizes]
            if not any(r and r.get("seconds") for r in recs):
                continue
            cells, pts = [], []
            for n, r in zip(sizes, recs):
                if not r or not r.get("seconds") or "error" in r:
                    cells.append("-")
                    continue
                pts.append((n, r["seconds"]))
                if UNIT[wl] == "µs":
                    cells.append(f"{r['median_us']:,.1f} µs")
                else:
                    cells.append(f"{r['seconds'] / n * 1e9:,.2f} ns/item")
            rows.append([wl, shape] + cells + [fmt_exponent(pts)]
                        + [f"{r['peak_mb']:,.1f}" if r and "peak_mb" in r else "-"
                           for r in recs])
    return header, rows


def exponent(points: list[tuple[int, float]]) -> float | None:
    """Least-squares slope of log(seconds) over log(size)."""
    if len(points) < 2:
        return None
    x = np.log([p[0] for p in points])
    y = np.log([p[1] for p in points])
    return float(np.polyfit(x, y, 1)[0])


def fmt_exponent(points) -> str:
    e = exponent(points)
    return "-" if e is None else f"{e:.2f}"


def threads_table(doc: dict) -> tuple[list, list]:
    """The 1-vs-N-threads experiment: MB/s at each thread count and the speedup."""
    recs = [r for r in doc["results"] if r["experiment"].startswith("threads")]
    counts = sorted({int(r["experiment"][7:]) for r in recs})
    header = ["system", "workload"] + [f"{t} thread{'s' * (t > 1)}" for t in counts] + [
        "speedup"]
    rows = []
    by = {(r["system"], r["workload"], int(r["experiment"][7:])): r for r in recs}
    for s in [k for k in SYSTEMS if any(r["system"] == k for r in recs)]:
        for wl in WORKLOADS:
            cells = [by.get((s, wl, t)) for t in counts]
            if not any(cells):
                continue
            out = []
            for r in cells:
                v = value(r)
                out.append("err" if r and "error" in r else fmt_value(v, UNIT[wl]))
            sp = None
            if cells[0] and cells[-1] and "error" not in cells[0] and "error" not in cells[-1]:
                sp = cells[0]["seconds"] / cells[-1]["seconds"]
            rows.append([s, wl] + out + ["-" if sp is None else f"{sp:.2f}x"])
    return header, rows


def summary(doc: dict, size: int, variant: str) -> dict:
    """Geometric mean of bcolzx's advantage over each anchor (all workloads and shapes)."""
    idx = _index(doc)
    out = {}
    for a in systems_in(doc):
        if a == "bcolzx":
            continue
        rs = []
        for (n, v, shape, wl, s), rec in idx.items():
            if n == size and v == variant and s == a:
                r = ratio(idx.get((n, v, shape, wl, "bcolzx")), rec)
                if r:
                    rs.append(r)
        if rs:
            out[a] = {"geomean": math.exp(sum(math.log(r) for r in rs) / len(rs)),
                      "wins": sum(r > 1 for r in rs), "cases": len(rs),
                      "min": min(rs), "max": max(rs)}
    return out


def size_notes(doc: dict, n: int) -> list[str]:
    """Caveats that hold at size `n`."""
    notes = []
    for key, cache in (("h5py", 8), ("tables", 16)):
        if n * 8 <= cache << 20 and any(r["system"] == key and r["size"] == n
                                        for r in doc["results"]):
            notes.append(f"{key} keeps up to {cache} MiB of decompressed chunks in its HDF5 "
                         "chunk cache (its default); at this size the whole array fits, so its "
                         "repeated reads, slices and single items copy memory rather than "
                         "decompress")
    return notes


#: What each system keeps decompressed between calls, with its default
#: settings (as measured: each system runs as a user gets it).
CACHES = {
    "bcolzx": "chunks read twice, and every chunk of an array read whole, {bcolzx} for "
              "the process (bcolzx.defaults.chunk_cache_bytes), by reads of at most a "
              "quarter of it",
    "bcolz": "the last decompressed block of each carray (single items, iteration)",
    "h5py": "HDF5's chunk cache: 8 MiB of chunks per open dataset (HDF5 2.0's default)",
    "tables": "HDF5's chunk cache: 16 MiB per open dataset (PyTables' CHUNK_CACHE_SIZE)",
    "schunk": "nothing decompressed (the frame's chunk offsets only)",
    "b2nd": "nothing decompressed (the frame's chunk offsets only)",
    "zarr": "nothing (every read fetches and decodes its chunks)",
    "zarr-shard": "nothing (every read fetches the shard index and decodes its chunks)",
    "numpy": "everything (the array is in memory)",
    "npy": "nothing of its own (the OS page cache keeps the file)",
    "pandas": "everything (the frame is in memory)",
}


def durability_note(doc: dict) -> list[str]:
    """What each system's writes to disk pay for durability (timed), as a line of text."""
    if "durable" not in doc.get("config", {}):
        return []
    if doc["config"]["durable"]:
        text = ("writes to disk (build-disk, append, ct-build): bcolzx commits durably (fsyncs) "
                "on its own; every anchor's files and directories are fsynced after it writes, "
                "inside its timing")
    else:
        text = ("writes to disk (build-disk, append, ct-build): bcolzx commits durably (fsyncs) "
                "on its own; the anchors' files are not fsynced (--no-durable): their figures "
                "leave out a cost that bcolzx's include")
    return [textwrap.fill(text, 100)]


def cache_notes(doc: dict) -> list[str]:
    """``'system: what it caches'`` for each system of the run."""
    budget = doc["machine"].get("bcolzx_chunk_cache_bytes")
    mib = f"{budget / 2**20:g} MiB" if budget is not None else "64 MiB by default"
    return [f"{s}: {CACHES[s].format(bcolzx=mib)}" for s in systems_in(doc) if s in CACHES]


# ----------------------------------------------------------------- reports


def _version(machine: dict) -> str:
    """``'bcolzx 0.1.0.dev154 (commit 41e8d6d)'``: which bcolzx a run measured."""
    commit = machine.get("bcolzx_commit")
    return (f"bcolzx {machine.get('bcolzx')} "
            + (f"(commit {commit})" if commit else "(commit not recorded)"))


def text_report(doc: dict, absolute: bool = False) -> str:
    """The report ``bcolzx bench`` prints."""
    out = []
    sizes = _order(doc, "size")
    variants = _order(doc, "variant")
    m = doc["machine"]
    out.append(f"bcolzx bench: {_version(m)}, C-Blosc2 {m.get('blosc2_c')}, "
               f"Python {m.get('python')}, NumPy {m.get('numpy')}, {m.get('cpus')} CPUs"
               + (f", {m['cpu']}" if m.get("cpu") else ""))
    anchors = [s for s in systems_in(doc) if s != "bcolzx"]
    if anchors:
        out.append("anchors: " + ", ".join(f"{s} {doc['versions'].get(s, '')}".strip()
                                           for s in anchors))
    for key, why in doc.get("skipped", {}).items():
        out.append(f"  not run: {key}: {why}")
    if doc.get("skipped"):
        out.append("  (every anchor: pip install 'bcolzx[bench]')")
    out.append(textwrap.fill("cells: bcolzx's own figure and its spread, then for each anchor: "
                             "anchor time / bcolzx time (above 1: bcolzx is faster); "
                             + STABILITY_TEXT, 100))
    out.append("kept decompressed between calls (repeated reads, slices and items copy from "
               "these):")
    out.extend("  " + line for line in cache_notes(doc))
    out.extend(durability_note(doc))
    for n in sizes:
        for v in variants:
            out.append("")
            nb = 8 * n
            out.append(f"== {n:,} items ({nb / 1e6:,.0f} MB an array), {VARIANT_DOC[v]}"
                       + (f", {doc['config']['nthreads']} threads" if v == "same" else ""))
            h, rows = ratio_table(doc, n, v)
            if rows:
                out.append(render_text(h, rows, 2))
                out.append(stability(doc, n, v))
            if absolute:
                h, rows = absolute_table(doc, n, v)
                out.append("")
                out.append(render_text(h, rows, 3))
            h, rows = storage_table(doc, n, v)
            if rows:
                out.append("")
                out.append("storage (from the disk builds): compression ratio, MB and files")
                out.append(render_text(h, rows))
            h, rows = memory_table(doc, n, v)
            if rows:
                out.append("")
                out.append("peak memory: growth of the peak RSS during one run, MB "
                           "(child process)")
                out.append(render_text(h, rows))
            for note in size_notes(doc, n):
                out.append("note: " + note)
            s = summary(doc, n, v)
            if s:
                out.append("")
                out.append("bcolzx vs each anchor, geometric mean over the cells above: "
                           + "; ".join(f"{a} {x['geomean']:.2f}x ({x['wins']}/{x['cases']} "
                                       "faster)" for a, x in s.items()))
    if len(sizes) > 1:
        for v in variants:
            h, rows = scaling_table(doc, v)
            if rows:
                out.append("")
                out.append(f"scaling of bcolzx ({v}): cost per item by size, exponent of "
                           "time ~ size**k (1: linear; 0: constant), peak MB by size")
                out.append(render_text(h, rows))
    h, rows = threads_table(doc)
    if rows:
        out.append("")
        out.append("threads: same settings, speedup = time with 1 thread / time with the most")
        out.append(render_text(h, rows))
    errors = [r for r in doc["results"] if "error" in r]
    if errors:
        out.append("")
        out.append(f"{len(errors)} measurement(s) failed (err):")
        seen = set()
        for r in errors:
            k = (r["system"], r["workload"], r["error"])
            if k in seen:
                continue
            seen.add(k)
            out.append(f"  {r['system']} {r['workload']}: {r['error']}")
    out.append("")
    out.append(f"total {doc.get('total_seconds', 0):.1f} s")
    return "\n".join(out)


def markdown_report(doc: dict) -> str:
    """Every table of the run in Markdown (for ``docs/benchmarks``)."""
    out = []
    sizes = _order(doc, "size")
    variants = _order(doc, "variant")
    out.append(f"Measured with {_version(doc['machine'])}, run started "
               f"{doc.get('started', '?')}.\n")
    out.append("Workloads:\n")
    for wl in WORKLOADS:
        if any(r["workload"] == wl for r in doc["results"]):
            out.append(f"- `{wl}`: {WORKLOAD_DOC[wl]} ({UNIT[wl]})")
    out.append("\nData:\n")
    for shape in _order(doc, "shape"):
        out.append(f"- `{shape}`: {SHAPE_DOC[shape]}")
    for v in variants:
        out.append(f"\nSettings, {VARIANT_DOC[v]}:\n")
        for key, text in doc["settings"].get(v, {}).items():
            out.append(f"- `{key}` ({doc['versions'].get(key, '')}): {text}")
    out.append("\nKept decompressed between calls (repeated reads, slices and items copy "
               "from these):\n")
    out.extend(f"- {line}" for line in cache_notes(doc))
    out.extend(f"\n{line.replace(chr(10), ' ')}" for line in durability_note(doc))
    for n in sizes:
        for v in variants:
            out.append(f"\n### {n:,} items, {VARIANT_DOC[v]}\n")
            out.append("bcolzx's own figure and its spread, then anchor time / bcolzx time "
                       "(above 1: bcolzx is faster); " + STABILITY_TEXT + ":\n")
            out.append(render_markdown(*ratio_table(doc, n, v)))
            out.append("\n" + stability(doc, n, v).capitalize() + ".")
            out.append("\nEvery system's own figure:\n")
            out.append(render_markdown(*absolute_table(doc, n, v), first_cols=3))
            h, rows = storage_table(doc, n, v)
            if rows:
                out.append("\nStorage (from the disk builds):\n")
                out.append(render_markdown(h, rows))
            h, rows = memory_table(doc, n, v)
            if rows:
                out.append("\nPeak memory, growth of the peak RSS during one run (MB):\n")
                out.append(render_markdown(h, rows))
            for note in size_notes(doc, n):
                out.append("\nNote: " + note)
            s = summary(doc, n, v)
            if s:
                out.append("\nGeometric mean of bcolzx's advantage over all the cells:\n")
                out.append(render_markdown(
                    ["anchor", "geomean", "bcolzx faster", "range"],
                    [[a, f"{x['geomean']:.2f}x", f"{x['wins']}/{x['cases']}",
                      f"{x['min']:.2f}x – {x['max']:.2f}x"] for a, x in s.items()], 1))
    if len(sizes) > 1:
        for v in variants:
            h, rows = scaling_table(doc, v)
            if rows:
                out.append(f"\n### Scaling of bcolzx ({VARIANT_DOC[v]})\n")
                out.append(render_markdown(h, rows))
    h, rows = threads_table(doc)
    if rows:
        out.append("\n### 1 vs 2 threads\n")
        out.append(render_markdown(h, rows))
    errors = {(r["system"], r["workload"], r["error"]) for r in doc["results"] if "error" in r}
    if errors:
        out.append("\nFailed measurements:\n")
        out += [f"- {s} `{w}`: {e}" for s, w, e in sorted(errors)]
    return "\n".join(out) + "\n"


def streaming_memory(doc: dict) -> list[dict]:
    """Peak memory of bcolzx's streaming workloads at every size (for checks)."""
    return [r for r in doc["results"] if r["system"] == "bcolzx" and r["workload"] in STREAMING
            and "peak_mb" in r]
