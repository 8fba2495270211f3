"""Nothing envbisect starts outlives it, however it ends.

Mechanism, in three layers:
    tag         every process envbisect starts (uv, probes, worker processes) carries
                ``ENVBISECT_OWNER=<token>`` in its environment, and a probe also
                ``ENVBISECT_PROBE=<token>/<n>``. Environments are inherited through fork, exec,
                ``setsid()`` and double forks, so a repro's daemon is found by its tag wherever
                it was reparented to; after each probe ``kill_tagged`` kills what carries that
                probe's tag (runner.py).
    watchdog    one small process per envbisect process (``python -m envbisect.env.guard``),
                in a session of its own, reading a pipe only envbisect holds. When envbisect
                dies, even by SIGKILL, the pipe reaches EOF: the watchdog kills every process
                with the owner's tag and removes the environments the owner was building.
    next start  should the watchdog die too (the OOM killer), the next envbisect kills
                processes whose owner is gone (``reap_orphans``) and removes environments whose
                owner file names a dead owner (``reap_envs``).
An owner token is ``<pid>.<start time>.<nonce>``: a reused pid is not the same owner.

Why not PR_SET_CHILD_SUBREAPER on envbisect: orphans would become envbisect's children, and it
would have to reap them; a stray ``waitpid`` races with ``subprocess`` (whose ``wait`` then
sees ECHILD and reports exit 0), which would corrupt an outcome. The tag finds the same
processes without owning them.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

OWNER_VAR = "ENVBISECT_OWNER"
PROBE_VAR = "ENVBISECT_PROBE"
OWNER_FILE = ".envbisect-owner"

_lock = threading.Lock()
_token: str | None = None
_token_pid = 0
_watchdog: subprocess.Popen[bytes] | None = None
_created: set[Path] = set()
_watched: set[Path] = set()
_seq = 0


def token() -> str:
    """This process's owner token; the first call starts the watchdog."""
    global _token, _token_pid, _watchdog
    with _lock:
        if _token is not None and _token_pid == os.getpid():
            return _token
        reap_orphans()
        tok = f"{os.getpid()}.{_start_time(os.getpid())}.{os.urandom(4).hex()}"  # token_hex(4)
        _watched.clear()
        _created.clear()
        if sys.platform.startswith("linux"):
            with contextlib.suppress(OSError):
                _watchdog = subprocess.Popen(
                    [sys.executable, "-I", "-m", "envbisect.env.guard", tok],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    start_new_session=True,  # no terminal signal, no group kill reaches it
                    env={k: v for k, v in os.environ.items() if k != OWNER_VAR},
                )
        # Every child from now on carries the tag (uv, worker processes, gdb, probes).
        os.environ[OWNER_VAR] = tok
        _token, _token_pid = tok, os.getpid()
        atexit.register(_clean_exit)
        return tok


def probe_tag() -> dict[str, str]:
    """The variables of one probe's environment: the owner's tag and a tag of its own."""
    global _seq
    tok = token()
    with _lock:
        _seq += 1
        n = _seq
    return {OWNER_VAR: tok, PROBE_VAR: f"{tok}/{n}"}


def own_env_dir(path: Path) -> None:
    """Mark ``path`` (a fresh environment) as this process's until it is removed or kept."""
    tok = token()
    (path / OWNER_FILE).write_text(tok, encoding="utf-8")
    with _lock:
        _created.add(path)
        parent = path.parent
        if parent not in _watched and _watchdog is not None and _watchdog.stdin is not None:
            with contextlib.suppress(OSError, ValueError):
                _watchdog.stdin.write(f"dir {parent}\n".encode())
                _watchdog.stdin.flush()
            _watched.add(parent)


def released(path: Path) -> None:
    with _lock:
        _created.discard(path)


def _clean_exit() -> None:
    # Environments still here at a clean exit were kept on purpose (--keep-envs): no owner.
    with _lock:
        for path in _created:
            with contextlib.suppress(OSError):
                (path / OWNER_FILE).unlink()
        _created.clear()
        if _watchdog is not None and _watchdog.stdin is not None:
            with contextlib.suppress(OSError, ValueError):
                _watchdog.stdin.write(b"bye\n")
                _watchdog.stdin.close()


# -- finding and killing -------------------------------------------------------------------------


def _environ(pid: int) -> list[bytes]:
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            return fh.read().split(b"\0")
    except OSError:
        return []


def _pids() -> list[int]:
    try:
        return [int(p) for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return []


def _start_time(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read()
    except OSError:
        return "0"
    return stat.rsplit(b")", 1)[-1].split()[19].decode()


def owner_alive(tok: str) -> bool:
    pid, _, rest = tok.partition(".")
    start = rest.partition(".")[0]
    return pid.isdigit() and _start_time(int(pid)) == start and start != "0"


def tagged(var: str, value: str | None = None) -> dict[int, str]:
    """pid -> tag value of every process (not this one) whose environment has ``var``
    (equal to ``value`` when given)."""
    prefix = f"{var}=".encode()
    me = os.getpid()
    out: dict[int, str] = {}
    for pid in _pids():
        if pid == me:
            continue
        for entry in _environ(pid):
            if entry.startswith(prefix):
                got = entry[len(prefix) :].decode(errors="replace")
                if value is None or got == value:
                    out[pid] = got
                break
    return out


def kill_tagged(var: str, value: str, *, rounds: int = 3) -> int:
    """SIGKILL every process tagged ``var=value``; how many were found.

    Repeated: a process may fork while the first round runs."""
    found = 0
    for _ in range(rounds):
        pids = tagged(var, value)
        if not pids:
            break
        found += len(pids)
        for pid in pids:
            # The process, not its group: uv shares envbisect's own group. Every member of
            # a probe's group carries the tag anyway.
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.02)
    return found


def reap_orphans() -> int:
    """Kill processes whose owner envbisect is gone (its watchdog too); how many."""
    dead = {v for v in tagged(OWNER_VAR).values() if not owner_alive(v)}
    return sum(kill_tagged(OWNER_VAR, tok) for tok in dead)


def reap_envs(envs_dir: Path, *, only: str | None = None) -> list[Path]:
    """Remove environments whose owner is gone (or is ``only``); the ones removed.

    An environment without an owner file was kept (``--keep-envs``) or predates this: left."""
    removed: list[Path] = []
    try:
        entries = list(envs_dir.iterdir())
    except OSError:
        return removed
    for path in entries:
        try:
            tok = (path / OWNER_FILE).read_text(encoding="utf-8").strip()
        except OSError:
            continue
        if (only is not None and tok == only) or (only is None and not owner_alive(tok)):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


def _watch(tok: str) -> None:
    """The watchdog: wait for the owner's end, then leave nothing of it behind."""
    dirs: set[Path] = set()
    clean = False
    for line in sys.stdin.buffer:
        text = line.decode(errors="replace").rstrip("\n")
        if text.startswith("dir "):
            dirs.add(Path(text[4:]))
        elif text == "bye":
            clean = True
    kill_tagged(OWNER_VAR, tok, rounds=5)
    if not clean:
        for d in dirs:
            reap_envs(d, only=tok)


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    _watch(sys.argv[1])
