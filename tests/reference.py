"""Slow, obviously-correct reference implementations that tests compare against."""

_POLY = 0x82F63B78  # CRC-32C, reflected


def _table() -> list[int]:
    table = []
    for byte in range(256):
        reg = byte
        for _ in range(8):
            reg = (reg >> 1) ^ (_POLY if reg & 1 else 0)
        table.append(reg)
    return table


_TABLE = _table()


def crc32c_reference(data: bytes, value: int = 0) -> int:
    """Byte-at-a-time CRC-32C in pure Python, for small inputs."""
    reg = value ^ 0xFFFFFFFF
    for byte in data:
        reg = (reg >> 8) ^ _TABLE[(reg ^ byte) & 0xFF]
    return reg ^ 0xFFFFFFFF
