"""Fuzz bcolzx's parsers of stored bytes with atheris (libFuzzer), for millions of inputs.

The targets are those of ``tests/reliability/fuzzing.py`` (superchunk header,
index copies, whole superchunk files, chunks, legacy ``.blp`` files, every
JSON metadata file).  A target fails when the parser raises anything but an
exception of bcolzx's hierarchy, crashes the interpreter, or hangs (libFuzzer's
``-timeout``).  Each target starts from valid files built by bcolzx, which
libFuzzer mutates with coverage feedback from the instrumented Python code.

Usage (from the source tree, with bcolzx built in place; needs ``pip install
atheris``)::

    python benchmarks/fuzz_formats.py --runs 1000000          # every target, in turn
    python benchmarks/fuzz_formats.py --target json --runs 100000

``--runs`` is the total number of inputs, split over the targets in
proportion to :data:`SHARE` (the slow, file-based targets get fewer).  The
input of a failure is kept in ``--artifacts`` (``./fuzz-artifacts/``).  The
summary printed last (one line of JSON) gives, per target, the inputs run,
the seconds taken and the result; it is what docs/reliability.md publishes.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

#: Share of the inputs each target gets.
SHARE = {"header": 0.2, "index": 0.2, "chunk": 0.2, "blp": 0.2, "superchunk": 0.1,
         "json": 0.1}


def _one(target: str, runs: int, corpus: str, artifacts: str) -> None:
    """Run in the child process: fuzz `target` for `runs` inputs (libFuzzer's loop)."""
    import atheris

    sys.path.insert(0, ROOT)
    with atheris.instrument_imports(include=["bcolzx"]):
        import bcolzx  # noqa: F401 - instrumented for coverage
    from tests.reliability import fuzzing

    def test_one_input(data: bytes) -> None:
        fuzzing.run(target, data)

    atheris.Setup([sys.argv[0], f"-runs={runs}", "-timeout=20", "-rss_limit_mb=4096",
                   "-print_final_stats=1", f"-artifact_prefix={artifacts}", corpus],
                  test_one_input)
    atheris.Fuzz()


def _write_corpus(target: str, path: str) -> None:
    sys.path.insert(0, ROOT)
    from tests.reliability import fuzzing

    os.makedirs(path, exist_ok=True)
    for i, seed in enumerate(fuzzing.seeds()[target]):
        with open(os.path.join(path, f"seed{i}"), "wb") as f:
            f.write(seed)


def _run_target(target: str, runs: int, workdir: str, artifacts: str) -> dict:
    corpus = os.path.join(workdir, target)
    _write_corpus(target, corpus)
    start = time.monotonic()
    proc = subprocess.run([sys.executable, __file__, "--child", target, "--runs", str(runs),
                           "--corpus", corpus, "--artifacts", artifacts],
                          capture_output=True, text=True, cwd=workdir)
    seconds = time.monotonic() - start
    done = re.findall(r"Done (\d+) runs in", proc.stderr)
    stats = dict(re.findall(r"stat::(\w+):\s+(\d+)", proc.stderr))
    ok = proc.returncode == 0 and bool(done)
    out = {"inputs": int(done[-1]) if done else int(stats.get("number_of_executed_units", 0)),
           "seconds": round(seconds, 1), "result": "ok" if ok else "FAILED"}
    if not ok:
        out["log"] = proc.stderr[-4000:]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1_000_000, help="total inputs")
    parser.add_argument("--target", choices=sorted(SHARE), help="one target only")
    parser.add_argument("--artifacts", default=os.path.join(os.getcwd(), "fuzz-artifacts", ""),
                        help="where libFuzzer writes the inputs of failures (default "
                             "./fuzz-artifacts/)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--corpus", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        _one(args.child, args.runs, args.corpus, args.artifacts)
        return 0
    os.makedirs(args.artifacts, exist_ok=True)
    args.artifacts = os.path.join(os.path.abspath(args.artifacts), "")
    targets = [args.target] if args.target else list(SHARE)
    total = sum(SHARE[t] for t in targets)
    results = {}
    with tempfile.TemporaryDirectory(prefix="bcolzx-fuzz-") as workdir:
        for t in targets:
            runs = max(1, round(args.runs * SHARE[t] / total))
            results[t] = _run_target(t, runs, workdir, args.artifacts)
            print(f"{t}: {results[t]['inputs']} inputs in {results[t]['seconds']} s: "
                  f"{results[t]['result']}", flush=True)
            if "log" in results[t]:
                print(results[t]["log"], file=sys.stderr)
    summary = {"inputs": sum(r["inputs"] for r in results.values()),
               "failed": [t for t, r in results.items() if r["result"] != "ok"],
               "targets": {t: {k: v for k, v in r.items() if k != "log"}
                           for t, r in results.items()}}
    print(json.dumps(summary))
    return 1 if summary["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
