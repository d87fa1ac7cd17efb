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
