"""The ``bcolz`` shim package: ``python -m bcolzx.compat install-shim`` and its removal.

:func:`install_shim` writes a tiny ``bcolz`` package (and, unless asked not
to, a ``.dist-info`` for it) whose ``__init__`` calls
:func:`bcolzx.compat.install`, so that ``import bcolz`` gives bcolzx in
every program of an environment; :func:`uninstall_shim` removes exactly
what it wrote, never a real bcolz.  :func:`main` is the command line
(``python -m bcolzx.compat``, see :mod:`bcolzx.compat.__main__`).
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import importlib
import importlib.machinery
import os
import sys
import sysconfig
import tempfile
from collections.abc import Sequence
from typing import Any

from bcolzx.compat.legacy_names import LEGACY_API_VERSION

__all__ = ["SHIM_MARKER", "SHIM_INSTALLER", "SHIM_DIR", "SHIM_PTH", "install_shim",
           "uninstall_shim", "main"]

#: The first line of the shim's ``__init__.py``: how the shim is recognised.
SHIM_MARKER = "# bcolzx-compat-shim"
#: The content of the shim's ``INSTALLER`` file in its ``.dist-info``.
SHIM_INSTALLER = "bcolzx-compat-shim"
#: Where the shim goes when the target already holds a real legacy bcolz
#: (``target/SHIM_DIR/bcolz``), put ahead of it on ``sys.path`` by SHIM_PTH.
SHIM_DIR = "bcolzx-shim"
SHIM_PTH = "bcolzx-shim.pth"

_SHIM_FLAG = "__bcolzx_shim__"


def _is_shim(module: Any) -> bool:
    """Whether `module` is the shim package (while it is being imported)."""
    return getattr(module, _SHIM_FLAG, False) is True


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
    distribution is there): package managers then see a ``bcolz``
    distribution (``pip list``, requirements on ``bcolz`` are met, ``pip
    uninstall bcolz`` removes the shim).  Running it again rewrites the shim.

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
    from bcolzx.defaults import check_allow_pickle

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




# -- command line -----------------------------------------------------------------------


#: The two commands, with their one-line help (``python -m bcolzx.compat`` and ``bcolzx``).
COMMANDS = (("install-shim", "write the 'bcolz' shim package: 'import bcolz' gives bcolzx"),
            ("uninstall-shim", "remove the shim written by install-shim"))


def add_arguments(cmd: argparse.ArgumentParser, name: str) -> None:
    """Add the options of command *name* (one of :data:`COMMANDS`) to *cmd*."""
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


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m bcolzx.compat install-shim [--allow-pickle]|uninstall-shim [--target DIR]``.

    The same commands are ``bcolzx install-shim`` and ``bcolzx uninstall-shim``
    (which also work from the root of a source clone, where ``python -m``
    would find the unbuilt tree first).

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
    for name, text in COMMANDS:
        add_arguments(sub.add_parser(name, help=text), name)
    return run(parser.parse_args(argv))


def run(args: argparse.Namespace) -> int:
    """Run the parsed ``install-shim`` or ``uninstall-shim`` command; the exit status."""
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

