"""Type stubs for bcolzx._ext.checksum (CRC-32C and Adler-32 kernels)."""

import sys
from typing import Final

if sys.version_info >= (3, 12):
    from collections.abc import Buffer
else:
    from typing_extensions import Buffer

HAVE_HARDWARE_CRC32C: Final[bool]
CHECKSUMS: Final[dict[str, int]]
_INTERLEAVE_ROUNDS: Final[tuple[int, int]]

def crc32c(data: Buffer, value: int = 0) -> int: ...
def crc32c_portable(data: Buffer, value: int = 0) -> int: ...
def crc32c_hardware(data: Buffer, value: int = 0) -> int: ...
def adler32(data: Buffer, value: int = 1) -> int: ...
