"""What the terminal shows: progress on stderr through a reporter, errors as one ``error:``
line (with its stable reference) and one ``hint:`` line. Colours only where the terminal
wants them (rich honours NO_COLOR); text from outside (versions, outcomes, messages) is
never read as markup."""

from __future__ import annotations

import enum
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from envbisect.cli.plainconsole import PlainConsole, prints_plain
from envbisect.cli.plainconsole import escape as markup_escape
from envbisect.errors import EnvbisectError
from envbisect.model import Outcome, OutcomeKind
from envbisect.progress import Progress
from envbisect.redact import mask_text
from envbisect.textsafe import for_terminal

if TYPE_CHECKING:
    import argparse

    from rich.console import Console
    from rich.live import Live
    from rich.text import Text

    AnyConsole = Console | PlainConsole

STYLE = {
    OutcomeKind.PASS: "green",
    OutcomeKind.FAIL: "red",
    OutcomeKind.CRASH: "bold red",
    OutcomeKind.TIMEOUT: "magenta",
    OutcomeKind.UNTESTABLE: "yellow",
}


LEGEND = (
    ("G", "a pass"),
    ("B", "the failure searched for"),
    ("F", "another failure"),
    ("S", "untestable"),
    ("?", "not probed yet"),
)


def legend(drawing: str) -> str:
    """What the marks of a range's drawing (``[G, ?×26, B]``) mean: every mark, the same in
    every command (strategy/segments.py draws them)."""
    said = ", ".join(f"{mark} {means}" for mark, means in LEGEND)
    if "%" in drawing:
        said += ", N% the chance it is the first changed version"
    return f"envbisect: the range, oldest to newest: {said} (×N: N in a row)"


def escape(text: str) -> str:
    """Untrusted text for a rich markup string: no markup, no terminal control sequence."""
    # rich's own escape: also a trailing backslash, which would escape the closing tag after it
    return markup_escape(for_terminal(text))


@dataclass(slots=True)
class _InFlight:
    started: float
    phase: str = "probing"  # until the worker says (one in another process never does)
    phase_at: float = 0.0


SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"


class RichProgress(Progress):
    """Progress on stderr: on a terminal, a live display (the phase of each probe in flight
    with its elapsed time, the range fitted to the width, an ETA from the probes measured so
    far); elsewhere (pipes, CI logs) plain lines. ``quiet``: nothing but errors; ``verbose``:
    uv's and the probes' output too."""

    def __init__(
        self,
        console: AnyConsole,
        *,
        quiet: bool = False,
        verbose: bool = False,
        live: bool | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.console = console
        self.quiet = quiet
        self.verbose = verbose and not quiet
        self.step = 0
        self._live_ok = (console.is_terminal if live is None else live) and not quiet
        self._live: Live | None = None
        self._clock = clock
        self._lock = threading.RLock()
        self._inflight: dict[str, _InFlight] = {}
        self._planning: tuple[str, int, int, float] | None = None
        self._measured: list[float] = []  # seconds of each probe built and run (not reused)
        self._steps_left = 0
        self._left = 0
        self._drawing = ""
        self._legend_said = False
        self._most_at_once = 1
        self._cells_total = 0
        self._cells_built = 0
        self._cells_done = 0

    # -- hooks -----------------------------------------------------------------------------------

    def message(self, text: str) -> None:
        if not self.quiet:
            self.console.print(for_terminal(text), markup=False, highlight=False)

    def candidates(self, package: str, in_range: int, untestable: int, target: str) -> None:
        extra = f", {untestable} without an installable file" if untestable else ""
        self.message(f"envbisect: {in_range} candidate versions of {package} for {target}{extra}")

    def planning(self, what: str, done: int, total: int) -> None:
        if self.quiet:
            return
        if not self._live_ok and done == 0 and what != "environment(s)":
            # Plain lines: one when a long planning starts (a matrix's), none per step.
            self.message(
                f"envbisect: planning {total} {what}" if total else f"envbisect: planning {what}"
            )
        if what == "cells" and total and done == total:
            self._cells_total += total  # one matrix run per Python
        with self._lock:
            self._planning = (
                None
                if total and done >= total
                else (
                    what,
                    done,
                    total,
                    self._clock() if self._planning is None else self._planning[3],
                )
            )
        if self._planning is None:
            self._stop_if_idle()
        else:
            self._start_live()

    def probe_started(self, version: str, left: int, steps_left: int) -> None:
        self.step += 1
        with self._lock:
            self._planning = None
            self._inflight[version] = _InFlight(started=self._clock())
            self._most_at_once = max(self._most_at_once, len(self._inflight))
            self._left, self._steps_left = left, steps_left
        if self.quiet:
            return
        self._start_live()
        where = self._where(left, steps_left)
        self.console.print(
            f"[dim][{self.step}] probing {escape(version)}{where}[/dim]", highlight=False
        )

    def phase(self, version: str, phase: str) -> None:
        with self._lock:
            probe = self._inflight.get(version)
            if probe is None:  # envbisect probe: one environment, no search around it
                probe = self._inflight[version] = _InFlight(started=self._clock())
            probe.phase, probe.phase_at = phase, self._clock()
        self._start_live()
        if (live := self._live) is not None:  # drawn now: a warm build is over between frames
            live.refresh()

    def output(self, version: str, stream: str, text: str) -> None:
        if not self.verbose:
            return
        name = f"{version} " if version else ""
        for line in text.rstrip().splitlines():
            self.console.print(
                for_terminal(f"    {name}{stream}: {line}"), markup=False, highlight=False
            )

    def probe_finished(
        self, version: str, outcome: Outcome, seconds: float, reused: bool, drawing: str
    ) -> None:
        with self._lock:
            self._inflight.pop(version, None)
            if not reused:
                self._measured.append(seconds)
                self._cells_built += 1
            self._cells_done += 1
            self._steps_left = max(0, self._steps_left - 1)  # until the next probe says
            self._drawing = drawing
        if self.quiet:
            return
        # Nothing in flight: the display goes, so that the answer printed next on stdout (the
        # same terminal, often) is never drawn over.
        self._stop_if_idle()
        if drawing and not self._legend_said:  # the first range drawn: what its marks mean
            self._legend_said = True
            self.message(legend(drawing))
        style = STYLE[outcome.kind]
        how = "from the store" if reused else f"{seconds:.1f} s"
        head = f"    {version}: {outcome.describe()} ({how}) "
        shown, below = drawing, ""
        if self._live_ok:  # a terminal: the range fits its width, on this line or the next
            room = self.console.width - len(head)
            if room >= min(len(drawing), 24):
                shown = fit(drawing, room)
            else:
                shown, below = "", "      " + fit(drawing, self.console.width - 6)
        self.console.print(
            f"    {escape(version)}: [{style}]{escape(outcome.describe())}[/{style}] ({how})"
            + (f" {escape(shown)}" if shown else ""),
            highlight=False,
        )
        if below:
            self.console.print(escape(below), highlight=False)

    def _stop_if_idle(self) -> None:
        with self._lock:
            idle = not self._inflight and self._planning is None
        if idle:
            self.close()

    def close(self) -> None:
        """Stop the live display (before an error or the answer is printed)."""
        with self._lock:
            live, self._live = self._live, None
        if live is not None:
            live.stop()

    # -- what is shown ----------------------------------------------------------------------------

    def eta(self, steps: int) -> float | None:
        """Seconds left: the median measured probe times the steps left (None: none measured)."""
        if not self._measured or steps <= 0:
            return None
        import statistics

        return statistics.median(self._measured) * steps

    def _where(self, left: int, steps_left: int) -> str:
        if not (left or steps_left):
            return ""
        # steps_left counts this probe: "this and N more", so the count falls step by step.
        more = max(0, steps_left - 1)
        eta = self.eta(steps_left)
        about = f", about {duration(eta)} left" if eta is not None else ""
        return f" ({left} left in range; this step and at most {more} more{about})"

    def _start_live(self) -> None:
        # Started outside the lock: Live.start draws at once, and drawing takes the lock.
        with self._lock:
            console = self.console
            if not self._live_ok or self._live is not None or isinstance(console, PlainConsole):
                return
            from rich.live import Live

            live = self._live = Live(
                console=console,
                get_renderable=self._render,
                refresh_per_second=8,
                transient=True,
                redirect_stdout=False,  # data goes to stdout untouched
                redirect_stderr=False,
            )
        live.start()

    def _render(self) -> Text:
        now = self._clock()
        spin = SPINNER[int(now * 10) % len(SPINNER)]
        lines: list[str] = []
        with self._lock:
            if self._planning is not None:
                what, done, total, since = self._planning
                count = f" {done}/{total}" if total else ""
                lines.append(f"{spin} planning {what}{count} · {duration(now - since)}")
            for version, p in self._inflight.items():
                at = p.phase_at or p.started
                name = f"{version}: " if version else ""
                lines.append(
                    f"{spin} {name}{p.phase} {duration(now - at)} "
                    f"(probe {duration(now - p.started)})"
                )
            if self._drawing:
                lines.append("  " + fit(self._drawing, self.console.width - 4))
            if self._cells_total:
                left = max(0, self._cells_total - self._cells_done)
                eta = self.eta(math.ceil(left / self._most_at_once))
                lines.append(
                    f"  cells: {self._cells_total} planned, {self._cells_built} built, "
                    f"{self._cells_done} done"
                    + (f" · at most {duration(eta)} left" if eta is not None else "")
                )
            elif self._steps_left:
                eta = self.eta(self._steps_left)
                if eta is not None and self._inflight:  # less what this one has run so far
                    running = now - min(p.started for p in self._inflight.values())
                    eta = max(0.0, eta - running)
                if eta is not None:
                    now_too = ", this one included" if self._inflight else ""
                    lines.append(
                        f"  at most {self._steps_left} step(s) left{now_too} · "
                        f"about {duration(eta)}"
                    )
        from rich.text import Text

        return Text(for_terminal("\n".join(lines)), no_wrap=True, overflow="ellipsis")


def fit(drawing: str, width: int) -> str:
    """The range drawing in ``width`` characters: the ends kept, the middle elided."""
    if len(drawing) <= width or width < 12:
        return drawing
    marks = drawing.strip("[]").split(", ")
    head, tail = marks[: len(marks) // 2], marks[len(marks) // 2 :]
    while head or tail:
        text = "[" + ", ".join([*head, "…", *tail]) + "]"
        if len(text) <= width:
            return text
        if len(head) >= len(tail) and head:
            head.pop()
        elif tail:
            tail.pop(0)
    return "[…]"


def duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {secs:02d} s"
    return f"{minutes // 60} h {minutes % 60:02d} min"


class Color(enum.Enum):
    """``--color``: handed to every console of a run (main's and print_error's)."""

    AUTO = "auto"
    ALWAYS = "always"
    NEVER = "never"

    @classmethod
    def of(cls, parsed: argparse.Namespace | None) -> Color:
        """The choice of a parsed command line (``auto`` where it has no --color: the option
        sets no default, so that one given before the command is not undone after it)."""
        return cls((vars(parsed).get("color") if parsed is not None else None) or "auto")


def stderr_console(
    *, color: Color = Color.AUTO, quiet: bool = False, highlight: bool = True
) -> AnyConsole:
    """A console on stderr as ``--color`` says: ``auto`` is rich's own rule (a terminal gets
    colour; ``NO_COLOR`` turns it off, ``FORCE_COLOR`` on, as rich documents), ``always``
    colours a pipe too, ``never`` writes plain text. emoji=False: rich would turn ``:six:``
    in ``import:six`` into an emoji. Where rich would print plain text (a pipe, a log file),
    the same text without rich (plainconsole.py)."""
    if prints_plain(forced=color is Color.ALWAYS):
        return PlainConsole(quiet=quiet, highlight=highlight)
    from rich.console import Console

    extra: dict[str, Any] = {}
    if color is Color.ALWAYS:  # over NO_COLOR too: the flag is the later word
        extra["force_terminal"], extra["no_color"] = True, False
    elif color is Color.NEVER:
        extra["color_system"] = None
    return Console(
        stderr=True, soft_wrap=True, emoji=False, quiet=quiet, highlight=highlight, **extra
    )


def print_error(err: EnvbisectError, color: Color = Color.AUTO) -> None:
    """``error: MESSAGE [ref]`` and ``hint: HINT`` on stderr, credentials masked."""
    console = stderr_console(color=color, highlight=False)
    console.print(
        f"[bold red]error[/bold red]: {escape(mask_text(err.message))} [dim]\\[{err.ref}][/dim]"
    )
    if err.hint:
        console.print(f"[cyan]hint[/cyan]: {escape(mask_text(err.hint))}")


def report_error(err: EnvbisectError, color: Color = Color.AUTO, *, as_json: bool = False) -> None:
    """An error as the user reads it: with ``as_json`` (``--json``), first the ``error``
    object on stdout; then ``error:`` and ``hint:`` on stderr."""
    if as_json:
        import json

        print(json.dumps({"status": "error", "error": error_json(err)}, indent=2))
    print_error(err, color)


def error_json(err: EnvbisectError) -> dict[str, object]:
    """The ``error`` object of ``--json`` output on failure."""
    return {
        "ref": err.ref,
        "message": mask_text(err.message),
        "hint": mask_text(err.hint) if err.hint else None,
        "exit_code": err.exit_code,
    }
