"""``python -m bcolzx.compat install-shim|uninstall-shim``: the shim's command line."""

import sys

from bcolzx.compat.shim import main

sys.exit(main())
