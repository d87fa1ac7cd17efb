# Declarations of exactly the C-Blosc2 API that bcolzx calls (blosc2.h).
# Every function is nogil: bcolzx releases the GIL around each call.
# Keep this list in sync with the "Symbols used" table of README.md.

from libc.stdint cimport int16_t, int32_t, uint8_t

cdef extern from "blosc2.h" nogil:
    # --- version -----------------------------------------------------------
    int BLOSC2_VERSION_MAJOR
    int BLOSC2_VERSION_MINOR
    int BLOSC2_VERSION_RELEASE
    const char* BLOSC2_VERSION_STRING
    const char* BLOSC2_VERSION_DATE

    # --- sizes -------------------------------------------------------------
    enum:
        BLOSC_MIN_HEADER_LENGTH
        BLOSC_EXTENDED_HEADER_LENGTH
        BLOSC2_MAX_OVERHEAD
        BLOSC2_MAX_BUFFERSIZE
        BLOSC2_MAXTYPESIZE
        BLOSC2_MAX_FILTERS

    # --- codecs and filters ------------------------------------------------
    enum:
        BLOSC_BLOSCLZ
        BLOSC_LZ4
        BLOSC_LZ4HC
        BLOSC_ZLIB
        BLOSC_ZSTD
        BLOSC_NOSHUFFLE
        BLOSC_SHUFFLE
        BLOSC_BITSHUFFLE

    # --- chunk flags and special values -------------------------------------
    enum:
        BLOSC_MEMCPYED
        BLOSC2_NO_SPECIAL
        BLOSC2_SPECIAL_ZERO
        BLOSC2_SPECIAL_NAN
        BLOSC2_SPECIAL_VALUE

    # --- how a block is split into streams (blosc2_cparams.splitmode) ---------
    enum:
        BLOSC_ALWAYS_SPLIT
        BLOSC_NEVER_SPLIT
        BLOSC_FORWARD_COMPAT_SPLIT

    # --- parameters and contexts --------------------------------------------
    ctypedef struct blosc2_context:
        pass

    ctypedef struct blosc2_cparams:
        uint8_t compcode
        uint8_t compcode_meta
        uint8_t clevel
        int use_dict
        int32_t typesize
        int16_t nthreads
        int32_t blocksize
        int32_t splitmode
        uint8_t filters[6]
        uint8_t filters_meta[6]

    ctypedef struct blosc2_dparams:
        int16_t nthreads

    const blosc2_cparams BLOSC2_CPARAMS_DEFAULTS
    const blosc2_dparams BLOSC2_DPARAMS_DEFAULTS

    # --- library ------------------------------------------------------------
    void blosc2_init()
    const char* blosc2_get_version_string()
    const char* blosc2_list_compressors()
    int blosc2_compname_to_compcode(const char* compname)
    const char* blosc2_error_string(int error_code)

    # Called only in a child process created by fork(), where the worker threads
    # of C-Blosc2's shared pool do not exist (bcolzx/_ext/codec.pyx).
    void blosc2_set_threads_callback(
        void (*callback)(void* callback_data, void (*dojob)(void*) noexcept nogil,
                         int numjobs, size_t jobdata_elsize, void* jobdata) noexcept nogil,
        void* callback_data)

    blosc2_context* blosc2_create_cctx(blosc2_cparams cparams)
    blosc2_context* blosc2_create_dctx(blosc2_dparams dparams)
    void blosc2_free_ctx(blosc2_context* context)

    # --- chunks -------------------------------------------------------------
    int blosc2_compress_ctx(blosc2_context* context, const void* src, int32_t srcsize,
                            void* dest, int32_t destsize)
    int blosc2_decompress_ctx(blosc2_context* context, const void* src, int32_t srcsize,
                              void* dest, int32_t destsize)
    int blosc2_getitem_ctx(blosc2_context* context, const void* src, int32_t srcsize,
                           int start, int nitems, void* dest, int32_t destsize)
    int blosc2_cbuffer_sizes(const void* cbuffer, int32_t* nbytes, int32_t* cbytes,
                             int32_t* blocksize)
    void blosc1_cbuffer_metainfo(const void* cbuffer, size_t* typesize, int* flags)
    void blosc2_cbuffer_versions(const void* cbuffer, int* version, int* versionlz)
    const char* blosc2_cbuffer_complib(const void* cbuffer)

    int blosc2_chunk_zeros(blosc2_cparams cparams, int32_t nbytes, void* dest, int32_t destsize)
    int blosc2_chunk_nans(blosc2_cparams cparams, int32_t nbytes, void* dest, int32_t destsize)
    int blosc2_chunk_repeatval(blosc2_cparams cparams, int32_t nbytes, void* dest,
                               int32_t destsize, const void* repeatval)
