"""Locate the C-Blosc2 headers and library that the ``blosc2`` wheel ships.

This is a build-time helper used by ``setup.py``.  It never imports the
``blosc2`` Python package (importing it would start its thread pools and pull
in its dependencies); it only asks the import system *where* the package
lives and looks for files next to it.

Search order
------------
1. ``BCOLZX_BLOSC2_DIR``: a prefix holding ``include/blosc2.h`` and
   ``lib/`` (or ``lib64/``) with ``libblosc2.a`` and/or ``libblosc2.so``.
   Use it to build against a C-Blosc2 you compiled yourself.
2. The ``blosc2`` wheel, newer layout: ``<site-packages>/blosc2/include`` and
   ``<site-packages>/blosc2/lib`` (blosc2 >= 4).
3. The ``blosc2`` wheel, older layout: the wheel's data directory installed
   under the environment prefix, ``<prefix>/include`` and ``<prefix>/lib64``
   or ``<prefix>/lib`` (blosc2 3.x).

``BCOLZX_BLOSC2_LINK`` chooses ``static`` (the default) or ``shared``.
"""

from __future__ import annotations

import importlib.util
import os
import re
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

ENV_DIR = "BCOLZX_BLOSC2_DIR"
ENV_LINK = "BCOLZX_BLOSC2_LINK"
#: Oldest C-Blosc2 whose API (blosc2_getitem_ctx, blosc2_chunk_repeatval,
#: the blosc2_cparams layout) we compile against.
MIN_VERSION = (2, 14, 0)


@dataclass(frozen=True)
class Blosc2Build:
    """Where C-Blosc2 was found and how to link it."""

    include_dir: Path
    lib_dir: Path
    link: str  # "static" or "shared"
    version: tuple[int, int, int]

    @property
    def static_lib(self) -> Path:
        return self.lib_dir / "libblosc2.a"

    def extension_kwargs(self) -> dict:
        """Keyword arguments for :class:`setuptools.Extension`."""
        if self.link == "static":
            return {
                "include_dirs": [str(self.include_dir)],
                "extra_objects": [str(self.static_lib)],
                # Keep zstd/lz4/zlib-ng and blosc2 symbols private to our
                # extension so they never clash with another copy in the process.
                "extra_link_args": ["-Wl,--exclude-libs,ALL"],
                "libraries": ["pthread", "m", "dl"],
                "define_macros": [("BCOLZX_BLOSC2_STATIC", "1")],
            }
        return {
            "include_dirs": [str(self.include_dir)],
            "library_dirs": [str(self.lib_dir)],
            "libraries": ["blosc2"],
            "runtime_library_dirs": [str(self.lib_dir)],
            "define_macros": [("BCOLZX_BLOSC2_STATIC", "0")],
        }


def _header_version(header: Path) -> tuple[int, int, int]:
    text = header.read_text(errors="replace")
    parts = []
    for name in ("MAJOR", "MINOR", "RELEASE"):
        m = re.search(rf"#define\s+BLOSC2_VERSION_{name}\s+(\d+)", text)
        if m is None:
            raise RuntimeError(f"{header}: no BLOSC2_VERSION_{name}; not a C-Blosc2 header")
        parts.append(int(m.group(1)))
    return tuple(parts)  # type: ignore[return-value]


def _candidates() -> list[tuple[str, Path, list[Path]]]:
    """(origin, include dir, lib dirs) in search order."""
    found = []
    env = os.environ.get(ENV_DIR)
    if env:
        root = Path(env)
        return [(ENV_DIR, root / "include", [root / "lib", root / "lib64"])]
    spec = importlib.util.find_spec("blosc2")  # locates, does not import
    if spec is not None and spec.submodule_search_locations:
        pkg = Path(list(spec.submodule_search_locations)[0])
        found.append(("blosc2 wheel", pkg / "include", [pkg / "lib", pkg / "lib64"]))
        # Older wheels install include/ and lib64/ as data files under the prefix
        # that holds site-packages.
        for prefix in {sys.prefix, sysconfig.get_paths()["data"], str(pkg.parents[3])}:
            p = Path(prefix)
            found.append(("blosc2 wheel data", p / "include", [p / "lib64", p / "lib"]))
    return found


def locate() -> Blosc2Build:
    """Find C-Blosc2 for the build.

    Raises
    ------
    RuntimeError
        When no usable C-Blosc2 is found, with the places searched.
    """
    want = os.environ.get(ENV_LINK, "static").lower()
    if want not in ("static", "shared"):
        raise RuntimeError(f"{ENV_LINK} must be 'static' or 'shared', not {want!r}")
    libname = "libblosc2.a" if want == "static" else "libblosc2.so"
    searched = []
    for origin, inc, libdirs in _candidates():
        header = inc / "blosc2.h"
        searched.append(f"{origin}: {header}")
        if not header.is_file():
            continue
        for libdir in libdirs:
            searched.append(f"{origin}: {libdir / libname}")
            if (libdir / libname).is_file():
                version = _header_version(header)
                if version < MIN_VERSION:
                    raise RuntimeError(
                        f"C-Blosc2 {'.'.join(map(str, version))} at {inc} is older than "
                        f"the {'.'.join(map(str, MIN_VERSION))} bcolzx needs"
                    )
                return Blosc2Build(inc, libdir, want, version)
    raise RuntimeError(
        "C-Blosc2 not found. Install the 'blosc2' wheel in the build environment "
        f"(pip does this from pyproject.toml) or set {ENV_DIR} to a prefix with "
        f"include/blosc2.h and lib/{libname}. Searched:\n  " + "\n  ".join(searched)
    )


if __name__ == "__main__":  # pragma: no cover - a diagnostic for humans
    print(locate())
