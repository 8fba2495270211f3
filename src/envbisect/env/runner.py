"""Subprocess *mechanism*: own process group, timeout, escalating stop, capped output.

No policy lives here (which interpreter, which flags, which environment variables: see
``probe``). The contract: whatever happens (exit, crash, timeout, Ctrl-C in the parent), the
whole process group is gone when ``run_process`` returns or raises.

Probes may run in worker threads (``--jobs``). Their process groups are not in the terminal's
foreground group, so Ctrl-C reaches only envbisect: the main thread then calls
``interrupt_all()``, which kills every live group and makes every ``run_process`` in flight or
about to start raise ``KeyboardInterrupt`` (nothing half-seen is classified or stored).

Processes that leave the group (``setsid``, double forks) are found by the tag every probe
carries in its environment and killed when the probe ends; if envbisect itself dies, its
watchdog kills what it started (``guard``). uv runs through ``run_captured``, in a group of
its own that ``interrupt_all`` kills too.
"""

from __future__ import annotations

import contextlib
import math
import os
import select
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO

from envbisect.env import guard
from envbisect.model import RawProbe

TAIL_BYTES = 32 * 1024

_live: set[int] = set()
_live_lock = threading.Lock()
_stopping = threading.Event()


def interrupt_all() -> None:
    """Kill every live probe group; every run in flight or starting raises KeyboardInterrupt."""
    _stopping.set()
    with _live_lock:
        for pgid in list(_live):
            _signal_group(pgid, signal.SIGKILL)


def clear_interrupt() -> None:
    """After an interrupted search has wound down (the next one in this process may run)."""
    _stopping.clear()


def interrupted() -> bool:
    return _stopping.is_set()


def run_process(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    timeout: float,
    stop_signal: int = signal.SIGTERM,
    grace: float = 3.0,
    tail_bytes: int = TAIL_BYTES,
) -> RawProbe:
    """Run ``argv`` in a new process group and wait at most ``timeout`` seconds.

    On timeout the group gets ``stop_signal`` (SIGABRT makes faulthandler print every thread's
    stack), then SIGKILL after ``grace`` seconds. stdout and stderr go to unlinked temporary
    files (no pipe can fill up and block the child) and only their tails are kept.

    Raises ``FileNotFoundError``/``PermissionError`` when ``argv[0]`` cannot be started;
    ``KeyboardInterrupt`` is re-raised after the group is killed.
    """
    if _stopping.is_set():
        raise KeyboardInterrupt
    tag = guard.probe_tag()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.monotonic()
        proc = subprocess.Popen(
            list(argv),
            cwd=cwd,
            env={**env, **tag},
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            start_new_session=True,
        )
        _register(proc.pid)
        try:
            timed_out = _wait(proc, timeout, stop_signal, grace)
        except BaseException:
            # Ctrl-C (or anything else) in the parent: leave nothing running behind us.
            _signal_group(proc.pid, signal.SIGKILL)
            proc.wait()
            raise
        finally:
            # Children the leader left behind (worker pools, daemons) go with it, and so do
            # those that left the group (setsid, double fork): they carry the probe's tag.
            _signal_group(proc.pid, signal.SIGKILL)
            guard.kill_tagged(guard.PROBE_VAR, tag[guard.PROBE_VAR])
            with _live_lock:
                _live.discard(proc.pid)
        if _stopping.is_set():
            raise KeyboardInterrupt  # killed by interrupt_all: not an outcome
        seconds = time.monotonic() - start
        return RawProbe(
            returncode=proc.returncode,
            timed_out=timed_out,
            seconds=seconds,
            stdout_tail=_tail(out, tail_bytes),
            stderr_tail=_tail(err, tail_bytes),
        )


def _wait(proc: subprocess.Popen[bytes], timeout: float, stop_signal: int, grace: float) -> bool:
    """Wait for ``proc``; past ``timeout``, its group gets ``stop_signal``, then SIGKILL after
    ``grace`` seconds. Whether it timed out."""
    if _exited(proc, timeout):
        return False
    _signal_group(proc.pid, stop_signal)
    if not _exited(proc, grace):
        _signal_group(proc.pid, signal.SIGKILL)
        proc.wait()
    return True


def _exited(proc: subprocess.Popen[bytes], timeout: float) -> bool:
    """Whether ``proc`` ended within ``timeout`` seconds (reaped if so). Woken by its exit
    (a pidfd, Linux 5.3 on): ``Popen.wait(timeout)`` polls in sleeps that double up to 50 ms,
    so a probe that ended at 16 ms was seen at 31 ms, and a longer one up to 50 ms late."""
    try:
        fd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):  # not Linux, an old kernel, or reaped already
        try:
            proc.wait(timeout=timeout)
            return True
        except subprocess.TimeoutExpired:
            return False
    deadline = time.monotonic() + timeout
    try:
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        while not poller.poll(
            min(max(0, math.ceil((deadline - time.monotonic()) * 1000)), 2**31 - 1)
        ):
            if time.monotonic() >= deadline:
                return False
    finally:
        os.close(fd)
    proc.wait()  # it has ended: reaped at once
    return True


def run_captured(
    argv: Sequence[str], *, env: Mapping[str, str], timeout: float | None = None
) -> subprocess.CompletedProcess[str]:
    """Run a helper (uv, git) to completion, output captured, in a process group of its own
    that ``interrupt_all`` kills like a probe's: a SIGTERM to envbisect stops a uv install in a
    worker thread at once, not when it is done. The group is killed on any exception, and
    after ``timeout`` seconds (then ``subprocess.TimeoutExpired`` is raised)."""
    return Started(argv, env=env).wait(timeout)


class Started:
    """A helper started now and waited for later (``run_captured``'s rules: a group of its own
    that ``interrupt_all`` kills, killed on any exception while it is waited for), so that
    envbisect can do something else meanwhile. Whoever starts one calls ``wait`` or ``kill``."""

    def __init__(self, argv: Sequence[str], *, env: Mapping[str, str]) -> None:
        if _stopping.is_set():
            raise KeyboardInterrupt
        self.argv = list(argv)
        self._proc = subprocess.Popen(
            self.argv,
            env={**env, guard.OWNER_VAR: guard.token()},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        _register(self._proc.pid)

    def wait(self, timeout: float | None = None) -> subprocess.CompletedProcess[str]:
        proc = self._proc
        try:
            out, err = proc.communicate(timeout=timeout)
        except BaseException:
            self.kill()
            raise
        finally:
            with _live_lock:
                _live.discard(proc.pid)
        if _stopping.is_set():
            raise KeyboardInterrupt
        return subprocess.CompletedProcess(self.argv, proc.returncode, out, err)

    def kill(self) -> None:
        """The group killed and the leader reaped (nothing left running); idempotent."""
        _signal_group(self._proc.pid, signal.SIGKILL)
        self._proc.kill()
        self._proc.communicate()
        with _live_lock:
            _live.discard(self._proc.pid)


def _register(pgid: int) -> None:
    """Track a started group; one started while ``interrupt_all`` ran dies at once."""
    with _live_lock:
        _live.add(pgid)
        if _stopping.is_set():
            _signal_group(pgid, signal.SIGKILL)


def _signal_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _tail(fh: IO[bytes], limit: int) -> str:
    fh.flush()
    size = fh.seek(0, os.SEEK_END)
    fh.seek(max(0, size - limit))
    data = fh.read()
    text = data.decode("utf-8", errors="replace")
    if size > limit:
        text = f"[... {size - limit} bytes cut ...]\n" + text.split("\n", 1)[-1]
    return text
