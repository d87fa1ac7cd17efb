"""The ``bcolz`` alias modules: code written for legacy bcolz runs on bcolzx.

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

Importing this package changes nothing: only :func:`install` and the shim do.

This module builds and installs the alias modules (:func:`install`,
:func:`uninstall`, :func:`is_installed`) and finds the real legacy bcolz
(:func:`import_legacy`).  The rest of the package, whose public names are
all importable from here:

* :mod:`bcolzx.compat.shim`: the shim package (:func:`install_shim`,
  :func:`uninstall_shim`) and the command line :func:`main`
  (``python -m bcolzx.compat``);
* :mod:`bcolzx.compat.selftest`: :func:`selftest`, what ``bcolzx.test()`` runs
  (``bcolzx.compat.selftest`` is the function; ``importlib.import_module``
  gives the module);
* :mod:`bcolzx.compat.legacy_names`: the helper names legacy bcolz's modules
  held (``py2help``, ``utils``, ``carray_ext.chunk``, the ctable helpers).
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import sys
import types
from typing import Any

from bcolzx.compat.legacy_names import LEGACY_API_VERSION
from bcolzx.compat.selftest import selftest
from bcolzx.compat.shim import (
    SHIM_DIR,
    SHIM_INSTALLER,
    SHIM_MARKER,
    SHIM_PTH,
    _is_our_init,
    _is_shim,
    install_shim,
    main,
    uninstall_shim,
)

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
    "SHIM_MARKER",
    "SHIM_INSTALLER",
    "SHIM_DIR",
    "SHIM_PTH",
]

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

#: The distribution that ships legacy bcolz today.
LEGACY_DIST = "bcolz-zipline"

_ALIAS_FLAG = "__bcolzx_alias__"
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
    # Programs print bcolz.__file__ or take its directory: an alias module's
    # file is this one, where it is made (an existing file, as a path must be).
    module.__file__ = __file__
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
        public = getattr(fallback, "__all__", ())  # bcolzx's, some loaded on first use
        return sorted({*vars(module), *lazy, *public})

    module.__getattr__ = __getattr__  # type: ignore[attr-defined]
    module.__dir__ = __dir__  # type: ignore[attr-defined]
    return module


def _build_aliases() -> dict[str, types.ModuleType]:
    """The alias modules, by name (see :data:`ALIAS_MODULES`)."""
    from unittest.mock import Mock  # legacy bcolz.py2help_tests held it (imports asyncio)

    import numpy as np

    import bcolzx
    from bcolzx._format import layout
    from bcolzx.compat import legacy_names as helpers
    from bcolzx.ctable import cols
    from bcolzx.defaults import MIN_NUMEXPR_VERSION, Defaults, _numexpr_usable

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
        "Defaults": Defaults,
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
        **{name: getattr(helpers, name) for name in helpers.UTILS},
    })
    py2help = _alias_module("bcolz.py2help", "Legacy bcolz.py2help: Python 2/3 names, "
                            "on Python 3.", {name: getattr(helpers, name)
                                             for name in helpers.PY2HELP})
    py2help_tests = _alias_module("bcolz.py2help_tests", "Legacy bcolz.py2help_tests.",
                                  {"Mock": Mock})
    carray_ext.chunk = helpers.chunk

    # The format functions bcolzx loads on first use (from_zarr...) are left to the
    # fallback, so that installing the alias imports no interop module.
    names: dict[str, Any] = {name: vars(bcolzx)[name] for name in bcolzx.__all__
                             if name in vars(bcolzx)}
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
        "min_numexpr_version": MIN_NUMEXPR_VERSION,
        "numexpr_here": _numexpr_usable(),
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
    from bcolzx.defaults import check_allow_pickle, defaults

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
