#!/usr/bin/env python3
"""A loopback HTTP file server for the download and bundle tests (never for real use).

    scripts/bundle_test_server.py ROOT     prints "PORT <n>" on its first line, then serves ROOT on 127.0.0.1

GET /<modes>/<file> serves ROOT/<file>, with HTTP Range support (206 + Content-Range, 416 past the end)
and Content-Length. <modes> is "plain" or several of these joined by "+":
  slow        the body in 4 KiB pieces, 20 ms apart
  drop        the first request for this file closes the connection after half the body (later ones are whole)
  dropalways  every request closes the connection after half of what it should send
  stall       sends half the body, then nothing (until the client gives up)
  norange     ignores Range (always 200 with the whole file)
  etag        an X-Linked-ETag header with the file's SHA-256 (as Hugging Face gives it)
  badetag     an X-Linked-ETag header with a wrong SHA-256
  redirect    302 to the same file under the other modes (the X-Linked-ETag, if any, on the redirect)
  missing     404
  hugelength  a 206 announces a Content-Length near 2^63 and a Content-Range with an unknown total ("/*")
  empty200    a request with a Range header gets 200 with Content-Length: 0 and no body
  endless     200 with a Content-Length of 2^40 (none with nolength), then the file over and over, without
              end (until the client hangs up, or 60 s)
  nolength    no Content-Length: the body ends when the connection closes (with dropalways: a file cut
              short that looks complete)
  gzip        the file gzip-compressed, with Content-Encoding: gzip
  zeros       as many zero bytes as the file has, in its place
  silent      reads the request, then sends nothing (until the client gives up, or 60 s)
GET /_log returns the requests served so far as JSON [{"path", "range"}]; GET /_reset clears it.
"""
import gzip
import hashlib
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".")
LOG = []
DROPPED = set()
LOCK = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):  # quiet
        pass

    def do_GET(self):
        if self.path == "/_log":
            with LOCK:
                self.reply(200, json.dumps(LOG).encode(), "application/json")
            return
        if self.path == "/_reset":
            with LOCK:
                LOG.clear()
                DROPPED.clear()
            self.reply(200, b"ok", "text/plain")
            return
        with LOCK:
            LOG.append({"path": self.path, "range": self.headers.get("Range")})
        parts = self.path.lstrip("/").split("/", 1)
        if len(parts) != 2:
            self.reply(404, b"no such file", "text/plain")
            return
        modes = set(parts[0].split("+"))
        rel = parts[1].split("?", 1)[0]
        path = os.path.normpath(os.path.join(ROOT, rel))
        if "missing" in modes or not path.startswith(ROOT + os.sep) or not os.path.isfile(path):
            self.reply(404, b"no such file", "text/plain")
            return
        if "silent" in modes:
            time.sleep(60)
            self.close_connection = True
            return
        with open(path, "rb") as f:
            data = f.read()
        if "zeros" in modes:
            data = bytes(len(data))
        sha = hashlib.sha256(data).hexdigest()
        if "badetag" in modes:
            sha = hashlib.sha256(data + b"x").hexdigest()
        checksum = "etag" in modes or "badetag" in modes
        if "redirect" in modes:
            rest = "+".join(sorted(modes - {"redirect", "etag", "badetag"})) or "plain"
            self.send_response(302)
            self.send_header("Location", f"/{rest}/{rel}")
            if checksum:
                self.send_header("X-Linked-ETag", f'"{sha}"')
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        spec = self.headers.get("Range")
        nolength = "nolength" in modes
        if "empty200" in modes and spec:
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if "endless" in modes:
            self.send_response(200)
            if nolength:
                self.send_header("Connection", "close")
            else:
                self.send_header("Content-Length", str(2**40))
            self.end_headers()
            self.close_connection = True
            deadline = time.time() + 60
            try:
                while time.time() < deadline:
                    self.wfile.write(data)
                    self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                pass
            return
        if "gzip" in modes:
            data = gzip.compress(data)
        start, status = 0, 200
        if spec and "norange" not in modes and spec.startswith("bytes=") and spec.endswith("-"):
            start = int(spec[6:-1])
            if start >= len(data):
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{len(data)}")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            status = 206
        body = data[start:]
        self.send_response(status)
        self.send_header("Content-Type", "application/octet-stream")
        huge = "hugelength" in modes and status == 206
        if nolength:
            self.send_header("Connection", "close")
        else:
            self.send_header("Content-Length", str(2**63 - 10) if huge else str(len(body)))
        if "gzip" in modes:
            self.send_header("Content-Encoding", "gzip")
        self.send_header("Accept-Ranges", "bytes")
        if huge:
            self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/*")
        elif status == 206:
            self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        if checksum:
            self.send_header("X-Linked-ETag", f'"{sha}"')
        self.end_headers()
        cut = len(body)
        with LOCK:
            if "dropalways" in modes or ("drop" in modes and rel not in DROPPED):
                DROPPED.add(rel)
                cut = len(body) // 2
        stall = "stall" in modes
        if stall:
            cut = len(body) // 2
        step = 4096 if "slow" in modes else 65536
        try:
            for i in range(0, cut, step):
                self.wfile.write(body[i:min(cut, i + step)])
                self.wfile.flush()
                if "slow" in modes:
                    time.sleep(0.02)
            if stall:
                time.sleep(60)
        except (BrokenPipeError, ConnectionResetError):
            pass
        if cut < len(body) or huge or nolength:
            self.close_connection = True

    def reply(self, status, body, kind):
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):  # a client that hung up on a drop or stall mode
        pass


def main():
    server = Server(("127.0.0.1", 0), Handler)
    print(f"PORT {server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
