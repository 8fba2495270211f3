"""The console where rich would print plain text, without importing rich.

Where stderr is not a terminal and nothing makes rich treat it as one (``--color`` auto or
never; no FORCE_COLOR, TTY_COMPATIBLE or TTY_INTERACTIVE), rich prints the text of its markup
and nothing else: no colour, no live display, no wrapping (our consoles soft-wrap). That is
every run in a pipe, a CI log or a batch job, and it is written here: rich and its 45 modules
cost each probe about 16 ms of start-up. Text rich would change beyond its tags (a tab it
expands, a control code it strips, a tag other than the few plain styles below) goes through a
rich console made on first need, so the bytes written are rich's either way
(tests/cli/test_plainconsole.py compares the two, on hostile text too).
"""

from __future__ import annotations

import os
import re
import sys
import threading
from typing import Any

# rich.markup's patterns (rich 13 to 15): a tag, and what its escape() backslashes.
_TAG = re.compile(r"((\\*)\[([a-z#/@][^[]*?)])")
_TAG_LIKE = re.compile(r"(\\*)(\[[a-z#/@][^[]*?])")
# What rich's Text changes in plain text (strip_control_codes, expand_tabs): not written here.
_RICH_CHANGES = re.compile(r"[\t\x07\x08\x0b\x0c\x0d]")
# The styles envbisect's markup opens: each one rich's Style.normalize leaves as it is.
_STYLES = frozenset(
    {"dim", "bold", "italic", "red", "green", "yellow", "blue", "magenta", "cyan"}
    | {f"bold {c}" for c in ("red", "green", "yellow", "blue", "magenta", "cyan")}
)
# Variables by which rich treats a pipe as a terminal (or a terminal as interactive).
_RICH_TERMINAL_VARS = ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE")


def escape(markup: str) -> str:
    """rich.markup.escape: the text shown as it is, however it reads as markup."""

    def backslashed(m: re.Match[str]) -> str:
        slashes, text = m.groups()
        return f"{slashes}{slashes}\\{text}"

    markup = _TAG_LIKE.sub(backslashed, markup)
    if markup.endswith("\\") and not markup.endswith("\\\\"):
        return markup + "\\"
    return markup


def plain_text(markup: str) -> str | None:
    """What rich prints of ``markup`` on a plain console, or None where this module leaves the
    markup to rich: a tag that is not one of our plain styles, a close that is not the exact
    name of an open one (rich may still match it, or raise)."""
    if "[" not in markup:
        return markup
    out: list[str] = []
    opened: list[str] = []
    position = 0
    for m in _TAG.finditer(markup):  # rich.markup._parse, step by step
        full, slashes, tag = m.groups()
        start, end = m.span()
        if start > position:
            out.append(markup[position:start].replace("\\[", "["))
        position = end
        if slashes:
            literal, escaped = divmod(len(slashes), 2)
            out.append("\\" * literal)
            if escaped:
                out.append(full[len(slashes) :].replace("\\[", "["))
                continue
        if tag in _STYLES:
            opened.append(tag)
        elif tag == "/" and opened:
            opened.pop()
        elif tag.startswith("/") and tag[1:] in opened:
            del opened[len(opened) - 1 - opened[::-1].index(tag[1:])]
        else:
            return None
    if position < len(markup):
        out.append(markup[position:].replace("\\[", "["))
    return "".join(out)


def prints_plain(*, forced: bool, environ: Any = None, stream: Any = None) -> bool:
    """Whether rich would print plain text on ``stream`` (stderr): not ``forced`` to colour
    (``--color always``) and not a terminal by rich's rule (isatty, unless a variable says
    otherwise); or ``NO_COLOR`` (set, not empty: no-color.org) under ``--color auto``, on a
    terminal too and over ``FORCE_COLOR``: plain lines, no style (rich would keep bold and
    dim) and no live display's cursor codes. ``--color never`` on a terminal stays rich's: it
    still draws a live display, without colour."""
    environ = os.environ if environ is None else environ
    stream = sys.stderr if stream is None else stream
    if forced:
        return False
    if environ.get("NO_COLOR"):
        return True
    if any(environ.get(v) is not None for v in _RICH_TERMINAL_VARS):
        return False
    try:
        return not stream.isatty()
    except (AttributeError, ValueError):
        return True


class PlainConsole:
    """The part of rich's Console that envbisect's progress and errors use, for a plain
    stream: ``print`` (markup, sep, end), ``is_terminal``, ``width``, ``quiet``."""

    is_terminal = False

    def __init__(self, *, quiet: bool = False, highlight: bool = True) -> None:
        self.quiet = quiet
        self._highlight = highlight
        self._lock = threading.Lock()
        self._rich: Any = None

    @property
    def width(self) -> int:
        """rich's width off a terminal: COLUMNS, else a standard stream's size, else 80."""
        columns = os.environ.get("COLUMNS")
        if columns is not None and columns.isdigit():
            return int(columns)
        for fd in (0, 1, 2):
            try:
                return os.get_terminal_size(fd).columns or 80
            except (AttributeError, ValueError, OSError):
                continue
        return 80

    def print(
        self,
        *objects: object,
        sep: str = " ",
        end: str = "\n",
        markup: bool | None = None,
        highlight: bool | None = None,
    ) -> None:
        if self.quiet:
            return
        text: str | None = None
        if all(isinstance(o, str) for o in objects):
            texts = [o if markup is False else plain_text(o) for o in objects]  # type: ignore[arg-type]
            if None not in texts:
                text = sep.join(texts)  # type: ignore[arg-type]
        if text is None or _RICH_CHANGES.search(text) or _RICH_CHANGES.search(sep + end):
            self._through_rich().print(
                *objects, sep=sep, end=end, markup=markup, highlight=highlight
            )
            return
        with self._lock:
            stream = sys.stderr
            stream.write(text + end)
            stream.flush()

    def _through_rich(self) -> Any:
        if self._rich is None:
            from rich.console import Console

            self._rich = Console(
                stderr=True,
                soft_wrap=True,
                emoji=False,
                highlight=self._highlight,
                color_system=None,
                force_terminal=False,
            )
        return self._rich
