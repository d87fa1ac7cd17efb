"""Run code written for legacy bcolz on bcolzx: ``import bcolz`` becomes bcolzx.

Two ways to get there, both documented in ``docs/migration.md``:

* In the program, once, before anything imports ``bcolz``::

      import bcolzx.compat
      bcolzx.compat.install()

      import bcolz                       # now bcolzx, under its legacy names
      from bcolz import carray, ctable

  :func:`install` registers alias modules in :data:`sys.modules`: ``bcolz``
  and the legacy submodules ``bcolz.attrs``, ``bcolz.carray_ext``,
  ``bcolz.ctable``, ``bcolz.toplevel``, ``bcolz.defaults``,
  ``bcolz.chunked_eval`` and ``bcolz.utils`` (the last one only for
  ``build_carray``, so that pickles of legacy carrays load).

* For the whole environment, without touching the program: a shim package,
  ``python -m bcolzx.compat install-shim [--target DIR] [--allow-pickle]``,
  writes a tiny ``bcolz`` package whose ``__init__`` calls :func:`install`.
  ``python -m bcolzx.compat uninstall-shim [--target DIR]`` removes it.

Legacy bcolz stored object arrays with pickle and read them back without
asking; bcolzx refuses by default (unpickling runs code).  A legacy program
that stores objects runs unchanged after ``install(allow_pickle=True)`` or a
shim written with ``--allow-pickle``, which set
``bcolzx.defaults.allow_pickle`` for the process.

The alias modules hold bcolzx's own objects (``bcolz.carray is
bcolzx.carray``), so data, defaults and thread settings are shared.
``bcolz.__version__`` is :data:`LEGACY_API_VERSION` (``'1.2.1'``), the legacy
API level bcolzx reproduces, so that version checks written for bcolz keep
passing; the bcolzx version is ``bcolz.__bcolzx_version__``.

Importing this module changes nothing: only :func:`install` and the shim do.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import importlib.machinery
import importlib.util
import os
import sys
import sysconfig
import tempfile
import types
from collections.abc import Callable, Sequence
from typing import Any

__all__ = [
    "LEGACY_API_VERSION",
    "ALIAS_MODULES",
    "install",
    "uninstall",
    "is_installed",
    "install_shim",
    "uninstall_shim",
    "import_legacy",
    "selftest",
    "main",
]

#: What ``bcolz.__version__`` reports once :func:`install` ran: the last
#: release of legacy bcolz, whose documented API bcolzx reproduces.
LEGACY_API_VERSION = "1.2.1"

#: The names :func:`install` puts in :data:`sys.modules`.
ALIAS_MODULES = (
    "bcolz",
    "bcolz.attrs",
    "bcolz.carray_ext",
    "bcolz.ctable",
    "bcolz.toplevel",
    "bcolz.defaults",
    "bcolz.chunked_eval",
    "bcolz.utils",
    "bcolz.py2help",
    "bcolz.py2help_tests",
    "bcolz.arrayprint",
    "bcolz.tests",
)

#: The first line of the shim's ``__init__.py``: how the shim is recognised.
SHIM_MARKER = "# bcolzx-compat-shim"
#: The content of the shim's ``INSTALLER`` file in its ``.dist-info``.
SHIM_INSTALLER = "bcolzx-compat-shim"
#: Where the shim goes when the target already holds a real legacy bcolz
#: (``target/SHIM_DIR/bcolz``), put ahead of it on ``sys.path`` by SHIM_PTH.
SHIM_DIR = "bcolzx-shim"
SHIM_PTH = "bcolzx-shim.pth"
#: The distribution that ships legacy bcolz today.
LEGACY_DIST = "bcolz-zipline"

_ALIAS_FLAG = "__bcolzx_alias__"
_SHIM_FLAG = "__bcolzx_shim__"
_MIGRATION = "see docs/migration.md in the bcolzx documentation"

# Legacy optional dependencies exposed as attributes of ``bcolz``, imported
# only when the attribute is read (legacy bcolz imported them eagerly).
_LAZY_MODULES = ("numexpr", "pandas", "tables", "dask")


# -- the alias modules -----------------------------------------------------------


def _alias_module(name: str, doc: str, names: dict[str, Any],
                  fallback: types.ModuleType | None = None) -> types.ModuleType:
    """A new module `name` holding `names`, marked as a bcolzx alias.

    A missing attribute is looked up in `fallback` (public names only), and
    otherwise raises an AttributeError that points to the migration guide.
    """
    module = types.ModuleType(name, doc)
    is_package = name == "bcolz"
    module.__spec__ = importlib.machinery.ModuleSpec(
        name, None, origin=f"bcolzx alias ({__name__})", is_package=is_package)
    module.__package__ = "bcolz"
    module.__loader__ = None
    if is_package:
        # A package without submodule locations: 'import bcolz.x' for an x that
        # is not an alias fails with ModuleNotFoundError, as it should.
        module.__path__ = []
    setattr(module, _ALIAS_FLAG, True)
    vars(module).update(names)

    def __getattr__(attr: str) -> Any:  # noqa: N807 - PEP 562 hook
        if fallback is not None and not attr.startswith("_"):
            try:
                return getattr(fallback, attr)
            except AttributeError:
                pass
        if name == "bcolz" and attr in _LAZY_MODULES and \
                importlib.util.find_spec(attr) is not None:
            return importlib.import_module(attr)
        raise AttributeError(
            f"module {name!r} (an alias of bcolzx) has no attribute {attr!r}; {_MIGRATION}")

    def __dir__() -> list[str]:  # noqa: N807 - PEP 562 hook
        lazy = _LAZY_MODULES if name == "bcolz" else ()
        return sorted({*vars(module), *lazy})

    module.__getattr__ = __getattr__  # type: ignore[attr-defined]
    module.__dir__ = __dir__  # type: ignore[attr-defined]
    return module


def _build_carray(array, rootdir):
    """Rebuild a carray from a legacy bcolz pickle (``bcolz.utils.build_carray``).

    Legacy bcolz pickled an in-memory carray as ``build_carray(data, None)``
    and a persistent one as ``build_carray(None, rootdir)``.

    Parameters
    ----------
    array : array_like or None
        The data of an in-memory carray.
    rootdir : str or None
        The directory of a persistent carray, opened in mode ``'a'``.

    Returns
    -------
    bcolzx.carray

    Raises
    ------
    FileNotFoundError
        If `rootdir` is given and holds no carray.
    """
    import bcolzx

    if rootdir:
        return bcolzx.carray(rootdir=rootdir)
    return bcolzx.carray(array)


def _build_aliases() -> dict[str, types.ModuleType]:
    """The alias modules, by name (see :data:`ALIAS_MODULES`)."""
    import numpy as np

    import bcolzx
    from bcolzx import params
    from bcolzx._format import layout
    from bcolzx.ctable import cols

    from bcolzx import _legacy_helpers as helpers

    attrs_mod = _alias_module("bcolz.attrs", "Legacy bcolz.attrs: bcolzx.attrs.", {
        "attrs": bcolzx.attrs.attrs,
        "ATTRSDIR": layout.ATTRS_FILE,
        "dict_iteritems": helpers.dict_iteritems,
    })
    carray_ext = _alias_module("bcolz.carray_ext", "Legacy bcolz.carray_ext: the carray class.", {
        "carray": bcolzx.carray,
        "blosc_version": bcolzx.blosc_version,
        "blosc_compressor_list": bcolzx.blosc_compressor_list,
    })
    ctable_mod = _alias_module("bcolz.ctable", "Legacy bcolz.ctable: the ctable class.", {
        "ctable": bcolzx.ctable,
        "cols": cols,
        "attrs": attrs_mod,
        "array2string": np.array2string,
        **{name: getattr(helpers, name)
           for name in (*helpers.CTABLE_HELPERS, "xrange", "izip", "imap")},
    })
    toplevel = _alias_module("bcolz.toplevel", "Legacy bcolz.toplevel: constructors.", {
        **{name: getattr(bcolzx, name) for name in (
            "open", "fromiter", "fill", "zeros", "ones", "arange", "iterblocks", "walk",
            "cparams", "print_versions", "detect_number_of_cores", "set_nthreads")},
        **{name: getattr(helpers, name) for name in ("ROOTDIRS", "xrange", "_inttypes")},
    })
    defaults_mod = _alias_module("bcolz.defaults", "Legacy bcolz.defaults.", {
        "defaults": bcolzx.defaults,
        "defaults_ctx": bcolzx.defaults_ctx,
        "Defaults": params.Defaults,
    })
    from bcolzx._query.expr import FUNCTIONS, REDUCTIONS

    chunked_eval = _alias_module("bcolz.chunked_eval", "Legacy bcolz.chunked_eval: eval.", {
        "eval": bcolzx.eval,
        "is_sequence_like": helpers.is_sequence_like,
        # The names an expression can call (so they are not variables).
        "numexpr_functions": {**FUNCTIONS, **dict.fromkeys(REDUCTIONS, 1)},
    })
    # Legacy bcolz printed carrays with its own copy of NumPy's arrayprint;
    # bcolzx prints through NumPy, whose functions these are.
    arrayprint = _alias_module("bcolz.arrayprint", "Legacy bcolz.arrayprint: NumPy's "
                               "printing functions.", {
        "array2string": np.array2string,
        "set_printoptions": np.set_printoptions,
        "get_printoptions": np.get_printoptions,
    })
    tests = _alias_module("bcolz.tests", "Legacy bcolz.tests: test() checks the installation "
                          "(bcolzx's test suite is in its source tree).", {
        "test": bcolzx.test,
    })

    utils = _alias_module("bcolz.utils", "Legacy bcolz.utils: helpers legacy programs call.", {
        "build_carray": _build_carray,
        **{name: getattr(helpers, name) for name in helpers.UTILS},
    })
    py2help = _alias_module("bcolz.py2help", "Legacy bcolz.py2help: Python 2/3 names, "
                            "on Python 3.", {name: getattr(helpers, name)
                                             for name in helpers.PY2HELP})
    py2help_tests = _alias_module("bcolz.py2help_tests", "Legacy bcolz.py2help_tests.",
                                  {"Mock": helpers.Mock})
    carray_ext.chunk = helpers.chunk

    names: dict[str, Any] = {name: getattr(bcolzx, name) for name in bcolzx.__all__}
    names.update({
        "__version__": LEGACY_API_VERSION,
        "__bcolzx_version__": bcolzx.__version__,
        # Submodules, as legacy ``bcolz`` had them as attributes.  ``bcolz.ctable``
        # and ``bcolz.defaults`` are the class and the instance, as in legacy.
        "attrs": attrs_mod,
        "carray_ext": carray_ext,
        "toplevel": toplevel,
        "chunked_eval": chunked_eval,
        "utils": utils,
        "py2help": py2help,
        "arrayprint": arrayprint,
        "tests": tests,
        "min_dask_version": "0.9.0",
        # Legacy bcolz ran 'git describe' in its own directory at import
        # time; an installed bcolz (and bcolzx) is no git checkout: None.
        "git_description": None,
        # Legacy module-level variables, found without importing anything.
        "min_numexpr_version": params.MIN_NUMEXPR_VERSION,
        "numexpr_here": params._numexpr_usable(),
        "pandas_here": importlib.util.find_spec("pandas") is not None,
        "tables_here": importlib.util.find_spec("tables") is not None,
        "dask_here": importlib.util.find_spec("dask") is not None,  # vm='dask' works
        "ncores": bcolzx.detect_number_of_cores(),
        # Legacy bcolz shipped a copy of NumPy's printing functions; bcolzx
        # prints through NumPy, so NumPy's own options act on carrays.
        "array2string": np.array2string,
        "set_printoptions": np.set_printoptions,
        "get_printoptions": np.get_printoptions,
    })
    top = _alias_module(
        "bcolz",
        "bcolz, legacy name of bcolzx (installed by bcolzx.compat.install()).",
        names,
        fallback=bcolzx,
    )
    modules = {
        "bcolz": top,
        "bcolz.attrs": attrs_mod,
        "bcolz.carray_ext": carray_ext,
        "bcolz.ctable": ctable_mod,
        "bcolz.toplevel": toplevel,
        "bcolz.defaults": defaults_mod,
        "bcolz.chunked_eval": chunked_eval,
        "bcolz.utils": utils,
        "bcolz.py2help": py2help,
        "bcolz.py2help_tests": py2help_tests,
        "bcolz.arrayprint": arrayprint,
        "bcolz.tests": tests,
    }
    for module in (toplevel, ctable_mod, defaults_mod, chunked_eval):
        module.bcolz = top  # legacy submodules did 'import bcolz'
    ctable_mod.utils = utils
    assert tuple(modules) == ALIAS_MODULES
    return modules


def _bcolz_entries() -> list[str]:
    return [name for name in list(sys.modules) if name == "bcolz" or name.startswith("bcolz.")]


def _is_alias(module: Any) -> bool:
    return getattr(module, _ALIAS_FLAG, False) is True


def _is_shim(module: Any) -> bool:
    return getattr(module, _SHIM_FLAG, False) is True


def is_installed() -> bool:
    """Whether ``sys.modules['bcolz']`` is the bcolzx alias.

    Returns
    -------
    bool

    Raises
    ------
    None
    """
    return _is_alias(sys.modules.get("bcolz"))


def install(force: bool = False, allow_pickle: bool = False) -> types.ModuleType:
    """Make ``import bcolz`` (and the legacy submodules) give bcolzx.

    Registers the alias modules of :data:`ALIAS_MODULES` in
    :data:`sys.modules`.  Call it before the code written for legacy bcolz
    imports ``bcolz``.  Calling it again returns the same ``bcolz`` module.

    Parameters
    ----------
    force : bool
        Replace a real (legacy) bcolz that is already imported in this
        process.  Its modules are kept aside and :func:`uninstall` puts them
        back; objects made with it stay legacy bcolz objects.
    allow_pickle : bool
        Also set ``bcolzx.defaults.allow_pickle = True``, so that object
        arrays (which legacy bcolz pickled, and unpickled on every read) work
        as they did.  Only for data you trust: unpickling runs code.  False
        (default) leaves the setting as it is (off unless set).

    Returns
    -------
    module
        The ``bcolz`` alias module.

    Raises
    ------
    RuntimeError
        If legacy bcolz (any ``bcolz`` or ``bcolz.*`` module that is not a
        bcolzx alias) is already imported and `force` is False: two
        libraries under one name would mix objects of both.
    TypeError
        If `allow_pickle` is not a bool.

    Examples
    --------
    >>> import sys, bcolzx.compat
    >>> saved = {k: sys.modules.pop(k) for k in list(sys.modules)
    ...          if k == 'bcolz' or k.startswith('bcolz.')}
    >>> bcolz = bcolzx.compat.install()
    >>> import bcolz.attrs
    >>> bcolz.carray is bcolzx.carray, bcolz.__version__
    (True, '1.2.1')
    >>> bcolzx.compat.uninstall()
    >>> sys.modules.update(saved)
    """
    from bcolzx.params import check_allow_pickle, defaults

    if check_allow_pickle(allow_pickle):
        defaults.allow_pickle = True
    current = sys.modules.get("bcolz")
    if _is_alias(current):
        # Already installed: put back any alias submodule someone removed.
        for name, module in current.__bcolzx_modules__.items():
            sys.modules.setdefault(name, module)
        return current
    entries = _bcolz_entries()
    foreign = [name for name in entries
               if not _is_alias(sys.modules[name]) and not _is_shim(sys.modules[name])]
    if foreign and not force:
        where = getattr(sys.modules.get("bcolz"), "__file__", None) or foreign[0]
        raise RuntimeError(
            f"a real bcolz is already imported in this process ({where}); "
            "bcolzx.compat.install() will not shadow it. Call install() before anything "
            "imports bcolz, or install(force=True) to replace it.")
    replaced = {name: sys.modules.pop(name) for name in foreign}
    for name in entries:  # stale aliases or the shim being imported
        sys.modules.pop(name, None)
    modules = _build_aliases()
    top = modules["bcolz"]
    top.__bcolzx_modules__ = dict(modules)
    top.__bcolzx_replaced__ = replaced
    sys.modules.update(modules)
    return top


def uninstall() -> None:
    """Remove the alias modules from :data:`sys.modules`.

    A legacy bcolz that :func:`install` replaced (``force=True``) is put
    back.  Modules that are not bcolzx aliases are never touched, and names
    already bound to the aliases (``import bcolz`` done earlier) keep them.

    Raises
    ------
    None
    """
    top = sys.modules.get("bcolz")
    replaced = getattr(top, "__bcolzx_replaced__", {}) if _is_alias(top) else {}
    for name in _bcolz_entries():
        if _is_alias(sys.modules[name]):
            del sys.modules[name]
    for name, module in replaced.items():
        sys.modules.setdefault(name, module)


# -- the real legacy bcolz, next to the shim -------------------------------------------


def import_legacy() -> types.ModuleType:
    """Import the real legacy bcolz (the ``bcolz-zipline`` distribution) as ``bcolz``.

    For programs that compare the two libraries, such as ``bcolzx bench``:
    it finds legacy bcolz in the directory its distribution was installed
    to, so it works when the shim of :func:`install_shim` comes first on
    :data:`sys.path`.  Legacy bcolz imports itself by the name ``bcolz``, so
    it cannot share a process with the alias: call this before anything
    imports ``bcolz`` (a real legacy bcolz already imported is returned).

    Returns
    -------
    module
        The legacy ``bcolz`` package.

    Raises
    ------
    ImportError
        If ``bcolz-zipline`` is not installed.
    RuntimeError
        If the bcolzx alias (or the shim) already holds the name ``bcolz``
        in this process.
    """
    import importlib.metadata as md

    current = sys.modules.get("bcolz")
    if current is not None:
        if _is_alias(current) or _is_shim(current):
            raise RuntimeError("'bcolz' is bcolzx's alias in this process; import the real "
                               "legacy bcolz (import_legacy()) before anything imports bcolz")
        return current
    try:
        where = str(md.distribution(LEGACY_DIST).locate_file(""))
    except md.PackageNotFoundError:
        raise ImportError(f"legacy bcolz is not installed (pip install {LEGACY_DIST})") from None
    spec = importlib.machinery.PathFinder.find_spec("bcolz", [where])
    if spec is None or spec.loader is None or _is_our_init(spec.origin or ""):
        raise ImportError(f"{LEGACY_DIST} is installed but holds no bcolz package in {where}")
    module = importlib.util.module_from_spec(spec)
    sys.modules["bcolz"] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        for name in _bcolz_entries():
            sys.modules.pop(name, None)
        raise
    return module


# -- the shim package ---------------------------------------------------------------

_SHIM_INIT = f'''{SHIM_MARKER}: written by "python -m bcolzx.compat install-shim";
# remove it with "python -m bcolzx.compat uninstall-shim --target <this directory's parent>".
"""bcolz: the legacy name of bcolzx.

This package is a shim: importing it runs bcolzx.compat.install(), which
puts bcolzx's alias modules in sys.modules, so that "import bcolz" gives
bcolzx under the legacy bcolz names.  See docs/migration.md of bcolzx.
"""

{_SHIM_FLAG} = True

try:
    import bcolzx.compat as _bcolzx_compat
except ImportError as _exc:
    raise ImportError(
        "this 'bcolz' is the bcolzx compatibility shim, but bcolzx cannot be imported "
        "(install bcolzx, or remove the shim with 'python -m bcolzx.compat uninstall-shim')"
    ) from _exc

_bcolzx_compat.install({{install_args}})
'''


def _shim_init(allow_pickle: bool) -> str:
    """The shim's ``__init__.py``: it calls ``install()``, with ``allow_pickle=True``
    when asked (and then says so in a comment)."""
    if not allow_pickle:
        return _SHIM_INIT.format(install_args="")
    text = _SHIM_INIT.format(install_args="allow_pickle=True")
    return text.replace(f"{_SHIM_FLAG} = True\n",
                        f"{_SHIM_FLAG} = True\n\n# Written with --allow-pickle: object arrays "
                        "(pickled values) may be read and\n# written, as under legacy bcolz. "
                        "Only for data you trust: unpickling runs code.\n", 1)


_SHIM_DIST = f"bcolz-{LEGACY_API_VERSION}+bcolzx.dist-info"
_DIST_FILES = ("METADATA", "INSTALLER", "top_level.txt", "RECORD")


def _default_target() -> str:
    return sysconfig.get_paths()["purelib"]


def _record_line(relpath: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{relpath},sha256={digest},{len(data)}"


def _atomic_write(path: str, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=os.path.dirname(path))
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _is_our_init(path: str) -> bool:
    try:
        with open(path, encoding="utf-8") as f:
            return f.readline().startswith(SHIM_MARKER)
    except (FileNotFoundError, UnicodeDecodeError):
        return False


def _is_our_dist(path: str) -> bool:
    try:
        with open(os.path.join(path, "INSTALLER"), encoding="utf-8") as f:
            return f.read().strip() == SHIM_INSTALLER
    except (FileNotFoundError, NotADirectoryError, UnicodeDecodeError):
        return False


def _bcolz_dists(target: str) -> list[str]:
    """``.dist-info``/``.egg-info`` entries in `target` of a distribution named bcolz."""
    out = []
    for entry in os.listdir(target):
        if entry.endswith((".dist-info", ".egg-info")) and \
                entry.split("-", 1)[0].split(".", 1)[0].lower() == "bcolz":
            out.append(entry)
    return sorted(out)


def _foreign_bcolz(target: str) -> list[str]:
    """What in `target` is a real bcolz (not written by install_shim)."""
    found = []
    pkg = os.path.join(target, "bcolz")
    if os.path.isdir(pkg) and not _is_our_init(os.path.join(pkg, "__init__.py")):
        found.append(pkg)
    for entry in os.listdir(target):
        stem = entry.split(".", 1)[0]
        if stem == "bcolz" and entry != "bcolz" and \
                not entry.endswith((".dist-info", ".egg-info")):
            found.append(os.path.join(target, entry))  # bcolz.py, bcolz.*.so, bcolz.pth...
    for dist in _bcolz_dists(target):
        if not _is_our_dist(os.path.join(target, dist)):
            found.append(os.path.join(target, dist))
    return found


def install_shim(target: str | os.PathLike[str] | None = None,
                 metadata: bool = True, allow_pickle: bool = False) -> list[str]:
    """Write the ``bcolz`` shim package into `target`.

    The package is one ``bcolz/__init__.py`` that calls :func:`install`, so
    that ``import bcolz`` gives bcolzx wherever `target` is on
    :data:`sys.path` ahead of any real bcolz.  With `metadata`, a
    ``bcolz-1.2.1+bcolzx.dist-info`` is written too (unless a real ``bcolz``
    distribution is there): package managers then see a ``bcolz`` distribution (``pip list``, requirements on ``bcolz``
    are met, ``pip uninstall bcolz`` removes the shim).  Running it again
    rewrites the shim.

    Parameters
    ----------
    target : str or os.PathLike, optional
        The directory (default: this interpreter's ``purelib``,
        its site-packages).
    metadata : bool
        Also write the ``.dist-info`` directory.
    allow_pickle : bool
        The shim calls ``install(allow_pickle=True)``: every program that
        imports ``bcolz`` through it may read and write object arrays
        (pickles), as under legacy bcolz.  Default False.

    Returns
    -------
    list of str
        The paths written.

    When `target` already holds a real legacy bcolz (installed with
    ``pip install bcolz-zipline``, as the ``bench`` extra does), that one is left
    untouched: the shim goes into ``target/bcolzx-shim/bcolz`` and a
    ``bcolzx-shim.pth`` puts that directory first on :data:`sys.path`, so
    ``import bcolz`` gives bcolzx while :func:`import_legacy` still finds
    legacy bcolz (the benchmark compares the two).

    Raises
    ------
    FileNotFoundError
        If `target` does not exist.
    OSError
        If a file cannot be written.
    TypeError
        If `allow_pickle` is not a bool (checked before anything is written).
    """
    from bcolzx.params import check_allow_pickle

    init_data = _shim_init(check_allow_pickle(allow_pickle)).encode("utf-8")
    target = os.path.abspath(os.fspath(target) if target is not None else _default_target())
    if not os.path.isdir(target):
        raise FileNotFoundError(f"target directory {target} does not exist")
    written = []
    if _foreign_bcolz(target):
        # A real legacy bcolz lives here (the bench extra installs one): it
        # stays untouched, and the shim goes into a directory of its own that
        # a .pth file puts ahead of it on sys.path.
        ahead = os.path.join(target, SHIM_DIR)
        pkg = os.path.join(ahead, "bcolz")
        pth_path = os.path.join(target, SHIM_PTH)
        pth = (f"{SHIM_MARKER}: puts the bcolzx shim ahead of legacy bcolz; remove with "
               f"'python -m bcolzx.compat uninstall-shim'\n"
               f"import sys; _p = {ahead!r}; _p in sys.path or sys.path.insert(0, _p)\n")
        os.makedirs(pkg, exist_ok=True)
        _atomic_write(pth_path, pth.encode("utf-8"))
        written.append(pth_path)
        relinit = f"{SHIM_DIR}/bcolz/__init__.py"
    else:
        pkg = os.path.join(target, "bcolz")
        os.makedirs(pkg, exist_ok=True)
        relinit = "bcolz/__init__.py"
    init_path = os.path.join(pkg, "__init__.py")
    _atomic_write(init_path, init_data)
    written.insert(0, init_path)
    for stale in _bcolz_dists(target):  # ours, from another version
        if stale != _SHIM_DIST and _is_our_dist(os.path.join(target, stale)):
            _remove_dist(os.path.join(target, stale))
    foreign_dists = [d for d in _bcolz_dists(target) if not _is_our_dist(os.path.join(target, d))]
    if metadata and not foreign_dists:  # never a second 'bcolz' distribution beside a real one
        dist = os.path.join(target, _SHIM_DIST)
        os.makedirs(dist, exist_ok=True)
        files = {
            "METADATA": (
                "Metadata-Version: 2.1\n"
                "Name: bcolz\n"
                f"Version: {LEGACY_API_VERSION}+bcolzx\n"
                "Summary: Shim: 'import bcolz' gives bcolzx (written by bcolzx.compat)\n"
                "Requires-Dist: bcolzx\n"
            ).encode(),
            "INSTALLER": f"{SHIM_INSTALLER}\n".encode(),
            "top_level.txt": b"bcolz\n",
        }
        record = [_record_line(relinit, init_data)]
        if len(written) > 1:
            record.append(_record_line(SHIM_PTH, open(written[1], "rb").read()))
        for fname, data in files.items():
            path = os.path.join(dist, fname)
            _atomic_write(path, data)
            written.append(path)
            record.append(_record_line(f"{_SHIM_DIST}/{fname}", data))
        record.append(f"{_SHIM_DIST}/RECORD,,")
        record_path = os.path.join(dist, "RECORD")
        _atomic_write(record_path, ("\n".join(record) + "\n").encode())
        written.append(record_path)
    importlib.invalidate_caches()
    return written


def _remove_dist(dist: str) -> list[str]:
    removed = []
    for fname in _DIST_FILES:
        path = os.path.join(dist, fname)
        if os.path.isfile(path):
            os.unlink(path)
            removed.append(path)
    try:
        os.rmdir(dist)
        removed.append(dist)
    except OSError:
        pass  # holds something we did not write: leave it
    return removed


def uninstall_shim(target: str | os.PathLike[str] | None = None) -> list[str]:
    """Remove what :func:`install_shim` wrote into `target`, and nothing else.

    Removes ``bcolz/__init__.py`` if it is the shim, its compiled
    ``__pycache__/__init__.*.pyc``, the shim's ``.dist-info``, and the
    directories left empty.  A real bcolz is never touched.

    Parameters
    ----------
    target : str or os.PathLike, optional
        As for :func:`install_shim`.

    Returns
    -------
    list of str
        The paths removed (empty when there was no shim).

    Raises
    ------
    OSError
        If the file system refuses a removal.
    """
    target = os.path.abspath(os.fspath(target) if target is not None else _default_target())
    removed: list[str] = []
    if not os.path.isdir(target):
        return removed
    pth_path = os.path.join(target, SHIM_PTH)
    if _is_our_init(pth_path):
        os.unlink(pth_path)
        removed.append(pth_path)
        removed.extend(_remove_shim_package(os.path.join(target, SHIM_DIR, "bcolz")))
        try:
            os.rmdir(os.path.join(target, SHIM_DIR))
            removed.append(os.path.join(target, SHIM_DIR))
        except OSError:
            pass  # missing, or holds files we did not write
    removed.extend(_remove_shim_package(os.path.join(target, "bcolz")))
    for dist in _bcolz_dists(target):
        if _is_our_dist(os.path.join(target, dist)):
            removed.extend(_remove_dist(os.path.join(target, dist)))
    importlib.invalidate_caches()
    return removed


def _remove_shim_package(pkg: str) -> list[str]:
    """Remove the shim's ``pkg/__init__.py`` (and its compiled form, and the
    directories left empty) if it is ours; return what was removed."""
    removed: list[str] = []
    init_path = os.path.join(pkg, "__init__.py")
    if _is_our_init(init_path):
        os.unlink(init_path)
        removed.append(init_path)
        cache = os.path.join(pkg, "__pycache__")
        if os.path.isdir(cache):
            for entry in os.listdir(cache):
                if entry.startswith("__init__.") and entry.endswith(".pyc"):
                    os.unlink(os.path.join(cache, entry))
                    removed.append(os.path.join(cache, entry))
        for directory in (cache, pkg):
            try:
                os.rmdir(directory)
                removed.append(directory)
            except OSError:
                pass  # missing, or holds files we did not write
    return removed


# -- the self-check behind bcolzx.test() ---------------------------------------------


def _checks(tmp: str, heavy: bool) -> list[tuple[str, Callable[[], None]]]:
    """The self-checks: (description, function raising on failure)."""
    import numpy as np

    import bcolzx

    n = 2_000_000 if heavy else 50_000

    def same(a, b) -> None:
        if not np.array_equal(np.asarray(a), np.asarray(b)):
            raise AssertionError(f"{a!r} != {b!r}")

    def codecs() -> None:
        data = np.arange(n, dtype=np.int64) % 1000
        for cname in bcolzx.blosc_compressor_list():
            for shuffle in (bcolzx.NOSHUFFLE, bcolzx.SHUFFLE, bcolzx.BITSHUFFLE):
                ca = bcolzx.carray(data, cparams=bcolzx.cparams(clevel=5, shuffle=shuffle,
                                                                cname=cname))
                same(ca[:], data)

    def carray_memory() -> None:
        ca = bcolzx.arange(n, dtype="i8", chunklen=1000)
        same(ca[10:20], np.arange(10, 20))
        if ca[-1] != n - 1 or ca.sum() != np.arange(n, dtype="i8").sum():
            raise AssertionError("indexing or sum")
        ca.append(np.arange(5))
        ca.trim(5)
        ca.resize(n + 3)
        same(ca[n:], [0, 0, 0])
        ca[[0, 1]] = [7, 8]
        same(ca[:3], [7, 8, 2])
        same(list(bcolzx.eval("ca < 3").wheretrue()), [2, n, n + 1, n + 2])
        same(list(ca.where(ca[:] > n - 3)), [n - 2, n - 1])

    def carray_disk() -> None:
        path = os.path.join(tmp, "carray")
        data = np.linspace(0, 1, n)
        ca = bcolzx.carray(data, rootdir=path, mode="w")
        ca.attrs["unit"] = "m"
        ca.append([2.0])
        ca.flush()
        again = bcolzx.open(path, mode="r")
        same(again[:], np.append(data, 2.0))
        if again.attrs["unit"] != "m":
            raise AssertionError("attrs not persisted")
        try:
            again.append([1.0])
        except OSError:
            pass
        else:
            raise AssertionError("a write in mode 'r' did not raise")

    def ndim() -> None:
        data = np.arange(n * 4, dtype="f4").reshape(n, 2, 2)
        ca = bcolzx.carray(data)
        same(ca[3], data[3])
        same(ca[5:9, 1], data[5:9, 1])
        same(ca.reshape((n * 4,))[:], data.ravel())

    def ctable_disk() -> None:
        path = os.path.join(tmp, "ctable")
        a = np.arange(n)
        b = a * 0.5
        ct = bcolzx.ctable([a, b], names=["a", "b"], rootdir=path, mode="w")
        ct.addcol(a % 7, name="c")
        ct.flush()
        ct = bcolzx.open(path, mode="r")
        hits = ct.fetchwhere("(a > 10) & (c == 3)", outcols=["nrow__", "b"],
                             out_flavor="numpy")
        expect = np.flatnonzero((a > 10) & (a % 7 == 3))
        same(hits["nrow__"], expect)
        same(hits["b"], expect * 0.5)
        same(ct.eval("a + b", out_flavor="numpy"), a + b)
        row = next(ct.where("a == 5", outcols="a,c"))
        if (row.a, row.c) != (5, 5):
            raise AssertionError(f"where gave {row}")

    return [
        ("codecs and shuffles round-trip", codecs),
        ("in-memory carray: index, append, trim, resize, where", carray_memory),
        ("persistent carray: flush, reopen read-only, attrs", carray_disk),
        ("N-D carray: rows, slices, reshape", ndim),
        ("persistent ctable: addcol, reopen, fetchwhere, eval, where", ctable_disk),
    ]


def selftest(verbose: bool = False, heavy: bool = False) -> bool:
    """Check that this installation of bcolzx works (what ``bcolzx.test()`` runs).

    The test suite is not installed with bcolzx (it lives in the source
    tree: run ``pytest`` there).  This is a smoke check of the installed
    package: it prints the versions, then creates, reopens and queries
    carrays and ctables, in memory and in a temporary directory that is
    removed afterwards, and prints one line per check.

    Parameters
    ----------
    verbose : bool
        Also print the traceback of a failed check.
    heavy : bool
        Use 2,000,000 rows instead of 50,000.

    Returns
    -------
    bool
        True when every check passed.  (Legacy ``bcolz.test()`` ran its
        unittest suite and then called ``sys.exit``; this returns.)

    Raises
    ------
    None
        A failing check is reported and counted, not raised.
    """
    import time
    import traceback

    import bcolzx

    bcolzx.print_versions()
    failures = 0
    with tempfile.TemporaryDirectory(prefix="bcolzx-test-") as tmp:
        checks = _checks(tmp, heavy)
        for description, check in checks:
            start = time.perf_counter()
            try:
                check()
            except Exception as exc:  # noqa: BLE001 - every failure is reported
                failures += 1
                print(f"FAIL  {description}: {type(exc).__name__}: {exc}")
                if verbose:
                    traceback.print_exc(file=sys.stdout)
            else:
                print(f"ok    {description} ({time.perf_counter() - start:.2f} s)")
    print(f"{len(checks) - failures} of {len(checks)} checks passed"
          + ("" if failures else " (the full test suite is in the bcolzx source tree)"))
    return failures == 0


# -- command line -----------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m bcolzx.compat install-shim [--allow-pickle]|uninstall-shim [--target DIR]``.

    Parameters
    ----------
    argv : sequence of str, optional
        The arguments (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        The exit status: 0 on success, 1 if the shim was refused or not found.

    Raises
    ------
    SystemExit
        For bad arguments (from argparse).
    """
    parser = argparse.ArgumentParser(
        prog="python -m bcolzx.compat",
        description="Make 'import bcolz' give bcolzx for a whole environment.")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, text in (("install-shim", "write the 'bcolz' shim package"),
                       ("uninstall-shim", "remove the shim written by install-shim")):
        cmd = sub.add_parser(name, help=text)
        cmd.add_argument("--target", default=None,
                         help=f"directory (default: this interpreter's site-packages, "
                              f"{_default_target()})")
        if name == "install-shim":
            cmd.add_argument("--no-metadata", action="store_true",
                             help="do not write the bcolz .dist-info")
            cmd.add_argument("--allow-pickle", action="store_true",
                             help="let programs importing bcolz read and write object arrays "
                                  "(pickled values, as legacy bcolz did; unpickling runs "
                                  "code: only for data you trust)")
    args = parser.parse_args(argv)
    if args.command == "install-shim":
        try:
            written = install_shim(args.target, metadata=not args.no_metadata,
                                   allow_pickle=args.allow_pickle)
        except (FileExistsError, FileNotFoundError) as exc:
            print(f"install-shim: {exc}", file=sys.stderr)
            return 1
        for path in written:
            print(f"wrote {path}")
        if any(path.endswith(SHIM_PTH) for path in written):
            print("legacy bcolz is installed here too: it is left as it is, and "
                  f"{SHIM_PTH} puts the shim ahead of it in every new interpreter "
                  "(bcolzx.compat.import_legacy() still loads legacy bcolz)")
            return 0
        target = os.path.dirname(os.path.dirname(written[0]))
        if os.path.abspath(target) not in [os.path.abspath(p) for p in sys.path if p]:
            print(f"note: {target} is not on sys.path here; add it (PYTHONPATH) for "
                  "'import bcolz' to find the shim")
        else:
            spec = importlib.machinery.PathFinder.find_spec("bcolz", sys.path)
            origin = spec.origin if spec is not None else None
            if origin != written[0]:
                print(f"warning: 'import bcolz' finds {origin} before the shim; "
                      "that bcolz shadows it")
        return 0
    removed = uninstall_shim(args.target)
    if not removed:
        print("uninstall-shim: no bcolzx shim found", file=sys.stderr)
        return 1
    for path in removed:
        print(f"removed {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
