"""Child process of the peak-memory measurements: ``python -m bcolzx.bench._child SPEC``.

SPEC is the JSON of one measurement (see :func:`bcolzx.bench.runner.child_measure`);
the result is printed as one JSON line.
"""

import json
import sys

from bcolzx.bench.runner import child_measure


def main(argv=None) -> int:
    """Measure the workload described by the JSON argument; print the JSON result."""
    argv = sys.argv[1:] if argv is None else argv
    print(json.dumps(child_measure(json.loads(argv[0]))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
