"""``bcolzx install-shim`` and ``bcolzx uninstall-shim``: ``import bcolz`` gives bcolzx.

The same commands as ``python -m bcolzx.compat``, from the console script,
which does not put the current directory first on ``sys.path``: they work
from the root of a source clone too (the README's legacy route), where
``python -m`` would import the unbuilt tree.
"""

from __future__ import annotations

import argparse

__all__ = ["register"]


def register(sub) -> None:
    """Add ``install-shim`` and ``uninstall-shim`` to the subcommands."""
    from bcolzx.compat import shim

    for name, text in shim.COMMANDS:
        p = sub.add_parser(name, help=text)
        shim.add_arguments(p, name)
        p.set_defaults(run=_run, subparser=p)


def _run(args: argparse.Namespace) -> int:
    from bcolzx.compat import shim

    return shim.run(args)
