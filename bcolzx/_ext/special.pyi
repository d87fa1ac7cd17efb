from typing import Any, Final

Buffer = Any  # any object exporting a C-contiguous buffer

SPECIAL_NONE: Final[int]
SPECIAL_ZERO: Final[int]
SPECIAL_NAN: Final[int]
SPECIAL_VALUE: Final[int]

def special_value(src: Buffer, typesize: int) -> tuple[int, bytes | None]: ...
def fill_special(out: Buffer, kind: int, typesize: int, value: bytes | None = None) -> Any: ...
