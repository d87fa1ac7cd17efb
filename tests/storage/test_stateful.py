"""Random sequences of operations on a directory store equal a NumPy model."""

import shutil
import tempfile

import numpy as np
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from bcolzx._format.meta import Storage
from bcolzx._storage import ChunkedArray, DirectoryStore

CHUNKLEN = 7


class DirectoryStoreMachine(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.dir = tempfile.mkdtemp(prefix="bcolzx-stateful-")
        self.rootdir = self.dir + "/ds"
        storage = Storage(dtype="i8", chunklen=CHUNKLEN, chunks_per_superchunk=3)
        self.arr = ChunkedArray(DirectoryStore.create(self.rootdir, storage))
        self.model = np.empty(0, dtype="i8")      # what the array holds now
        self.flushed = np.empty(0, dtype="i8")    # what the last flush made durable
        self.counter = 0

    def teardown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def _values(self, n, constant):
        if constant:
            return np.full(n, constant, dtype="i8")
        self.counter += n
        return np.arange(self.counter - n, self.counter, dtype="i8")

    @rule(n=st.integers(0, 40), constant=st.sampled_from([0, 0, 0, 5]))
    def append(self, n, constant):
        values = self._values(n, constant)
        self.arr.append(values)
        self.model = np.concatenate([self.model, values])

    @precondition(lambda self: len(self.model) > 0)
    @rule(data=st.data(), constant=st.sampled_from([0, 0, 9]))
    def write(self, data, constant):
        start = data.draw(st.integers(0, len(self.model) - 1))
        n = data.draw(st.integers(1, len(self.model) - start))
        values = self._values(n, constant)
        self.arr.write(start, values)
        self.model[start:start + n] = values

    @rule(data=st.data())
    def resize(self, data):
        n = data.draw(st.integers(0, len(self.model) + 20))
        self.arr.resize(n, fill=np.int64(-3))
        if n > len(self.model):
            self.model = np.concatenate([self.model, np.full(n - len(self.model), -3, "i8")])
        elif n < len(self.model):
            self.model = self.model[:n].copy()
            self.flushed = self.model.copy()  # shrinking is durable at once
        # resizing to the current length changes nothing, durability included

    @rule()
    def flush(self):
        self.arr.flush()
        self.flushed = self.model.copy()

    @rule()
    def reopen_after_close(self):
        self.arr.close()
        self.flushed = self.model.copy()
        self.arr = ChunkedArray(DirectoryStore.open(self.rootdir))

    @rule()
    def reopen_without_flush(self):
        """Dropping unflushed work: the dataset is what the last flush made it."""
        self.arr.close(flush=False)
        self.arr = ChunkedArray(DirectoryStore.open(self.rootdir))
        self.model = self.flushed.copy()

    @rule()
    def compact(self):
        self.arr.compact()
        self.flushed = self.model.copy()

    @invariant()
    def equals_model(self):
        assert len(self.arr) == len(self.model)
        np.testing.assert_array_equal(self.arr.read(0, len(self.model)), self.model)


DirectoryStoreMachine.TestCase.settings = settings(
    max_examples=60, stateful_step_count=30, deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
test_directory_store_matches_numpy_model = DirectoryStoreMachine.TestCase
