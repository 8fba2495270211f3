"""envbisect's on-disk cache: where it lives, and JSON entries written atomically.

Who does what: this module knows files, not meaning. The index client (index/cache.py says
what its pages and METADATA entries hold, and when a page is fresh) and the interpreter
facts (env/interp.py) each keep their entries under a ``kind`` folder of their own, named
with a format version, so that a new layout never misreads an old one. It never makes a
request and runs nothing.

Entries are JSON (``read``/``write``) or bytes (``read_bytes``/``write_bytes``: a page
body, kept as it came rather than escaped inside JSON), written to a temp file and renamed
into place, so readers see the old entry or the new one, never half of one; an unreadable
entry is a miss. File names hash the key without its credentials, so no password reaches the
disk. An unwritable cache only makes the next run slower.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path

from envbisect.redact import strip_credentials


def default_cache_dir(environ: Mapping[str, str] | None = None) -> Path:
    """Where the on-disk cache lives unless told: ``$ENVBISECT_CACHE_DIR``, else
    ``$XDG_CACHE_HOME/envbisect``, else ``~/.cache/envbisect``. ``environ`` defaults to
    ``os.environ``."""
    env = os.environ if environ is None else environ
    if env.get("ENVBISECT_CACHE_DIR"):
        return Path(env["ENVBISECT_CACHE_DIR"]).expanduser()
    if env.get("XDG_CACHE_HOME"):
        return Path(env["XDG_CACHE_HOME"]).expanduser() / "envbisect"
    return Path.home() / ".cache" / "envbisect"


class DiskCache:
    """JSON entries named by a hash of the key (a URL: without its credentials); atomic
    writes."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def path(self, kind: str, key: str, suffix: str = ".json") -> Path:
        digest = hashlib.sha256(strip_credentials(key).encode()).hexdigest()
        return self.root / kind / digest[:2] / f"{digest}{suffix}"

    def read(self, kind: str, key: str) -> object:
        try:
            return json.loads(self.path(kind, key).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None  # missing, unreadable or damaged: a miss, refetched and rewritten

    def write(self, kind: str, key: str, entry: object) -> None:
        self.write_bytes(kind, key, json.dumps(entry).encode("utf-8"), suffix=".json")

    def read_bytes(self, kind: str, key: str, suffix: str = ".bin") -> bytes | None:
        try:
            return self.path(kind, key, suffix).read_bytes()
        except OSError:
            return None

    def write_bytes(self, kind: str, key: str, data: bytes, suffix: str = ".bin") -> None:
        path = self.path(kind, key, suffix)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=suffix)
        except OSError:
            return  # a cache that cannot be written only makes the next run slower
        done = False
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.replace(tmp, path)
            done = True
        except OSError:
            pass
        finally:
            if not done:  # also on Ctrl-C: never leave a temp file behind
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
