"""``bcolzx bench``: bcolzx against HDF5, Blosc2, Zarr, NumPy, pandas and legacy bcolz.

The suite runs bcolzx and every installed anchor in the same process, on the
same data, and reports bcolzx's figures and its advantage over each anchor
(anchor time / bcolzx time). It is importable code, so the installed command
works without the source tree::

    bcolzx bench                      # quick run, under a minute
    bcolzx bench --full --json r.json --plot plots/

From Python::

    from bcolzx.bench import Config, run, text_report
    doc = run(Config(sizes=[10**6], systems=["bcolzx", "numpy"]))
    print(text_report(doc))

Modules: :mod:`~bcolzx.bench.data` (the data), :mod:`~bcolzx.bench.systems`
(one adapter per system, and the registry; the HDF5, Blosc2 and Zarr ones in
:mod:`~bcolzx.bench.chunked`, the interface in :mod:`~bcolzx.bench.adapter`),
:mod:`~bcolzx.bench.runner` (workloads, timing,
peak memory), :mod:`~bcolzx.bench.report` (tables), :mod:`~bcolzx.bench.plots`
(PNG plots, with matplotlib), :mod:`~bcolzx.bench.cli` (the command).
Importing this package imports no optional dependency.
"""

from bcolzx.bench.cli import main
from bcolzx.bench.report import markdown_report, text_report
from bcolzx.bench.runner import WORKLOADS, Config, run
from bcolzx.bench.systems import SYSTEMS

__all__ = ["Config", "run", "main", "text_report", "markdown_report", "WORKLOADS", "SYSTEMS"]
