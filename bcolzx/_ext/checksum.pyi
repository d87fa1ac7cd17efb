"""Type stubs for bcolzx._ext.checksum (CRC-32C and Adler-32 kernels, chunk checksums)."""

import sys
from typing import Final

if sys.version_info >= (3, 12):
    from collections.abc import Buffer
else:
    from typing_extensions import Buffer

HAVE_HARDWARE_CRC32C: Final[bool]
CHECKSUMS: Final[dict[str, int]]
CHECKSUM_NONE: Final[int]
CHECKSUM_CRC32C: Final[int]
CHECKSUM_ADLER32: Final[int]
_INTERLEAVE_ROUNDS: Final[tuple[int, int]]

def crc32c(data: Buffer, value: int = 0) -> int: ...
def crc32c_portable(data: Buffer, value: int = 0) -> int: ...
def crc32c_hardware(data: Buffer, value: int = 0) -> int: ...
def adler32(data: Buffer, value: int = 1) -> int: ...
def chunk_checksum(checksum_type: int, global_chunk_number: int, chunk: Buffer) -> int: ...
def verify_chunk(
    checksum_type: int,
    global_chunk_number: int,
    chunk: Buffer,
    stored: Buffer | int,
    path: str | None = None,
) -> None: ...
