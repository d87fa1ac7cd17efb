"""dtypes in ``meta/storage``: every NumPy layout survives the JSON round trip."""

import numpy as np
import pytest

import bcolzx
from bcolzx._format.meta import dtype_from_json, dtype_to_json

TAGGED = np.dtype("S10", metadata={"h5py_encoding": "ascii"})

DTYPES = [
    np.dtype("<f8"), np.dtype(">i2"), np.dtype("U7"), np.dtype("M8[ns]"),
    TAGGED,                                                       # NumPy metadata: dropped
    np.dtype([("a", TAGGED), ("b", "f8"), ("c", TAGGED, (2,))]),  # ... at any depth
    np.dtype([("x", "<i4"), ("y", ">f8")], align=True),           # padding between fields
    np.dtype({"names": ["a", "b"], "formats": ["u1", "<i8"],
              "offsets": [3, 8], "itemsize": 20}),                # offsets and a tail gap
    np.dtype([("p", [("q", "i1"), ("r", "f4")]), ("s", "i8", (2, 3))]),
]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_dtype_json_round_trip_keeps_the_layout(dtype):
    back = dtype_from_json(dtype_to_json(dtype))
    assert back == dtype and back.itemsize == dtype.itemsize
    assert back.metadata is None and all(back.fields[n][0].metadata is None
                                         for n in back.names or ())


@pytest.mark.parametrize("dtype", DTYPES[4:8], ids=str)
def test_datasets_of_such_dtypes_reopen_with_their_values(tmp_path, dtype):
    data = np.zeros(5, dtype)
    data.view(np.uint8)[:] = np.arange(data.nbytes) % 251
    c = bcolzx.carray(data, rootdir=str(tmp_path / "c"))
    c.flush()
    back = bcolzx.open(str(tmp_path / "c"), mode="r")
    assert back.dtype == dtype
    got = back[:]
    for name in dtype.names or [None]:   # padding bytes are not data
        want = data if name is None else data[name]
        assert (got if name is None else got[name]).tobytes() == want.tobytes()
