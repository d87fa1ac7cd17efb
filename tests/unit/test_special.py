"""Constant chunks: recognising a buffer of one repeated item, filling one, and the
special chunks C-Blosc2 makes of them (bcolzx._ext.special and codec.special_chunk)."""

import shutil
import subprocess

import numpy as np
import pytest

from bcolzx._ext import codec, special


@pytest.mark.parametrize(
    "values, typesize, kind",
    [
        (np.zeros(1000, "f8"), 8, special.SPECIAL_ZERO),
        (np.zeros(3, "i2"), 2, special.SPECIAL_ZERO),
        (np.full(1000, np.nan, "f8"), 8, special.SPECIAL_NAN),
        (np.full(1000, np.nan, "f4"), 4, special.SPECIAL_NAN),
        (np.full(1000, -np.nan, "f8"), 8, special.SPECIAL_VALUE),  # other NaN bits: a value
        (np.full(1000, 7, "i4"), 4, special.SPECIAL_VALUE),
        (np.full(1, 7, "i8"), 8, special.SPECIAL_VALUE),
        (np.full(10, b"abc", "S3"), 3, special.SPECIAL_VALUE),
        (np.arange(1000, dtype="i4"), 4, special.SPECIAL_NONE),
        (np.r_[np.zeros(999), 1.0], 8, special.SPECIAL_NONE),
        (np.r_[1.0, np.zeros(999)], 8, special.SPECIAL_NONE),
        (np.empty(0, "f8"), 8, special.SPECIAL_NONE),
    ],
)
def test_special_values_are_recognised_and_rebuilt_exactly(values, typesize, kind):
    got_kind, value = special.special_value(values, typesize)
    assert got_kind == kind
    if kind == special.SPECIAL_NONE:
        return
    assert (value is not None) == (kind == special.SPECIAL_VALUE)
    raw = values.tobytes()
    chunk = codec.special_chunk(kind, len(raw), typesize, value)
    assert len(chunk) <= codec.MAX_OVERHEAD + typesize
    assert codec.Decompressor().decompress(chunk) == raw
    out = bytearray(len(raw))
    special.fill_special(out, kind, typesize, value)
    assert bytes(out) == raw


def test_special_value_rejects_a_size_not_multiple_of_typesize():
    assert special.special_value(bytes(10), 4) == (special.SPECIAL_NONE, None)
    with pytest.raises(ValueError):
        special.special_value(bytes(8), 0)
    with pytest.raises(ValueError):
        codec.special_chunk(special.SPECIAL_VALUE, 8, 4, b"\x01")
    with pytest.raises(ValueError):
        codec.special_chunk(special.SPECIAL_NAN, 8, 2)
    with pytest.raises(ValueError):
        special.fill_special(bytearray(6), special.SPECIAL_ZERO, 4)
    with pytest.raises(ValueError):
        special.fill_special(bytearray(8), 99, 4)


def test_special_kinds_are_the_ones_c_blosc2_writes():
    # special.pyx takes them from blosc2.h; a chunk made by C-Blosc2 reports them back.
    assert (special.SPECIAL_NONE, special.SPECIAL_ZERO, special.SPECIAL_NAN,
            special.SPECIAL_VALUE) == (0, 1, 2, 3)
    for kind, typesize, value in [(special.SPECIAL_ZERO, 8, None),
                                  (special.SPECIAL_NAN, 8, None),
                                  (special.SPECIAL_VALUE, 4, b"\x07\0\0\0")]:
        chunk = codec.special_chunk(kind, 80, typesize, value)
        rows = np.frombuffer(codec.Decompressor().decompress(chunk), dtype=f"V{typesize}")
        assert special.special_value(rows, typesize) == (kind, value)


def test_the_special_module_links_no_c_blosc2():
    # Only bcolzx._ext.codec links C-Blosc2 (docs/architecture.md): the special
    # module neither needs libblosc2 nor calls any of its functions.
    nm = shutil.which("nm")
    if nm is None:
        pytest.skip("needs nm (binutils) to list the extension's symbols")
    symbols = subprocess.run([nm, "-D", special.__file__], capture_output=True, text=True,
                             check=True).stdout
    assert "blosc" not in symbols.lower()
