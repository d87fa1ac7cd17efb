from collections.abc import Sequence
from typing import Any, Final, overload

Buffer = Any  # any object exporting a C-contiguous buffer

CODECS: Final[dict[str, int]]
NOSHUFFLE: Final[int]
SHUFFLE: Final[int]
BITSHUFFLE: Final[int]
FILTERS: Final[tuple[int, int, int]]
BYTEDELTA: Final[int]
MAX_OVERHEAD: Final[int]
MAX_BUFFERSIZE: Final[int]
MIN_HEADER_LENGTH: Final[int]
BUILD_VERSION: Final[tuple[int, int, int]]
LINKAGE: Final[str]

def blosc2_version() -> str: ...
def blosc2_version_date() -> str: ...
def compressor_list() -> list[str]: ...
def chunk_sizes(src: Buffer) -> tuple[int, int, int]: ...
def chunk_info(src: Buffer) -> dict[str, Any]: ...

class Compressor:
    cname: str
    clevel: int
    shuffle: int
    typesize: int
    blocksize: int
    nthreads: int
    bytedelta: bool
    split: bool
    def __init__(
        self,
        cname: str = "lz4",
        clevel: int = 5,
        shuffle: int = 1,
        typesize: int = 8,
        blocksize: int = 0,
        nthreads: int = 1,
        bytedelta: bool = False,
        split: bool = True,
    ) -> None: ...
    @overload
    def compress(self, src: Buffer) -> bytes: ...
    @overload
    def compress(self, src: Buffer, limit: int) -> bytes | None: ...
    def compress_into(self, src: Buffer, dest: Buffer) -> int: ...

class ChunkBatch:
    def __init__(self, srcs: list[Buffer]) -> None: ...
    def __len__(self) -> int: ...
    def compress(self, k: int, comp: Compressor, limit: int = 0, period: int = 0) -> int: ...
    def take(self, k: int) -> bytes: ...

class Decompressor:
    nthreads: int
    def __init__(self, nthreads: int = 1) -> None: ...
    def decompress(self, src: Buffer, out: Buffer | None = None, exact: bool = False) -> Any: ...
    def getitem(self, src: Buffer, start: int, nitems: int, out: Buffer | None = None) -> Any: ...
    def decompress_many(self, chunks: Sequence[Buffer], out: Buffer,
                        chunk_nbytes: int = 0) -> int: ...

def special_chunk(kind: int, nbytes: int, typesize: int, value: bytes | None = None) -> bytes: ...
def check_runtime_version(runtime: str, build: tuple[int, int, int]) -> None: ...
