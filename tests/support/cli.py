"""The real envbisect CLI in a subprocess: the one helper every test that runs the CLI uses.

- ``envbisect(*args)`` runs it to the end and returns what it printed (text, both streams);
- ``start(*args)`` starts it for a test that signals it or reads it as it goes (a Popen);
- ``assert_clean_error(proc, code, ...)`` checks a user error: one ``error:`` line, one
  ``hint:`` line, the exit code, no traceback.

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
