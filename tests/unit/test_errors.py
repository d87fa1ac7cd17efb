"""The exception hierarchy and the blosc2 return-code mapping."""

import pytest

import bcolzx
from bcolzx import errors
from bcolzx._ext import codec


@pytest.mark.parametrize(
    "cls, builtin",
    [
        (errors.CorruptDataError, ValueError),
        (errors.ChecksumError, ValueError),
        (errors.TruncatedDataError, ValueError),
        (errors.UnsupportedFormatError, ValueError),
        (errors.PickleNotAllowedError, TypeError),
        (errors.PickleNotAllowedError, ValueError),
        (errors.PickleNotAllowedError, errors.UnsupportedFormatError),
        (errors.ReadOnlyError, PermissionError),
        (errors.ReadOnlyError, IOError),
        (errors.LockedError, BlockingIOError),
        (errors.LockedError, IOError),
        (errors.ConcurrentModificationError, RuntimeError),
        (errors.BufferTooSmallError, ValueError),
        (errors.BcolzxMemoryError, MemoryError),
        (errors.CodecError, RuntimeError),
        (errors.InvalidParameterError, ValueError),
    ],
)
def test_every_error_is_a_bcolzx_error_and_the_builtin_legacy_code_catches(cls, builtin):
    assert issubclass(cls, errors.BcolzxError)
    assert issubclass(cls, builtin)
    assert getattr(bcolzx, cls.__name__) is cls


def test_checksum_and_truncation_are_kinds_of_corruption():
    assert issubclass(errors.ChecksumError, errors.CorruptDataError)
    assert issubclass(errors.TruncatedDataError, errors.CorruptDataError)


def test_corrupt_data_error_names_file_and_chunk():
    exc = errors.ChecksumError("crc32c mismatch", path="/d/data/__3.bin", chunk=17)
    assert exc.path == "/d/data/__3.bin" and exc.chunk == 17
    assert "/d/data/__3.bin" in str(exc) and "chunk 17" in str(exc)


@pytest.mark.parametrize(
    "code, decoding, cls",
    [
        (-2, False, errors.CorruptDataError),
        (-3, True, errors.CorruptDataError),
        (-11, False, errors.CorruptDataError),
        (-17, True, errors.CorruptDataError),
        (-5, True, errors.TruncatedDataError),
        (-5, False, errors.BufferTooSmallError),
        (-6, False, errors.BufferTooSmallError),
        (-4, False, errors.BcolzxMemoryError),
        (-7, False, errors.UnsupportedFormatError),
        (-10, True, errors.UnsupportedFormatError),
        (-12, False, errors.InvalidParameterError),
        (-1, True, errors.CorruptDataError),
        (-18, True, errors.CorruptDataError),
        (-1, False, errors.CodecError),
        (-26, False, errors.CodecError),
    ],
)
def test_blosc2_codes_map_to_our_exceptions(code, decoding, cls):
    exc = errors.blosc2_error(code, "decompress", "Some message", decoding=decoding, chunk=3)
    assert type(exc) is cls
    assert exc.code == code
    assert str(exc).startswith("decompress failed: Some message")
    assert f"blosc2 error {code}" in str(exc)


def test_blosc2_error_refuses_success_codes():
    with pytest.raises(ValueError):
        errors.blosc2_error(0, "compress", "ok")


def test_codec_errors_carry_blosc2_own_message():
    chunk = bytearray(codec.Compressor(typesize=1).compress(bytes(range(256)) * 100))
    chunk[31] ^= 0xFF  # blosc2 flags byte
    chunk[2] ^= 0xFF   # flags: codec and filters
    with pytest.raises(errors.CorruptDataError) as info:
        codec.Decompressor().decompress(bytes(chunk))
    assert "blosc2 error" in str(info.value) and info.value.code < 0


def test_locked_error_names_the_dataset_and_the_holder():
    exc = errors.LockedError("/d/prices", pid=4242, host="host1")
    assert exc.errno == 11 and exc.pid == 4242 and exc.rootdir == "/d/prices"
    assert "/d/prices" in str(exc) and "process 4242 on host1" in str(exc)
    assert "lock_timeout" in str(exc)
    mine = errors.LockedError("/d/p", pid=7, same_process=True, waited=1.5)
    assert "another object of this process" in str(mine) and "1.5 s" in str(mine)
