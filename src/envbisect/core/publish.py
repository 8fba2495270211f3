"""Publishing a matrix: tables people read at a glance, files machines read.

Pure: rows of published cells in (dicts, as ``results.json`` holds them), text out:
``table.md`` (a grid per Python and per value of any third axis), ``table.html`` (one
standalone page: coloured cells, details on hover and click, legend, the command), a heatmap
``heatmap.svg``, ``results.csv``. The command (``envbisect publish``) gathers the rows from
the store and writes the files, lockfiles included.
"""

from __future__ import annotations

import csv
import html
import io
import itertools
import json
from collections.abc import Mapping, Sequence
from typing import Any

from packaging.version import InvalidVersion, Version

from envbisect.textsafe import md_code
from envbisect.textsafe import md_text as _md

Cell = Mapping[str, Any]

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


def style_of(cell: Cell) -> str:
    state, kind = cell["state"], cell.get("kind")
    if state == "unresolvable":
        return "unresolvable"
    if state == "unknown" or kind is None:
        return "unknown"
    if state == "inferred":
        return "inferred-pass" if kind == "pass" else "inferred-fail"
    return str(kind)


def short(cell: Cell) -> str:
    s = style_of(cell)
    text = _SYMBOL[s]
    if s.startswith("inferred") and cell.get("kind") in _SYMBOL:
        # The kind of the measured cells it is inferred from: (💥) for a crash row.
        text = f"({_SYMBOL[str(cell['kind'])].split(' ')[0]}) inferred"
    if s == "crash" and cell.get("signal"):
        text += f" {cell['signal']}"
    return text


def plain(cell: Cell) -> str:
    """The cell in words, no symbols (the HTML page and the picture: colour carries the rest)."""
    kind = str(cell.get("kind") or "")
    if cell["state"] == "unresolvable":
        return "unresolvable"
    if cell["state"] == "unknown" or not kind:
        return "unknown"
    text = kind + (f" {cell['signal']}" if kind == "crash" and cell.get("signal") else "")
    return f"{text} (inferred)" if cell["state"] == "inferred" else text


def _vkey(text: str) -> tuple[int, Any]:
    try:
        return (0, Version(text))
    except InvalidVersion:
        return (1, text)


def grid(cells: Sequence[Cell], axes: Sequence[str]) -> list[dict[str, Any]]:
    """Sections (one per Python and third-axis value): rows, columns and the cell at each."""
    out = []
    pythons = sorted({c["python"] for c in cells})
    extra = axes[2:]
    for py in pythons:
        mine = [c for c in cells if c["python"] == py]
        values = {a: sorted({c["versions"][a] for c in mine}, key=_vkey) for a in axes}
        for combo in itertools.product(*(values[a] for a in extra)):
            fixed = dict(zip(extra, combo, strict=True))
            sect = [c for c in mine if all(c["versions"][a] == v for a, v in fixed.items())]
            index = {
                (c["versions"][axes[0]], c["versions"][axes[1]] if len(axes) > 1 else ""): c
                for c in sect
            }
            title = f"Python {py}" + "".join(f", {a} {v}" for a, v in fixed.items())
            out.append({
                "title": title,
                "rows": values[axes[0]],
                "cols": values[axes[1]] if len(axes) > 1 else [""],
                "cells": index,
            })  # fmt: skip
    return out


def markdown(meta: Mapping[str, Any], cells: Sequence[Cell]) -> str:
    # Every value may come from a matrix file, an index or a store: escaped for Markdown.
    axes = meta["axes"]
    lines = [f"# {_md(str(meta['name']))}", ""]
    if meta.get("description"):
        lines += [_md(str(meta["description"])), ""]
    lines += [
        f"- command: {md_code(str(meta.get('command', '')))}",
        f"- measured: {_md(str(meta.get('measured', '?')))} "
        f"on {_md(str(meta.get('machine', '?')))}",
        f"- probes: {_md(', '.join(meta.get('probes', [])))}",
        f"- cells: {_md(_counts_text(cells))}",
        "",
    ]
    for sect in grid(cells, axes):
        col_axis = _md(axes[1]) if len(axes) > 1 else ""
        lines += [f"## {_md(str(sect['title']))}", "",
                  f"rows: {_md(axes[0])}; columns: {col_axis}", ""]  # fmt: skip
        head = " | ".join(_md(str(c)) for c in sect["cols"])
        lines.append("| " + f"{_md(axes[0])} \\ {col_axis} | " + head + " |")
        lines.append("|---" * (len(sect["cols"]) + 1) + "|")
        for r in sect["rows"]:
            row = [
                _md(short(sect["cells"][(r, c)])) if (r, c) in sect["cells"] else ""
                for c in sect["cols"]
            ]
            lines.append(f"| **{_md(str(r))}** | " + " | ".join(row) + " |")
        lines.append("")
    lines += [
        "Legend: ✅ pass, ❌ fail (a Python error), 💥 crash (killed by a signal), ⏱ timeout, "
        "· untestable (could not be built or probed), ⊘ unresolvable (no consistent "
        "environment: never built), (✅)/(❌) inferred from the measured cells on both sides "
        "(rows are taken to be monotone; never measured), ? unknown.",
        "",
    ]
    return "\n".join(lines)


def _counts_text(cells: Sequence[Cell]) -> str:
    counts: dict[str, int] = {}
    for c in cells:
        counts[c["state"]] = counts.get(c["state"], 0) + 1
    return f"{len(cells)} in all: " + ", ".join(f"{n} {k}" for k, n in sorted(counts.items()))


def csv_text(cells: Sequence[Cell], axes: Sequence[str]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(["python", *axes, "state", "kind", "signal", "signature", "seconds",
                "measured_at", "inferred_from", "lock"])  # fmt: skip
    for c in cells:
        w.writerow([c["python"], *(c["versions"][a] for a in axes), c["state"], c.get("kind"),
                    c.get("signal"), c.get("signature"), c.get("seconds"), c.get("measured_at"),
                    c.get("inferred_from"), c.get("lock")])  # fmt: skip
    return buf.getvalue()


def svg(meta: Mapping[str, Any], cells: Sequence[Cell]) -> str:
    """A heatmap: one block of squares per section, legend underneath."""
    axes, size, pad = meta["axes"], 26, 8
    sections = grid(cells, axes)
    label_w = 9 * max([len(r) for s in sections for r in s["rows"]] + [len(axes[0])]) + 16
    col_h = 9 * max([len(c) for s in sections for c in s["cols"]] + [4]) + 10
    parts, y = [], 56
    axes_text = f"rows: {axes[0]}" + (f", columns: {axes[1]}" if len(axes) > 1 else "")
    parts.append(f'<text x="{pad}" y="34" font-size="11">{html.escape(axes_text)}</text>')
    for s in sections:
        parts.append(f'<text x="{pad}" y="{y}" font-weight="bold">{html.escape(s["title"])}</text>')
        y += 10
        for j, col in enumerate(s["cols"]):
            x = label_w + j * size + size // 2
            parts.append(
                f'<text x="{x}" y="{y + col_h - 4}" transform="rotate(-60 {x} {y + col_h - 4})" '
                f'font-size="11">{html.escape(col)}</text>'
            )
        y += col_h
        for i, row in enumerate(s["rows"]):
            ry = y + i * size
            parts.append(f'<text x="{pad}" y="{ry + 17}" font-size="11">{html.escape(row)}</text>')
            for j, col in enumerate(s["cols"]):
                cell = s["cells"].get((row, col))
                colour = STYLES[style_of(cell)][2] if cell else "#ffffff"
                tip = html.escape(f"{axes[0]} {row}, {axes[1] if len(axes) > 1 else ''} {col}: "
                                  f"{plain(cell) if cell else 'not in the matrix'}")  # fmt: skip
                parts.append(
                    f'<rect x="{label_w + j * size}" y="{ry}" width="{size - 2}" '
                    f'height="{size - 2}" fill="{colour}" stroke="#ccc"><title>{tip}</title></rect>'
                )
        y += len(s["rows"]) * size + 30
    lx = pad
    for key in ("pass", "fail", "crash", "timeout", "untestable", "unresolvable",
                "inferred-pass", "inferred-fail"):  # fmt: skip
        parts.append(f'<rect x="{lx}" y="{y}" width="12" height="12" fill="{STYLES[key][2]}" '
                     'stroke="#999"/>')  # fmt: skip
        parts.append(f'<text x="{lx + 16}" y="{y + 11}" font-size="11">{STYLES[key][1]}</text>')
        lx += 16 + 7 * len(STYLES[key][1]) + 14
    width = max(label_w + size * max(len(s["cols"]) for s in sections) + pad, lx) + pad
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{y + 30}" '
        f'font-family="sans-serif"><rect width="100%" height="100%" fill="white"/>'
        f'<text x="{pad}" y="16" font-size="14">{html.escape(meta["name"])}</text>'
        + "".join(parts)
        + "</svg>\n"
    )


def html_page(meta: Mapping[str, Any], cells: Sequence[Cell]) -> str:
    """One standalone page: no network, no external script; details on hover and click."""
    axes = meta["axes"]
    ids: dict[int, str] = {}
    payload = {}
    for n, c in enumerate(cells):
        ids[id(c)] = f"c{n}"
        payload[f"c{n}"] = c
    body = []
    for s in grid(cells, axes):
        col_axis = axes[1] if len(axes) > 1 else ""
        body.append(f"<h2>{html.escape(s['title'])}</h2><table class='grid'><thead><tr>"
                    f"<th>{html.escape(axes[0])} \\ {html.escape(col_axis)}</th>")  # fmt: skip
        body += [f"<th>{html.escape(c)}</th>" for c in s["cols"]]
        body.append("</tr></thead><tbody>")
        for r in s["rows"]:
            body.append(f"<tr><th>{html.escape(r)}</th>")
            for col in s["cols"]:
                cell = s["cells"].get((r, col))
                if cell is None:
                    body.append("<td></td>")
                    continue
                cls = STYLES[style_of(cell)][0]
                tip = html.escape(f"{cell.get('signature') or plain(cell)}", quote=True)
                body.append(f"<td class='{cls}' data-cell='{ids[id(cell)]}' tabindex='0' "
                            f"title='{tip}'>{html.escape(plain(cell))}</td>")  # fmt: skip
            body.append("</tr>")
        body.append("</tbody></table>")
    legend = "".join(
        f"<span class='{v[0]} key'>{html.escape(v[1])}</span>" for v in STYLES.values()
    )
    data = json.dumps(payload).replace("</", "<\\/")
    return _PAGE.format(
        title=html.escape(meta["name"]),
        description=html.escape(meta.get("description", "")),
        command=html.escape(meta.get("command", "")),
        measured=html.escape(f"{meta.get('measured', '?')} on {meta.get('machine', '?')}"),
        counts=html.escape(_counts_text(cells)),
        tables="".join(body),
        legend=legend,
        data=data,
        css="".join(_css(k, v) for k, v in STYLES.items()),
    )


def _css(key: str, style: tuple[str, str, str]) -> str:
    dark = key in ("pass", "fail", "crash", "timeout", "unresolvable")
    return f".{style[0]}{{background:{style[2]};{'color:#fff;' if dark else ''}}}"


_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>
body{{font-family:sans-serif;margin:1.5em;color:#222}}
table.grid{{border-collapse:collapse;margin:0 0 1.5em}}
.grid th,.grid td{{border:1px solid #ccc;padding:4px 8px;font-size:13px;white-space:nowrap}}
.grid td{{cursor:pointer}} .grid td:focus{{outline:2px solid #000}}
.key{{display:inline-block;padding:2px 8px;margin:2px;font-size:12px;border:1px solid #ccc}}
#details{{position:sticky;top:0;background:#fafafa;border:1px solid #ccc;padding:8px 12px;
min-height:3em;font-size:13px;white-space:pre-wrap}}
{css}
</style></head><body>
<h1>{title}</h1><p>{description}</p>
<p><code>{command}</code><br>measured {measured}<br>{counts}</p>
<div id="legend">{legend}</div>
<div id="details" aria-live="polite">Click a cell for its details.</div>
{tables}
<script id="cells" type="application/json">{data}</script>
<script>
const CELLS = JSON.parse(document.getElementById("cells").textContent);
function show(id) {{
  const c = CELLS[id]; if (!c) return;
  const v = Object.entries(c.versions).map(([k, x]) => k + " " + x).join(", ");
  const inst = (c.installed || []).map(d => d.name + "==" + d.version).join(" ");
  document.getElementById("details").textContent =
    v + "\\n" + c.state + ": " + (c.kind || "") + (c.signal ? " " + c.signal : "") +
    (c.signature ? " - " + c.signature : "") +
    (c.inferred_from ? "\\ninferred from " + c.inferred_from : "") +
    (c.seconds != null ? "\\n" + c.seconds + " s" : "") +
    (c.measured_at ? ", measured " + c.measured_at : "") +
    (c.lock ? "\\nlockfile: " + c.lock : "") + (inst ? "\\ninstalled: " + inst : "");
  document.getElementById("details").dataset.cell = id;
}}
document.querySelectorAll("td[data-cell]").forEach(td => {{
  td.addEventListener("click", () => show(td.dataset.cell));
  td.addEventListener("keydown", e => {{ if (e.key === "Enter") show(td.dataset.cell); }});
}});
// #cell=cN clicks that cell (the same path as a person's click; used by the browser test).
const m = location.hash.match(/cell=(c\\d+)/);
if (m) {{ const td = document.querySelector('td[data-cell="' + m[1] + '"]'); if (td) td.click(); }}
</script></body></html>
"""
