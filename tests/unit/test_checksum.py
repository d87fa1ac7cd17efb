"""Tests of bcolzx._ext.checksum: CRC-32C (hardware and portable) and Adler-32."""

from __future__ import annotations

import zlib

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bcolzx._ext import checksum

from ..reference import crc32c_reference


crc32c = checksum.crc32c
crc32c_portable = checksum.crc32c_portable
crc32c_hardware = checksum.crc32c_hardware
adler32 = checksum.adler32

SHORT_ROUND, LONG_ROUND = checksum._INTERLEAVE_ROUNDS
# Random bytes long enough for several long rounds plus any head offset.
BASE = np.random.default_rng(20240601).integers(0, 256, 3 * LONG_ROUND + 2 * SHORT_ROUND + 64, dtype=np.uint8)
BASE_BYTES = BASE.tobytes()

FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def require_hardware() -> None:
    if not checksum.HAVE_HARDWARE_CRC32C:
        pytest.skip("CPU has no SSE4.2 crc32 instruction")


CRC_FUNCS = [
    pytest.param(crc32c, id="dispatch"),
    pytest.param(crc32c_portable, id="portable"),
    pytest.param(crc32c_hardware, id="hardware"),
]


def _check_func(func) -> None:
    if func is crc32c_hardware:
        require_hardware()


# --- published vectors and simple cases ---------------------------------------


@pytest.mark.parametrize("func", CRC_FUNCS)
@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"123456789", 0xE3069283),
        (bytes(32), 0x8A9136AA),
        (b"\xff" * 32, 0x62A8AB43),
        (bytes(range(32)), 0x46DD794E),
        (b"", 0),
    ],
    ids=["check", "zeros32", "ones32", "ascending32", "empty"],
)
def test_crc32c_published_vectors(func, data, expected):
    _check_func(func)
    assert func(data) == expected
    assert func(bytearray(data)) == expected
    assert func(memoryview(data)) == expected


@pytest.mark.parametrize("func", CRC_FUNCS)
def test_crc32c_empty_keeps_value(func):
    _check_func(func)
    for value in (0, 1, 0xE3069283, 0xFFFFFFFF):
        assert func(b"", value) == value


def test_adler32_simple():
    assert adler32(b"") == 1 == zlib.adler32(b"")
    assert adler32(b"", 0x12345678 % 65521) == 0x12345678 % 65521
    assert adler32(b"Wikipedia") == 0x11E60398


def test_constants():
    assert checksum.CHECKSUMS == {"none": 0, "crc32c": 1, "adler32": 2}
    assert isinstance(checksum.HAVE_HARDWARE_CRC32C, bool)


def test_hardware_unavailable_raises():
    if checksum.HAVE_HARDWARE_CRC32C:
        assert crc32c_hardware(b"123456789") == 0xE3069283
    else:
        with pytest.raises(RuntimeError):
            crc32c_hardware(b"123456789")


# --- correctness against a reference and across implementations --------------


@FAST
@given(data=st.binary(max_size=300), value=st.integers(0, 2**32 - 1))
def test_crc32c_matches_reference(data, value):
    expected = crc32c_reference(data, value)
    assert crc32c_portable(data, value) == expected
    assert crc32c(data, value) == expected


_lengths = st.one_of(
    st.integers(0, 64),
    st.builds(
        lambda k, r, d: max(0, k * r + d),
        st.integers(1, 3),
        st.sampled_from([SHORT_ROUND, LONG_ROUND]),
        st.integers(-20, 20),
    ),
    st.integers(0, len(BASE_BYTES) - 16),
)


@FAST
@given(offset=st.integers(0, 15), length=_lengths)
def test_hardware_matches_portable_offsets(offset, length):
    require_hardware()
    view = memoryview(BASE_BYTES)[offset : offset + length]
    assert crc32c_hardware(view) == crc32c_portable(view)
    assert crc32c(view) == crc32c_portable(view)


@FAST
@given(
    data=st.one_of(st.binary(max_size=100), st.binary(min_size=SHORT_ROUND - 8, max_size=2 * SHORT_ROUND + 100)),
    offset=st.integers(0, 15),
    value=st.integers(0, 2**32 - 1),
)
def test_hardware_matches_portable_random_data(data, offset, value):
    require_hardware()
    view = memoryview(bytes(offset) + data)[offset:]
    assert crc32c_hardware(view, value) == crc32c_portable(view, value)


def test_hardware_matches_portable_few_megabytes():
    require_hardware()
    big = np.random.default_rng(7).integers(0, 256, 3 << 20, dtype=np.uint8).tobytes()
    view = memoryview(big)
    for offset in range(8):
        for length in (len(big) - offset, 2 * LONG_ROUND * 40 + 13, 1_000_003):
            part = view[offset : offset + length]
            assert crc32c_hardware(part) == crc32c_portable(part)


def test_all_ones_long_vectors_agree():
    require_hardware()
    ones = b"\xff" * (5 * LONG_ROUND + 7)
    for n in (SHORT_ROUND, LONG_ROUND, len(ones)):
        assert crc32c_hardware(ones[:n]) == crc32c_portable(ones[:n])


# --- incremental use ----------------------------------------------------------


@pytest.mark.parametrize("func", CRC_FUNCS)
@FAST
@given(chunks=st.lists(st.binary(max_size=2000), max_size=6))
def test_crc32c_incremental(func, chunks):
    _check_func(func)
    value = 0
    for chunk in chunks:
        value = func(chunk, value)
    assert value == func(b"".join(chunks))


@FAST
@given(split=st.integers(0, len(BASE_BYTES)))
def test_crc32c_incremental_split_long(split):
    data = BASE_BYTES
    assert crc32c(data[split:], crc32c(data[:split])) == crc32c(data)


@FAST
@given(chunks=st.lists(st.binary(max_size=7000), max_size=5))
def test_adler32_incremental(chunks):
    value = 1
    for chunk in chunks:
        value = adler32(chunk, value)
    assert value == adler32(b"".join(chunks)) == zlib.adler32(b"".join(chunks))


# --- Adler-32 against zlib -----------------------------------------------------


@FAST
@given(
    data=st.one_of(
        st.binary(max_size=64),
        # Long inputs from a drawn seed: hypothesis is slow at drawing many bytes.
        st.builds(
            lambda seed, n: np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8).tobytes(),
            st.integers(0, 2**32 - 1),
            st.integers(5500, 20000),
        ),
    ),
    value=st.builds(lambda a, b: (b << 16) | a, st.integers(0, 65520), st.integers(0, 65520)),
)
def test_adler32_matches_zlib(data, value):
    assert adler32(data, value) == zlib.adler32(data, value)
    assert adler32(data) == zlib.adler32(data)


@FAST
@given(offset=st.integers(0, 15), length=st.integers(0, len(BASE_BYTES) - 16))
def test_adler32_matches_zlib_offsets(offset, length):
    view = memoryview(BASE_BYTES)[offset : offset + length]
    assert adler32(view) == zlib.adler32(view)


@pytest.mark.parametrize("length", [1, 15, 16, 17, 5551, 5552, 5553, 2 * 5552, 3 * 5552 + 1, 100_000])
def test_adler32_all_ones_stresses_modulo(length):
    ones = b"\xff" * length
    worst = (65520 << 16) | 65520
    assert adler32(ones) == zlib.adler32(ones)
    assert adler32(ones, worst) == zlib.adler32(ones, worst)


# --- buffer handling ------------------------------------------------------------


ALL_FUNCS = [*CRC_FUNCS, pytest.param(adler32, id="adler32")]


@pytest.mark.parametrize("func", ALL_FUNCS)
def test_accepts_float64_arrays(func):
    _check_func(func)
    arr = np.linspace(-1.0, 1.0, 1001)
    assert func(arr) == func(arr.tobytes())
    grid = np.arange(60.0).reshape(5, 12)
    assert func(grid) == func(grid.tobytes())
    assert func(np.empty(0)) == func(b"")


@pytest.mark.parametrize("func", ALL_FUNCS)
def test_non_contiguous_raises_value_error(func):
    _check_func(func)
    with pytest.raises(ValueError):
        func(np.arange(20.0)[::2])
    with pytest.raises(ValueError):
        func(np.arange(20.0).reshape(4, 5).T)
    with pytest.raises(ValueError):
        func(memoryview(b"abcdefgh")[::2])


@pytest.mark.parametrize("func", ALL_FUNCS)
@pytest.mark.parametrize("obj", ["text", 12, None, [1, 2, 3]], ids=["str", "int", "None", "list"])
def test_non_buffer_raises_type_error(func, obj):
    _check_func(func)
    with pytest.raises(TypeError):
        func(obj)


@pytest.mark.parametrize("func", ALL_FUNCS)
@pytest.mark.parametrize("value", [-1, 2**32])
def test_value_out_of_range(func, value):
    _check_func(func)
    with pytest.raises(OverflowError):
        func(b"abc", value)
