"""Progress hooks. The engine calls these; every hook is a no-op by default.

The CLI's rich display is one implementation (``cli.RichReporter``), the tests' recorder is
another. Nothing here may change what the engine decides: a hook returns nothing, and one
that raises is the reporter's bug, never the search's (``phase`` reports are dropped then).

Phases (``phase``) come from where the probe runs: the local executors (this thread, worker
threads) report each one; a worker in another process or on Ray cannot reach the reporter,
so its probes report only started and finished.
"""

from __future__ import annotations

from envbisect.model import Outcome


class Progress:
    verbose: bool = False  # whether ``output`` is wanted (-v: uv then runs without --quiet)

    def message(self, text: str) -> None:
        """A line of progress or a warning, for people."""

    def candidates(self, package: str, in_range: int, untestable: int, target: str) -> None:
        """The candidate list is known: ``in_range`` versions, ``untestable`` without a file."""

    def probe_started(self, version: str, left: int, steps_left: int) -> None:
        """A probe of ``version`` starts; ``left`` candidates remain, ``steps_left`` probes."""

    def planning(self, what: str, done: int, total: int) -> None:
        """The controller is planning: ``done`` of ``total`` ``what`` (cells, ends) so far."""

    def phase(self, version: str, phase: str) -> None:
        """The probe of ``version`` entered ``phase``: building (uv creates the venv and
        resolves and installs into it), running (the repro), native backtrace (gdb)."""

    def output(self, version: str, stream: str, text: str) -> None:
        """With -v: what uv or the repro printed (``stream``: uv, stdout, stderr)."""

    def probe_finished(
        self, version: str, outcome: Outcome, seconds: float, reused: bool, drawing: str
    ) -> None:
        """A probe ended (or was taken from the store); ``drawing`` is the range now."""

    def close(self) -> None:
        """Nothing more is in progress (the answer is printed next): end any live display."""
