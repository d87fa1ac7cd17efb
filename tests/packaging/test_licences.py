"""The licence notices of the code a wheel bundles: C-Blosc2 and its codecs, linked into
``bcolzx._ext.codec`` (LICENSES/README.md).

What the extension holds is read off the extension this suite imports: the codecs
C-Blosc2 reports, and the names its code leaves in the binary.  Every component found
needs its notice in LICENSES/, and pyproject.toml must ship them all in the wheels.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import bcolzx
from bcolzx._ext import codec

ROOT = Path(__file__).resolve().parents[2]
LICENSES = ROOT / "LICENSES"

pytestmark = pytest.mark.skipif(not LICENSES.is_dir(),
                                reason="the source tree is not here (an installed bcolzx)")

#: The notices each codec C-Blosc2 reports needs (blosclz is derived from FastLZ).
CODEC_NOTICES = {"blosclz": {"FASTLZ.txt"}, "lz4": {"LZ4.txt"}, "lz4hc": {"LZ4.txt"},
                 "zlib": {"ZLIB-NG.txt"}, "zstd": {"ZSTD.txt"}}
#: Notices needed when the extension's binary names the component.
BINARY_NOTICES = {b"zfp": "ZFP.txt", b"divsufsort": "LIBDIVSUFSORT.txt",
                  b"zlib-ng": "ZLIB-NG.txt", b"bitshuffle": "BITSHUFFLE.txt"}


def _pyproject() -> dict:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        tomllib = pytest.importorskip("tomli", reason="reading pyproject.toml on 3.10 needs tomli")
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def _needed() -> set[str]:
    if codec.LINKAGE != "static":
        pytest.skip(f"C-Blosc2 is linked {codec.LINKAGE}: this build bundles none of it")
    need = {"C-BLOSC2.txt"}
    for name in bcolzx.blosc_compressor_list():
        need |= CODEC_NOTICES[name]
    binary = Path(codec.__file__).read_bytes().lower()
    need |= {notice for marker, notice in BINARY_NOTICES.items() if marker in binary}
    return need


def test_every_bundled_component_has_its_notice():
    need = _needed()
    assert {"ZSTD.txt", "LZ4.txt", "BITSHUFFLE.txt"} <= need  # what C-Blosc2 3.x bundles
    have = {p.name for p in LICENSES.glob("*.txt")}
    assert not need - have, f"no notice in LICENSES/ for {sorted(need - have)}"


def test_the_notices_are_the_licence_texts():
    for path in LICENSES.glob("*.txt"):
        text = path.read_text(encoding="utf-8")
        assert re.search(r"(?i)copyright|\(C\)", text), path.name
        assert re.search(r"(?i)permission is|redistribution and use|provided 'as-is'", text), \
            path.name


def test_the_readme_lists_every_notice_and_the_wheels_ship_them():
    readme = (LICENSES / "README.md").read_text(encoding="utf-8")
    listed = set(re.findall(r"\| `([A-Z0-9-]+\.txt)` \|", readme))
    assert listed == {p.name for p in LICENSES.glob("*.txt")}
    project = _pyproject()["project"]
    assert project["license-files"] == ["LICENSE", "LICENSES/*"]
    spdx = set(re.split(r"\s+AND\s+", project["license"]))
    assert spdx == {"BSD-3-Clause", "BSD-2-Clause", "MIT", "Zlib"}
    for name, licence in re.findall(r"\| `([A-Z0-9-]+\.txt)` \|[^|]*\| ([\w.-]+) \|", readme):
        assert licence in spdx, (name, licence)
