"""The runner's wait: woken by the probe's exit itself (a pidfd) where Linux offers one, by
``Popen.wait``'s polling elsewhere; the same outcomes either way, real processes both."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import pytest

from envbisect.core.outcome import classify
from envbisect.env.runner import run_process
from envbisect.model import OutcomeKind, RawProbe


@pytest.mark.parametrize("pidfd", [True, False], ids=["pidfd", "polling"])
def test_the_wait_ends_with_the_probe_or_at_its_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pidfd: bool
) -> None:
    if pidfd and not hasattr(os, "pidfd_open"):
        pytest.skip("no os.pidfd_open here")
    if not pidfd:
        monkeypatch.delattr(os, "pidfd_open", raising=False)

    def run(argv: list[str], timeout: float) -> RawProbe:
        return run_process(argv, cwd=tmp_path, env=dict(os.environ), timeout=timeout,
                           stop_signal=signal.SIGTERM, grace=1.0)  # fmt: skip

    ended = run([sys.executable, "-c", "import sys; print('done'); sys.exit(3)"], 60)
    assert (ended.returncode, ended.timed_out, ended.stdout_tail) == (3, False, "done\n")
    hung = run(["sleep", "120"], 0.3)
    assert hung.timed_out and hung.returncode == -signal.SIGTERM
    assert classify(hung).kind is OutcomeKind.TIMEOUT
    # One that ignores the stop signal (an ignored signal stays ignored across exec): SIGKILL
    # after the grace.
    stubborn = run(["sh", "-c", "trap '' TERM; exec sleep 120"], 0.3)
    assert stubborn.timed_out and stubborn.returncode == -signal.SIGKILL
