"""A real PEP 503/691 package index over HTTP on 127.0.0.1, for hermetic tests.

Routes:
    /simple/<project>/    JSON (PEP 691, with PEP 700 upload times) or HTML, by Accept header
    /html/<project>/      HTML only (PEP 503), to exercise the fallback
    /nometa/<project>/    like /simple/, but no file advertises core metadata (PEP 658/714)
    /badmeta/<project>/   like /simple/, but the core metadata hashes are wrong
    /garbage/<project>/   200 with a body that is no index page at all
    /files/<filename>     the file itself; /files/<wheel>.metadata its METADATA
Project pages carry the cache headers PyPI sends plus an ETag and a Last-Modified, and answer
304 to a matching If-None-Match (or, without one, a recent enough If-Modified-Since);
``page_cache`` is their Cache-Control (``max-age=0, must-revalidate``: every client asks again,
as behind many private indexes, or after PyPI's ten minutes).
Requests are counted per path (``hits``, keyed "GET /path"), as are body bytes sent (``sent``)
and 304 answers (``not_modified``), so tests can check what was fetched.
"""

from __future__ import annotations

import hashlib
import html
import json
import sys
import threading
import time
import zipfile
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from email.utils import format_datetime, parsedate_to_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

from packaging.utils import canonicalize_name


class LoopbackServer(ThreadingHTTPServer):
    """A threading HTTP server on which a client hanging up mid-answer is not an error.

    uv drops a download it no longer needs (a build that failed, a resolution that moved on);
    the stdlib server would print a BrokenPipeError traceback to stderr, into the output of the
    command under test. Any other error in a handler is still printed.
    """

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


class QuietHandler(BaseHTTPRequestHandler):
    """A request handler that logs nothing (the stdlib's prints a line for each request)."""

    def log_message(self, *args: object) -> None:
        pass


def serve(handler: type[BaseHTTPRequestHandler]) -> LoopbackServer:
    """A LoopbackServer on 127.0.0.1 (a free port) answering with ``handler``, serving in a
    thread of its own."""
    server = LoopbackServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def shut_down(server: ThreadingHTTPServer | None) -> None:
    """``server`` stopped and its socket closed (None: it was never started)."""
    if server is not None:
        server.shutdown()
        server.server_close()


# The cache headers PyPI sends: project pages for 10 minutes, files forever.
PAGE = "max-age=600, public"
IMMUTABLE = "max-age=365000000, immutable, public"


@dataclass
class IndexFile:
    project: str
    path: Path
    upload_time: datetime
    yanked: bool = False
    requires_python: str | None = None

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.path.read_bytes()).hexdigest()

    def core_metadata(self) -> bytes | None:
        """The wheel's METADATA file, served as ``<file>.metadata`` (PEP 658/714)."""
        if not self.path.name.endswith(".whl"):
            return None
        with zipfile.ZipFile(self.path) as zf:
            for name in zf.namelist():
                if name.endswith(".dist-info/METADATA"):
                    return zf.read(name)
        return None


@dataclass
class LocalIndex:
    files: list[IndexFile] = field(default_factory=list)
    hits: Counter[str] = field(default_factory=Counter)
    sent: Counter[str] = field(default_factory=Counter)
    not_modified: Counter[str] = field(default_factory=Counter)
    server: ThreadingHTTPServer | None = None
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    # PyTorch-style variant folders served under /whl/<variant>/ (see _torch_variant).
    variants: dict[str, list[IndexFile]] = field(default_factory=dict)
    # Switches for the metadata paths: serve <wheel>.metadata files; honour Range requests.
    metadata_files: bool = True
    ranges: bool = True
    range_requests: int = 0
    page_cache: str = PAGE
    # A slow index: each project page answered after ``page_delay`` seconds; the most page
    # requests in flight at once are counted (a client that reads pages one by one sees 1).
    page_delay: float = 0.0
    pages_in_flight: int = 0
    most_pages_in_flight: int = 0

    def add(self, f: IndexFile) -> None:
        self.files.append(f)

    @property
    def base(self) -> str:
        assert self.server is not None
        host, port = self.server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def url(self) -> str:
        return f"{self.base}/simple"

    def project(self, name: str) -> list[IndexFile]:
        key = canonicalize_name(name)
        return [f for f in self.files if canonicalize_name(f.project) == key]

    def last_modified(self, name: str) -> datetime:
        return max(f.upload_time for f in self.project(name))

    def json_page(self, name: str, *, metadata: str = "sha256") -> dict[str, Any]:
        """``metadata``: "sha256" (the real hash), "none" (not advertised) or "bad" (wrong)."""
        rows = []
        for f in self.project(name):
            row: dict[str, Any] = {
                "filename": f.path.name,
                "url": f"../../files/{f.path.name}",
                "hashes": {"sha256": f.sha256},
                "upload-time": f.upload_time.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
                "size": f.path.stat().st_size,
                "yanked": f.yanked,
            }
            if f.requires_python:
                row["requires-python"] = f.requires_python
            meta = f.core_metadata()
            if meta is not None and metadata != "none":
                digest = hashlib.sha256(meta if metadata == "sha256" else b"bad").hexdigest()
                row["core-metadata"] = {"sha256": digest}
            rows.append(row)
        return {"meta": {"api-version": "1.1"}, "name": canonicalize_name(name), "files": rows}

    def html_page(self, name: str, *, metadata: str = "sha256") -> str:
        links = []
        for f in self.project(name):
            attrs = f' href="../../files/{f.path.name}#sha256={f.sha256}"'
            if f.requires_python:
                attrs += f' data-requires-python="{html.escape(f.requires_python)}"'
            if f.yanked:
                attrs += ' data-yanked=""'
            meta = f.core_metadata()
            if meta is not None and metadata != "none":
                digest = hashlib.sha256(meta if metadata == "sha256" else b"bad").hexdigest()
                attrs += f' data-core-metadata="sha256={digest}"'
            links.append(f"<a{attrs}>{f.path.name}</a><br/>")
        return "<!DOCTYPE html><html><body>\n" + "\n".join(links) + "\n</body></html>\n"

    def start(self) -> LocalIndex:
        index = self

        class Handler(QuietHandler):
            def do_HEAD(self) -> None:
                self._head_only = True
                self.do_GET()

            def do_GET(self) -> None:
                with index.lock:
                    index.hits[f"{self.command} {self.path}"] += 1
                parts = [unquote(p) for p in self.path.split("?")[0].split("/") if p]
                if parts[:1] == ["whl"] and self._torch_variant(parts[1:]):
                    return
                kinds = ("simple", "html", "garbage", "nometa", "badmeta")
                if len(parts) == 2 and parts[0] in kinds:
                    kind, name = parts
                    if not index.project(name):
                        self._send(404, "text/plain", b"not found")
                    elif kind == "garbage":
                        self._send(200, "application/octet-stream", b"\x00\x01 not an index")
                    else:
                        self._slow_page(kind, name)
                    return
                if len(parts) == 2 and parts[0] == "files":
                    for f in index.files:
                        if f.path.name == parts[1]:
                            self._send_file(f.path.read_bytes())
                            return
                        meta = f.core_metadata() if parts[1] == f"{f.path.name}.metadata" else None
                        if meta is not None and index.metadata_files:
                            self._send(200, "application/octet-stream", meta, cache=IMMUTABLE)
                            return
                self._send(404, "text/plain", b"not found")

            def _slow_page(self, kind: str, name: str) -> None:
                with index.lock:
                    index.pages_in_flight += 1
                    index.most_pages_in_flight = max(
                        index.most_pages_in_flight, index.pages_in_flight
                    )
                try:
                    time.sleep(index.page_delay)
                    self._project_page(kind, name)
                finally:
                    with index.lock:
                        index.pages_in_flight -= 1

            def _project_page(self, kind: str, name: str) -> None:
                metadata = {"nometa": "none", "badmeta": "bad"}.get(kind, "sha256")
                if kind != "html" and "application/vnd.pypi.simple.v1+json" in (
                    self.headers.get("Accept") or ""
                ):
                    ctype = "application/vnd.pypi.simple.v1+json"
                    body = json.dumps(index.json_page(name, metadata=metadata)).encode()
                else:
                    ctype, body = "text/html", index.html_page(name, metadata=metadata).encode()
                etag = f'"{hashlib.sha256(body).hexdigest()[:16]}"'
                modified = index.last_modified(name)
                validators = {"ETag": etag, "Last-Modified": format_datetime(modified, usegmt=True)}
                if self._not_modified(etag, modified):
                    with index.lock:
                        index.not_modified[f"{self.command} {self.path}"] += 1
                    self._send(304, ctype, b"", headers=validators)
                else:
                    self._send(200, ctype, body, headers=validators)

            def _not_modified(self, etag: str, modified: datetime) -> bool:
                match = self.headers.get("If-None-Match")
                if match is not None:
                    tags = [t.strip().removeprefix("W/") for t in match.split(",")]
                    return "*" in tags or etag in tags
                since = self.headers.get("If-Modified-Since")
                if since is None:
                    return False
                try:
                    return modified.replace(microsecond=0) <= parsedate_to_datetime(since)
                except (TypeError, ValueError):
                    return False

            def _torch_variant(self, parts: list[str]) -> bool:
                """/whl/<variant>/<project>/ and /whl/<variant>/<file>, laid out like
                download.pytorch.org: HTML only, no upload times, '+' quoted in links."""
                if len(parts) != 2 or parts[0] not in index.variants:
                    return False
                variant, leaf = parts
                files = index.variants[variant]
                for f in files:
                    if f.path.name == leaf:
                        self._send(200, "application/octet-stream", f.path.read_bytes(),
                                   cache=IMMUTABLE)  # fmt: skip
                        return True
                mine = [f for f in files if canonicalize_name(f.project) == canonicalize_name(leaf)]
                if not mine:
                    self._send(404, "text/plain", b"not found")
                    return True
                links = "".join(
                    f'<a href="/whl/{variant}/{quote(f.path.name)}#sha256={f.sha256}">'
                    f"{f.path.name}</a><br/>\n"
                    for f in mine
                )
                body = f"<!DOCTYPE html><html><body>\n{links}</body></html>\n".encode()
                self._send(200, "text/html", body)
                return True

            def _send_file(self, data: bytes) -> None:
                """The file, or the byte range asked for (206) when ranges are on."""
                wanted = self.headers.get("Range", "")
                if index.ranges and wanted.startswith("bytes="):
                    first, _, last = wanted[len("bytes=") :].partition("-")
                    start = int(first) if first else max(0, len(data) - int(last))
                    end = min(len(data) - 1, int(last)) if first and last else len(data) - 1
                    with index.lock:
                        index.range_requests += 1
                    span = {"Content-Range": f"bytes {start}-{end}/{len(data)}"}
                    self._send(206, "application/octet-stream", data[start : end + 1],
                               cache=IMMUTABLE, headers=span)  # fmt: skip
                    return
                self._send(200, "application/octet-stream", data, cache=IMMUTABLE)

            def _send(
                self,
                status: int,
                ctype: str,
                body: bytes,
                cache: str | None = None,
                headers: dict[str, str] | None = None,
            ) -> None:
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Cache-Control", cache or index.page_cache)
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                if status != 304:
                    self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if not getattr(self, "_head_only", False) and status != 304:
                    with index.lock:  # counted first: the client may look as soon as it has it
                        index.sent[f"{self.command} {self.path}"] += len(body)
                    self.wfile.write(body)

        self.server = serve(Handler)
        return self

    def stop(self) -> None:
        shut_down(self.server)
