"""``import bcolz`` as bcolzx: :func:`bcolzx.compat.install` and the shim package.

The real legacy bcolz may be installed in the same environment (the test
extra installs bcolz-zipline): every test here proves that what got imported
is the bcolzx alias, never the legacy package.  In-process tests save and
restore every ``bcolz*`` entry of :data:`sys.modules`; the shim is used in
subprocesses whose ``PYTHONPATH`` puts the shim directory first.
"""

import functools
import hashlib
import base64
import importlib.util
import json
import os
import pickle
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import numpy as np
import pytest

import bcolzx
import bcolzx.compat as compat

BCOLZX_PARENT = os.path.dirname(os.path.dirname(bcolzx.__file__))

# Every public name of legacy bcolz 1.2's top-level package, and what the
# alias does not provide (see docs/migration.md, "Removed").
LEGACY_TOPLEVEL = {
    "BITSHUFFLE", "NOSHUFFLE", "SHUFFLE", "arange", "array2string", "attrs",
    "blosc_compressor_list", "blosc_set_nthreads", "blosc_version", "carray",
    "carray_ext", "chunked_eval", "cparams", "ctable", "dask_here", "defaults",
    "defaults_ctx", "detect_number_of_cores", "eval", "fill", "filters", "fromiter",
    "get_printoptions", "iterblocks", "min_numexpr_version", "ncores", "numexpr_here",
    "ones", "open", "pandas_here", "print_versions", "set_nthreads", "set_printoptions",
    "tables_here", "test", "toplevel", "utils", "walk", "zeros",
}
# Names legacy bcolz's package namespace held only because it imported them
# (packaging's Version class, the atexit module): not bcolz's own names.
REMOVED_TOPLEVEL = {"Version", "atexit"}


@pytest.fixture
def clean_modules():
    """Run with no ``bcolz*`` module imported; restore sys.modules afterwards."""
    saved = {name: sys.modules.pop(name) for name in list(sys.modules)
             if name == "bcolz" or name.startswith("bcolz.")}
    yield
    for name in [n for n in sys.modules if n == "bcolz" or n.startswith("bcolz.")]:
        del sys.modules[name]
    sys.modules.update(saved)


def _run(code, *pythonpath, check=True):
    """Run `code` in a fresh interpreter with PYTHONPATH = `pythonpath`."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(str(p) for p in pythonpath)
    env.pop("PYTHONSTARTUP", None)
    # Not the caller's directory: from a source checkout, '' on sys.path would
    # import the unbuilt source tree instead of the bcolzx under test.
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env,
                          cwd=str(pythonpath[0]) if pythonpath else None,
                          capture_output=True, text=True, timeout=60)
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


def _legacy_bcolz_installed():
    """Whether a real legacy bcolz is importable without bcolzx's help."""
    proc = _run("import importlib.util, sys; "
                "sys.exit(0 if importlib.util.find_spec('bcolz') else 1)", check=False)
    return proc.returncode == 0


needs_legacy = pytest.mark.skipif(not _legacy_bcolz_installed(),
                                  reason="legacy bcolz (bcolz-zipline) is not installed")


# -- install() ------------------------------------------------------------------------


def test_install_registers_every_alias_module(clean_modules):
    bcolz = compat.install()
    assert sys.modules["bcolz"] is bcolz
    for name in compat.ALIAS_MODULES:
        assert sys.modules[name].__bcolzx_alias__ is True
        assert sys.modules[name].__name__ == name
    assert compat.is_installed()


def test_import_statements_give_bcolzx_objects(clean_modules):
    compat.install()
    import bcolz
    from bcolz import carray, ctable
    import bcolz.attrs
    from bcolz.carray_ext import carray as ext_carray
    from bcolz.ctable import ctable as mod_ctable
    from bcolz.toplevel import open as top_open
    from bcolz.defaults import defaults, defaults_ctx
    from bcolz.chunked_eval import eval as chunked_eval

    assert carray is ext_carray is bcolzx.carray
    assert ctable is mod_ctable is bcolzx.ctable
    assert bcolz.attrs.attrs is bcolzx.attrs.attrs
    assert top_open is bcolzx.open
    assert defaults is bcolzx.defaults and defaults_ctx is bcolzx.defaults_ctx
    assert chunked_eval is bcolzx.eval


def test_attribute_kinds_follow_legacy(clean_modules):
    # In legacy bcolz, bcolz.ctable is the class and bcolz.defaults the
    # instance (the imports in bcolz/__init__ hide the submodules), while
    # bcolz.attrs, bcolz.toplevel and bcolz.carray_ext are modules.
    bcolz = compat.install()
    assert isinstance(bcolz.ctable, type) and isinstance(bcolz.carray, type)
    assert bcolz.defaults is bcolzx.defaults
    for name in ("attrs", "toplevel", "carray_ext", "chunked_eval", "utils"):
        assert isinstance(getattr(bcolz, name), types.ModuleType), name
    assert sys.modules["bcolz.ctable"].ctable is bcolzx.ctable
    assert sys.modules["bcolz.defaults"].defaults is bcolzx.defaults


def test_every_legacy_toplevel_name_is_provided(clean_modules):
    bcolz = compat.install()
    missing = sorted(name for name in LEGACY_TOPLEVEL if not hasattr(bcolz, name))
    assert missing == []
    # bcolzx's own names come along (new in the migration guide).
    assert bcolz.ReadOnlyError is bcolzx.ReadOnlyError
    assert bcolz.convert is bcolzx.convert


@needs_legacy
def test_legacy_names_are_provided_or_documented_as_removed(clean_modules):
    # Ask the real legacy bcolz installed here for its public names.
    proc = _run("import bcolz, json; "
                "print(json.dumps(sorted(n for n in dir(bcolz) if not n.startswith('_'))))")
    legacy = set(json.loads(proc.stdout))
    bcolz = compat.install()
    optional = {"numexpr", "pandas", "tables", "dask"}  # present when installed
    unexplained = sorted(n for n in legacy - optional - REMOVED_TOPLEVEL
                         if not hasattr(bcolz, n))
    assert unexplained == []
    assert LEGACY_TOPLEVEL <= legacy | {"test"}


def test_version_is_the_legacy_api_level(clean_modules):
    bcolz = compat.install()
    assert bcolz.__version__ == compat.LEGACY_API_VERSION == "1.2.1"
    assert bcolz.__bcolzx_version__ == bcolzx.__version__
    major, minor = (int(x) for x in bcolz.__version__.split(".")[:2])
    assert (major, minor) >= (1, 2)  # a typical legacy version check passes


def test_legacy_variables(clean_modules):
    bcolz = compat.install()
    assert bcolz.min_numexpr_version == "2.5.2"
    assert bcolz.numexpr_here is importlib.import_module("bcolzx.defaults")._numexpr_usable()
    assert bcolz.pandas_here is (importlib.util.find_spec("pandas") is not None)
    assert bcolz.tables_here is (importlib.util.find_spec("tables") is not None)
    assert bcolz.dask_here is (importlib.util.find_spec("dask") is not None)
    assert bcolz.ncores == bcolzx.detect_number_of_cores()
    assert bcolz.set_printoptions is np.set_printoptions


def test_optional_module_attribute_is_imported_lazily(clean_modules):
    pytest.importorskip("numexpr")
    bcolz = compat.install()
    import numexpr

    assert bcolz.numexpr is numexpr


def test_alias_modules_have_a_file(clean_modules):
    """Legacy programs print bcolz.__file__ or take its directory."""
    compat.install()
    import bcolz
    import bcolz.carray_ext

    for module in (bcolz, bcolz.carray_ext, sys.modules["bcolz.attrs"]):
        assert os.path.isfile(module.__file__), module
    assert os.path.isdir(os.path.dirname(bcolz.__file__))


def test_install_is_idempotent(clean_modules):
    first = compat.install()
    del sys.modules["bcolz.attrs"]  # someone removed one alias
    assert compat.install() is first
    assert sys.modules["bcolz.attrs"] is first.attrs


def test_unknown_names_fail_clearly(clean_modules):
    bcolz = compat.install()
    with pytest.raises(AttributeError, match="migration"):
        bcolz.no_such_function  # noqa: B018
    with pytest.raises(ModuleNotFoundError):
        import bcolz.carray_ext_internals  # noqa: F401 - no such legacy module
    with pytest.raises(AttributeError, match="migration"):
        sys.modules["bcolz.carray_ext"].chunks  # noqa: B018 - legacy internals


def test_legacy_chunk_class_compresses_and_reads_back(clean_modules):
    bcolz = compat.install()
    from bcolz.carray_ext import chunk

    a = np.arange(1000.0)
    c = chunk(a, atom=a.dtype, cparams=bcolz.cparams())
    assert c.nbytes == a.nbytes and c.cbytes < c.nbytes
    assert c[1] == 1.0 and c[-1] == 999.0
    np.testing.assert_array_equal(c[1:8:3], a[1:8:3])
    np.testing.assert_array_equal(np.frombuffer(c.getudata(), a.dtype), a)
    with pytest.raises(NotImplementedError):
        c[0] = 1
    with pytest.raises(IndexError):
        c[1000]


def test_install_refuses_to_shadow_imported_legacy(clean_modules):
    legacy = types.ModuleType("bcolz")
    legacy.__file__ = "/somewhere/bcolz/__init__.py"
    sys.modules["bcolz"] = legacy
    with pytest.raises(RuntimeError, match="real bcolz"):
        compat.install()
    assert sys.modules["bcolz"] is legacy
    assert "bcolz.attrs" not in sys.modules


def test_install_refuses_when_only_a_legacy_submodule_is_imported(clean_modules):
    sys.modules["bcolz.utils"] = types.ModuleType("bcolz.utils")
    with pytest.raises(RuntimeError):
        compat.install()
    assert "bcolz" not in sys.modules


def test_force_replaces_legacy_and_uninstall_restores_it(clean_modules):
    legacy = types.ModuleType("bcolz")
    legacy_utils = types.ModuleType("bcolz.utils")
    sys.modules.update({"bcolz": legacy, "bcolz.utils": legacy_utils})
    bcolz = compat.install(force=True)
    assert sys.modules["bcolz"] is bcolz is not legacy
    assert sys.modules["bcolz.utils"].__bcolzx_alias__
    compat.uninstall()
    assert sys.modules["bcolz"] is legacy
    assert sys.modules["bcolz.utils"] is legacy_utils
    assert "bcolz.attrs" not in sys.modules


def test_uninstall_removes_only_aliases(clean_modules):
    compat.install()
    other = types.ModuleType("bcolz.plugin")  # not ours: must survive
    sys.modules["bcolz.plugin"] = other
    compat.uninstall()
    assert not compat.is_installed()
    assert [n for n in sys.modules if n.split(".")[0] == "bcolz"] == ["bcolz.plugin"]
    compat.uninstall()  # a second call is harmless


def test_legacy_carray_pickle_loads_through_the_alias(clean_modules):
    # Legacy bcolz pickled an in-memory carray as bcolz.utils.build_carray(data,
    # None): make such a stream with a stand-in module, then load it with the alias.
    def build_carray(array, rootdir):
        raise AssertionError("the stand-in is never called")

    build_carray.__module__ = "bcolz.utils"
    build_carray.__qualname__ = "build_carray"
    standin = types.ModuleType("bcolz.utils")
    standin.build_carray = build_carray

    class LegacyCarray:
        def __reduce__(self):
            return build_carray, (np.arange(7, dtype="i4"), None)

    sys.modules.update({"bcolz": types.ModuleType("bcolz"), "bcolz.utils": standin})
    stream = pickle.dumps(LegacyCarray(), protocol=2)
    del sys.modules["bcolz"], sys.modules["bcolz.utils"]
    assert b"bcolz.utils" in stream
    compat.install()
    ca = pickle.loads(stream)
    assert isinstance(ca, bcolzx.carray)
    np.testing.assert_array_equal(ca[:], np.arange(7, dtype="i4"))


@needs_legacy
def test_pickle_written_by_legacy_bcolz_loads(clean_modules, tmp_path):
    out = tmp_path / "legacy.pkl"
    _run(f"""
        import pickle, numpy as np, bcolz
        assert bcolz.carray.__module__.startswith('bcolz'), bcolz.carray
        persistent = bcolz.carray(np.arange(5.0), rootdir={str(tmp_path / 'ca')!r})
        persistent.flush()
        with open({str(out)!r}, 'wb') as f:
            pickle.dump([bcolz.carray(np.arange(10) * 3), persistent], f, protocol=2)
    """)
    compat.install()
    memory, disk = pickle.loads(out.read_bytes())
    np.testing.assert_array_equal(memory[:], np.arange(10) * 3)
    np.testing.assert_array_equal(disk[:], np.arange(5.0))
    assert disk.rootdir == str(tmp_path / "ca")


# -- the shim package ---------------------------------------------------------------------


def _files(root):
    return sorted(os.path.relpath(os.path.join(d, f), root)
                  for d, _, fs in os.walk(root) for f in fs)


def test_install_shim_writes_package_and_metadata(tmp_path):
    written = compat.install_shim(tmp_path)
    dist = f"bcolz-{compat.LEGACY_API_VERSION}+bcolzx.dist-info"
    assert _files(tmp_path) == sorted(
        ["bcolz/__init__.py"] + [f"{dist}/{f}" for f in
                                 ("INSTALLER", "METADATA", "RECORD", "top_level.txt")])
    assert sorted(os.path.relpath(p, tmp_path) for p in written) == _files(tmp_path)
    init = (tmp_path / "bcolz" / "__init__.py").read_text()
    assert init.startswith(compat.SHIM_MARKER)
    # RECORD lists every other file with its sha256 and size, as pip expects.
    for line in (tmp_path / dist / "RECORD").read_text().splitlines():
        path, digest, size = line.split(",")
        if path.endswith("RECORD"):
            assert (digest, size) == ("", "")
            continue
        data = (tmp_path / path).read_bytes()
        expect = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
        assert digest == "sha256=" + expect.decode() and int(size) == len(data)


def test_shim_makes_import_bcolz_give_bcolzx(tmp_path):
    compat.install_shim(tmp_path)
    proc = _run("""
        import sys, importlib.metadata
        import bcolz
        import bcolzx
        from bcolz import carray, ctable
        import bcolz.attrs
        print(bcolz.__version__, bcolz.carray is bcolzx.carray, ctable is bcolzx.ctable,
              sys.modules['bcolz'] is bcolz, bcolz.__bcolzx_alias__,
              sys.modules['bcolz.attrs'].__bcolzx_alias__,
              importlib.metadata.version('bcolz'))
    """, tmp_path, BCOLZX_PARENT)
    assert proc.stdout.split() == ["1.2.1", "True", "True", "True", "True", "True",
                                   "1.2.1+bcolzx"]


def test_shim_runs_a_legacy_program_unchanged(tmp_path):
    (tmp_path / "site").mkdir()
    compat.install_shim(tmp_path / "site")
    data = tmp_path / "data"
    proc = _run(f"""
        import os
        import numpy as np
        import bcolz
        from bcolz import carray, ctable

        root = {str(data)!r}
        ca = carray(np.arange(10), rootdir=os.path.join(root, 'ca'), mode='w')
        ca.attrs['unit'] = 'm'
        ca.flush()
        ct = ctable([np.arange(5), np.arange(5) * 0.5], names=['a', 'b'],
                    rootdir=os.path.join(root, 'ct'), mode='w')
        ct.flush()
        assert bcolz.attrs.attrs(os.path.join(root, 'ca'), 'r')['unit'] == 'm'
        assert list(bcolz.open(os.path.join(root, 'ca'))[3:6]) == [3, 4, 5]
        assert [r.a for r in bcolz.open(os.path.join(root, 'ct')).where('b > 1')] == [3, 4]
        try:
            bcolz.open(os.path.join(root, 'missing'))
        except IOError:
            print('IOError caught')
        ro = bcolz.open(os.path.join(root, 'ca'), mode='r')
        try:
            ro.append([1])
        except IOError:
            print('read-only IOError caught')
        print(type(ca).__module__)
    """, tmp_path / "site", BCOLZX_PARENT)
    assert proc.stdout.splitlines() == ["IOError caught", "read-only IOError caught",
                                        "bcolzx.carray"]


def test_shim_first_import_of_a_submodule(tmp_path):
    compat.install_shim(tmp_path, metadata=False)
    proc = _run("""
        import bcolz.attrs
        from bcolz.toplevel import arange
        import bcolz
        print(bcolz.attrs.attrs.__module__, arange(3).sum(), bcolz.__bcolzx_alias__)
    """, tmp_path, BCOLZX_PARENT)
    assert proc.stdout.split() == ["bcolzx.attrs", "3", "True"]


def test_shim_without_bcolzx_fails_with_a_clear_error(tmp_path):
    compat.install_shim(tmp_path, metadata=False)
    # None in sys.modules makes "import bcolzx" fail, wherever bcolzx is installed.
    proc = _run("import sys; sys.modules['bcolzx'] = None; import bcolz", tmp_path,
                check=False)
    assert proc.returncode != 0
    assert "bcolzx compatibility shim" in proc.stderr


def _run_site(code, site_dir, cwd):
    """`code` in a fresh interpreter whose site directory is `site_dir` (its .pth
    files processed, as for site-packages)."""
    prelude = f"import site, sys; sys.path.insert(0, {BCOLZX_PARENT!r}); " \
              f"site.addsitedir({str(site_dir)!r})\n"
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    return subprocess.run([sys.executable, "-c", prelude + textwrap.dedent(code)], env=env,
                          cwd=str(cwd), capture_output=True, text=True, timeout=60)


def test_install_shim_goes_ahead_of_a_real_bcolz(tmp_path):
    site_dir = tmp_path / "site"
    real = site_dir / "bcolz"
    real.mkdir(parents=True)
    (real / "__init__.py").write_text("REAL = True\n")
    written = compat.install_shim(site_dir)
    assert (real / "__init__.py").read_text() == "REAL = True\n"  # untouched
    assert _files(site_dir) == sorted([
        "bcolz/__init__.py", "bcolzx-shim.pth", "bcolzx-shim/bcolz/__init__.py",
        *(f"bcolz-1.2.1+bcolzx.dist-info/{f}" for f in
          ("INSTALLER", "METADATA", "RECORD", "top_level.txt"))])
    assert any(p.endswith("bcolzx-shim.pth") for p in written)
    # In an interpreter whose site directory this is, 'import bcolz' is the alias.
    proc = _run_site("import bcolz; print(bcolz.__bcolzx_alias__, hasattr(bcolz, 'REAL'))",
                     site_dir, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["True", "False"]
    # Removing it leaves exactly the real bcolz.
    assert compat.uninstall_shim(site_dir)
    assert _files(site_dir) == ["bcolz/__init__.py"]
    proc = _run_site(f"sys.path.insert(0, {str(site_dir)!r}); import bcolz; print(bcolz.REAL)",
                     site_dir, tmp_path)
    assert proc.stdout.split() == ["True"]


@needs_legacy
def test_import_legacy_finds_legacy_bcolz_behind_the_shim(tmp_path):
    site_dir = tmp_path / "site"
    site_dir.mkdir()
    compat.install_shim(site_dir)  # a shim first on sys.path
    code = """
        import bcolzx.compat
        legacy = bcolzx.compat.import_legacy()
        import bcolz
        print(bcolz is legacy, hasattr(bcolz, '__bcolzx_alias__'),
              type(bcolz.carray([1, 2])).__module__)
    """
    proc = _run_site("import sys; sys.path.insert(0, " + repr(str(site_dir)) + ")\n"
                     + textwrap.dedent(code), site_dir, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["True", "False", "bcolz.carray_ext"]
    proc = _run_site(f"sys.path.insert(0, {str(site_dir)!r}); import bcolz, bcolzx.compat; "
                     "bcolzx.compat.import_legacy()", site_dir, tmp_path)
    assert proc.returncode != 0 and "alias in this process" in proc.stderr


@pytest.mark.parametrize("entry", ["bcolz-1.2.1.dist-info/METADATA", "bcolz.py",
                                   "bcolz-1.2.1-py3.11.egg-info/PKG-INFO",
                                   "bcolz.egg-info/PKG-INFO"])
def test_install_shim_leaves_other_bcolz_files_alone(tmp_path, entry):
    path = tmp_path / entry
    path.parent.mkdir(exist_ok=True)
    path.write_text("legacy\n")
    compat.install_shim(tmp_path)
    files = _files(tmp_path)
    assert entry in files and "bcolzx-shim/bcolz/__init__.py" in files
    assert path.read_text() == "legacy\n"
    if "-info" in entry:  # no second distribution named bcolz beside the real one
        assert not [f for f in files if f.startswith("bcolz-1.2.1+bcolzx")]
    compat.uninstall_shim(tmp_path)
    assert _files(tmp_path) == [entry]


def test_install_shim_twice_rewrites_it(tmp_path):
    compat.install_shim(tmp_path)
    before = _files(tmp_path)
    compat.install_shim(tmp_path)
    assert _files(tmp_path) == before


def test_uninstall_shim_removes_exactly_what_was_written(tmp_path):
    (tmp_path / "other.py").write_text("x = 1\n")
    compat.install_shim(tmp_path)
    _run("import bcolz", tmp_path, BCOLZX_PARENT)  # may leave __pycache__ behind
    removed = compat.uninstall_shim(tmp_path)
    assert removed
    assert _files(tmp_path) == ["other.py"]
    assert sorted(os.listdir(tmp_path)) == ["other.py"]
    assert compat.uninstall_shim(tmp_path) == []


def test_uninstall_shim_keeps_files_it_did_not_write(tmp_path):
    compat.install_shim(tmp_path, metadata=False)
    (tmp_path / "bcolz" / "notes.txt").write_text("mine\n")
    compat.uninstall_shim(tmp_path)
    assert _files(tmp_path) == ["bcolz/notes.txt"]


def test_uninstall_shim_never_touches_a_real_bcolz(tmp_path):
    real = tmp_path / "bcolz"
    real.mkdir()
    (real / "__init__.py").write_text("# the real legacy bcolz\n")
    assert compat.uninstall_shim(tmp_path) == []
    assert _files(tmp_path) == ["bcolz/__init__.py"]


def test_command_line_install_and_uninstall(tmp_path):
    env = dict(os.environ, PYTHONPATH=BCOLZX_PARENT)
    cmd = [sys.executable, "-m", "bcolzx.compat"]
    proc = subprocess.run(cmd + ["install-shim", "--target", str(tmp_path)], env=env,
                          cwd=str(tmp_path), capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "wrote" in proc.stdout and (tmp_path / "bcolz" / "__init__.py").exists()
    proc = subprocess.run(cmd + ["uninstall-shim", "--target", str(tmp_path)], env=env,
                          cwd=str(tmp_path), capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert os.listdir(tmp_path) == []
    proc = subprocess.run(cmd + ["uninstall-shim", "--target", str(tmp_path)], env=env,
                          cwd=str(tmp_path), capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and "no bcolzx shim" in proc.stderr


def test_bcolzx_command_installs_the_shim_from_a_source_clone(tmp_path):
    """The README's legacy route runs in the root of a clone: an unbuilt ``bcolzx/``
    is in the current directory, which ``python -m`` would import first; the
    console script does not."""
    script = Path(sys.executable).with_name("bcolzx")
    if not script.exists():
        pytest.skip(f"no bcolzx console script next to {sys.executable} "
                    "(bcolzx is not installed in this interpreter's environment)")
    clone = tmp_path / "clone"
    (clone / "bcolzx").mkdir(parents=True)
    (clone / "bcolzx" / "__init__.py").write_text(
        "raise ImportError('the unbuilt source tree was imported')\n")
    target = tmp_path / "site"
    target.mkdir()
    run = functools.partial(subprocess.run, cwd=str(clone), capture_output=True, text=True,
                            timeout=120)
    proc = run([sys.executable, "-m", "bcolzx.compat", "install-shim", "--target", str(target)])
    assert proc.returncode != 0 and "unbuilt source tree" in proc.stderr
    proc = run([str(script), "install-shim", "--target", str(target)])
    assert proc.returncode == 0, proc.stderr
    assert (target / "bcolz" / "__init__.py").read_text().startswith(compat.SHIM_MARKER)
    proc = run([str(script), "uninstall-shim", "--target", str(target)])
    assert proc.returncode == 0, proc.stderr
    assert os.listdir(target) == []


def test_command_line_with_a_real_bcolz_and_a_missing_target(tmp_path, capsys):
    (tmp_path / "bcolz").mkdir()
    (tmp_path / "bcolz" / "__init__.py").write_text("")
    assert compat.main(["install-shim", "--target", str(tmp_path)]) == 0
    assert "legacy bcolz is installed here too" in capsys.readouterr().out
    assert compat.main(["install-shim", "--target", str(tmp_path / "missing")]) == 1


# -- bcolzx.test() ---------------------------------------------------------------------------


def test_bcolzx_test_passes_and_reports(capsys):
    assert bcolzx.test() is True
    out = capsys.readouterr().out
    assert "bcolzx version" in out
    assert "5 of 5 checks passed" in out


def test_selftest_reports_a_failing_check(monkeypatch, capsys):
    def broken():
        raise AssertionError("deliberately broken")

    # The module, not the function of the same name that bcolzx.compat exports.
    selftest_module = importlib.import_module("bcolzx.compat.selftest")
    monkeypatch.setattr(selftest_module, "_checks", lambda tmp, heavy: [("broken check", broken)])
    assert bcolzx.test(verbose=True) is False
    out = capsys.readouterr().out
    assert "FAIL  broken check: AssertionError: deliberately broken" in out
    assert "Traceback" in out and "0 of 1 checks passed" in out
