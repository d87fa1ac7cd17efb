"""The examples of docs/interop.md run as written."""

import doctest
import warnings
from pathlib import Path

import pytest

GUIDE = Path(__file__).parents[2] / "docs" / "interop.md"


def test_interop_guide_examples_run():
    for module in ("h5py", "tables", "blosc2", "zarr", "pyarrow"):
        pytest.importorskip(module, reason=f"docs/interop.md uses {module}: "
                                           "pip install 'bcolzx[test]'")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zarr's unstable-specification notes
        result = doctest.testfile(str(GUIDE), module_relative=False, verbose=False,
                                  optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
