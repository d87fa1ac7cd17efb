"""The ``bcolzx bench`` subcommand: options, progress line, outputs."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

from bcolzx.bench import data as D  # noqa: N812 - short: used in long expressions
from bcolzx.bench.runner import GROUPS, UNIT, WORKLOADS, Config, expand, parse_size, run
from bcolzx.bench.systems import ALIASES, SYSTEMS

DESCRIPTION = """\
Benchmark bcolzx against the anchors that are installed (NumPy in memory and
.npy files, h5py+hdf5plugin Blosc2, PyTables Blosc2, python-blosc2 SChunk and
NDArray/CTable, Zarr v3 with and without sharding, pandas, legacy bcolz), in
one process, on the same data, and print bcolzx's figure and its advantage
over each anchor (anchor time / bcolzx time). The default is a quick run
(1e6 items, comparable settings) that takes well under a minute; install every
anchor with: pip install 'bcolzx[bench]'."""

EPILOG = """\
examples:
  bcolzx bench                                   quick run, every installed anchor
  bcolzx bench --systems h5py,tables --workloads read,sum
  bcolzx bench --size 1e7 --json out.json --plot plots/
  bcolzx bench --full                            sizes 1e6,1e7,1e8, both settings,
                                                 peak memory, 1 vs 2 threads (long)
  bcolzx bench --workloads groupby,reduce --size 1e7,1e8
                                                 analytics against pandas, DuckDB, Polars
workloads: """ + ", ".join(WORKLOADS) + """ (groups: """ + ", ".join(GROUPS) + """;
  on their own data: groupby, reduce)
systems: """ + ", ".join(SYSTEMS) + """ (groups: """ + ", ".join(ALIASES) + ")"


def _sizes(text: str) -> list[int]:
    try:
        return [parse_size(t) for t in text.split(",") if t.strip()]
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Add the options of ``bcolzx bench`` to a parser."""
    p.add_argument("--size", type=_sizes, default=None, metavar="N[,N...]",
                   help="items per array (and rows of the table); a comma list runs the "
                        "scaling study; default 1e6 (quick), 1e6,1e7,1e8 with --full")
    p.add_argument("--workloads", default="all", metavar="LIST",
                   help="comma list of workloads or groups (default all)")
    p.add_argument("--systems", default="all", metavar="LIST",
                   help="comma list of systems or groups (default all that are installed; "
                        "bcolzx always runs)")
    p.add_argument("--shapes", default=",".join(D.SHAPES), metavar="LIST",
                   help="data shapes of the array workloads (default %(default)s)")
    p.add_argument("--settings", choices=("same", "default", "both"), default=None,
                   help="'same': comparable settings (LZ4, clevel 5, shuffle, ~1 MiB chunks); "
                        "'default': each system's defaults; default 'same' ('both' with --full)")
    p.add_argument("--threads", type=int, default=None,
                   help="threads of every system that has a knob (default: all CPUs, at most 8)")
    p.add_argument("--repeat", type=int, default=None,
                   help="keep the best of this many runs (default 3)")
    p.add_argument("--budget", type=float, default=None,
                   help="stop repeating a measurement after this many seconds "
                        "(default 0.5, 5 with --full)")
    p.add_argument("--memory", action="store_true",
                   help="also measure the peak memory of every workload in a child process")
    p.add_argument("--thread-scaling", action="store_true",
                   help="also run build-disk/read/sum/broad query with 1 and N threads")
    p.add_argument("--full", action="store_true",
                   help="the documented full run: --size 1e6,1e7,1e8 --settings both --memory "
                        "--thread-scaling, longer budgets (an hour or more)")
    p.add_argument("--batch", type=float, default=1e5, help="append batch, items (default 1e5)")
    p.add_argument("--no-durable", dest="durable", action="store_false",
                   help="do not fsync the anchors' files after they write (bcolzx always "
                        "commits durably, so by default every system pays the fsync)")
    p.add_argument("--json", metavar="PATH", help="write every measurement to this JSON file")
    p.add_argument("--plot", metavar="DIR", help="write PNG plots into this directory "
                                                 "(needs matplotlib)")
    p.add_argument("--markdown", metavar="PATH", help="write the tables as Markdown")
    p.add_argument("--absolute", action="store_true",
                   help="also print every system's own figures, not only the ratios")
    p.add_argument("--from-json", metavar="PATH",
                   help="run nothing: report (and --markdown, --plot) a saved --json file")
    p.add_argument("--dir", default=None, help="work directory (default: a temporary one)")
    p.add_argument("--keep", action="store_true", help="keep the files written")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--quiet", action="store_true", help="no progress line")


def config_from(args: argparse.Namespace) -> Config:
    """The :class:`Config` of parsed options (``--full`` fills what was not given).

    Raises
    ------
    ValueError
        For unknown workloads, systems or shapes.
    """
    full = args.full
    sizes = args.size or ([10**6, 10**7, 10**8] if full else [10**6])
    settings = args.settings or ("both" if full else "same")
    threads = args.threads or min(os.cpu_count() or 1, 8)
    shapes = expand(args.shapes, D.SHAPES, None, "data shape")
    return Config(
        sizes=sizes, shapes=shapes,
        workloads=expand(args.workloads, WORKLOADS, GROUPS, "workload"),
        systems=expand(args.systems, SYSTEMS, ALIASES, "system"),
        variants=["same", "default"] if settings == "both" else [settings],
        repeat=args.repeat or 3,
        budget=args.budget if args.budget is not None else (5.0 if full else 0.5),
        latency_budget=1.0 if full else 0.1,
        max_calls=20000 if full else 2000,
        nthreads=threads, batch=int(args.batch),
        memory=args.memory or full, thread_scaling=args.thread_scaling or full,
        durable=args.durable, seed=args.seed, workdir=args.dir, keep=args.keep)


class Progress:
    """Progress of a run on stderr, for a person watching or for a log.

    On a terminal: a tqdm bar of the measurements naming the one under way
    (tqdm is in the ``bench`` extra), or without tqdm one line rewritten in
    place.  Off a terminal (a log file, CI), where a rewritten line would
    show nothing until the end: a first line with the number of
    measurements, then one line per finished measurement with its figure
    and how far its repeats spread, so that the log grows as the run goes.
    """

    def __init__(self, enabled: bool = True, stream=None) -> None:
        from bcolzx.cli.progress import _isatty

        self.stream = stream or sys.stderr
        self.enabled = enabled
        self.tty = enabled and _isatty(self.stream)
        self.t0 = time.perf_counter()
        self.width = 0
        self.bar = None
        self.started = False

    def __call__(self, done: int, total: int, label: str) -> None:
        """Before measurement `done` of `total`."""
        if not self.tty:
            if self.enabled and not self.started:
                self.stream.write(f"bcolzx bench: {total} measurements; a line as each "
                                  "finishes\n")
                self.stream.flush()
            self.started = True
            return
        if self.bar is None:
            from bcolzx.cli.progress import bar

            self.bar = bar(total, "bench", unit="cell", stream=self.stream, delay=0)
        if self.bar.drawing:
            self.bar.note(label)
            return
        line = f"[{done}/{total}] {time.perf_counter() - self.t0:5.0f} s  {label}"
        self.stream.write("\r" + line.ljust(self.width))
        self.width = len(line)
        self.stream.flush()

    def finished(self, done: int, total: int, label: str, rec: dict) -> None:
        """After measurement `done` of `total`, with its record."""
        if self.bar is not None:
            self.bar(1)
        if not self.enabled or self.tty:
            return
        now = time.perf_counter() - self.t0
        self.stream.write(f"[{done}/{total}] {now:5.0f} s  {label}: {_outcome(rec)}\n")
        self.stream.flush()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None
        if self.tty and self.width:
            self.stream.write("\r" + " " * self.width + "\r")
            self.stream.flush()
            self.width = 0


def _outcome(rec: dict) -> str:
    """A finished measurement in a few words: its figure, spread and repeats."""
    from bcolzx.bench.report import fmt_spread, fmt_value, value

    if "error" in rec:
        return "error: " + rec["error"].splitlines()[0][:120]
    text = fmt_value(value(rec), UNIT[rec["workload"]])
    if "runs" in rec:
        text += f", {rec['runs']} run{'s' * (rec['runs'] != 1)}"
    elif "calls" in rec:
        text += f" (median), {rec['calls']:,} calls"
    if rec.get("spread") is not None:
        text += f", spread {fmt_spread(rec)}"
    return text


def run_from_args(args: argparse.Namespace) -> int:
    """Run ``bcolzx bench``; returns the exit status."""
    if args.from_json:
        with open(args.from_json) as f:
            doc = json.load(f)
        return _outputs(doc, args)
    from bcolzx.bench import analytics  # the groupby and reduce groups: their own data

    status = analytics.run_from_args(args)
    if status is not None:
        return status
    try:
        cfg = config_from(args)
    except ValueError as exc:
        print(f"bcolzx bench: error: {exc}", file=sys.stderr)
        return 2
    if max(cfg.sizes) > 10**8:
        need = max(cfg.sizes) * 8 * 3 / 2**30
        print(f"bcolzx bench: {max(cfg.sizes):,} items needs about {need:.0f} GiB of memory "
              "and a long time", file=sys.stderr)
    if args.plot:
        from bcolzx.bench.plots import have_matplotlib
        if not have_matplotlib():
            print("bcolzx bench: --plot needs matplotlib (pip install matplotlib, or "
                  "pip install 'bcolzx[bench]'); no plots will be written", file=sys.stderr)
            args.plot = None
    progress = Progress(enabled=not args.quiet)
    command = "bcolzx bench " + " ".join(getattr(args, "argv", []) or [])

    def checkpoint(doc: dict) -> None:
        # The results so far, replaced atomically: a stopped run keeps them
        # (``bcolzx bench --from-json`` makes the tables and plots).
        doc["command"] = command
        _write_json(doc, args.json)

    try:
        doc = run(cfg, progress, checkpoint if args.json else None)
    except (ValueError, RuntimeError) as exc:
        progress.close()
        print(f"bcolzx bench: error: {exc}", file=sys.stderr)
        return 2
    finally:
        progress.close()
    doc["command"] = command
    if args.json:
        _write_json(doc, args.json)
    return _outputs(doc, args)


def _write_json(doc: dict, path: str) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1, default=_json_default)
    os.replace(tmp, path)


def _outputs(doc: dict, args: argparse.Namespace) -> int:
    from bcolzx.bench.report import markdown_report, text_report

    print(text_report(doc, absolute=args.absolute))
    if args.json and not args.from_json:
        print(f"wrote {args.json}")
    if args.plot:
        from bcolzx.bench.plots import have_matplotlib
        if not have_matplotlib():
            print("bcolzx bench: --plot needs matplotlib (pip install matplotlib, or "
                  "pip install 'bcolzx[bench]'); no plots written", file=sys.stderr)
            args.plot = None
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(markdown_report(doc))
        print(f"wrote {args.markdown}")
    if args.plot:
        from bcolzx.bench.plots import plot_all
        for path in plot_all(doc, args.plot):
            print(f"wrote {path}")
    return 0


def _json_default(o):
    import numpy as np
    if isinstance(o, np.generic):
        return o.item()
    raise TypeError(f"not JSON serializable: {type(o).__name__}")


def main(argv: list[str] | None = None) -> int:
    """``python -m bcolzx.bench`` (the same as ``bcolzx bench``)."""
    p = argparse.ArgumentParser(prog="bcolzx bench", description=DESCRIPTION, epilog=EPILOG,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(p)
    args = p.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    return run_from_args(args)
