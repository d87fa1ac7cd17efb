"""A writer killed with SIGKILL at random instants never loses flushed rows."""

import random
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from bcolzx._format.meta import Storage
from bcolzx._storage import ChunkedArray, DirectoryStore

# Row i always holds the value i, so any reader can check every value it sees.
WRITER = textwrap.dedent("""
    import random, sys
    import numpy as np
    from bcolzx._storage import ChunkedArray, DirectoryStore
    rootdir, seed = sys.argv[1], int(sys.argv[2])
    rng = random.Random(seed)
    arr = ChunkedArray(DirectoryStore.open(rootdir))
    print("ready", flush=True)
    while True:
        op = rng.random()
        n = len(arr)
        if op < 0.6:
            k = rng.randint(1, 300)
            arr.append(np.arange(n, n + k, dtype="i8"))
        elif op < 0.8 and n:
            a = rng.randrange(n)
            b = min(n, a + rng.randint(1, 200))
            arr.write(a, np.arange(a, b, dtype="i8"))
        elif op < 0.97:
            arr.flush()
            print(len(arr), flush=True)
        else:
            arr.compact()
            print(len(arr), flush=True)
""")


def _check(rootdir):
    arr = ChunkedArray(DirectoryStore.open(rootdir, readonly=True))
    got = arr.read(0, len(arr))
    np.testing.assert_array_equal(got, np.arange(len(arr), dtype="i8"))
    return len(arr)


@pytest.mark.parametrize("seed", range(3))
def test_sigkill_at_random_instants_keeps_every_flushed_row(tmp_path, seed):
    rootdir = str(tmp_path / "ds")
    storage = Storage(dtype="i8", chunklen=64, chunks_per_superchunk=8)
    DirectoryStore.create(rootdir, storage)
    rng = random.Random(seed)
    flushed = 0
    for kill in range(6):
        child = subprocess.Popen(
            [sys.executable, "-c", WRITER, rootdir, str(seed * 100 + kill)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=str(tmp_path),
        )
        # Past start-up (however long imports take on a loaded machine), then
        # somewhere in the loop.
        assert child.stdout.readline() == "ready\n", child.stderr.read()
        time.sleep(0.05 + rng.random() * 0.4)
        child.send_signal(signal.SIGKILL)
        out, err = child.communicate(timeout=30)
        reported = [int(line) for line in out.split()]
        if reported:
            flushed = reported[-1]
        assert child.returncode == -signal.SIGKILL, err
        length = _check(rootdir)  # opens, every value right
        assert length >= flushed, f"kill {kill}: {length} rows, {flushed} were flushed"
        flushed = length
    assert flushed > 0
