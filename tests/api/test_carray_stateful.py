"""Random sequences of carray operations equal the same operations on a NumPy array."""

import shutil
import tempfile

import numpy as np
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from bcolzx import carray


class CarrayMachine(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.dir = tempfile.mkdtemp(prefix="bcolzx-carray-")

    def teardown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    @initialize(dtype=st.sampled_from(["i8", "f4", "u1"]), chunklen=st.sampled_from([1, 5, 16]),
                disk=st.booleans())
    def start(self, dtype, chunklen, disk):
        self.dtype, self.disk = np.dtype(dtype), disk
        self.rootdir = self.dir + "/c" if disk else None
        self.model = np.arange(7).astype(self.dtype)
        self.ca = carray(self.model, chunklen=chunklen, dflt=3, rootdir=self.rootdir, mode="w")

    def _values(self, data, n):
        return np.array(data.draw(st.lists(st.integers(0, 100), min_size=n, max_size=n)),
                        dtype=self.dtype)

    @rule(data=st.data(), n=st.integers(0, 40))
    def append(self, data, n):
        v = self._values(data, n)
        self.ca.append(v)
        self.model = np.concatenate([self.model, v])

    @precondition(lambda self: len(self.model) > 0)
    @rule(data=st.data())
    def trim(self, data):
        k = data.draw(st.integers(0, len(self.model)))
        self.ca.trim(k)
        self.model = self.model[: len(self.model) - k]

    @rule(n=st.integers(0, 60))
    def resize(self, n):
        self.ca.resize(n)
        grown = np.full(max(0, n - len(self.model)), 3, dtype=self.dtype)
        self.model = np.concatenate([self.model[:n], grown])

    @precondition(lambda self: len(self.model) > 0)
    @rule(data=st.data())
    def setitem(self, data):
        n = len(self.model)
        kind = data.draw(st.sampled_from(["int", "slice", "list", "mask"]))
        if kind == "int":
            key = data.draw(st.integers(-n, n - 1))
        elif kind == "slice":
            key = slice(data.draw(st.integers(-n - 2, n + 2)), data.draw(st.integers(-n - 2, n + 2)),
                        data.draw(st.sampled_from([1, 1, 2, 3, -1, -2])))
        elif kind == "list":
            key = data.draw(st.lists(st.integers(-n, n - 1), max_size=8))
        else:
            key = np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)))
        count = len(np.arange(n)[key].reshape(-1))
        value = self._values(data, count) if kind != "int" else self._values(data, 1)[0]
        if kind == "list" and len(set(np.arange(n)[key].tolist())) != count:
            value = value[:1].repeat(count)  # NumPy's result with repeats is order-defined
        self.ca[key] = value
        self.model[key] = value

    @rule()
    def flush_and_reopen(self):
        if self.disk:
            self.ca.flush()
            self.ca = carray(rootdir=self.rootdir, mode="a")

    @rule()
    def copy(self):
        self.ca = self.ca.copy()
        self.disk, self.rootdir = False, None

    @invariant()
    def equal(self):
        if not hasattr(self, "ca"):
            return
        assert len(self.ca) == len(self.model)
        np.testing.assert_array_equal(self.ca[:], self.model)
        if len(self.model):
            assert self.ca[-1] == self.model[-1].item()
            assert self.ca.sum() == self.model.sum()


CarrayMachine.TestCase.settings = settings(
    max_examples=50, stateful_step_count=25, deadline=None,
    suppress_health_check=[HealthCheck.too_slow])
test_carray_matches_numpy_model = CarrayMachine.TestCase
