"""Variable-length chunks (docs/format/README.md §2d) and pickled items, byte by byte.

The chunk layout is checked against an encoder written here from the spec's
text, and every rule a reader MUST check is broken once to see it refused.
"""

import pickle
import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bcolzx._format import pickles, vlen
from bcolzx.errors import CorruptDataError, PickleNotAllowedError


def spec_chunk(items):
    """A chunk as README.md §2d describes it: N+1 absolute little-endian uint64
    offsets, o[0] = 8 * (N + 1), then the items back to back."""
    offsets, pos = [], 8 * (len(items) + 1)
    for item in items:
        offsets.append(pos)
        pos += len(item)
    offsets.append(pos)
    return struct.pack(f"<{len(offsets)}Q", *offsets) + b"".join(items)


@pytest.mark.parametrize("items", [[], [b""], [b"a"], [b"ab", b"", b"cde"],
                                   [bytes(range(256)) * 300, b"x"]])
def test_encode_writes_the_documented_layout(items):
    assert vlen.encode(items) == spec_chunk(items)


@given(st.lists(st.binary(max_size=300), max_size=40))
@settings(max_examples=200, deadline=None)
def test_items_round_trip(items):
    chunk = vlen.encode(items)
    assert vlen.count(chunk) == len(items)
    assert vlen.items(chunk, len(items)) == items
    assert vlen.items(chunk) == items


def test_encode_takes_any_bytes_like_item():
    items = [np.frombuffer(b"abc", np.uint8), bytearray(b"de"), memoryview(b"f")]
    assert vlen.items(vlen.encode(items)) == [b"abc", b"de", b"f"]


def test_offsets_are_returned_for_single_item_reads():
    chunk = vlen.encode([b"one", b"two!", b""])
    offsets = vlen.decode(chunk, 3)
    assert offsets.tolist() == [32, 35, 39, 39]
    assert chunk[offsets[1]:offsets[2]] == b"two!"


def _with_offsets(chunk, **changes):
    raw = bytearray(chunk)
    for index, value in changes.items():
        struct.pack_into("<Q", raw, 8 * int(index[1:]), value)
    return bytes(raw)


GOOD = vlen.encode([b"alpha", b"beta", b"gamma"])  # offsets 32, 37, 41, 46


@pytest.mark.parametrize("chunk, nitems, message", [
    (GOOD, 2, "holds 3 items, the metadata calls for 2"),
    (GOOD, 4, "holds 3 items, the metadata calls for 4"),
    (b"", None, "shorter than its offsets table"),
    (GOOD[:7], None, "shorter than its offsets table"),
    (_with_offsets(GOOD, o0=33), None, "starts its items at 33"),
    (_with_offsets(GOOD, o0=4), None, "starts its items at 4"),
    (_with_offsets(GOOD, o0=0), None, "starts its items at 0"),
    (_with_offsets(GOOD, o0=8 * 100), None, "starts its items at 800"),
    (_with_offsets(GOOD, o2=36), None, "decreasing offsets"),
    (_with_offsets(GOOD, o1=2**63 + 5), None, "decreasing offsets"),
    (_with_offsets(GOOD, o3=45), None, "whose items end at 45"),
    (GOOD + b"trailing", None, "whose items end at 46"),
    (GOOD[:-1], None, "whose items end at 46"),
])
def test_damaged_chunks_are_refused(chunk, nitems, message):
    with pytest.raises(CorruptDataError, match=message):
        vlen.items(chunk, nitems)


def test_require_refuses_without_the_switch_naming_it():
    pickles.require(True, "anything")
    with pytest.raises(PickleNotAllowedError) as info:
        pickles.require(False, "reading the values of an object carray", "/data/x")
    text = str(info.value)
    assert "pass allow_pickle=True or set bcolzx.defaults.allow_pickle = True" in text
    assert "/data/x" in text and info.value.path == "/data/x"
    assert isinstance(info.value, TypeError) and isinstance(info.value, ValueError)


def test_dumps_uses_the_stated_protocols():
    values = np.empty(2, dtype=object)
    values[:] = [{"a": 1}, [1, 2]]
    for protocol in (pickles.PROTOCOL, pickles.LEGACY_PROTOCOL):
        out = pickles.dumps(values, protocol)
        assert [bytes(x[:2]) for x in out] == [bytes([0x80, protocol])] * 2
        assert pickles.loads(out).tolist() == [{"a": 1}, [1, 2]]
    assert (pickles.PROTOCOL, pickles.LEGACY_PROTOCOL) == (5, 4)


def test_damaged_pickles_are_corrupt_data_when_loaded():
    good = pickle.dumps({"a": [1, 2, 3]}, 5)
    for bad in (good[:-2], b"\xff" + good[1:], b""):
        with pytest.raises(CorruptDataError):
            pickles.load_one(bad)


def test_check_item_parses_without_unpickling():
    ran = []
    good = pickle.dumps([1, "two", {3: 4.0}], 4)
    pickles.check_item(good)
    # A pickle that would call list.append if loaded: parsing it calls nothing.
    pickles.check_item(pickle.dumps(_Calls(ran)))
    assert ran == []
    for bad, message in ((good[:-1], "not a well-formed pickle"),
                         (good + b"x", "ends at byte"),
                         (b"\xfe" + good, "not a well-formed pickle")):
        with pytest.raises(CorruptDataError, match=message):
            pickles.check_item(bad)


class _Calls:
    def __init__(self, log):
        self.log = log

    def __reduce__(self):
        return (self.log.append, ("unpickled",))
