"""Untrusted text (a repro's output, an index's or an exception's words) made safe to show.

Pure string functions, standard library only. ``for_terminal`` drops terminal control
sequences (CSI such as clear screen, OSC such as a window title, other escapes, C0 and C1
control characters but newline and tab). ``md_text`` is for Markdown text and table cells
(HTML escaped, ``|`` escaped, one line); ``md_code`` and ``md_block`` wrap text in inline code
or a fenced block whose fence no backtick run inside can close.
"""

from __future__ import annotations

import re

_ESCAPES = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI: cursor, colours, clear screen
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"  # OSC: window title, hyperlinks
    r"|\x1b[PX^_][^\x1b]*(?:\x1b\\)?"  # DCS, SOS, PM, APC strings
    r"|\x1b[ -/]*[0-~]?"  # any other escape
    r"|\x9b[0-?]*[ -/]*[@-~]"  # 8-bit CSI
)
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def for_terminal(text: str) -> str:
    """``text`` without anything a terminal would act on (newlines and tabs stay)."""
    return _CONTROLS.sub("", _ESCAPES.sub("", text.replace("\r\n", "\n")))


def md_text(text: str) -> str:
    """``text`` for a Markdown line or table cell: no HTML, no table break, one line."""
    import html

    clean = html.escape(for_terminal(text), quote=False)
    return clean.replace("|", "\\|").replace("\n", " ").replace("\t", " ")


def md_code(text: str) -> str:
    """``text`` as inline code (on one line), however many backticks it holds."""
    clean = for_terminal(text).replace("\n", " ")
    ticks = "`" * (_longest_run(clean) + 1)
    pad = " " if clean.startswith("`") or clean.endswith("`") else ""
    return f"{ticks}{pad}{clean}{pad}{ticks}"


def md_block(text: str) -> list[str]:
    """``text`` as the lines of a fenced code block that nothing inside can close."""
    clean = for_terminal(text)
    fence = "`" * max(3, _longest_run(clean) + 1)
    return [fence, clean, fence]


def _longest_run(text: str) -> int:
    return max((len(m) for m in re.findall(r"`+", text)), default=0)
