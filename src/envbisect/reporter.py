"""Progress hooks. The engine calls these; every hook is a no-op by default.

The CLI's rich display is one implementation (``cli.RichReporter``), the tests' recorder is
another. Nothing here may change what the engine decides.
"""

from __future__ import annotations

from envbisect.model import Outcome


class Reporter:
    def message(self, text: str) -> None:
        """A line of progress or a warning, for people."""

    def candidates(self, package: str, in_range: int, untestable: int, target: str) -> None:
        """The candidate list is known: ``in_range`` versions, ``untestable`` without a file."""

    def probe_started(self, version: str, left: int, steps_left: int) -> None:
        """A probe of ``version`` starts; ``left`` candidates remain, ``steps_left`` probes."""

    def probe_finished(
        self, version: str, outcome: Outcome, seconds: float, reused: bool, drawing: str
    ) -> None:
        """A probe ended (or was taken from the store); ``drawing`` is the range now."""
