"""A hostile package index on 127.0.0.1: the tests' attacker, over real HTTP.

It serves the pages of a ``LocalIndex`` (support/index_server.py, not started) and misbehaves
on purpose, each way switched on by an attribute:
    auth            (user, passwords): every request needs HTTP Basic with one of them, else 401
    file_delay      seconds to wait before sending a file (time to look at uv's command line)
    tampered        file name -> the other bytes served for it (the page keeps the real hash)
Routes besides /simple/<project>/ and /files/<name>:
    /any/<anything>/     a page for any name at all, listing the files of ``any_project``
    /trickle/<project>/  a page sent one byte every ``trickle_every`` seconds
    /big/<project>/      a JSON page padded to ``big_bytes`` bytes
    /endless/<project>/  a 200 with no Content-Length that never ends (until the client goes)
Requests are counted per path in ``hits``.
"""

from __future__ import annotations

import base64
import hashlib
import json
import threading
import time
import zipfile
from collections import Counter
from dataclasses import dataclass, field
from http.server import ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote

from .index_server import LocalIndex, QuietHandler, serve, shut_down

JSON = "application/vnd.pypi.simple.v1+json"


def _metadata(wheel: Path) -> bytes | None:
    """The wheel's own METADATA: the top-level .dist-info's (not one under .data/)."""
    with zipfile.ZipFile(wheel) as zf:
        for name in zf.namelist():
            top, _, rest = name.partition("/")
            if top.endswith(".dist-info") and rest == "METADATA":
                return zf.read(name)
    return None


@dataclass
class HostileIndex:
    source: LocalIndex
    auth: tuple[str, tuple[str, ...]] | None = None
    file_delay: float = 0.0
    tampered: dict[str, bytes] = field(default_factory=dict)
    any_project: str = ""
    trickle_every: float = 2.0
    big_bytes: int = 0
    hits: Counter[str] = field(default_factory=Counter)
    server: ThreadingHTTPServer | None = None
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def base(self) -> str:
        assert self.server is not None
        host, port = self.server.server_address[:2]
        return f"http://{host!s}:{port}"

    def url(self, route: str = "simple", user: str | None = None, password: str = "") -> str:
        host = self.base.removeprefix("http://")
        cred = f"{user}:{password}@" if user is not None else ""
        return f"http://{cred}{host}/{route}"

    def start(self) -> HostileIndex:
        idx = self

        class Handler(QuietHandler):
            def do_GET(self) -> None:
                with idx.lock:
                    idx.hits[self.path] += 1
                if not self._authorised():
                    self._send(401, "text/plain", b"unauthorised",
                               {"WWW-Authenticate": 'Basic realm="hostile"'})  # fmt: skip
                    return
                parts = [unquote(p) for p in self.path.split("?")[0].split("/") if p]
                if len(parts) == 2 and parts[0] == "files":
                    self._file(parts[1])
                    return
                if len(parts) == 2 and parts[0] == "endless":
                    self._endless()
                    return
                if len(parts) == 2 and parts[0] in ("simple", "any", "trickle", "big"):
                    route, name = parts
                    project = idx.any_project if route == "any" else name
                    if not idx.source.project(project):
                        self._send(404, "text/plain", b"not found")
                        return
                    page = idx.source.json_page(project)
                    page["name"] = name
                    for row in page["files"]:
                        path = next(f.path for f in idx.source.files
                                    if f.path.name == row["filename"])  # fmt: skip
                        meta = _metadata(path)
                        if meta is not None and "core-metadata" in row:
                            row["core-metadata"] = {"sha256": hashlib.sha256(meta).hexdigest()}
                    body = json.dumps(page).encode()
                    if route == "trickle":
                        self._trickle(body)
                    elif route == "big":
                        pad = max(0, idx.big_bytes - len(body))
                        page["padding"] = " " * pad
                        self._send(200, JSON, json.dumps(page).encode())
                    else:
                        self._send(200, JSON, body)
                    return
                self._send(404, "text/plain", b"not found")

            def _authorised(self) -> bool:
                if idx.auth is None:
                    return True
                user, passwords = idx.auth
                given = self.headers.get("Authorization", "")
                if not given.startswith("Basic "):
                    return False
                try:
                    who, _, pw = base64.b64decode(given[6:]).decode().partition(":")
                except ValueError:
                    return False
                return who == user and pw in passwords

            def _file(self, name: str) -> None:
                for f in idx.source.files:
                    if f.path.name == name:
                        time.sleep(idx.file_delay)
                        data = idx.tampered.get(name) or f.path.read_bytes()
                        self._send(200, "application/octet-stream", data)
                        return
                    meta = _metadata(f.path) if name == f"{f.path.name}.metadata" else None
                    if meta is not None:
                        self._send(200, "application/octet-stream", meta)
                        return
                self._send(404, "text/plain", b"not found")

            def _endless(self) -> None:
                self.send_response(200)
                self.send_header("Content-Type", JSON)
                self.end_headers()
                chunk = b'{"files": [' + b" " * (1 << 20)
                try:
                    for _ in range(2000):  # 2 GB at most, if nobody hangs up
                        self.wfile.write(chunk)
                        with idx.lock:
                            idx.hits["endless bytes"] += len(chunk)
                except OSError:
                    return

            def _trickle(self, body: bytes) -> None:
                self.send_response(200)
                self.send_header("Content-Type", JSON)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                try:
                    for i in range(len(body)):
                        self.wfile.write(body[i : i + 1])
                        self.wfile.flush()
                        time.sleep(idx.trickle_every)
                except OSError:
                    return  # the client gave up: what it should do

            def _send(
                self, status: int, ctype: str, body: bytes, headers: dict[str, str] | None = None
            ) -> None:
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Cache-Control", "max-age=600, public")
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                try:
                    self.wfile.write(body)
                except OSError:
                    return

        self.server = serve(Handler)
        return self

    def stop(self) -> None:
        shut_down(self.server)
