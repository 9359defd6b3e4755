"""A counting HTTP proxy in front of the real registry, on loopback.

Counts every request a client makes (by method and path) and can be stopped to simulate an
outage, without touching confluent-kafka's internals.
"""

from __future__ import annotations

import collections
import contextlib
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class CountingProxy:
    def __init__(self, upstream: str) -> None:
        self.upstream = upstream.rstrip("/")
        self.requests: collections.Counter[str] = collections.Counter()
        self._lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def _forward(self) -> None:
                with proxy._lock:
                    proxy.requests[f"{self.command} {self.path.split('?')[0]}"] += 1
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                headers = {k: v for k, v in self.headers.items() if k.lower() in ("content-type", "accept")}
                request = urllib.request.Request(
                    proxy.upstream + self.path, data=body, method=self.command, headers=headers
                )
                try:
                    with urllib.request.urlopen(request, timeout=30) as response:
                        status, payload, kind = (
                            response.status,
                            response.read(),
                            response.headers.get("Content-Type"),
                        )
                except urllib.error.HTTPError as error:
                    status, payload, kind = error.code, error.read(), error.headers.get("Content-Type")
                self.send_response(status)
                self.send_header("Content-Type", kind or "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = do_PUT = do_DELETE = _forward

            def log_message(self, format: str, *args: object) -> None:  # quiet
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def total(self) -> int:
        with self._lock:
            return sum(self.requests.values())

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Stop answering: the next connection is refused, as in a registry outage."""
        self._server.shutdown()
        self._server.server_close()


@contextmanager
def counting_proxy(upstream: str) -> Iterator[CountingProxy]:
    proxy = CountingProxy(upstream)
    proxy.start()
    try:
        yield proxy
    finally:
        with contextlib.suppress(OSError):
            proxy.stop()
