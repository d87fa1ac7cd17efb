"""Early write-back hints: harmless, checked arguments, data unchanged."""

import os
import sys

import pytest

from bcolzx._ext import writeback


def test_start_on_a_written_range_keeps_the_bytes(tmp_path):
    path = tmp_path / "f"
    data = os.urandom(1 << 16)
    fd = os.open(path, os.O_CREAT | os.O_WRONLY, 0o644)
    try:
        os.pwrite(fd, data, 4096)
        writeback.start(fd, 4096, len(data))
        writeback.start(fd, 0, 0)  # to the end of the file
        os.fdatasync(fd)
    finally:
        os.close(fd)
    assert path.read_bytes()[4096:] == data


def test_bad_ranges_are_refused():
    with pytest.raises(ValueError, match="bad range"):
        writeback.start(0, -1, 10)
    with pytest.raises(ValueError, match="bad range"):
        writeback.start(0, 0, -10)


def test_available_on_linux():
    assert writeback.AVAILABLE == sys.platform.startswith("linux")
