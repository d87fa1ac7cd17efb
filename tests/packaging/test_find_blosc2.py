"""The build helper that finds C-Blosc2 in the blosc2 wheel (c-blosc-vendor/find_blosc2.py)."""

import importlib.util
import sys
from pathlib import Path

import pytest

HELPER = Path(__file__).parents[2] / "c-blosc-vendor" / "find_blosc2.py"


@pytest.fixture()
def helper(monkeypatch):
    spec = importlib.util.spec_from_file_location("find_blosc2", HELPER)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "find_blosc2", module)  # dataclasses look it up
    spec.loader.exec_module(module)
    return module


def _fake_prefix(root, version=(3, 3, 5), libdir="lib", static=True):
    (root / "include").mkdir(parents=True)
    major, minor, release = version
    (root / "include" / "blosc2.h").write_text(
        f"#define BLOSC2_VERSION_MAJOR    {major}\n"
        f"#define BLOSC2_VERSION_MINOR    {minor}\n"
        f"#define BLOSC2_VERSION_RELEASE  {release}\n"
    )
    (root / libdir).mkdir()
    (root / libdir / ("libblosc2.a" if static else "libblosc2.so")).write_bytes(b"")
    return root


def test_env_var_prefix_is_used_and_linked_statically(helper, tmp_path, monkeypatch):
    prefix = _fake_prefix(tmp_path / "cb2", libdir="lib64")
    monkeypatch.setenv("BCOLZX_BLOSC2_DIR", str(prefix))
    monkeypatch.delenv("BCOLZX_BLOSC2_LINK", raising=False)
    found = helper.locate()
    assert found.include_dir == prefix / "include" and found.lib_dir == prefix / "lib64"
    assert found.link == "static" and found.version == (3, 3, 5)
    kwargs = found.extension_kwargs()
    assert kwargs["extra_objects"] == [str(prefix / "lib64" / "libblosc2.a")]
    assert "-Wl,--exclude-libs,ALL" in kwargs["extra_link_args"]


def test_shared_link_sets_an_rpath(helper, tmp_path, monkeypatch):
    prefix = _fake_prefix(tmp_path / "cb2", static=False)
    monkeypatch.setenv("BCOLZX_BLOSC2_DIR", str(prefix))
    monkeypatch.setenv("BCOLZX_BLOSC2_LINK", "shared")
    kwargs = helper.locate().extension_kwargs()
    assert kwargs["libraries"] == ["blosc2"]
    assert kwargs["runtime_library_dirs"] == [str(prefix / "lib")]


def test_missing_library_names_every_place_searched(helper, tmp_path, monkeypatch):
    prefix = _fake_prefix(tmp_path / "cb2", static=False)
    monkeypatch.setenv("BCOLZX_BLOSC2_DIR", str(prefix))
    monkeypatch.delenv("BCOLZX_BLOSC2_LINK", raising=False)
    with pytest.raises(RuntimeError, match="libblosc2.a"):
        helper.locate()


def test_too_old_c_blosc2_is_refused(helper, tmp_path, monkeypatch):
    prefix = _fake_prefix(tmp_path / "cb2", version=(2, 10, 0))
    monkeypatch.setenv("BCOLZX_BLOSC2_DIR", str(prefix))
    with pytest.raises(RuntimeError, match="older than"):
        helper.locate()


def test_bad_link_choice_is_refused(helper, monkeypatch):
    monkeypatch.setenv("BCOLZX_BLOSC2_LINK", "dynamic")
    with pytest.raises(RuntimeError, match="static"):
        helper.locate()


def test_the_installed_blosc2_wheel_is_found_without_importing_it(helper, monkeypatch):
    if importlib.util.find_spec("blosc2") is None:
        pytest.skip("python-blosc2 is not installed in this environment (a test extra)")
    monkeypatch.delenv("BCOLZX_BLOSC2_DIR", raising=False)
    monkeypatch.delenv("BCOLZX_BLOSC2_LINK", raising=False)
    was_imported = "blosc2" in sys.modules
    found = helper.locate()
    assert (found.include_dir / "blosc2.h").is_file() and found.static_lib.is_file()
    assert ("blosc2" in sys.modules) == was_imported
