"""A fork server for the crash harness: imports bcolzx once, forks one writer per request.

Run as a script (``python zygote.py``) with bcolzx importable.  Each line
read on stdin is a JSON request ``{"rootdir", "family", "seed", "log"}``;
the server forks a child that runs :func:`crashplan.run_writer` (or
:func:`crashplan.run_convert` for the ``convert`` family) with its log
opened for appending, and answers with the child's process id on stdout.
The harness kills children with SIGKILL; children are reaped automatically
(SIGCHLD is ignored).  A child that fails logs ``E <error>``.  A child that
is done, or failed, waits (a minute at most) for its SIGKILL, so that its
process id cannot be reused by another process before the signal comes.

Forking a process that has already imported NumPy and bcolzx costs a
millisecond instead of the half second of a new interpreter, which is what
makes a thousand kills affordable.  The server is single-threaded when it
forks, so the children start clean.
"""

import json
import os
import signal
import sys
import time
import traceback

import crashplan  # noqa: E402 - beside this script, on sys.path[0]
import bcolzx  # noqa: F401 - imported once, before any fork


def _child(req: dict) -> None:
    fd = os.open(req["log"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    status = 0
    try:
        if req["family"] == "convert":
            crashplan.run_convert(req["rootdir"], fd)
        else:
            crashplan.run_writer(req["rootdir"], req["family"], req["seed"], fd,
                                 req.get("groups", 10**9))
    except BaseException:  # noqa: BLE001 - reported to the harness through the log
        text = traceback.format_exc().replace("\n", " | ")
        crashplan.os_write(fd, f"E {text}\n")
        status = 1
    # Wait for the harness's SIGKILL: a child that exited could have its process id
    # reused by an unrelated process before the harness sends the signal.
    time.sleep(60)
    os._exit(status)


def main() -> None:
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    print("ready", flush=True)
    for line in sys.stdin:
        req = json.loads(line)
        pid = os.fork()
        if pid == 0:
            _child(req)
        print(pid, flush=True)


if __name__ == "__main__":
    main()
