"""pytest plugin for :mod:`legacy_suite`: legacy bcolz's tests, with ``bcolz`` = bcolzx.

Loaded with ``-p legacy_plugin`` in the interpreter that runs the legacy
suite.  At configuration time, before any test module is imported, it runs
``bcolzx.compat.install(allow_pickle=True)`` and registers the extracted
``bcolz/tests`` directory (``$BCOLZX_LEGACY_TESTS``) as the package
``bcolz.tests``; at the end it writes the outcome of every test to
``$BCOLZX_LEGACY_REPORT``.

``allow_pickle=True``: legacy bcolz stored object arrays with pickle and read
them back without asking, and its suite exercises that; bcolzx refuses
pickles unless told (docs/migration.md, "Object dtype"), and a legacy user
who stores objects makes exactly this one choice (``install(allow_pickle=True)``
or a shim written with ``--allow-pickle``).
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys

_outcomes: dict[str, str] = {}


def pytest_configure(config):
    import bcolzx.compat

    bcolz = bcolzx.compat.install(allow_pickle=True)  # legacy pickled objects (docstring)
    assert getattr(bcolz, "__bcolzx_alias__", False), "bcolz is not bcolzx's alias"
    tests = os.environ["BCOLZX_LEGACY_TESTS"]
    # 'bcolz' holds no test package of its own: the extracted one is grafted on.
    init = os.path.join(tests, "__init__.py")
    spec = importlib.util.spec_from_file_location(
        "bcolz.tests", init, submodule_search_locations=[tests])
    module = importlib.util.module_from_spec(spec)
    sys.modules["bcolz.tests"] = module
    spec.loader.exec_module(module)
    # pytest imports the test files by the name their directory gives them
    # (bcolz/tests/...): 'bcolz' must resolve to the alias, never to a
    # directory on sys.path, and the extracted tree has no bcolz/__init__.py.
    assert sys.modules["bcolz"] is bcolz


def pytest_collectreport(report):
    if report.failed:
        _outcomes[report.nodeid] = "error"


def pytest_runtest_logreport(report):
    nodeid = report.nodeid
    if report.when == "setup":
        if report.skipped:
            _outcomes[nodeid] = "skipped"
        elif report.failed:
            _outcomes[nodeid] = "error"
    elif report.when == "call":
        if report.skipped:
            _outcomes[nodeid] = "skipped"
        elif report.failed:
            _outcomes[nodeid] = "failed"
        else:
            _outcomes[nodeid] = "passed"
    elif report.when == "teardown" and report.failed and _outcomes.get(nodeid) == "passed":
        _outcomes[nodeid] = "error"


def pytest_sessionfinish(session, exitstatus):
    path = os.environ.get("BCOLZX_LEGACY_REPORT")
    if not path:
        return
    counts = {k: 0 for k in ("passed", "failed", "error", "skipped")}
    for outcome in _outcomes.values():
        counts[outcome] += 1
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"counts": counts,
                   "not_passed": {n: o for n, o in _outcomes.items() if o != "passed"},
                   "exitstatus": int(exitstatus)}, f, indent=1, sort_keys=True)
