"""Nothing envbisect starts outlives it: SIGTERM, SIGHUP and SIGKILL of the real CLI (during a
hanging probe and at random moments of a run, with --jobs 1 and 2), a repro whose daemon
double-forks out of its session, and leftovers of a dead envbisect reaped on the next start."""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import write_repro
from support.cli import envbisect, start
from support.index_server import LocalIndex

OWNER = "ENVBISECT_OWNER"


def _owned_by(pid: int) -> list[int]:
    """Processes whose environment says envbisect ``pid`` started them (zombies excluded)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as fh:
                env = fh.read().split(b"\0")
            with open(f"/proc/{entry}/stat", "rb") as fh:
                state = fh.read().rsplit(b")", 1)[-1].split()[0]
        except OSError:
            continue
        if state != b"Z" and any(e.startswith(f"{OWNER}={pid}.".encode()) for e in env):
            found.append(int(entry))
    return found


def _running(needle: str) -> list[int]:
    """Processes (not zombies) whose command line mentions ``needle`` (a repro's path)."""
    found = []
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                cmd = fh.read()
            with open(f"/proc/{entry}/stat", "rb") as fh:
                state = fh.read().rsplit(b")", 1)[-1].split()[0]
        except OSError:
            continue
        if state != b"Z" and needle.encode() in cmd and int(entry) != os.getpid():
            found.append(int(entry))
    return found


def _wait_gone(
    pid: int, envs: Path, timeout: float = 10.0, needle: str = ""
) -> tuple[list[int], list[Path]]:
    deadline = time.monotonic() + timeout
    while True:
        alive = _owned_by(pid) + (_running(needle) if needle else [])
        left = [p for p in envs.iterdir()] if envs.is_dir() else []
        if (not alive and not left) or time.monotonic() > deadline:
            return alive, left
        time.sleep(0.1)


def _args(index: LocalIndex, python: str, results: Path, repro: Path, *extra: str) -> list[str]:
    return [
        "run", "--index-url", index.url, "--python", python, "--results", str(results),
        "--repro", str(repro), *extra,
    ]  # fmt: skip


HANG_SEEN = 5.0  # seconds one repro process must live to be the hanging one


def _until_hanging(proc: subprocess.Popen[str], repro: Path) -> None:
    """Read stderr until 1.5.0 (the hanging end) is being probed, then wait until its repro
    runs (its environment is built first: slowly on a loaded machine)."""
    assert proc.stderr is not None
    seen, deadline = "", time.monotonic() + 240
    while "probing 1.5.0" not in seen and time.monotonic() < deadline:
        line = proc.stderr.readline()
        assert line, f"envbisect ended before probing 1.5.0 (exit {proc.wait()}): {seen}"
        seen += line
    # The hanging repro is the one that stays: with --jobs 2 the repro of 1.0.0 (which passes
    # at once) may be running when 1.5.0's starts, and a test that took it for the hang found
    # nothing a moment later. One process seen for HANG_SEEN seconds is the hang.
    first_seen: dict[int, float] = {}
    while time.monotonic() < deadline:
        now, alive = time.monotonic(), set(_repro_of(proc.pid, repro))
        first_seen = {p: first_seen.get(p, now) for p in alive}
        if any(now - t >= HANG_SEEN for t in first_seen.values()):
            break
        time.sleep(0.1)
    state = "runs" if proc.poll() is None else f"exited {proc.returncode}"
    assert _repro_of(proc.pid, repro), (
        f"the hanging probe should be running (envbisect {state}): {seen}\n{_tree(proc.pid)}"
    )


def _tree(pid: int) -> str:
    """The processes under ``pid`` with their ages, for a failure's message."""
    out = subprocess.run(["ps", "-eo", "pid,ppid,etimes,stat,args"], capture_output=True,
                         text=True).stdout.splitlines()  # fmt: skip
    rows = [r.split(None, 4) for r in out[1:]]
    keep = {pid}
    for _ in range(6):
        keep |= {int(r[0]) for r in rows if int(r[1]) in keep}
    mine = [" ".join(r)[:300] for r in rows if int(r[0]) in keep]
    return "\n".join(mine)


def _repro_of(pid: int, repro: Path) -> list[int]:
    """The repro's own processes (not envbisect ``pid`` itself, whose command line names the
    repro too; not a uv that builds ahead meanwhile, which names no repro)."""
    return [p for p in _running(str(repro)) if p != pid]


def _stored(results: Path) -> int:
    db = sqlite3.connect(results / "envbisect.db")
    try:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        return int(db.execute("SELECT count(*) FROM probes").fetchone()[0])
    finally:
        db.close()


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGTERM, 143), (signal.SIGHUP, 129)])
def test_sigterm_and_sighup_take_ctrl_c_path(
    index: LocalIndex, python: str, tmp_path: Path, sig: signal.Signals, code: int
) -> None:
    results = tmp_path / "r"
    repro = write_repro(tmp_path, "hangy")
    proc = start(*_args(index, python, results, repro, "--package", "hangy", "--timeout", "120"))
    _until_hanging(proc, repro)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == code, err
    lines = err.strip().splitlines()
    assert "Traceback" not in err
    errors = [ln for ln in lines if ln.startswith("error: ")]
    assert len(errors) == 1 and errors[0].startswith(f"error: {sig.name}"), err
    assert len([ln for ln in lines if ln.startswith("hint: ")]) == 1
    alive, left = _wait_gone(proc.pid, results / ".envs", needle=str(repro))
    assert not alive and not left, (alive, left)
    assert _stored(results) == 1  # 1.0.0 finished; the hanging one is not half-stored


@pytest.mark.slow
@pytest.mark.parametrize(("jobs", "executor"), [("1", "local"), ("2", "local"), ("2", "process")])
def test_sigkill_leaves_no_probe_and_no_environment(
    index: LocalIndex, python: str, tmp_path: Path, jobs: str, executor: str
) -> None:
    results = tmp_path / "r"
    repro = write_repro(tmp_path, "hangy")
    args = _args(index, python, results, repro, "--package", "hangy", "--jobs", jobs,
                 "--executor", executor)  # fmt: skip
    proc = start(*args, "--timeout", "120")
    _until_hanging(proc, repro)
    proc.kill()
    proc.communicate(timeout=30)
    alive, left = _wait_gone(proc.pid, results / ".envs", needle=str(repro))
    assert not alive, f"probes outlived SIGKILL: {alive}"
    assert not left, f"environments outlived SIGKILL: {left}"
    again = envbisect(*args, "--timeout", "3", "--json")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["first_bad"] == "1.3.0"


DAEMON = """
import os, sys, time
pidfile = sys.argv[1]
if os.path.exists(pidfile):  # the second run: the first run's daemon must be gone by now
    pid = int(open(pidfile).read())
    try:
        state = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[-1].split()[0]
    except OSError:
        state = "gone"
    if state not in ("gone", "Z"):
        sys.exit(f"the daemon {pid} of the first run is still alive")
    sys.exit(0)
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        with open(pidfile + ".tmp", "w") as fh:
            fh.write(str(os.getpid()))
        os.rename(pidfile + ".tmp", pidfile)
        time.sleep(300)
        os._exit(0)
    os._exit(0)
os.wait()
while not os.path.exists(pidfile):
    time.sleep(0.01)
print("daemon started")
"""


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[-1].split()[0] != b"Z"
    except OSError:
        return False


def test_a_double_forking_daemon_dies_with_its_probe(
    index: LocalIndex, python: str, tmp_path: Path
) -> None:
    script = tmp_path / "daemon.py"
    script.write_text(DAEMON)
    pidfile = tmp_path / "daemon.pid"
    # Two runs in one environment: the second fails if the first one's daemon is alive.
    proc = envbisect(
        "probe", "--repeat", "2", "--with", "helperlib==1.0.0", "--index-url", index.url,
        "--python", python, "--results", str(tmp_path / "r"),
        "--", "python", str(script), str(pidfile),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    daemon = int(pidfile.read_text())
    deadline = time.monotonic() + 5
    while _alive(daemon) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(daemon), "the repro's daemon outlived its probe"


def test_leftovers_of_a_dead_envbisect_are_reaped_on_the_next_start(
    index: LocalIndex, python: str, tmp_path: Path
) -> None:
    dead = "999999999.12345.dead"  # no such pid: its owner is gone
    stray = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(300)"],
        env={**os.environ, OWNER: dead},
        start_new_session=True,
    )
    results = tmp_path / "r"
    leftover = results / ".envs" / "0123456789abcdef-zzz"
    leftover.mkdir(parents=True)
    (leftover / ".envbisect-owner").write_text(dead)
    kept = results / ".envs" / "kept-by-keep-envs"
    kept.mkdir()
    try:
        proc = envbisect(
            "probe", "--with", "helperlib==1.0.0", "--index-url", index.url, "--python", python,
            "--results", str(results), "--", "python", "-c", "pass",
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        assert stray.wait(timeout=10) == -signal.SIGKILL
        assert not leftover.exists() and kept.exists()
    finally:
        if stray.poll() is None:
            stray.kill()


@pytest.mark.slow
@pytest.mark.parametrize("jobs", ["1", "2"])
def test_kill_at_random_moments_then_rerun(
    index: LocalIndex, python: str, tmp_path: Path, jobs: str
) -> None:
    """SIGTERM, SIGHUP and SIGKILL at random moments of one run, each followed by a look at
    what is left; then a rerun finds the right answer and reuses every stored probe."""
    rnd = random.Random(1400 + int(jobs))
    results = tmp_path / "r"
    repro = write_repro(tmp_path, "raisy")
    args = _args(index, python, results, repro, "--package", "raisy", "--jobs", jobs, "--json")
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGKILL, signal.SIGTERM):
        proc = start(*args)
        time.sleep(rnd.uniform(0.3, 4.0))
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
        assert "Traceback" not in err
        # -sig: it came before envbisect installed its handlers (nothing started yet).
        if proc.returncode not in (0, -signal.SIGKILL, -sig):
            assert proc.returncode == 128 + sig, err
        alive, left = _wait_gone(proc.pid, results / ".envs", needle=str(repro))
        assert not alive and not left, (sig, alive, left)
    before = _stored(results) if (results / "envbisect.db").exists() else 0
    again = envbisect(*args)
    assert again.returncode == 0, again.stderr
    data = json.loads(again.stdout)
    assert data["first_bad"] == "1.5.0"
    assert len(data["reused"]) == before, (before, data["reused"])


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_a_signal_while_the_parser_is_built_ends_quietly(sig: signal.Signals) -> None:
    """The handlers are in place before the command's own ``except`` is: a signal in between
    (here sent while the parser is being built, where CI once caught one) is said in one line
    and exits 128 + signal, no traceback."""
    code = (
        "import os, signal, envbisect.cli.main as m\n"
        "built = m.build_parser\n"
        "def slow(*only, **kw):\n"
        f"    os.kill(os.getpid(), {int(sig)})\n"
        "    return built(*only, **kw)\n"
        "m.build_parser = slow\n"
        "raise SystemExit(m.main(['versions', '--help']))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 128 + sig, done.stderr
    assert f"{sig.name} received" in done.stderr
