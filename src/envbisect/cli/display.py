"""What the terminal shows: progress on stderr through a reporter, errors as one ``error:``
line (with its stable reference) and one ``hint:`` line. Colours only where the terminal
wants them (rich honours NO_COLOR); text from outside (versions, outcomes, messages) is
never read as markup."""

from __future__ import annotations

from rich.console import Console

from envbisect.errors import EnvbisectError
from envbisect.model import Outcome, OutcomeKind
from envbisect.redact import mask_text
from envbisect.reporter import Reporter
from envbisect.textsafe import for_terminal

STYLE = {
    OutcomeKind.PASS: "green",
    OutcomeKind.FAIL: "red",
    OutcomeKind.CRASH: "bold red",
    OutcomeKind.TIMEOUT: "magenta",
    OutcomeKind.UNTESTABLE: "yellow",
}


def escape(text: str) -> str:
    """Untrusted text for a rich markup string: no markup, no terminal control sequence."""
    return for_terminal(text).replace("[", "\\[")


class RichReporter(Reporter):
    """Progress on stderr."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.step = 0

    def message(self, text: str) -> None:
        self.console.print(for_terminal(text), markup=False, highlight=False)

    def candidates(self, package: str, in_range: int, untestable: int, target: str) -> None:
        extra = f", {untestable} without an installable file" if untestable else ""
        self.console.print(
            for_terminal(
                f"envbisect: {in_range} candidate versions of {package} for {target}{extra}"
            ),
            markup=False,
            highlight=False,
        )

    def probe_started(self, version: str, left: int, steps_left: int) -> None:
        self.step += 1
        where = (
            f" ({left} left in range, at most {steps_left} more step(s))"
            if left or steps_left
            else ""
        )
        self.console.print(f"[dim][{self.step}] probing {escape(version)}{where}[/dim]",
                           highlight=False)  # fmt: skip

    def probe_finished(
        self, version: str, outcome: Outcome, seconds: float, reused: bool, drawing: str
    ) -> None:
        style = STYLE[outcome.kind]
        how = "from the store" if reused else f"{seconds:.1f} s"
        self.console.print(
            f"    {escape(version)}: [{style}]{escape(outcome.describe())}[/{style}] ({how}) "
            f"{escape(drawing)}",
            highlight=False,
        )


def print_error(err: EnvbisectError) -> None:
    """``error: MESSAGE [ref]`` and ``hint: HINT`` on stderr, credentials masked."""
    console = Console(stderr=True, highlight=False, soft_wrap=True)
    console.print(
        f"[bold red]error[/bold red]: {escape(mask_text(err.message))} [dim]\\[{err.ref}][/dim]"
    )
    if err.hint:
        console.print(f"[cyan]hint[/cyan]: {escape(mask_text(err.hint))}")


def error_json(err: EnvbisectError) -> dict[str, object]:
    """The ``error`` object of ``--json`` output on failure."""
    return {
        "ref": err.ref,
        "message": mask_text(err.message),
        "hint": mask_text(err.hint) if err.hint else None,
        "exit_code": err.exit_code,
    }
