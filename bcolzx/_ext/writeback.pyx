"""Start the kernel's write-back of a file range early, without waiting for it.

A flush ends with one ``fdatasync`` per file written.  Called after each batch
of chunks, :func:`start` has the kernel send those bytes to the device while
the next chunks are compressed, so the final sync waits for little more than
the last batch.  Only a hint: durability still comes from the sync.
"""

cdef extern from *:
    """
    #include <fcntl.h>
    #if defined(__linux__) && defined(SYNC_FILE_RANGE_WRITE)
    static int bcolzx_start_writeback(int fd, long long offset, long long nbytes) {
        return sync_file_range(fd, offset, nbytes, SYNC_FILE_RANGE_WRITE);
    }
    #define BCOLZX_HAVE_WRITEBACK 1
    #else
    static int bcolzx_start_writeback(int fd, long long offset, long long nbytes) {
        (void)fd; (void)offset; (void)nbytes;
        return 0;
    }
    #define BCOLZX_HAVE_WRITEBACK 0
    #endif
    """
    int bcolzx_start_writeback(int fd, long long offset, long long nbytes) nogil
    int BCOLZX_HAVE_WRITEBACK

#: Whether :func:`start` does anything on this platform (Linux's sync_file_range).
AVAILABLE = bool(BCOLZX_HAVE_WRITEBACK)


def start(int fd, long long offset, long long nbytes):
    """Ask the kernel to begin writing ``nbytes`` of `fd` from `offset` to the device.

    Returns at once (the write-back proceeds in the background); a no-op
    where the platform has no such call.  Errors are ignored: the ``fsync``
    that makes the data durable reports them.

    Parameters
    ----------
    fd : int
        A file descriptor open for writing.
    offset, nbytes : int
        The byte range; ``nbytes`` 0 means to the end of the file.
    """
    if offset < 0 or nbytes < 0:
        raise ValueError(f"bad range: offset {offset}, nbytes {nbytes}")
    with nogil:
        bcolzx_start_writeback(fd, offset, nbytes)
