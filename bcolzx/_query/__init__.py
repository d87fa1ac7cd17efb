"""The expression engine: safe parsing, typed evaluation, zone maps and blocks.

:mod:`~bcolzx._query.expr` parses and evaluates one expression on NumPy
arrays (python or numexpr virtual machine, same results);
:mod:`~bcolzx._query.zonemap` decides from per-column bounds whether a block
can hold a matching row; :mod:`~bcolzx._query.blocks` evaluates over columns
block by block on a thread pool.
"""

from bcolzx._query.blocks import evaluate, evaluate_blocks
from bcolzx._query.expr import FUNCTIONS, Expression, compile_expression
from bcolzx._query.zonemap import bounds_of, may_match

__all__ = [
    "FUNCTIONS",
    "Expression",
    "bounds_of",
    "compile_expression",
    "evaluate",
    "evaluate_blocks",
    "may_match",
]
