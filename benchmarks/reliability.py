"""Run the reliability campaigns at the published size and print their figures.

The harnesses live in ``tests/reliability/`` (see docs/reliability.md); this
script runs them from the source tree, with bcolzx built in place::

    python benchmarks/reliability.py crash --kills 1000        # SIGKILL campaign
    python benchmarks/reliability.py corruption                 # byte flips & co.
    python benchmarks/reliability.py salvage                    # chunks lost per damage
    python benchmarks/reliability.py fuzz --runs 1000000        # = fuzz_formats.py

Each prints a human summary, then one line of JSON with every figure.  The
exit status is 1 when a campaign found a failure (a lost or wrong row, an
unreadable dataset, undetected damage, an exception outside bcolzx's
hierarchy).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="campaign", required=True)
    crash = sub.add_parser("crash", help="kill writers with SIGKILL at random instants")
    crash.add_argument("--kills", type=int, default=1000)
    crash.add_argument("--seed", type=int, default=0)
    corrupt = sub.add_parser("corruption", help="flip, truncate, delete and swap files")
    corrupt.add_argument("--chunk-flips", type=int, default=10_000)
    corrupt.add_argument("--masks", type=int, default=8, help="XOR masks per byte")
    corrupt.add_argument("--seed", type=int, default=0)
    salvage = sub.add_parser("salvage", help="chunks each damage costs; what repair recovers")
    salvage.add_argument("--masks", type=int, default=8, help="XOR masks per byte")
    salvage.add_argument("--seed", type=int, default=0)
    fuzz = sub.add_parser("fuzz", help="fuzz the parsers with atheris")
    fuzz.add_argument("--runs", type=int, default=1_000_000)
    args = parser.parse_args(argv)
    if args.campaign == "fuzz":
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import fuzz_formats

        return fuzz_formats.main(["--runs", str(args.runs)])
    sys.path.insert(0, ROOT)
    from tests.reliability import campaigns

    with tempfile.TemporaryDirectory(prefix="bcolzx-reliability-") as workdir:
        if args.campaign == "crash":
            result = campaigns.crash_campaign(workdir, args.kills, args.seed)
            failed = result["kills"] < args.kills or bool(result["failures"])
            for line in result["failures"]:
                print(line)
        elif args.campaign == "salvage":
            result = campaigns.salvage_campaign(workdir, args.masks, seed=args.seed)
            for name, figures in result["families"].items():
                print(f"{name}: {figures}")
            print(f"repair: {result['repair']}")
            failed = bool(result["wrong"] or result["repair"]["bad"])
        else:
            result = campaigns.corruption_campaign(workdir, args.chunk_flips, args.masks,
                                                   args.seed)
            print(result["table"])
            print("legacy bcolz (format v1):")
            print(result["legacy_table"])
            failed = bool(result["wrong"] or result["escaped"] or result["unnamed"])
    print(json.dumps({k: v for k, v in result.items() if k not in ("table", "legacy_table")}))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
