"""Shared fixtures for the bcolzx test suite."""

import json
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"
LEGACY = DATA / "legacy_bcolz"


@pytest.fixture(scope="session")
def legacy_manifest():
    """The MANIFEST of the legacy bcolz fixtures (see tests/data/legacy_bcolz/README.md)."""
    return json.loads((LEGACY / "MANIFEST.json").read_text())


def pytest_addoption(parser):
    parser.addoption("--stress", action="store_true", default=False,
                     help="also run the long harnesses marked 'stress' (minutes to hours; "
                          "the published figures in docs/ come from these runs)")


def pytest_collection_modifyitems(config, items):
    if config.getoption("--stress"):
        return
    skip = pytest.mark.skip(reason="long harness, run on request: pytest --stress -m stress")
    for item in items:
        if "stress" in item.keywords:
            item.add_marker(skip)
