"""The interpreter a ``--python`` request names, and its facts, found once and kept on disk.

Who does what: ``find_python`` (uv.py) asks uv, ``inspect_target`` runs ``FACTS_SCRIPT`` with
the interpreter; this module remembers both answers between invocations (in envbisect's disk
cache, diskcache.py, under a folder of its own), so that a probe does not pay for two
subprocesses before it starts building.

- Facts are kept under the interpreter's path, the size and modification time of the file it
  resolves to, the running kernel and C library, and the script's own hash: an interpreter
  that was replaced, a kernel upgrade or a new ``FACTS_SCRIPT`` is a miss. Never stale.
- uv's answer to a version request (``3.11``) is kept for ``FIND_TTL`` seconds under the
  request, the uv binary and the variables uv's discovery reads (``PATH``, an active virtual
  environment or conda prefix, ``UV_PYTHON*``). A Python installed within that window is
  found only when it expires; a path that no longer exists is a miss at once.

An unreadable or unwritable cache only costs the subprocesses it would have saved.
"""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path

from envbisect.core.target import FACTS_SCRIPT, Target
from envbisect.diskcache import DiskCache
from envbisect.env.uv import Uv, find_python, run_python_json

INTERPRETERS = "interpreters-v1"
FIND_TTL = 600.0
_SCRIPT_ID = hashlib.sha256(FACTS_SCRIPT.encode()).hexdigest()[:16]


def locate(
    uv: Uv, request: str | None, cache_dir: Path | None, *, now: float | None = None
) -> tuple[str, Target]:
    """The interpreter uv finds for ``request`` and its ``Target``, from the cache when the
    answers there still hold."""
    cache = DiskCache(cache_dir) if cache_dir is not None else None
    clock = time.time() if now is None else now
    path = _found(cache, uv, request, clock)
    if path is None:
        path = find_python(uv, request)
        if cache is not None and _is_request(request):
            cache.write(INTERPRETERS, _find_key(uv, request), {"path": path, "at": clock})
    return path, _target(cache, path)


def _is_request(request: str | None) -> bool:
    """A request uv has to search for (a path is its own answer)."""
    return not (request and os.sep in request and os.path.exists(request))


def _found(cache: DiskCache | None, uv: Uv, request: str | None, now: float) -> str | None:
    if cache is None or not _is_request(request):
        return None
    entry = cache.read(INTERPRETERS, _find_key(uv, request))
    if not isinstance(entry, dict):
        return None
    path, at = entry.get("path"), entry.get("at")
    if not isinstance(path, str) or not isinstance(at, int | float) or not 0 <= now - at < FIND_TTL:
        return None
    return path if os.path.isfile(path) else None


def _find_key(uv: Uv, request: str | None) -> str:
    seen = {k: v for k, v in os.environ.items() if k.startswith("UV_PYTHON")}
    for name in ("PATH", "VIRTUAL_ENV", "CONDA_PREFIX"):
        seen[name] = os.environ.get(name, "")
    return f"find\0{request}\0{uv.binary}\0{_stat_id(uv.binary)}\0{sorted(seen.items())}"


def _target(cache: DiskCache | None, path: str) -> Target:
    key = _facts_key(path)
    if cache is not None and key is not None:
        entry = cache.read(INTERPRETERS, key)
        if isinstance(entry, dict) and entry.get("key") == key:
            try:
                return Target.from_facts(entry["facts"])
            except (KeyError, TypeError, ValueError, IndexError):
                pass  # a damaged entry: read the facts again
    facts = run_python_json(path, FACTS_SCRIPT)
    target = Target.from_facts(facts)
    if cache is not None and key is not None:
        cache.write(INTERPRETERS, key, {"key": key, "facts": facts})
    return target


def _facts_key(path: str) -> str | None:
    stat = _stat_id(path)
    if stat is None:
        return None
    uname = os.uname() if hasattr(os, "uname") else None
    try:
        libc = os.confstr("CS_GNU_LIBC_VERSION") or ""
    except (AttributeError, ValueError, OSError):
        libc = ""
    kernel = f"{uname.release} {uname.version}" if uname is not None else ""
    return f"facts\0{os.path.abspath(path)}\0{stat}\0{kernel}\0{libc}\0{_SCRIPT_ID}"


def _stat_id(path: str) -> str | None:
    try:
        st = os.stat(path)  # follows links: a venv's python is the interpreter it points at
    except OSError:
        return None
    return f"{st.st_size}:{st.st_mtime_ns}:{st.st_ino}"
