"""Fixtures of the string tests."""

import pytest

import bcolzx


@pytest.fixture(params=["memory", "disk"])
def make(request, tmp_path):
    """A carray of the values (on disk: written, then reopened read-only; its
    last rows, past the full chunks, are then stored and not yet decoded)."""
    def make(values, **kwargs):
        if request.param == "memory":
            return bcolzx.carray(values, **kwargs)
        root = str(tmp_path / f"c{len(list(tmp_path.iterdir()))}")
        bcolzx.carray(values, rootdir=root, **kwargs).flush()
        return bcolzx.open(root, mode="r")
    return make
