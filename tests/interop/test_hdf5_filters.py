"""bcolzx.interop._hdf5_filters: what a reader does about a dataset's HDF5 filters.

The round trips in a new process are in tests/cli/test_hdf5_roundtrip.py;
these check each decision on its own.
"""

import sys

import numpy as np
import pytest

import bcolzx
from bcolzx.errors import UnsupportedFormatError
from bcolzx.interop import _hdf5_filters as hf

BLOSC2, ZSTD, UNKNOWN = 32026, 32015, 31999


def settle(filters, available, monkeypatch, plugin=True):
    """Run the decision with `available` filter ids registered; hdf5plugin's loading
    makes its filters available (if `plugin`, else it is not installed)."""
    avail = set(available)
    if not plugin:
        monkeypatch.setitem(sys.modules, "hdf5plugin", None)

    def load(_module):
        avail.update(hf.HDF5PLUGIN_FILTERS)

    return hf._settle(filters, avail.__contains__, "'/x' of f.h5", load)


def test_nothing_is_loaded_when_every_filter_is_there(monkeypatch):
    monkeypatch.setitem(sys.modules, "hdf5plugin", None)  # an import would fail
    assert settle([(1, False), (2, False)], {1, 2}, monkeypatch) is None


def test_a_missing_filter_of_hdf5plugin_is_loaded(monkeypatch):
    pytest.importorskip("hdf5plugin")
    assert settle([(BLOSC2, True)], set(), monkeypatch) is None


def test_a_required_filter_of_hdf5plugin_without_it_raises_importerror_at_once(monkeypatch):
    with pytest.raises(ImportError, match=r"Zstandard \(HDF5 filter 32015\).*hdf5plugin") as e:
        settle([(2, False), (ZSTD, False)], {2}, monkeypatch, plugin=False)
    assert e.value.name == "hdf5plugin"


def test_an_optional_filter_of_hdf5plugin_without_it_is_the_error_of_a_failed_read(
        monkeypatch):
    error = settle([(BLOSC2, True)], set(), monkeypatch, plugin=False)
    assert isinstance(error, ImportError) and error.name == "hdf5plugin"
    assert "Blosc2 (HDF5 filter 32026)" in str(error) and "pip install" in str(error)


def test_a_required_filter_nobody_has_is_unsupported_at_once(monkeypatch):
    with pytest.raises(UnsupportedFormatError, match="HDF5 filter 31999"):
        settle([(UNKNOWN, False)], set(), monkeypatch)


def test_an_optional_filter_nobody_has_is_the_error_of_a_failed_read(monkeypatch):
    error = settle([(UNKNOWN, True)], set(), monkeypatch)
    assert isinstance(error, UnsupportedFormatError)
    assert "HDF5 filter 31999" in str(error) and "'/x' of f.h5" in str(error)


def test_a_dataset_whose_optional_unknown_filter_left_every_chunk_alone_reads(tmp_path):
    h5py = pytest.importorskip("h5py")
    path = str(tmp_path / "u.h5")
    with h5py.File(path, "w") as f:
        f.create_dataset("x", data=np.arange(1000), chunks=(100,), compression=UNKNOWN,
                         allow_unknown_filter=True)
    np.testing.assert_array_equal(bcolzx.fromhdf5(path, "/x")[:], np.arange(1000))


def test_a_failed_read_raises_the_error_naming_the_filter(tmp_path, monkeypatch):
    h5py = pytest.importorskip("h5py")
    path = str(tmp_path / "u.h5")
    with h5py.File(path, "w") as f:
        f.create_dataset("x", data=np.arange(1000), chunks=(100,), compression=UNKNOWN,
                         allow_unknown_filter=True)

    def fail(self, *args, **kwargs):
        raise OSError("Can't synchronously read data (filter not available)")

    monkeypatch.setattr(h5py.Dataset, "read_direct", fail)
    with pytest.raises(UnsupportedFormatError, match="HDF5 filter 31999") as e:
        bcolzx.fromhdf5(path, "/x")
    assert isinstance(e.value.__cause__, OSError)


def test_pytables_filters_are_listed_through_its_own_hdf5(tmp_path):
    tables = pytest.importorskip("tables")
    ct = bcolzx.ctable([np.arange(10)], names=["a"])
    path = str(tmp_path / "t.h5")
    ct.tohdf5(path, cname="zlib")
    with tables.open_file(path) as h5:
        lib = hf._pytables_hdf5(tables)
        ids = [f for f, _opt in hf._pytables_filters(lib, h5.get_node("/ctable"))]
    assert 1 in ids  # deflate (zlib)
    assert all(lib.H5Zfilter_avail(f) > 0 for f in ids)
