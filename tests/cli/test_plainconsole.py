"""The plain console writes what rich would write on the same pipe, byte for byte.

Where stderr is not a terminal, envbisect prints without importing rich (plainconsole.py).
Each case prints the same thing through the plain console and through the rich console
``stderr_console`` made before it (``soft_wrap``, no emoji, stderr not a terminal) and compares
the bytes: the markup envbisect writes, hostile text escaped into it, arbitrary markup (which the
plain console hands to rich where it is not plain), tabs and control codes (rich's to change).
"""

from __future__ import annotations

import io
import sys

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from rich.console import Console
from rich.markup import escape as rich_escape

from envbisect.cli.display import Color, stderr_console
from envbisect.cli.plainconsole import PlainConsole, escape, plain_text, prints_plain

SETTINGS = settings(
    max_examples=300, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck)
)
# Text with the characters that matter to markup and to rich's Text, mixed with any text.
_BITS = st.sampled_from(
    ["[", "]", "\\", "[dim]", "[/dim]", "[/]", "[bold red]", "[/bold red]", "[cyan]", "[a=b]",
     "[@click]", "[/x]", "\t", "\r", "\x1b[31m", "\x07", "\n", " ", "é", "…", ":six:", "[link=x]"]
)  # fmt: skip
TEXT = st.lists(st.one_of(_BITS, st.text(max_size=6)), max_size=12).map("".join)


def through(console: object, *args: object, **kw: object) -> tuple[str, str | None]:
    """What ``console.print(*args, **kw)`` writes on stderr, or the exception it raises."""
    saved, sys.stderr = sys.stderr, io.StringIO()
    try:
        console.print(*args, **kw)  # type: ignore[attr-defined]
        return sys.stderr.getvalue(), None
    except Exception as e:  # rich's MarkupError: the plain console must raise it too
        return sys.stderr.getvalue(), type(e).__name__
    finally:
        sys.stderr = saved


def rich_console(**kw: object) -> Console:
    """stderr_console's rich console, as it was made before the plain one existed."""
    return Console(stderr=True, soft_wrap=True, emoji=False, force_terminal=False, **kw)  # type: ignore[arg-type]


@SETTINGS
@given(TEXT)
@example("trailing backslash \\")
@example("\\[dim]not a tag")
@example("a\\\\[dim]b[/dim]")
def test_escape_is_riches(text: str) -> None:
    assert escape(text) == rich_escape(text)


@SETTINGS
@given(version=TEXT, detail=TEXT, highlight=st.booleans())
@example(version="1.0", detail="path C:\\[x] \\[1]", highlight=False)
def test_envbisects_markup_prints_as_rich_prints_it(
    version: str, detail: str, highlight: bool
) -> None:
    from envbisect.cli.display import escape as display_escape

    plain, rich = PlainConsole(highlight=highlight), rich_console(highlight=highlight)
    lines = [
        f"[dim][3] probing {display_escape(version)} (2 left)[/dim]",
        f"    {display_escape(version)}: [bold red]{display_escape(detail)}[/bold red] (1.0 s)",
        f"[cyan]hint[/cyan]: {display_escape(detail)}",
        f"[bold red]error[/bold red]: {display_escape(detail)} [dim]\\[bad-date][/dim]",
    ]
    for line in lines:
        assert through(plain, line, highlight=False) == through(rich, line, highlight=False)
    assert through(plain, detail, markup=False) == through(rich, detail, markup=False)


@SETTINGS
@given(markup=TEXT, more=TEXT)
@example("a \\[1] b [dim]c[/dim]", "")  # rich drops the backslash of "\\[" before no tag
@example("[dim]c[/dim] d \\[2]", "")  # and after the last tag
@example("[dim]a[/bold]", "")  # a close rich rejects: MarkupError from both
@example("[/]", "")
@example("[dim]a\tb[/dim]", "")  # a tab: rich expands it
@example("a\rb", "[bold  red]x[/bold red]")
def test_any_markup_prints_as_rich_prints_it(markup: str, more: str) -> None:
    plain, rich = PlainConsole(), rich_console()
    assert through(plain, markup) == through(rich, markup)
    assert through(plain, markup, more) == through(rich, markup, more)
    assert through(plain, markup, end="") == through(rich, markup, end="")


def test_plain_markup_is_the_text_alone() -> None:
    assert plain_text("[dim]a \\[b] c[/dim] [bold red]d[/]") == "a [b] c d"
    assert plain_text("[foo]x[/foo]") is None  # not one of our styles: rich's to render


def test_quiet_prints_nothing() -> None:
    assert through(PlainConsole(quiet=True), "[dim]x[/dim]") == ("", None)


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(
    ("forced", "environ", "tty", "plain"),
    [
        (False, {}, False, True),  # a pipe
        (False, {"NO_COLOR": "1"}, False, True),
        (False, {}, True, False),  # a terminal: rich's live display
        (True, {}, False, False),  # --color always colours a pipe
        (False, {"FORCE_COLOR": "1"}, False, False),
        # Any of rich's variables set, even to "not a terminal": rich's console decides.
        (False, {"FORCE_COLOR": ""}, False, False),
        (False, {"TTY_COMPATIBLE": "1"}, False, False),
    ],
)
def test_plain_where_rich_would_print_plain(
    forced: bool, environ: dict[str, str], tty: bool, plain: bool
) -> None:
    stream = _Tty() if tty else io.StringIO()
    assert prints_plain(forced=forced, environ=environ, stream=stream) is plain


def test_a_pipe_gets_the_plain_console_and_a_terminal_riches(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for var in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "NO_COLOR"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    assert isinstance(stderr_console(), PlainConsole)
    assert isinstance(stderr_console(color=Color.ALWAYS), Console)
    monkeypatch.setattr(sys, "stderr", _Tty())
    assert isinstance(stderr_console(color=Color.NEVER), Console)
    # NO_COLOR on a terminal: plain text, no style and no live display (--color always wins)
    monkeypatch.setenv("NO_COLOR", "1")
    assert isinstance(stderr_console(), PlainConsole)
    assert isinstance(stderr_console(color=Color.ALWAYS), Console)
