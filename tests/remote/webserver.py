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

Given a certificate and its key, it speaks HTTPS (:func:`self_signed` makes
them, for the loopback address).  :meth:`WebServer.fail` makes every later
request for a file fail, with a 500 answer or a connection dropped before
any answer, as a failing server would.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import shutil
import ssl
import subprocess
import sys

__all__ = ["WebServer", "start", "self_signed"]

_SERVER = r"""
import http.server, os, re, socket, ssl, sys, urllib.parse
root = os.path.realpath(sys.argv[1])
fault_file = sys.argv[2]  # "500" or "drop" in it: requests for files fail so
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
        if os.path.exists(fault_file):
            with open(fault_file) as f:
                fault = f.read()
            if fault == "drop":
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)  # no answer at all
                return None
            self.send_error(int(fault))
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
if len(sys.argv) > 3:  # a certificate and its key: HTTPS
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(sys.argv[3], sys.argv[4])
    server.socket = context.wrap_socket(server.socket, server_side=True)
print(server.server_address[1], flush=True)
server.serve_forever()
"""


class WebServer:
    """A running server: its base URL, its request count, and how to stop it."""

    def __init__(self, proc: subprocess.Popen, port: int, fault_file: str,
                 cert: str | None = None) -> None:
        self.proc = proc
        self.port = port
        self.fault_file = fault_file
        #: For HTTPS: a client context trusting the server's certificate.
        self.context = None if cert is None else ssl.create_default_context(cafile=cert)
        self.url = f"{'http' if cert is None else 'https'}://127.0.0.1:{port}"

    def requests(self) -> int:
        """Requests answered so far (this question included)."""
        import urllib.request

        with urllib.request.urlopen(f"{self.url}/__requests__", timeout=10,
                                    context=self.context) as r:
            return int(r.read())

    def fail(self, how: str | None) -> None:
        """From now on, answer requests for files with `how`: ``"500"`` (an HTTP
        status), ``"drop"`` (the connection closed before any answer), or None: serve."""
        if how is None:
            if os.path.exists(self.fault_file):
                os.unlink(self.fault_file)
            return
        with open(self.fault_file, "w") as f:
            f.write(how)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)


def start(directory: str, cwd: str | None = None,
          tls: tuple[str, str] | None = None) -> WebServer:
    """Serve `directory` (run in `cwd`: see tests/remote/test_remote.BCOLZX_PARENT); with
    `tls`, ``(certificate file, key file)``, over HTTPS."""
    fault_file = os.path.join(os.path.dirname(os.path.abspath(directory)),
                              f".fault-{os.path.basename(os.path.abspath(directory))}")
    proc = subprocess.Popen([sys.executable, "-c", _SERVER, str(directory), fault_file,
                             *(tls or ())], stdout=subprocess.PIPE, cwd=cwd)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line:
        proc.wait(10)
        raise RuntimeError("the web server did not start")
    return WebServer(proc, int(line), fault_file, None if tls is None else tls[0])


def self_signed(directory: str, tool: str | None = None) -> tuple[str, str]:
    """A new self-signed certificate for 127.0.0.1 and its key, written in `directory`:
    ``(certificate file, key file)``.

    Made with the ``cryptography`` package (the test extra installs it), or with the
    ``openssl`` program when it is not there (`tool` forces one or the other).

    Raises
    ------
    RuntimeError
        If neither can be used (the caller skips).
    """
    cert, key = os.path.join(directory, "cert.pem"), os.path.join(directory, "key.pem")
    if tool in (None, "cryptography"):
        try:
            _with_cryptography(cert, key)
            return cert, key
        except ImportError:
            if tool is not None:
                raise RuntimeError("the cryptography package is not installed") from None
    if shutil.which("openssl") is None:
        raise RuntimeError("making a certificate needs the cryptography package (pip install "
                           "cryptography; the test extra installs it) or the openssl program")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", key, "-out", cert,
                    "-days", "1", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True)
    return cert, key


def _with_cryptography(cert: str, key: str) -> None:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    private = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.timezone.utc)
    public = private.public_key()
    certificate = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(public)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName(
            [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True,
                                     content_commitment=False, key_encipherment=False,
                                     data_encipherment=False, key_agreement=False,
                                     crl_sign=False, encipher_only=False,
                                     decipher_only=False), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(public), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(public),
                       critical=False)
        .sign(private, hashes.SHA256()))
    with open(key, "wb") as f:
        f.write(private.private_bytes(serialization.Encoding.PEM,
                                      serialization.PrivateFormat.PKCS8,
                                      serialization.NoEncryption()))
    with open(cert, "wb") as f:
        f.write(certificate.public_bytes(serialization.Encoding.PEM))
