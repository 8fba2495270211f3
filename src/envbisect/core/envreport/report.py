"""What an environment report is read into: its rows and facts, and the pieces of its text.

Plain data (``Row``, ``EnvReport``) made by each format's reader (core/envreport/formats.py),
and the Markdown pieces a text is read in (``segments``: each fenced block and each stretch of
prose on its own). core/envreport/read.py says which formats there are and merges them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from packaging.utils import canonicalize_name


@dataclass(frozen=True, slots=True, kw_only=True)
class Row:
    """One package a report names, as written.

    ``kind``: ``pip`` (pip's own rows and conda's ``pypi`` channel), ``conda`` (a conda
    package), ``field`` (a ``- X version: V`` line). ``url``: a ``name @ URL`` or ``-e URL``
    row, whose version is then unknown (``""``). ``build``: a conda row's build string."""

    name: str
    version: str
    line: int
    kind: str = "pip"
    url: str | None = None
    build: str = ""

    @property
    def key(self) -> str:
        return canonicalize_name(self.name) if self.name else ""


@dataclass(frozen=True, slots=True, kw_only=True)
class EnvReport:
    """What one report says: its formats, its rows, and the machine it came from.

    ``platform`` is as written (``Linux-6.11.0-29-generic-x86_64-with-glibc2.39``), ``system``
    and ``machine`` read from it or from collect_env's ``OS:`` line. ``torch_cuda``: the CUDA
    torch was built for where the version carries no variant (collect_env's ``CUDA used to
    build PyTorch``, a conda build string). ``gpu``: what the report says of a GPU (its name,
    or ``yes`` where it only says one was used); None where it says nothing or none.
    ``subject``: the package the report is about (``llamafactory`` for llamafactory-cli env).
    ``left_out``: rows read and not taken, each with why."""

    formats: tuple[str, ...] = ()
    rows: tuple[Row, ...] = ()
    python: str | None = None
    platform: str | None = None
    system: str | None = None
    machine: str | None = None
    torch_cuda: str | None = None
    gpu: str | None = None
    commit: str | None = None
    subject: str | None = None
    left_out: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class Segment:
    """A fenced block (``lang`` its info string, lowercased) or a stretch of prose (``lang``
    None); ``start`` is the line number of its first line."""

    lang: str | None
    lines: tuple[str, ...]
    start: int

    @property
    def text(self) -> str:
        return "\n".join(self.lines)

    def numbered(self) -> Iterable[tuple[int, str]]:
        return ((self.start + i, line) for i, line in enumerate(self.lines))


CODE_LANGS = frozenset({"python", "py", "python3", "ipython", "pycon", "yaml", "yml"})


def segments(text: str) -> list[Segment]:
    """The text as Markdown (CommonMark, read by markdown-it-py): fenced blocks, wherever
    they sit (in a list item, a quote), and the prose around them, in order. An unclosed
    fence runs to the end of its container, as GitHub renders it."""
    from markdown_it import MarkdownIt

    lines = text.splitlines()
    fences = [
        t for t in MarkdownIt("commonmark").parse(text) if t.type == "fence" and t.map is not None
    ]
    out: list[Segment] = []
    prose: list[str] = []
    prose_start = 1
    i = 0
    for t in [*fences, None]:
        first, last = (t.map[0], t.map[1]) if t is not None and t.map else (len(lines), 0)
        for n in range(i, first):  # the prose before this fence
            if not prose:
                prose_start = n + 1
            prose.append(_unquote(lines[n]))
        if prose:
            out.append(Segment(lang=None, lines=tuple(prose), start=prose_start))
            prose = []
        if t is None:
            break
        info = t.info.strip().split(maxsplit=1)
        body = tuple(t.content.splitlines())  # without the list's indent or the quote's ">"
        out.append(Segment(lang=(info[0] if info else "").lower(), lines=body, start=first + 2))
        i = last
    return out


def _unquote(line: str) -> str:
    """A prose line without Markdown's quote markers (``> ``)."""
    return re.sub(r"^(?:\s{0,3}>\s?)+", "", line)
