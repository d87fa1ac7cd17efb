"""Type stubs for bcolzx._ext.index (superchunk index copies; header and chunk
checksums re-exported)."""

from typing import Any, Final

from bcolzx._ext.checksum import CHECKSUM_ADLER32 as CHECKSUM_ADLER32
from bcolzx._ext.checksum import CHECKSUM_CRC32C as CHECKSUM_CRC32C
from bcolzx._ext.checksum import CHECKSUM_NONE as CHECKSUM_NONE
from bcolzx._ext.checksum import chunk_checksum as chunk_checksum
from bcolzx._ext.checksum import verify_chunk as verify_chunk
from bcolzx._ext.header import FORMAT_VERSION as FORMAT_VERSION
from bcolzx._ext.header import HEADER_SIZE as HEADER_SIZE
from bcolzx._ext.header import MAGIC as MAGIC
from bcolzx._ext.header import MAX_SLOTS as MAX_SLOTS
from bcolzx._ext.header import checksum_size as checksum_size
from bcolzx._ext.header import data_start as data_start
from bcolzx._ext.header import decode_header as decode_header
from bcolzx._ext.header import encode_header as encode_header
from bcolzx._ext.header import index_offset as index_offset
from bcolzx._ext.header import index_size as index_size

Buffer = Any  # any object exporting a C-contiguous buffer

EMPTY: Final[int]
SPECIAL_FLAG: Final[int]
KIND_ZERO: Final[int]
KIND_NAN: Final[int]
KIND_VALUE: Final[int]
MIN_CHUNK_NBYTES: Final[int]

class Index:
    def __init__(self, nslots: int) -> None: ...
    @property
    def nslots(self) -> int: ...
    generation: int
    nchunks: int
    last_chunk_size: int
    @property
    def copy(self) -> int | None: ...
    @property
    def write_copy(self) -> int: ...
    def entry(self, slot: int) -> tuple[int, int]: ...
    def kind(self, slot: int) -> str: ...
    def special(self, slot: int, typesize: int = 8) -> tuple[int, bytes | None]: ...
    def set_empty(self, slot: int) -> None: ...
    def set_data(self, slot: int, offset: int, nbytes: int) -> None: ...
    def set_special(
        self, slot: int, kind: int, value: Buffer | None = None, typesize: int = 0
    ) -> None: ...
    def data_extent(self, checksum_size: int = 0) -> int: ...
    def encode(self) -> bytes: ...
    @staticmethod
    def decode(
        buf: Buffer,
        nslots: int,
        file_size: int,
        checksum_size: int,
        typesize: int,
        path: str | None = None,
        chunk_size: int | None = None,
    ) -> Index: ...
    def __eq__(self, other: object) -> bool: ...

def select(
    copy_a: Buffer,
    copy_b: Buffer,
    nslots: int,
    file_size: int,
    checksum_size: int,
    typesize: int,
    path: str | None = None,
    chunk_size: int | None = None,
) -> Index: ...
