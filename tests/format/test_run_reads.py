"""Runs of chunks read in one pread (bcolzx/_format/superchunk.py), large runs included."""

import os

import numpy as np
import pytest

import bcolzx
from bcolzx._format import superchunk
from bcolzx.errors import CorruptDataError, TruncatedDataError


@pytest.mark.parametrize("n", [1000, superchunk._LARGE_RUN, superchunk._LARGE_RUN + 12345])
def test_a_run_reads_exactly_the_bytes_asked(tmp_path, n):
    data = np.random.default_rng(n).integers(0, 256, n + 100, dtype=np.uint8).tobytes()
    (tmp_path / "f").write_bytes(data)
    fd = os.open(tmp_path / "f", os.O_RDONLY)
    try:
        assert bytes(superchunk._pread_run(fd, n, 50, "f")) == data[50:50 + n]
        with pytest.raises(TruncatedDataError, match="file ends at byte"):
            superchunk._pread_run(fd, n, 101, "f")  # one byte past the end
    finally:
        os.close(fd)


def test_a_large_run_of_a_truncated_file_raises(tmp_path):
    # incompressible rows: every chunk is stored at full size, and one read of all
    # the chunks of the file is a run of ~8 MB
    a = np.random.default_rng(0).random(1 << 20)
    c = bcolzx.carray(a, rootdir=str(tmp_path / "c"), mode="w", chunklen=1 << 15)
    c.flush()
    np.testing.assert_array_equal(bcolzx.open(str(tmp_path / "c"))[:], a)
    path = tmp_path / "c" / "data" / "__0.bin"
    os.truncate(path, path.stat().st_size - 1000)
    r = bcolzx.open(str(tmp_path / "c"))
    with pytest.raises(CorruptDataError, match="chunk 31"):  # the last chunk is cut
        r[:]
    with pytest.raises(CorruptDataError, match="chunk 31"):
        r.sum()
    # the chunks before it still read, in one large run
    np.testing.assert_array_equal(r[:31 << 15], a[:31 << 15])
