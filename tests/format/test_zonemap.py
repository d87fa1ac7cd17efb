"""Zone-map bounds: what the zone map records for a chunk."""

import numpy as np
import pytest

from bcolzx._format.zonemap import bounds_of

ALL_NAN = np.array([np.nan, np.nan])


def test_bounds_of():
    assert bounds_of(np.array([3.0, np.nan, 1.0])) == (1.0, 3.0, True)
    lo, hi, nan = bounds_of(np.array([5, 2, 9], np.int16))
    assert (lo, hi, nan) == (2, 9, False) and lo.dtype == np.int16
    lo, hi, nan = bounds_of(ALL_NAN)
    assert np.isnan(lo) and np.isnan(hi) and nan
    with pytest.raises(ValueError):
        bounds_of(np.array([]))
    with pytest.raises(TypeError):
        bounds_of(np.array(["x"]))
