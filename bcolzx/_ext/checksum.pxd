# C-level checksum kernels of bcolzx._ext.checksum, for other Cython modules:
#     from bcolzx._ext.checksum cimport crc32c_update, adler32_update
# Both take and return finished values, exactly like the Python functions
# crc32c(data, value) and adler32(data, value): start from 0 for CRC-32C and
# from 1 for Adler-32.  crc32c_update uses the SSE4.2 instruction when the
# CPU has it.

from libc.stdint cimport uint32_t

cdef uint32_t crc32c_update(uint32_t crc, const unsigned char* data, size_t n) noexcept nogil
cdef uint32_t adler32_update(uint32_t adler, const unsigned char* data, size_t n) noexcept nogil
