/*
 * Hardware CRC-32C (Castagnoli) for bcolzx._ext.checksum.
 *
 * The x86-64 SSE4.2 `crc32` instruction computes the reflected CRC-32C
 * register update without the initial/final inversion.  Every function here
 * works on that raw register: the caller inverts on the way in and out.
 *
 * A single chain of `crc32 r64` instructions is bound by the instruction's
 * 3-cycle latency, so long inputs are cut into three equal, independent
 * streams that run interleaved.  The streams after the first start from a
 * zero register and are folded back with the linear "append L zero bytes"
 * operator, applied through four 256-entry tables (one per byte of the
 * register).  The tables are computed by the Cython module at import and
 * passed in as flat arrays of 4 * 256 uint32.
 *
 * Only the functions carrying the target attribute use SSE4.2, so the
 * translation unit is built without -msse4.2 and loads on any x86-64 CPU;
 * bcolzx_crc32c_hw_available() tells whether they may be called.  On other
 * architectures (and compilers) everything compiles to stubs that report the
 * instruction as unavailable.
 */
#ifndef BCOLZX_CRC32C_X86_H
#define BCOLZX_CRC32C_X86_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Bytes per stream in one round of the three-way interleave. Multiples of 8. */
#define BCOLZX_CRC32C_LONG 8192
#define BCOLZX_CRC32C_SHORT 256

/* Raw register after appending the zero bytes that `table` was built for. */
static inline uint32_t bcolzx_crc32c_shift(const uint32_t *table, uint32_t reg)
{
    return table[reg & 0xff] ^ table[256 + ((reg >> 8) & 0xff)]
         ^ table[512 + ((reg >> 16) & 0xff)] ^ table[768 + (reg >> 24)];
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define BCOLZX_CRC32C_HW 1
#include <nmmintrin.h>
#define BCOLZX_SSE42 __attribute__((target("sse4.2")))

static int bcolzx_crc32c_hw_available(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("sse4.2") ? 1 : 0;
}

#elif defined(_MSC_VER) && defined(_M_X64)
/* MSVC exposes the intrinsics without a target attribute. (Untested.) */
#define BCOLZX_CRC32C_HW 1
#include <intrin.h>
#include <nmmintrin.h>
#define BCOLZX_SSE42

static int bcolzx_crc32c_hw_available(void)
{
    int info[4];
    __cpuid(info, 1);
    return (info[2] >> 20) & 1; /* CPUID.1:ECX bit 20 = SSE4.2 */
}

#endif

#ifdef BCOLZX_CRC32C_HW

/* One round: three streams of `len` bytes each, from `p`, `p+len`, `p+2*len`. */
#define BCOLZX_CRC32C_ROUND(len, table)                                       \
    do {                                                                      \
        uint64_t c0 = reg, c1 = 0, c2 = 0, w0, w1, w2;                        \
        const unsigned char *end = p + (len);                                 \
        do {                                                                  \
            memcpy(&w0, p, 8);                                                \
            memcpy(&w1, p + (len), 8);                                        \
            memcpy(&w2, p + 2 * (len), 8);                                    \
            c0 = _mm_crc32_u64(c0, w0);                                       \
            c1 = _mm_crc32_u64(c1, w1);                                       \
            c2 = _mm_crc32_u64(c2, w2);                                       \
            p += 8;                                                           \
        } while (p < end);                                                    \
        reg = bcolzx_crc32c_shift(table, (uint32_t)c0) ^ (uint32_t)c1;        \
        reg = bcolzx_crc32c_shift(table, reg) ^ (uint32_t)c2;                 \
        p += 2 * (len);                                                       \
        n -= 3 * (len);                                                       \
    } while (0)

/* Update the raw register `reg` with `n` bytes at `p`.  Call only when
 * bcolzx_crc32c_hw_available() returned 1. */
BCOLZX_SSE42 static uint32_t bcolzx_crc32c_hw(uint32_t reg, const unsigned char *p, size_t n,
                                              const uint32_t *shift_long,
                                              const uint32_t *shift_short)
{
    uint64_t w;
    /* Head: bytes up to an 8-byte boundary. */
    while (n > 0 && ((uintptr_t)p & 7) != 0) {
        reg = _mm_crc32_u8(reg, *p++);
        n--;
    }
    while (n >= 3 * BCOLZX_CRC32C_LONG)
        BCOLZX_CRC32C_ROUND(BCOLZX_CRC32C_LONG, shift_long);
    while (n >= 3 * BCOLZX_CRC32C_SHORT)
        BCOLZX_CRC32C_ROUND(BCOLZX_CRC32C_SHORT, shift_short);
    /* Tail: whole words in one chain, then the last bytes. */
    while (n >= 8) {
        memcpy(&w, p, 8);
        reg = (uint32_t)_mm_crc32_u64(reg, w);
        p += 8;
        n -= 8;
    }
    while (n > 0) {
        reg = _mm_crc32_u8(reg, *p++);
        n--;
    }
    return reg;
}

#undef BCOLZX_CRC32C_ROUND

#else /* no hardware path on this architecture/compiler */

static int bcolzx_crc32c_hw_available(void) { return 0; }

static uint32_t bcolzx_crc32c_hw(uint32_t reg, const unsigned char *p, size_t n,
                                 const uint32_t *shift_long, const uint32_t *shift_short)
{
    (void)p; (void)n; (void)shift_long; (void)shift_short;
    return reg; /* never called: the module checks availability first */
}

#endif /* BCOLZX_CRC32C_HW */

#endif /* BCOLZX_CRC32C_X86_H */
