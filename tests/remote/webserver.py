"""A plain web server over a local directory, for the HTTP(S) and ``gs://`` read tests.

It runs in a child process (``python -c``: the child imports nothing from the
tests) on the loopback address and answers ``GET``/``HEAD`` with byte ranges
(``Range: bytes=a-b``, 206 and ``Content-Range``, 416 past the end), as object
stores and CDNs do; Python's ``http.server`` alone would send whole files.

It also answers the download path of the Google Cloud Storage JSON API
(``/download/storage/v1/b/<bucket>/o/<object>?alt=media``, the one request
gcsfs makes to read an object or a range of it) from ``<directory>/<bucket>/
<object>``, so that ``gs://`` URLs are read through gcsfs itself.  Nothing
else of GCS is served (no listing, no writes): a real GCS server cannot be
reached from the test machines.  Every request line is counted:
``GET /__requests__`` answers how many there were.
"""

from __future__ import annotations

import subprocess
import sys

__all__ = ["WebServer", "start"]

_SERVER = r"""
import http.server, os, re, sys, urllib.parse
root = os.path.realpath(sys.argv[1])
count = [0]
GCS = "/download/storage/v1/b/"

class Handler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def translate_path(self, path):
        url = urllib.parse.urlsplit(path)
        if url.path.startswith(GCS):
            bucket, _, obj = url.path[len(GCS):].partition("/o/")
            rel = os.path.join(urllib.parse.unquote(bucket), urllib.parse.unquote(obj))
        else:
            rel = urllib.parse.unquote(url.path).lstrip("/")
        full = os.path.realpath(os.path.join(root, rel))
        return full if full == root or full.startswith(root + os.sep) else "/nonexistent"

    def send_head(self):
        count[0] += 1
        self.range = None
        if self.path == "/__requests__":
            body = str(count[0]).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return None
        path = self.translate_path(self.path)
        if not os.path.isfile(path):
            self.send_error(404)
            return None
        size = os.path.getsize(path)
        match = re.fullmatch(r"bytes=(\d+)-(\d*)", (self.headers.get("Range") or "").strip())
        if match is None:
            f = open(path, "rb")
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(size))
            self.end_headers()
            return f
        start = int(match.group(1))
        end = min(int(match.group(2)) if match.group(2) else size - 1, size - 1)
        if start >= size:
            self.send_response(416)
            self.send_header("Content-Range", f"bytes */{size}")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return None
        f = open(path, "rb")
        f.seek(start)
        self.range = end - start + 1
        self.send_response(206)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Range", f"bytes {start}-{end}/{size}")
        self.send_header("Content-Length", str(self.range))
        self.end_headers()
        return f

    def copyfile(self, source, outputfile):
        if self.range is None:
            return super().copyfile(source, outputfile)
        outputfile.write(source.read(self.range))

server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
"""


class WebServer:
    """A running server: its base URL, its request count, and how to stop it."""

    def __init__(self, proc: subprocess.Popen, port: int) -> None:
        self.proc = proc
        self.port = port
        self.url = f"http://127.0.0.1:{port}"

    def requests(self) -> int:
        """Requests answered so far (this question included)."""
        import urllib.request

        with urllib.request.urlopen(f"{self.url}/__requests__", timeout=10) as r:
            return int(r.read())

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)


def start(directory: str, cwd: str | None = None) -> WebServer:
    """Serve `directory` (run in `cwd`: see tests/remote/test_remote.BCOLZX_PARENT)."""
    proc = subprocess.Popen([sys.executable, "-c", _SERVER, str(directory)],
                            stdout=subprocess.PIPE, cwd=cwd)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line:
        proc.wait(10)
        raise RuntimeError("the web server did not start")
    return WebServer(proc, int(line))
