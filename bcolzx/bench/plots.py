"""PNG plots of a benchmark run (matplotlib, imported only here, with the Agg backend)."""

from __future__ import annotations

import functools
import importlib.util
import math
import os

import numpy as np

from bcolzx.bench.report import _index, _order, ratio, systems_in, value
from bcolzx.bench.runner import UNIT, WORKLOADS, _fmt_n
from bcolzx.bench.systems import SYSTEMS

COLORS = {"bcolzx": "#d62728", "numpy": "#7f7f7f", "npy": "#bcbd22", "pandas": "#17becf",
          "h5py": "#1f77b4", "tables": "#aec7e8", "schunk": "#2ca02c", "b2nd": "#98df8a",
          "zarr": "#9467bd", "zarr-shard": "#c5b0d5", "bcolz": "#ff7f0e"}


# Sizes for figures shown about 800 pixels wide (the article column of the documentation).
# There, a font of F points in a figure W inches wide shows at about 11 * F / W pixels: the
# figures are 9-11 inches wide and their text 10-12 points, so no text shows below ~10
# pixels; the files are drawn at DPI for a sharp full-size view.
DPI = 150
FONT = 11  # axis labels and ticks
SMALL = 10  # legends, numbers in cells, panel titles
TITLE = 12
_RC = {"font.size": FONT, "axes.titlesize": SMALL, "axes.labelsize": FONT,
       "xtick.labelsize": FONT, "ytick.labelsize": FONT, "legend.fontsize": SMALL,
       "figure.titlesize": TITLE}


def have_matplotlib() -> bool:
    """Whether matplotlib is installed (without importing it)."""
    return importlib.util.find_spec("matplotlib") is not None


def _plt():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def _readable(fn):
    """Draw with the font sizes above (matplotlib's own settings are left as they were)."""
    @functools.wraps(fn)
    def wrapper(doc: dict, outdir: str) -> str | None:
        with _plt().rc_context(_RC):
            return fn(doc, outdir)
    return wrapper


def plot_all(doc: dict, outdir: str) -> list[str]:
    """Write every plot that the run has data for; returns the paths.

    Parameters
    ----------
    doc : dict
        The result of :func:`bcolzx.bench.runner.run` (or its JSON, loaded).
    outdir : str
        Directory of the PNG files (created).

    Returns
    -------
    list of str
        The files written: ``ratios.png``, ``throughput.png``,
        ``latency.png``, ``compression.png``, and with several sizes
        ``scaling.png`` (and ``memory.png`` with peak memory), with the
        threads experiment ``threads.png``.
    """
    os.makedirs(outdir, exist_ok=True)
    paths = []
    for fn in (plot_ratios, plot_throughput, plot_latency, plot_compression, plot_scaling,
               plot_memory, plot_threads):
        p = fn(doc, outdir)
        if p:
            paths.append(p)
    return paths


def _legend(fig, axes) -> None:
    """One legend for all the panels (every label once)."""
    seen = {}
    for ax in axes.flat:
        for h, label in zip(*ax.get_legend_handles_labels()):
            seen.setdefault(label, h)
    fig.legend(list(seen.values()), list(seen), loc="lower center", ncol=4, fontsize=SMALL)


def _largest(doc: dict) -> int:
    return max(r["size"] for r in doc["results"] if r["experiment"] == "main")


def _label(n: int, variant: str) -> str:
    return f"{_fmt_n(n)} items, " + ("comparable settings" if variant == "same"
                                      else "each system's defaults")


@_readable
def plot_ratios(doc: dict, outdir: str) -> str | None:
    """Heat map of bcolzx's advantage (geometric mean over the data shapes)."""
    plt = _plt()
    idx = _index(doc)
    n = _largest(doc)
    variants = _order(doc, "variant")
    anchors = [s for s in systems_in(doc) if s != "bcolzx"]
    wls = [w for w in WORKLOADS if any(k[3] == w and k[0] == n for k in idx)]
    if not anchors or not wls:
        return None
    fig, axes = plt.subplots(len(variants), 1, figsize=(max(6.0, 0.8 * len(anchors) + 1.8),
                                                         (0.38 * len(wls) + 1.9) * len(variants)),
                             squeeze=False)
    for ax, v in zip(axes[:, 0], variants):
        m = np.full((len(wls), len(anchors)), np.nan)
        for i, wl in enumerate(wls):
            for j, a in enumerate(anchors):
                rs = [ratio(idx.get((n, v, shape, wl, "bcolzx")), idx.get((n, v, shape, wl, a)))
                      for shape in _order(doc, "shape")]
                rs = [r for r in rs if r]
                if rs:
                    m[i, j] = math.exp(sum(math.log(r) for r in rs) / len(rs))
        lg = np.log2(m)
        lim = max(1.0, np.nanmax(np.abs(lg)) if np.isfinite(lg).any() else 1.0)
        vmax = min(lim, 4)
        ax.imshow(np.clip(lg, -lim, lim), cmap="RdYlGn", vmin=-vmax, vmax=vmax,
                  aspect="auto")
        for i in range(len(wls)):
            for j in range(len(anchors)):
                if np.isfinite(m[i, j]):
                    # white on the dark ends of the colour map, black elsewhere
                    dark = abs(lg[i, j]) > 0.6 * vmax
                    ax.text(j, i, f"{m[i, j]:.2g}", ha="center", va="center", fontsize=SMALL,
                            color="white" if dark else "black")
        ax.set_xticks(range(len(anchors)), anchors, rotation=45, ha="right")
        ax.set_yticks(range(len(wls)), wls)
        ax.set_title(f"bcolzx advantage (anchor time / bcolzx time)\n{_label(n, v)}",
                     fontsize=TITLE)
    fig.tight_layout()
    path = os.path.join(outdir, "ratios.png")
    fig.savefig(path, dpi=DPI, bbox_inches="tight")
    plt.close(fig)
    return path


def _bars(doc, outdir, name, units, title, axis, figure=value):
    """Horizontal bars of `figure(record)` for the workloads measured in `units`, on a
    log axis labelled `axis` (one unit for every bar)."""
    plt = _plt()
    idx = _index(doc)
    n = _largest(doc)
    variant = _order(doc, "variant")[0]
    shapes = _order(doc, "shape")
    systems = systems_in(doc)
    wls = [w for w in WORKLOADS if UNIT[w] in units and any(
        k[3] == w and k[0] == n and k[1] == variant for k in idx)]
    if not wls:
        return None
    rows = [(wl, shape) for wl in wls for shape in shapes
            if any(idx.get((n, variant, shape, wl, s)) for s in systems)]
    fig, ax = plt.subplots(figsize=(9, 0.28 * len(rows) * max(3, len(systems)) / 3 + 1.8))
    h = 0.8 / len(systems)
    for k, s in enumerate(systems):
        ys, xs = [], []
        for i, (wl, shape) in enumerate(rows):
            rec = idx.get((n, variant, shape, wl, s))
            v = figure(rec) if value(rec) else None
            if v:
                ys.append(i + k * h - 0.4 + h / 2)
                xs.append(v)
        if xs:
            ax.barh(ys, xs, height=h, color=COLORS.get(s), label=SYSTEMS[s].label)
    ax.set_yticks(range(len(rows)), [f"{wl} ({shape})" for wl, shape in rows])
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlabel(axis)
    # The legend between the title and the bars: it hides no bar, and it is in view
    # where a reader starts on a tall figure.
    ax.legend(fontsize=SMALL, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=4)
    ax.set_title(f"{title},\n{_label(n, variant)}", fontsize=TITLE,
                 pad=18 * math.ceil(len(systems) / 4) + 14)
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    path = os.path.join(outdir, name)
    fig.savefig(path, dpi=DPI, bbox_inches="tight")
    plt.close(fig)
    return path


@_readable
def plot_throughput(doc: dict, outdir: str) -> str | None:
    """Bars of MB/s (uncompressed) for every throughput workload and system."""
    return _bars(doc, outdir, "throughput.png", {"MB/s"}, "Throughput, MB/s of uncompressed "
                 "data (higher is better)", "MB/s of uncompressed data (log scale)")


@_readable
def plot_latency(doc: dict, outdir: str) -> str | None:
    """Bars of the latency workloads' times, all in µs (lower is better).

    The single-call workloads (open, slice, getitem) are medians per call and
    the queries best times per query; one axis, in microseconds, holds both.
    """
    return _bars(doc, outdir, "latency.png", {"µs", "ms"}, "Latency (lower is better)",
                 "µs per call (open, slice, getitem) or per query (log scale)",
                 figure=lambda rec: rec["seconds"] * 1e6)


@_readable
def plot_compression(doc: dict, outdir: str) -> str | None:
    """Compression ratio (uncompressed / bytes on disk) by system and data."""
    plt = _plt()
    idx = _index(doc)
    n = _largest(doc)
    variants = _order(doc, "variant")
    shapes = _order(doc, "shape")
    systems = [s for s in systems_in(doc) if SYSTEMS[s].where != "memory" and s != "npy"]
    fig, axes = plt.subplots(len(variants), 1, figsize=(9, 3.6 * len(variants)), squeeze=False)
    any_data = False
    for ax, v in zip(axes[:, 0], variants):
        w = 0.8 / max(1, len(systems))
        for k, s in enumerate(systems):
            xs, ys = [], []
            for i, shape in enumerate(shapes):
                wl = "ct-build" if shape == "table" else "build-disk"
                r = idx.get((n, v, shape, wl, s))
                if r and r.get("cratio"):
                    xs.append(i + k * w - 0.4 + w / 2)
                    ys.append(r["cratio"])
            if ys:
                any_data = True
                ax.bar(xs, ys, width=w, color=COLORS.get(s), label=SYSTEMS[s].label)
        ax.set_xticks(range(len(shapes)), shapes)
        ax.set_yscale("log")
        ax.set_ylabel("uncompressed / on disk")
        ax.set_title(f"Compression ratio, {_label(n, v)}", fontsize=TITLE)
        ax.grid(axis="y", alpha=0.3)
    if not any_data:
        plt.close(fig)
        return None
    axes[0][0].legend(fontsize=SMALL, ncol=2)
    fig.tight_layout()
    path = os.path.join(outdir, "compression.png")
    fig.savefig(path, dpi=DPI, bbox_inches="tight")
    plt.close(fig)
    return path


@_readable
def plot_scaling(doc: dict, outdir: str) -> str | None:
    """Time against size (log-log) for every workload, first data shape, comparable settings."""
    plt = _plt()
    idx = _index(doc)
    sizes = sorted({r["size"] for r in doc["results"] if r["experiment"] == "main"})
    if len(sizes) < 2:
        return None
    variant = _order(doc, "variant")[0]
    shapes = _order(doc, "shape")
    wls = [w for w in WORKLOADS if any(k[3] == w for k in idx)]
    cols = 3
    rows = math.ceil(len(wls) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(3.0 * cols, 2.7 * rows + 1.0), squeeze=False)
    for ax, wl in zip(axes.flat, wls):
        shape = "table" if wl.startswith("ct-") else shapes[0]
        for s in systems_in(doc):
            pts = [(n, idx[(n, variant, shape, wl, s)]["seconds"]) for n in sizes
                   if (n, variant, shape, wl, s) in idx
                   and idx[(n, variant, shape, wl, s)].get("seconds")]
            if len(pts) >= 2:
                ax.plot(*zip(*pts), marker="o", ms=3, color=COLORS.get(s),
                        lw=2.5 if s == "bcolzx" else 1, label=SYSTEMS[s].label)
        if UNIT[wl] != "µs":  # a linear reference through bcolzx's first point
            p = [(n, idx[(n, variant, shape, wl, "bcolzx")]["seconds"]) for n in sizes
                 if idx.get((n, variant, shape, wl, "bcolzx"), {}).get("seconds")]
            if p:
                ax.plot(sizes, [p[0][1] * n / p[0][0] for n in sizes], ls=":", color="k",
                        lw=1, label="linear")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(f"{wl} ({shape})", fontsize=SMALL)
        ax.set_xlabel("items")
        ax.set_ylabel("seconds" + (" per call" if UNIT[wl] == "µs" else ""))
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(wls):]:
        ax.axis("off")
    _legend(fig, axes)
    fig.suptitle("Scaling: time against size (comparable settings)", fontsize=TITLE)
    fig.tight_layout(rect=(0, 0.08, 1, 0.98))
    path = os.path.join(outdir, "scaling.png")
    fig.savefig(path, dpi=DPI, bbox_inches="tight")
    plt.close(fig)
    return path


@_readable
def plot_memory(doc: dict, outdir: str) -> str | None:
    """Peak RSS growth against size for every workload."""
    plt = _plt()
    recs = [r for r in doc["results"] if r["experiment"] == "main" and "peak_mb" in r]
    sizes = sorted({r["size"] for r in recs})
    if len(sizes) < 2:
        return None
    wls = [w for w in WORKLOADS if any(r["workload"] == w for r in recs)]
    cols = 3
    rows = math.ceil(len(wls) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(3.0 * cols, 2.7 * rows + 1.0), squeeze=False)
    for ax, wl in zip(axes.flat, wls):
        for s in systems_in(doc):
            pts = sorted((r["size"], max(r["peak_mb"], 0.1)) for r in recs
                         if r["workload"] == wl and r["system"] == s)
            if len(pts) >= 2:
                ax.plot(*zip(*pts), marker="o", ms=3, color=COLORS.get(s),
                        lw=2.5 if s == "bcolzx" else 1, label=SYSTEMS[s].label)
        ax.plot(sizes, [n * 8 / 2**20 for n in sizes], ls=":", color="k", lw=1,
                label="size of the array")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(wl, fontsize=SMALL)
        ax.set_xlabel("items")
        ax.set_ylabel("peak RSS growth, MB")
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(wls):]:
        ax.axis("off")
    _legend(fig, axes)
    fig.suptitle("Peak memory against size (child process, first data shape)", fontsize=TITLE)
    fig.tight_layout(rect=(0, 0.08, 1, 0.98))
    path = os.path.join(outdir, "memory.png")
    fig.savefig(path, dpi=DPI, bbox_inches="tight")
    plt.close(fig)
    return path


@_readable
def plot_threads(doc: dict, outdir: str) -> str | None:
    """Speedup of the most threads over one, by system and workload."""
    plt = _plt()
    recs = [r for r in doc["results"] if r["experiment"].startswith("threads")]
    if not recs:
        return None
    counts = sorted({int(r["experiment"][7:]) for r in recs})
    lo, hi = counts[0], counts[-1]
    by = {(r["system"], r["workload"], int(r["experiment"][7:])): r for r in recs}
    systems = [s for s in SYSTEMS if any(r["system"] == s for r in recs)]
    wls = [w for w in WORKLOADS if any(r["workload"] == w for r in recs)]
    fig, ax = plt.subplots(figsize=(9, 4.8))
    w = 0.8 / max(1, len(systems))
    for k, s in enumerate(systems):
        xs, ys = [], []
        for i, wl in enumerate(wls):
            a, b = by.get((s, wl, lo)), by.get((s, wl, hi))
            if a and b and a.get("seconds") and b.get("seconds"):
                xs.append(i + k * w - 0.4 + w / 2)
                ys.append(a["seconds"] / b["seconds"])
        if ys:
            ax.bar(xs, ys, width=w, color=COLORS.get(s), label=SYSTEMS[s].label)
    ax.axhline(1, color="k", lw=0.8)
    ax.axhline(hi / lo, color="k", lw=0.8, ls=":")
    ax.set_xticks(range(len(wls)), wls, rotation=30, ha="right")
    ax.set_ylabel(f"time with {lo} / time with {hi} threads")
    n = recs[0]["size"]
    ax.legend(fontsize=SMALL, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=4)
    ax.set_title(f"Threads: speedup of {hi} over {lo}, {_fmt_n(n)} items", fontsize=TITLE,
                 pad=18 * math.ceil(len(systems) / 4) + 14)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    path = os.path.join(outdir, "threads.png")
    fig.savefig(path, dpi=DPI, bbox_inches="tight")
    plt.close(fig)
    return path
