"""Type stubs for bcolzx._ext.index (superchunk header and index kernel)."""

from typing import Any, Final

Buffer = Any  # any object exporting a C-contiguous buffer

MAGIC: Final[bytes]
FORMAT_VERSION: Final[int]
HEADER_SIZE: Final[int]
EMPTY: Final[int]
SPECIAL_FLAG: Final[int]
KIND_ZERO: Final[int]
KIND_NAN: Final[int]
KIND_VALUE: Final[int]
CHECKSUM_NONE: Final[int]
CHECKSUM_CRC32C: Final[int]
CHECKSUM_ADLER32: Final[int]
MAX_SLOTS: Final[int]
MIN_CHUNK_NBYTES: Final[int]

def index_size(nslots: int) -> int: ...
def data_start(nslots: int) -> int: ...
def index_offset(nslots: int, copy: int) -> int: ...
def checksum_size(checksum_type: int) -> int: ...
def encode_header(
    checksum_type: int, typesize: int, chunk_size: int, nslots: int, superchunk_number: int
) -> bytes: ...
def decode_header(buf: Buffer, path: str | None = None) -> dict[str, int]: ...

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
def chunk_checksum(checksum_type: int, global_chunk_number: int, chunk: Buffer) -> int: ...
def verify_chunk(
    checksum_type: int,
    global_chunk_number: int,
    chunk: Buffer,
    stored: Buffer | int,
    path: str | None = None,
) -> None: ...
