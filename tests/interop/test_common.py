"""bcolzx.interop._common: what the interop modules share."""

import sys

import numpy as np
import pytest

import bcolzx
from bcolzx.interop import _common

from .recorder import Recorder


@pytest.mark.parametrize("call,module,extra", [
    (lambda tmp: bcolzx.from_parquet(tmp / "x.parquet"), "pyarrow", "arrow"),
    (lambda tmp: bcolzx.from_zarr(tmp / "z"), "zarr", "zarr"),
    (lambda tmp: bcolzx.from_b2frame(tmp / "x.b2frame"), "blosc2", "blosc2"),
    (lambda tmp: bcolzx.fromhdf5(tmp / "x.h5", "/a"), "h5py", "h5py"),
    (lambda tmp: bcolzx.carray([1]).to_b2frame(tmp / "x"), "blosc2", "blosc2"),
])
def test_a_missing_library_names_its_pip_extra(tmp_path, monkeypatch, call, module, extra):
    monkeypatch.setitem(sys.modules, module, None)  # makes `import module` fail
    with pytest.raises(ImportError, match=rf"pip install 'bcolzx\[{extra}\]'"):
        call(tmp_path)


def test_attributes_json_cannot_hold_are_skipped_with_a_warning():
    items = [("a", np.int64(3)), ("b", b"text"), ("c", object()), ("d", np.arange(2))]
    with pytest.warns(UserWarning, match=r"\['c'\] of here"):
        got = _common.json_attrs(items, "here")
    assert got == {"a": 3, "b": "text", "d": [0, 1]}


def test_column_names_accept_a_sequence_or_a_comma_separated_string():
    ct = bcolzx.ctable([np.arange(2), np.arange(2)], names=["x", "y"])
    assert _common.column_names(ct, None, ["y"]) == ["y"]
    assert _common.column_names(ct, " y, x ", []) == ["y", "x"]
    with pytest.raises(KeyError, match="'z'"):
        _common.column_names(ct, ["z"], [])


def test_blocks_are_whole_units_of_about_eight_mib():
    assert _common.block_rows(8, 1000) == 1_048_000
    assert _common.block_rows(1 << 30, 3) == 3
    assert _common.block_rows(8) == 1 << 20


def test_a_failed_import_removes_only_what_it_created(tmp_path):
    ca = bcolzx.carray(np.arange(3), rootdir=str(tmp_path / "new"))
    with pytest.raises(RuntimeError):
        with _common.discard_on_error(ca):
            raise RuntimeError("midway")
    assert not (tmp_path / "new").exists()
    mem = bcolzx.carray(np.arange(3))
    with pytest.raises(RuntimeError), _common.discard_on_error(mem):
        raise RuntimeError("midway")
    assert list(tmp_path.iterdir()) == []


def test_reporter_tells_the_total_to_callbacks_that_take_it():
    told = Recorder()
    report = _common.reporter(told, 10)
    report(4)
    report(6)
    told.check(10)
    seen = []
    assert _common.reporter(seen.append, 10) == seen.append  # no set_total: as it is
    unknown = Recorder()
    _common.reporter(unknown, None)(3)
    assert unknown.total is None and unknown.calls == [3]
    _common.reporter(None, 10)(5)  # no callback: nothing happens
