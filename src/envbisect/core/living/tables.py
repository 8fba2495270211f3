"""Publishing a matrix: tables people read at a glance, files machines read.

Pure: rows of published cells in (``core.living.cell``), text out:
``table.md`` (a grid per Python and per value of any third axis), a heatmap ``heatmap.svg``
(a mark in every square as well as a colour), ``results.csv``; ``core.page`` makes the HTML
pages. The command (``envbisect publish``) gathers the rows from
the store and writes the files, lockfiles included.
"""

from __future__ import annotations

import csv
import html
import io
from collections.abc import Mapping, Sequence

from envbisect.core.living import findings, ranges
from envbisect.core.living.cell import CellState, PublishedCell
from envbisect.core.living.grid import Section, grid
from envbisect.core.living.meta import MatrixMeta
from envbisect.model import OutcomeKind
from envbisect.textsafe import md_code
from envbisect.textsafe import md_text as _md

Cell = PublishedCell
__all__ = ["Section", "grid"]  # the grid, where the pages and the history found it

# state/kind -> (CSS class, short text, colour)
STYLES = {
    "pass": ("pass", "pass", "#2e7d32"),
    "fail": ("fail", "fail", "#c62828"),
    "crash": ("crash", "crash", "#6a1b9a"),
    "timeout": ("timeout", "timeout", "#ef6c00"),
    "untestable": ("untestable", "untestable", "#9e9e9e"),
    "unresolvable": ("unresolvable", "unresolvable", "#616161"),
    "inferred-pass": ("inferred-pass", "pass (inferred)", "#a5d6a7"),
    "inferred-fail": ("inferred-fail", "fail (inferred)", "#ef9a9a"),
    "unknown": ("unknown", "unknown", "#ffffff"),
}
# Marks that say the outcome without colour (DejaVu, which headless Chromium has, draws them).
MARKS = {
    "pass": "✓",
    "fail": "✗",
    "crash": "✹",
    "timeout": "◔",
    "untestable": "?",
    "unresolvable": "⊘",
    "inferred-pass": "(✓)",
    "inferred-fail": "(✗)",
    "unknown": "·",
}
_SYMBOL = {
    "pass": "✅ pass",
    "fail": "❌ fail",
    "crash": "💥 crash",
    "timeout": "⏱ timeout",
    "untestable": "· untestable",
    "unresolvable": "⊘ unresolvable",
    "inferred-pass": "(✅) inferred",
    "inferred-fail": "(❌) inferred",  # or the symbol of the kind it was inferred from
    "unknown": "? unknown",
}


# Styles whose colour is light: dark ink on them.
_LIGHT = ("timeout", "untestable", "inferred-pass", "inferred-fail", "unknown")


OUTSIDE_LEGEND = (
    " † outside the pins: the cell's versions override what its packages require (as pip "
    "installs them past a release's cap, with DISABLE_VERSION_CHECK=1); results.json's "
    "`outside` says which cap."
)


def mark(cell: Cell) -> str:
    """The mark of a cell's outcome: readable without its colour."""
    s, kind = style_of(cell), _word(cell)
    if s.startswith("inferred") and kind in MARKS:
        return f"({MARKS[kind]})"
    return MARKS[s]


def _word(cell: Cell) -> str:
    """The cell's outcome kind as results.json writes it ("" for none)."""
    return cell.kind.value if cell.kind is not None else ""


def style_of(cell: Cell) -> str:
    state, kind = cell.state, cell.kind
    if state is CellState.UNRESOLVABLE:
        return "unresolvable"
    if state is CellState.UNKNOWN or kind is None:
        return "unknown"
    if state is CellState.INFERRED:
        return "inferred-pass" if kind is OutcomeKind.PASS else "inferred-fail"
    return kind.value


def short(cell: Cell) -> str:
    s = style_of(cell)
    text, kind = _SYMBOL[s], _word(cell)
    if s.startswith("inferred") and kind in _SYMBOL:
        # The kind of the measured cells it is inferred from: (💥) for a crash row.
        text = f"({_SYMBOL[kind].split(' ')[0]}) inferred"
    if s == "crash" and cell.signal:
        text += f" {cell.signal}"
    if cell.outside:
        text += " †"
    return text


def plain(cell: Cell) -> str:
    """The cell in words, no symbols (the HTML page and the picture: colour carries the rest)."""
    kind = _word(cell)
    if cell.state is CellState.UNRESOLVABLE:
        return "unresolvable"
    if cell.state is CellState.UNKNOWN or not kind:
        return "unknown"
    text = kind + (f" {cell.signal}" if kind == "crash" and cell.signal else "")
    return f"{text} (inferred)" if cell.state is CellState.INFERRED else text


def markdown(
    meta: MatrixMeta,
    cells: Sequence[Cell],
    rec_files: Mapping[str, str] | None = None,
    news: tuple[str, Sequence[str]] | None = None,
    caveats: Mapping[str, str] | None = None,
) -> str:
    """``table.md``: what is new since the last publish (``news``: its title and lines, from
    ``core.history``), the answer and the findings, then a grid per section. ``caveats``:
    per Python, what its recommended lock cannot hold (a line under the answer)."""
    # Every value may come from a matrix file, an index or a store: escaped for Markdown.
    axes = meta.axes
    lines = [f"# {_md(meta.name)}", ""]
    if meta.description:
        lines += [_md(meta.description), ""]
    if news is not None:
        lines += [f"## {_md(news[0])}", "", *(f"- {_md(line)}" for line in news[1]), ""]
    rec = findings.recommended(cells)
    for py, cell in rec.items():
        combo = cell.combo()
        name = (rec_files or {}).get(py)
        link = f": [{_md(name)}]({_md(name)})" if name else ""
        lines.append(f"**Use on Python {_md(py)}: {_md(combo)}**{link}  ")
        if (caveats or {}).get(py):
            lines.append(f"Note: {_md((caveats or {})[py])}.  ")
    if not rec:
        lines.append("**No combination passed.**")
    sections = grid(cells, axes)
    found = findings.findings(cells, axes, sections)
    if found:
        lines += [
            "",
            "Found:",
            "",
            *(f"- {_md(where(f, found))} ({f.cells} cell{'s' * (f.cells != 1)})" for f in found),
        ]
    else:
        lines += ["", "Every cell measured passes."]
    lines += ranges_md(sections, axes)
    lines += deep_md(cells, meta.deep_probes)
    lines += ["", "How it was measured:", ""]
    lines += [
        f"- command: {md_code(meta.command)}",
        f"- measured: {_md(meta.measured or '?')} on {_md(meta.machine or '?')}",
        *(
            [f"- checked against the index (matrix --update): {_md(meta.checked)}"]
            if meta.checked and meta.checked != meta.measured
            else []
        ),
        f"- probes: {_md(', '.join(meta.probes))}",
        f"- cells: {_md(counts_text(cells))}",
        "",
    ]
    for sect in sections:
        col_axis = _md(axes[1]) if len(axes) > 1 else ""
        lines += [
            f"## {_md(sect.title)}",
            "",
            f"rows: {_md(axes[0])}; columns: {col_axis}",
            "",
        ]
        head = " | ".join(_md(c) for c in sect.cols)
        lines.append("| " + f"{_md(axes[0])} \\ {col_axis} | " + head + " |")
        lines.append("|---" * (len(sect.cols) + 1) + "|")
        for r in sect.rows:
            row = [
                _md(short(sect.cells[(r, c)])) if (r, c) in sect.cells else "" for c in sect.cols
            ]
            lines.append(f"| **{_md(str(r))}** | " + " | ".join(row) + " |")
        lines.append("")
    lines += [
        "Legend: ✅ pass, ❌ fail (a Python error), 💥 crash (killed by a signal), ⏱ timeout, "
        "· untestable (could not be built or probed), ⊘ unresolvable (no consistent "
        "environment: never built), (✅)/(❌) inferred from the measured cells on both sides "
        "(rows are taken to be monotone; never measured), ? unknown."
        + (OUTSIDE_LEGEND if any(c.outside for c in cells) else ""),
        "",
    ]
    return "\n".join(lines)


def ranges_md(sections: Sequence[Section], axes: Sequence[str]) -> list[str]:
    """The two questions a two-axis table answers (``core.living.ranges``), as lists."""
    if len(axes) < 2:
        return []
    several = len(sections) > 1
    lines = ["", f"Which {_md(axes[1])} works with each {_md(axes[0])} (measured cells):", ""]
    for rr in ranges.row_ranges(sections):
        at = f"{_md(rr.section)}, " if several else ""
        lines.append(f"- {at}**{_md(axes[0])} {_md(rr.row)}**: {_md(rr.sentence(axes[1]))}")
    lines += ["", f"Which {_md(axes[0])} works with each {_md(axes[1])}:", ""]
    for cw in ranges.column_works(sections):
        at = f"{_md(cw.section)}, " if several else ""
        rows = ", ".join(r + (" †" if r in cw.outside else "") for r in cw.rows) or "none"
        lines.append(f"- {at}{_md(axes[1])} {_md(cw.col)}: {_md(rows)}")
    return lines


def deep_words(cell: Cell) -> list[str]:
    """Each deep run of ``cell`` in words: ``llamafactory-train: pass (41 s)``, or the
    failure's signature."""
    out = []
    for r in cell.deep:
        took = f" ({r.seconds:.0f} s)" if r.seconds is not None else ""
        said = f": {r.signature}" if r.signature and not r.passes else ""
        out.append(f"{r.probe}: {r.kind.value}{took}{said}")
    return out


def deep_md(cells: Sequence[Cell], probes: Sequence[str]) -> list[str]:
    """The deep runs (``deep_probes``) on the rows' edges, one line per cell that had any."""
    ran = [c for c in cells if c.deep]
    if not ran:
        return []
    lines = ["", f"Deeper probes ({_md(', '.join(probes))}) on each row's edges:", ""]
    for c in ran:
        mark = " †" if c.outside else ""
        lines.append(f"- **{_md(c.combo())}**{mark}: {_md('; '.join(deep_words(c)))}")
    return lines


def where(f: findings.Finding, found: Sequence[findings.Finding]) -> str:
    """The finding's sentence, after its section when the findings span several."""
    return f"{f.section}: {f.sentence()}" if len({g.section for g in found}) > 1 else f.sentence()


def counts_text(cells: Sequence[Cell]) -> str:
    counts: dict[str, int] = {}
    for c in cells:
        counts[c.state.value] = counts.get(c.state.value, 0) + 1
    return f"{len(cells)} in all: " + ", ".join(f"{n} {k}" for k, n in sorted(counts.items()))


def csv_text(cells: Sequence[Cell], axes: Sequence[str]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(
        [
            "python",
            *axes,
            "state",
            "kind",
            "signal",
            "signature",
            "seconds",
            "measured_at",
            "inferred_from",
            "lock",
        ]
    )
    for c in cells:
        w.writerow(
            [
                c.python,
                *(c.version(a) for a in axes),
                c.state.value,
                _word(c),
                c.signal,
                c.signature,
                c.seconds,
                c.measured_at,
                c.inferred_from,
                c.lock,
            ]
        )
    return buf.getvalue()


def svg(meta: MatrixMeta, cells: Sequence[Cell]) -> str:
    """A heatmap: one block of squares per section, legend underneath."""
    axes, size, pad = meta.axes, 26, 8
    sections = grid(cells, axes)
    label_w = 9 * max([len(r) for s in sections for r in s.rows] + [len(axes[0])]) + 16
    col_h = 9 * max([len(c) for s in sections for c in s.cols] + [4]) + 10
    parts, y = [], 56
    axes_text = f"rows: {axes[0]}" + (f", columns: {axes[1]}" if len(axes) > 1 else "")
    parts.append(f'<text x="{pad}" y="34" font-size="11">{html.escape(axes_text)}</text>')
    for s in sections:
        parts.append(f'<text x="{pad}" y="{y}" font-weight="bold">{html.escape(s.title)}</text>')
        y += 10
        for j, col in enumerate(s.cols):
            x = label_w + j * size + size // 2
            parts.append(
                f'<text x="{x}" y="{y + col_h - 4}" transform="rotate(-60 {x} {y + col_h - 4})" '
                f'font-size="11">{html.escape(col)}</text>'
            )
        y += col_h
        for i, row in enumerate(s.rows):
            ry = y + i * size
            parts.append(f'<text x="{pad}" y="{ry + 17}" font-size="11">{html.escape(row)}</text>')
            for j, col in enumerate(s.cols):
                cell = s.cells.get((row, col))
                colour = STYLES[style_of(cell)][2] if cell else "#ffffff"
                tip = html.escape(
                    f"{axes[0]} {row}, {axes[1] if len(axes) > 1 else ''} {col}: "
                    f"{plain(cell) if cell else 'not in the matrix'}"
                )
                key = style_of(cell) if cell else "unknown"
                ink = "#000" if key in _LIGHT else "#fff"
                sign = html.escape(mark(cell)) if cell else ""
                parts.append(
                    f'<g><title>{tip}</title><rect x="{label_w + j * size}" y="{ry}" '
                    f'width="{size - 2}" height="{size - 2}" fill="{colour}" stroke="#ccc"/>'
                    f'<text x="{label_w + j * size + (size - 2) / 2}" y="{ry + 17}" '
                    f'text-anchor="middle" font-size="{10 if len(sign) > 1 else 14}" '
                    f'fill="{ink}">{sign}</text></g>'
                )
        y += len(s.rows) * size + 30
    lx = pad
    for key in (
        "pass",
        "fail",
        "crash",
        "timeout",
        "untestable",
        "unresolvable",
        "inferred-pass",
        "inferred-fail",
    ):
        parts.append(
            f'<rect x="{lx}" y="{y}" width="12" height="12" fill="{STYLES[key][2]}" stroke="#999"/>'
        )
        label = f"{MARKS[key]} {STYLES[key][1]}"
        parts.append(f'<text x="{lx + 16}" y="{y + 11}" font-size="11">{label}</text>')
        lx += 16 + 7 * len(label) + 14
    width = max(label_w + size * max(len(s.cols) for s in sections) + pad, lx) + pad
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{y + 30}" '
        f'font-family="sans-serif"><rect width="100%" height="100%" fill="white"/>'
        f'<text x="{pad}" y="16" font-size="14">{html.escape(meta.name)}</text>'
        + "".join(parts)
        + "</svg>\n"
    )
