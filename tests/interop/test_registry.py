"""bcolzx.interop: the registry of optional formats, and the names bcolzx loads from it."""

import importlib.util
from pathlib import Path

import pytest

import bcolzx
from bcolzx import interop


def test_every_interop_module_is_registered_with_what_it_offers():
    modules = {p.stem for p in Path(interop.__file__).parent.glob("*.py")
               if not p.stem.startswith("_")}
    assert modules == set(interop.FORMATS)
    for name, fmt in interop.FORMATS.items():
        assert fmt.module == f"bcolzx.interop.{name}"
        module = interop.load(name)
        assert set(module.__all__) == set(fmt.functions), name
        for func in fmt.functions:
            assert callable(interop.function(name, func)), (name, func)
        assert set(fmt.exports) <= set(fmt.functions)


def test_the_format_functions_of_bcolzx_come_from_the_registry():
    assert set(interop.EXPORTS) == set(bcolzx._INTEROP_NAMES)
    assert set(interop.EXPORTS) <= set(bcolzx.__all__)
    for name, fmt in interop.EXPORTS.items():
        assert getattr(bcolzx, name) is interop.function(fmt, name)
        assert name in dir(bcolzx)
    assert bcolzx.from_arrow is interop.load("arrow").from_arrow
    assert bcolzx.fromhdf5 is interop.load("h5py").fromhdf5


def test_every_public_name_of_bcolzx_resolves():
    for name in bcolzx.__all__:
        assert getattr(bcolzx, name) is not None, name


def test_unknown_names_raise_the_usual_errors():
    with pytest.raises(AttributeError, match="has no attribute 'fromarrow'"):
        bcolzx.fromarrow  # noqa: B018 - renamed from_arrow
    with pytest.raises(AttributeError):
        bcolzx.interop.nope  # noqa: B018
    with pytest.raises(KeyError, match="no format 'hdf5'"):
        interop.load("hdf5")  # PyTables is 'pytables', h5py 'h5py'
    with pytest.raises(KeyError, match="offers no 'toarrow'"):
        interop.function("arrow", "toarrow")
    with pytest.raises(AttributeError):
        interop.exported("to_arrow")  # a ctable method, not a bcolzx function


def test_submodules_are_attributes_of_the_registry_on_first_use():
    assert bcolzx.interop.pytables is interop.load("pytables")
    from bcolzx.interop import npy

    assert npy.to_npy is interop.function("npy", "to_npy")


def test_availability_is_found_without_importing():
    assert interop.available("npy")  # NumPy only
    for name, fmt in interop.FORMATS.items():
        expected = all(importlib.util.find_spec(p) is not None for p in fmt.requires)
        assert interop.available(name) is expected
        assert fmt.extra is None or fmt.requires
