"""A local S3-compatible server (moto) for the object-storage tests, docs and benchmarks.

``moto[server]`` is installed by the ``test`` extra (pyproject.toml).  The
server runs in a child process on the loopback address so that a test can
kill it mid-upload; :func:`start` waits until it answers.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
import urllib.request

__all__ = ["S3Server", "start"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class S3Server:
    """A running moto server: its endpoint, the options s3fs needs, and how to stop it."""

    def __init__(self, proc: subprocess.Popen, port: int) -> None:
        self.proc = proc
        self.port = port
        self.endpoint = f"http://127.0.0.1:{port}"

    def storage_options(self, **extra) -> dict:
        """fsspec ``storage_options`` for this server (fresh s3fs instance, no listing cache)."""
        opts = {"key": "testing", "secret": "testing", "skip_instance_cache": True,
                "use_listings_cache": False,
                "client_kwargs": {"endpoint_url": self.endpoint, "region_name": "eu-west-1"},
                "config_kwargs": {"retries": {"max_attempts": 1}}}
        opts.update(extra)
        return opts

    def filesystem(self, **extra):
        import s3fs

        return s3fs.S3FileSystem(**self.storage_options(**extra))

    def make_bucket(self, name: str) -> str:
        fs = self.filesystem()
        with contextlib.suppress(FileExistsError):
            fs.mkdir(name)
        return name

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)


def start(timeout: float = 30.0) -> S3Server:
    """Start ``moto.server`` on a free loopback port and wait until it answers."""
    port = _free_port()
    env = dict(os.environ, AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing",
               AWS_DEFAULT_REGION="us-east-1")
    proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1",
                             "-p", str(port)], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    server = S3Server(proc, port)
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(f"{server.endpoint}/moto-api/", timeout=1):
                return server
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                server.stop()
                raise RuntimeError(f"moto server did not start on port {port}") from None
            time.sleep(0.1)


_PROXY = r"""
import os, selectors, socket, sys
target = int(sys.argv[1])
budget = int(sys.argv[2])  # bytes forwarded to the server before dying (-1: no limit)
lsock = socket.socket(); lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
lsock.bind(("127.0.0.1", 0)); lsock.listen(64)
print(lsock.getsockname()[1], flush=True)
sel = selectors.DefaultSelector(); sel.register(lsock, selectors.EVENT_READ)
peers = {}
clients = set()
while True:
    for key, _ in sel.select():
        s = key.fileobj
        if s is lsock:
            a, _ = lsock.accept(); b = socket.create_connection(("127.0.0.1", target))
            peers[a], peers[b] = b, a
            clients.add(a)
            sel.register(a, selectors.EVENT_READ); sel.register(b, selectors.EVENT_READ)
            continue
        try:
            data = s.recv(1 << 16)
        except OSError:
            data = b""
        other = peers.get(s)
        if not data or other is None:
            for x in (s, other):
                if x is not None and x in peers:
                    sel.unregister(x); x.close(); del peers[x]
            continue
        if s in clients and budget >= 0:
            if len(data) >= budget:  # the server dies in the middle of what it receives
                other.sendall(data[:budget])
                os._exit(0)
            budget -= len(data)
        other.sendall(data)
"""


class _Proxy(subprocess.Popen):
    port: int


def start_proxy(port: int, budget: int = -1) -> _Proxy:
    """A TCP forwarder (one child process, one thread) from a new loopback port to `port`:
    killing it is, for a client, the server dying (while the server keeps what it got).
    With a `budget`, it dies by itself in the middle of forwarding the byte of the
    clients' requests that exceeds it."""
    proc = _Proxy([sys.executable, "-c", _PROXY, str(port), str(budget)],
                  stdout=subprocess.PIPE)
    assert proc.stdout is not None
    proc.port = int(proc.stdout.readline())
    return proc


@contextlib.contextmanager
def dying_after_first_upload(monkeypatch, bucket: str):
    """A fresh server with `bucket`, reached through a proxy that dies right after the
    first ``FsspecObjects.put`` has gone through: yields ``(server, storage options
    through the proxy, the keys of each put)``; the patch is undone by the caller
    (``monkeypatch.undo()``) before it looks at the server directly."""
    from bcolzx._storage import objects

    server = start()
    proxy = start_proxy(server.port)
    try:
        server.make_bucket(bucket)
        puts: list = []
        put = objects.FsspecObjects.put

        def put_then_die(objs, items):
            put(objs, items)
            puts.append(sorted(items))
            proxy.kill()
            proxy.wait(10)

        monkeypatch.setattr(objects.FsspecObjects, "put", put_then_die)
        so = server.storage_options()
        via_proxy = dict(so, client_kwargs=dict(so["client_kwargs"],
                                                endpoint_url=f"http://127.0.0.1:{proxy.port}"))
        yield server, via_proxy, puts
    finally:
        proxy.kill()
        server.stop()


@contextlib.contextmanager
def dying_mid_upload(bucket: str, budget: int):
    """A fresh server with `bucket`, reached through a proxy that dies once it has
    forwarded `budget` bytes of requests: yields ``(server, storage options through
    the proxy)``; the server itself stays up, to be looked at directly."""
    server = start()
    proxy = None
    try:
        server.make_bucket(bucket)
        proxy = start_proxy(server.port, budget)
        so = server.storage_options()
        via_proxy = dict(so, client_kwargs=dict(so["client_kwargs"],
                                                endpoint_url=f"http://127.0.0.1:{proxy.port}"))
        yield server, via_proxy
    finally:
        if proxy is not None:
            proxy.kill()
            proxy.wait(10)
        server.stop()
