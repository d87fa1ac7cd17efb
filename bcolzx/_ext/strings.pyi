"""Type stubs for bcolzx._ext.strings (StringDType arrays to and from chunks)."""

from typing import Any, Final

import numpy as np

Buffer = Any  # any object exporting a C-contiguous buffer

NA_LENGTH: Final[int]
HEAD: Final[int]

def utf8_error(src: Buffer) -> int: ...
def pack(chunk: Buffer, offsets: np.ndarray, na: np.ndarray | None, out: np.ndarray,
         first: int) -> int: ...
def encode(rows: np.ndarray, na_ok: bool) -> bytes: ...
def bounds(rows: np.ndarray) -> tuple[int, int, bool]: ...
def planar_offsets(chunk: Buffer, n: int, na_ok: bool) -> tuple[np.ndarray, np.ndarray | None]: ...
