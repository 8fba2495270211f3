"""A socket on 127.0.0.1 that records every connection made to it: the target the offline
tests point every proxy at, so that any request a command makes is seen (test_offline.py,
test_check.py; the ``listener`` fixture is conftest.py's)."""

from __future__ import annotations

import socket
import threading

PROXIES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")


class Listener:
    """A real socket on 127.0.0.1 that records the first bytes of every connection to it."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.1)
        self.seen: list[bytes] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}"

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with conn:
                conn.settimeout(2)
                try:
                    self.seen.append(conn.recv(200) or b"(nothing sent)")
                except OSError:
                    self.seen.append(b"(no request line)")

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self.sock.close()
