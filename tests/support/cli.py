"""The real envbisect CLI in a subprocess: the one helper every test that runs the CLI uses.

- ``envbisect(*args)`` runs it to the end and returns what it printed (text, both streams);
- ``start(*args)`` starts it for a test that signals it or reads it as it goes (a Popen);
- ``assert_clean_error(proc, code, ...)`` checks a user error: one ``error:`` line, one
  ``hint:`` line, the exit code, no traceback;
- ``on_index(url, python, tmp_path)`` the options that point a run at the test's index,
  interpreter and folders;
- ``probes_alive(marker, cli)`` whether a probe (not the CLI itself) still runs, and
  ``wait_for_probes`` a while for one to start or for all to end.

Signals: a shell's background job (``cmd &`` in a script, a nohup'd run) starts with SIGINT
ignored (and nohup ignores SIGHUP), and an ignored disposition is inherited across exec: the
CLI under test would never see the test's Ctrl-C. ``default_signals`` (the ``preexec_fn`` of
``start``, and of any other child a test signals) gives them their default disposition back,
as a terminal would.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

CLI: tuple[str, ...] = (sys.executable, "-m", "envbisect")

# What the tests send (Ctrl-C, a closed terminal, a kill): never inherited as ignored.
SENT = (signal.SIGINT, signal.SIGHUP, signal.SIGTERM, signal.SIGQUIT)


def default_signals() -> None:
    """Between fork and exec (``preexec_fn``): the signals tests send at their defaults."""
    for sig in SENT:
        signal.signal(sig, signal.SIG_DFL)


def envbisect(
    *args: str,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    input: str | None = None,
    timeout: float = 600,
) -> subprocess.CompletedProcess[str]:
    """``envbisect ARGS`` to its end: exit code, stdout and stderr (``env``: the whole
    environment, None: this one's)."""
    return subprocess.run(
        [*CLI, *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        input=input,
        timeout=timeout,
    )


def on_index(index_url: str, python: str, tmp_path: Path, *, cache: bool = False) -> list[str]:
    """``--index-url``, ``--python`` and ``--results`` as the tests name them: the test's
    index, the interpreter under test, results in ``tmp_path/r`` (with ``cache``,
    ``--cache-dir`` in ``tmp_path/c`` too)."""
    args = ["--index-url", index_url, "--python", python, "--results", str(tmp_path / "r")]
    return [*args, "--cache-dir", str(tmp_path / "c")] if cache else args


def start(
    *args: str, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.Popen[str]:
    """``envbisect ARGS`` started, stdout and stderr piped (text), the signals a test sends at
    their default disposition (``default_signals``)."""
    return subprocess.Popen(
        [*CLI, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=cwd,
        preexec_fn=default_signals,
    )


def assert_clean_error(proc: subprocess.CompletedProcess[str], code: int, *needles: str) -> None:
    """A user error: exit ``code``, no traceback, one ``error:`` line (holding each of
    ``needles``) and one ``hint:`` line."""
    assert proc.returncode == code, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    errors = [ln for ln in lines if ln.startswith("error: ")]
    hints = [ln for ln in lines if ln.startswith("hint: ")]
    assert len(errors) == 1 and len(hints) == 1, proc.stderr
    for n in needles:
        assert n in errors[0], errors[0]


def probes_alive(marker: str, cli: int) -> bool:
    """A process with ``marker`` on its command line runs, other than envbisect (``cli``)."""
    found = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True)
    return any(int(p) != cli for p in found.stdout.split())


def wait_for_probes(marker: str, cli: int, *, alive: bool, within: float) -> bool:
    """Waits up to ``within`` seconds for a probe with ``marker`` to run (``alive``) or for
    every one to have ended (not ``alive``): whether that came (``probes_alive``)."""
    deadline = time.monotonic() + within
    while probes_alive(marker, cli) != alive and time.monotonic() < deadline:
        time.sleep(0.2)
    return probes_alive(marker, cli) == alive
