"""HDF5 round trips in a new process: the reader loads the Blosc2 filter itself.

A process that wrote the file has imported hdf5plugin (which registers its
filters for the rest of the process), so these run every step in a process
of its own, as a user does: ``bcolzx export`` then ``bcolzx import``, and
``bcolzx.fromhdf5`` in a fresh interpreter.  Without hdf5plugin (simulated
by ``sys.modules['hdf5plugin'] = None`` in the child) the error names it.
"""

import subprocess
import sys
import textwrap

import numpy as np
import pytest

import bcolzx

from .conftest import subprocess_env

pytest.importorskip("h5py", reason="h5py (the 'h5py' extra) reads and writes HDF5")
pytest.importorskip("hdf5plugin", reason="hdf5plugin (the 'h5py' extra) has the Blosc2 filter")

#: Runs bcolzx's command line with hdf5plugin made unimportable first.
WITHOUT_HDF5PLUGIN = ("import sys; sys.modules['hdf5plugin'] = None; "
                      "from bcolzx.__main__ import main; sys.exit(main())")


def python(code, cwd):
    """Run `code` in a new interpreter in `cwd`; (returncode, stdout, stderr)."""
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=cwd,
                          env=subprocess_env(), capture_output=True, text=True, timeout=120)
    return proc.returncode, proc.stdout, proc.stderr


def filters_of(path, node):
    import h5py

    with h5py.File(path, "r") as f:
        plist = f[node].id.get_create_plist()
        return [plist.get_filter(i)[0] for i in range(plist.get_nfilters())]


def test_cli_export_then_import_of_a_carray_round_trips(run, carray_dir, tmp_path):
    assert run("export", carray_dir, "c.h5").code == 0
    assert 32026 in filters_of(tmp_path / "c.h5", "/carray")  # Blosc2, from hdf5plugin
    result = run("import", "c.h5", "back")
    assert result.code == 0, result.err
    back = bcolzx.open(str(tmp_path / "back"))
    np.testing.assert_array_equal(back[:], bcolzx.open(str(carray_dir))[:])
    assert back.attrs["unit"] == "m"


def test_cli_export_then_import_of_a_ctable_round_trips(run, ctable_dir, tmp_path):
    pytest.importorskip("tables", reason="PyTables (the 'hdf5' extra) writes ctables to HDF5")
    assert run("export", ctable_dir, "t.h5").code == 0
    result = run("import", "t.h5", "back")
    assert result.code == 0, result.err
    back, orig = bcolzx.open(str(tmp_path / "back")), bcolzx.open(str(ctable_dir))
    for name in orig.names:
        np.testing.assert_array_equal(back[name][:], orig[name][:])


def test_api_fromhdf5_reads_a_blosc2_dataset_in_a_new_process(tmp_path):
    code, _out, err = python("""
        import numpy as np, bcolzx
        bcolzx.carray(np.arange(50_000) % 7, chunklen=4096).tohdf5("c.h5", "/group/c")
    """, tmp_path)
    assert code == 0, err
    assert 32026 in filters_of(tmp_path / "c.h5", "/group/c")
    code, out, err = python("""
        import sys, numpy as np, bcolzx
        assert "hdf5plugin" not in sys.modules
        for read in (bcolzx.fromhdf5, bcolzx.interop.h5py.from_hdf5):
            ca = read("c.h5", "/group/c")
            assert (ca[:] == np.arange(50_000) % 7).all()
        print("read", len(ca))
    """, tmp_path)
    assert code == 0, err
    assert out.strip() == "read 50000"


def test_cli_import_without_hdf5plugin_names_the_package(run, carray_dir, tmp_path):
    assert run("export", carray_dir, "c.h5").code == 0
    result = run("import", "c.h5", "back", command=(sys.executable, "-c", WITHOUT_HDF5PLUGIN))
    assert result.code == 3
    assert "hdf5plugin" in result.err and "Blosc2" in result.err
    assert "pip install" in result.err
    assert "can't open directory" not in result.err  # not HDF5's own text
    assert not (tmp_path / "back").exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_api_without_hdf5plugin_raises_importerror_naming_it(tmp_path):
    bcolzx.carray(np.arange(10_000)).tohdf5(str(tmp_path / "c.h5"))
    code, out, err = python("""
        import sys
        sys.modules["hdf5plugin"] = None
        import bcolzx
        try:
            bcolzx.fromhdf5("c.h5", "/carray")
        except ImportError as exc:
            print(exc.name)
            print(exc)
    """, tmp_path)
    assert code == 0, err
    name, message = out.strip().split("\n", 1)
    assert name == "hdf5plugin"
    assert "Blosc2 (HDF5 filter 32026)" in message and "'/carray' of c.h5" in message


def test_pytables_reads_a_table_with_a_filter_of_hdf5plugin(tmp_path):
    """A table another program compressed with Zstandard: PyTables lacks it, hdf5plugin
    has it, and the reader points PyTables' HDF5 at hdf5plugin's plugins."""
    pytest.importorskip("tables", reason="PyTables reads PyTables tables")
    code, _out, err = python("""
        import h5py, hdf5plugin, numpy as np
        rows = np.zeros(1000, dtype=[("a", "i8"), ("b", "f8")])
        rows["a"] = np.arange(1000)
        with h5py.File("z.h5", "w") as f:
            d = f.create_dataset("t", data=rows, chunks=(100,), maxshape=(None,),
                                 **hdf5plugin.Zstd())
            for k, v in {"CLASS": b"TABLE", "VERSION": b"2.7", "TITLE": b"",
                         "FIELD_0_NAME": b"a", "FIELD_1_NAME": b"b"}.items():
                d.attrs[k] = np.bytes_(v)
    """, tmp_path)
    assert code == 0, err
    read = """
        import sys, bcolzx
        ct = bcolzx.fromhdf5("z.h5", "/t")
        print(ct["a"][:].sum())
    """
    code, out, err = python(read, tmp_path)
    assert code == 0, err
    assert out.strip() == str(sum(range(1000)))
    code, out, err = python(read.replace("import sys,", "import sys; sys.modules['hdf5plugin'] "
                                         "= None; import"), tmp_path)
    assert code == 1
    assert "ImportError" in err and "Zstandard (HDF5 filter 32015)" in err
    assert "hdf5plugin is not installed" in err
