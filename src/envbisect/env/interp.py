"""The interpreter a ``--python`` request names, and its facts, found once and kept on disk.

Who does what: ``find_python`` asks uv, ``_target`` runs ``FACTS_SCRIPT`` with the
interpreter (``run_python_json``: any script that answers in JSON); ``locate`` remembers both
answers between invocations (in envbisect's disk cache, diskcache.py, under a folder of its
own), so that a probe does not pay for two subprocesses before it starts building.

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
import json
import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from envbisect.core.target import FACTS_SCRIPT, Target
from envbisect.diskcache import DiskCache
from envbisect.env.uv import Uv
from envbisect.errors import UsageError
from envbisect.redact import mask_text

INTERPRETERS = "interpreters-v1"
FIND_TTL = 600.0
_SCRIPT_ID = hashlib.sha256(FACTS_SCRIPT.encode()).hexdigest()[:16]


INSTALL_TIMEOUT = 600.0  # seconds for uv python install (a download of ~30 MB)


def locate(
    uv: Uv,
    request: str | None,
    cache_dir: Path | None,
    *,
    now: float | None = None,
    install: Callable[[str], None] | None = None,
) -> tuple[str, Target]:
    """The interpreter uv finds for ``request`` and its ``Target``, from the cache when the
    answers there still hold (``install``: see ``find_python``)."""
    cache = DiskCache(cache_dir) if cache_dir is not None else None
    clock = time.time() if now is None else now
    path = _found(cache, uv, request, clock)
    if path is None:
        path = find_python(uv, request, install=install)
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


# -- asking uv, and the interpreter itself ------------------------------------------------------


def find_python(
    uv: Uv, request: str | None, *, install: Callable[[str], None] | None = None
) -> str:
    """The interpreter uv finds for ``request`` (a version such as 3.11, or a path).

    With no request, uv's default: the first Python on PATH (a virtualenv's when one is active).
    ``install``: called with a version request uv finds no interpreter for, where uv knows a
    Python to install for it (``install_python``); uv is asked again after.
    """
    if request and os.sep in request and os.path.exists(request):
        return request
    proc = _find(uv, request)
    missing = proc.returncode != 0 or not proc.stdout.strip()
    can = install is not None and bool(request) and os.sep not in str(request)
    # Only where uv knows a Python to install for the request (9.9 names none).
    if missing and can and request and _uv_pythons(uv, request, installed=False):
        assert install is not None
        install(request)
        proc = _find(uv, request)
    if proc.returncode != 0 or not proc.stdout.strip():
        raise UsageError(
            f"no Python interpreter matches --python {request}"
            if request
            else "uv finds no Python interpreter on this machine",
            hint=_python_hint(uv, request),
            ref="python-not-found",
        )
    return proc.stdout.strip().splitlines()[-1]


def _find(uv: Uv, request: str | None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [uv.binary, "python", "find", "--no-config", "--no-project", *filter(None, [request])],
        capture_output=True,
        text=True,
        env=uv.env(),
    )


def python_downloads_refused() -> str | None:
    """uv's own setting, where it refuses what envbisect would ask (said in the error)."""
    value = os.environ.get("UV_PYTHON_DOWNLOADS", "").strip().lower()
    return f"UV_PYTHON_DOWNLOADS={value}" if value in ("never", "manual") else None


def install_command(uv: Uv, request: str) -> list[str]:
    """What envbisect runs to install a Python it lacks: uv's own command."""
    return [uv.binary, "python", "install", "--no-config", request]


def install_python(uv: Uv, request: str, say: Callable[[str], None]) -> None:
    """``uv python install REQUEST`` (said); a failure is one error naming uv's reason."""
    say(f"envbisect: no Python {request} here: uv python install {request}")
    try:
        proc = subprocess.run(
            install_command(uv, request),
            capture_output=True,
            text=True,
            env=uv.env(),
            timeout=INSTALL_TIMEOUT,
        )
    except subprocess.TimeoutExpired:
        proc = subprocess.CompletedProcess([], 1, "", f"no answer in {INSTALL_TIMEOUT:.0f} s")
    if proc.returncode != 0:
        lines = [line.strip() for line in mask_text(proc.stderr).splitlines() if line.strip()]
        why = (lines or ["no reason given"])[-1].removeprefix("cause: ")
        raise UsageError(
            f"uv could not install Python {request}: {why}",
            hint="install it yourself and pass its path (--python /path/to/python), or pass "
            "--no-python-downloads to never ask uv",
            ref="python-not-found",
        )


def _python_hint(uv: Uv, request: str | None) -> str:
    """``uv python install X`` only where uv knows a Python X to install; else the ones this
    machine has (a request such as 9.9 names no Python that exists)."""
    path_hint = "or pass --python with the path of an interpreter"
    refused = python_downloads_refused()
    if refused:
        path_hint += f" ({refused}: envbisect does not ask uv to install one)"
    if request is None or _uv_pythons(uv, request, installed=False):
        return f"install one (uv python install {request or '3.12'}) {path_hint}"
    have = sorted(
        {v for v in _uv_pythons(uv, None, installed=True)},
        key=lambda v: tuple(int(p) if p.isdigit() else 0 for p in v.split(".")),
    )
    if not have:
        return (
            f"no Python {request} exists that uv could install: name a version such as "
            f"3.12 (uv python install 3.12) {path_hint}"
        )
    minor = ".".join(have[-1].split(".")[:2])
    return (
        f"no Python {request} exists that uv could install; this machine has "
        f"{', '.join(have)}: pass one of them (--python {minor}) {path_hint}"
    )


def _uv_pythons(uv: Uv, request: str | None, *, installed: bool) -> list[str]:
    """The versions ``uv python list`` shows (its download list is built in: no network)."""
    env = uv.env()
    if not installed:
        env["UV_PYTHON_DOWNLOADS"] = "automatic"  # to list what exists; nothing is fetched
    args = [uv.binary, "python", "list", "--no-config", "--output-format", "json"]
    args += ["--only-installed"] if installed else []
    args += [request] if request else []
    try:
        proc = subprocess.run(args, capture_output=True, text=True, env=env, timeout=60)
        found = json.loads(proc.stdout or "[]")
    except (OSError, subprocess.TimeoutExpired, ValueError):
        return []
    return [str(p.get("version")) for p in found if isinstance(p, dict) and p.get("version")]


def run_python_json(
    python: str, script: str, *args: str, timeout: float = 60.0, doing: str = "starting"
) -> Any:
    """Run ``script`` with ``python -I`` and return the JSON object it prints.

    An interpreter that cannot run, or a script that fails, is a ``UsageError``: the user
    named that interpreter."""
    try:
        proc = subprocess.run(
            [python, "-I", "-c", script, *args], capture_output=True, text=True, timeout=timeout
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        raise UsageError(f"cannot run {python}: {e}", hint=_PYTHON_HINT, ref="python-broken") from e
    return python_json(proc, python, doing)


_PYTHON_HINT = "pass --python with a version uv can find, or the path of a working interpreter"


def python_json(proc: subprocess.CompletedProcess[str], python: str, doing: str) -> Any:
    """The JSON object a script run by ``python`` printed; its failure a ``UsageError``."""
    hint = _PYTHON_HINT
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
        raise UsageError(f"{python} failed while {doing}: {last}", hint=hint, ref="python-broken")
    return json.loads(proc.stdout)


# What an interpreter's own site-packages hold (``--inherit``): its folders and, read from
# those folders only (never the user's site or a PYTHONPATH), each distribution's version.
_INHERIT_SCRIPT = """
import json, sysconfig, importlib.metadata as m
paths = sorted({sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]})
dists = {}
for d in m.distributions(path=paths):
    name = d.metadata["Name"]
    if name and name.lower() not in dists:
        dists[name.lower()] = d.version
print(json.dumps({"paths": paths, "dists": dists}))
"""


def inherited(python: str) -> tuple[tuple[str, ...], dict[str, str]]:
    """The site-packages folders of ``python`` and what they hold (canonical name ->
    version), for candidate environments that inherit them (``--inherit``). Names and
    versions that are not PEP 503 / PEP 440 are left out (a folder may hold anything)."""
    from packaging.utils import canonicalize_name

    from envbisect.core.names import is_project_name, is_version

    found = run_python_json(python, _INHERIT_SCRIPT, doing="reading its site-packages")
    paths = tuple(str(p) for p in found.get("paths", []) if isinstance(p, str))
    dists = {
        str(canonicalize_name(n)): str(v)
        for n, v in (found.get("dists") or {}).items()
        if isinstance(n, str) and isinstance(v, str) and is_project_name(n) and is_version(v)
    }
    return paths, dists
