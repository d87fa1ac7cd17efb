"""Arrays of every kind of dtype the interop round trips must keep exactly."""

import numpy as np

#: name -> array; NaN, NaT, embedded NULs, non-ASCII text, N-D and big-endian included.
ARRAYS = {
    "f8": np.r_[np.nan, np.inf, np.linspace(0, 1, 998)],
    "f2": np.linspace(0, 1, 100).astype("f2"),
    "i1": np.arange(-128, 127, dtype="i1"),
    "u8": np.arange(300, dtype="u8") + 2**63,
    "bool": np.arange(333) % 3 == 0,
    "c8": (np.arange(100) + 1j).astype("c8"),
    "S": np.array([b"", b"ab", b"x\x00y"] * 50),
    "U": np.array(["", "é", "z€\x00zz"] * 50),
    "M8-NaT": np.r_[np.arange(99), [-2**63]].astype("M8[ns]"),
    "m8": np.arange(100).astype("m8[ms]"),
    "struct": np.array([(i, i / 3, b"ab") for i in range(200)],
                       dtype=[("a", "i4"), ("b", "f8"), ("c", "S2")]),
    "3d": np.arange(2400, dtype=">i4").reshape(100, 4, 6),
    "empty": np.empty((0, 2), "f4"),
}
