"""The ``bcolzx`` command line, one module per command (or pair of commands).

Each command module has ``register(subparsers)``, which adds its
subcommand(s) with ``run`` as the default of ``args.run``: a function of the
parsed arguments that returns the exit status.  :mod:`bcolzx.__main__`
builds the parser from :data:`COMMANDS` and turns errors into one-line
messages and exit statuses (:mod:`bcolzx.cli.common`).
"""

from __future__ import annotations

__all__ = ["COMMANDS"]

#: The modules of ``bcolzx.cli`` that register subcommands, in ``--help`` order.
COMMANDS = ("info", "ls", "verify", "repair", "convert", "compact", "transfer", "demo", "bench",
            "shim")
