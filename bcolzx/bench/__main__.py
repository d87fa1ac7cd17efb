"""``python -m bcolzx.bench``: the same as ``bcolzx bench``."""

import sys

from bcolzx.bench.cli import main

if __name__ == "__main__":
    sys.exit(main())
