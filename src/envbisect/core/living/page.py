"""The published pages: a matrix's ``table.html`` and ``results/index.html`` across matrices.

Pure: published cells in (``core.living.cell``), one standalone HTML string out: no
network, no external script, style or font. A page leads with the answer (per Python the
combination to use and its lockfile, then the findings of ``core.findings``), then the grid:
every cell says its outcome with a mark as well as a colour (readable without colour), its
reason, and links its lockfile. A checkbox hides unresolvable cells (CSS ``:has``: it needs
no script; without one nothing is hidden); light and dark follow the reader's setting; the
grid scrolls inside its box on a narrow screen. Every value shown (package names, versions,
messages) is untrusted and escaped; links are relative and only to files the publisher wrote.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from urllib.parse import quote

from envbisect.core.living import findings as fnd
from envbisect.core.living import ranges
from envbisect.core.living.cell import CellState, PublishedCell
from envbisect.core.living.grid import Section
from envbisect.core.living.meta import MatrixMeta
from envbisect.core.living.tables import (
    MARKS,
    OUTSIDE_LEGEND,
    STYLES,
    counts_text,
    deep_words,
    grid,
    mark,
    plain,
    style_of,
    where,
)

Cell = PublishedCell

# A lockfile link as publish_table writes it; anything else read back is shown, not linked.
_LOCK = re.compile(r"locks/py[0-9][0-9.]*/[A-Za-z0-9][A-Za-z0-9._+-]*\.txt")
_FOLDER = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
SHOWN_FINDINGS = 6


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _href(path: str) -> str:
    return _e(quote(path, safe="/"))


def lock_href(cell: Cell) -> str | None:
    """The cell's lockfile as a relative link, or ``None`` when it has none we wrote."""
    lock = cell.lock
    return lock if lock is not None and _LOCK.fullmatch(lock) else None


@dataclass(frozen=True, slots=True, kw_only=True)
class IndexEntry:
    """One matrix on ``results/index.html``, as the publisher read it from its folder."""

    folder: str  # its folder under results/ (one that is not a plain name is left out)
    meta: MatrixMeta
    cells: Sequence[Cell]
    rec_files: Mapping[str, str] = field(default_factory=dict)  # python -> its lockfile
    news: tuple[str, str] | None = None  # its latest change: (date, headline)


def answer_html(
    cells: Sequence[Cell],
    rec_files: Mapping[str, str],
    *,
    prefix: str = "",
    installs: Mapping[str, str] | None = None,
    caveats: Mapping[str, str] | None = None,
) -> str:
    """Per Python: the recommended combination and a link to its lockfile (``caveats``: what
    its pylock cannot hold, said beside it). ``installs``: the
    command each lockfile's header gives (a lock naming two indexes needs uv's best-match
    rule); ``uv pip install --require-hashes -r NAME`` where there is none."""
    rec = fnd.recommended(cells)
    if not rec:
        return "<p class='none'>No combination passed: there is nothing to recommend.</p>"
    items = []
    for py, cell in rec.items():
        name = rec_files.get(py)
        link = (
            f" <a class='rec' id='rec-py{_e(py)}' href='{_href(prefix + name)}'>{_e(name)}</a>"
            if name
            else ""
        )
        install = (installs or {}).get(py) or f"uv pip install --require-hashes -r {name}"
        cmd = f"<code>uv venv &amp;&amp; {_e(install)}</code>" if name and not prefix else ""
        caveat = (caveats or {}).get(py)
        note = f"<br><span class='caveat'>Note: {_e(caveat)}.</span>" if caveat else ""
        items.append(
            f"<li>Python {_e(py)}: <strong>{_e(cell.combo())}</strong>{link}"
            f"{' ' + cmd if cmd else ''}{note}</li>"
        )
    return "<ul class='answer'>" + "".join(items) + "</ul>"


def news_html(news: tuple[str, Sequence[str]] | None) -> str:
    """The "new since" section (``id="new"``), or "" when nothing changed."""
    if news is None:
        return ""
    items = "".join(f"<li>{_e(line)}</li>" for line in news[1])
    return (
        f"<section id='new'><h2>{_e(news[0])}</h2><ul class='news'>{items}</ul>"
        "<p class='meta'><a href='feed.xml'>Atom feed of the changes</a></p></section>\n"
    )


def findings_html(found: Sequence[fnd.Finding], *, limit: int = SHOWN_FINDINGS) -> str:
    if not found:
        return "<p class='none'>Every cell measured passes.</p>"

    def li(f: fnd.Finding) -> str:
        n = f"{f.cells} cell{'s' if f.cells != 1 else ''}"
        if f.inferred:
            n += f", {f.inferred} inferred"
        sign = MARKS.get(f.kind, "·")
        return (
            f"<li class='finding {_e(f.kind)}'><span class='mark'>{sign}</span> "
            f"{_e(where(f, found))} <small>({n})</small></li>"
        )

    head = "".join(li(f) for f in found[:limit])
    rest = found[limit:]
    more = (
        (
            f"<details><summary>{len(rest)} more</summary><ul class='findings'>"
            + "".join(li(f) for f in rest)
            + "</ul></details>"
        )
        if rest
        else ""
    )
    return f"<ul class='findings'>{head}</ul>{more}"


def _cell_html(cell: Cell, cid: str) -> str:
    s = style_of(cell)
    full = cell.signature or plain(cell)
    why = fnd.reason(cell) if s not in ("pass", "inferred-pass") else ""
    href = lock_href(cell)
    parts = [
        f"<span class='mark' aria-hidden='true'>{mark(cell)}</span> "
        f"<span class='what'>{_e(plain(cell))}</span>"
    ]
    if why:
        parts.append(f"<span class='why'>{_e(why)}</span>")
    if cell.outside:
        parts.append(f"<span class='outside' title='{_e(cell.outside)}'>†</span>")
    if href:
        parts.append(f"<a class='lock' href='{_href(href)}'>lockfile</a>")
    return (
        f"<td class='{STYLES[s][0]}' data-cell='{cid}' tabindex='0' title='{_e(full)}'>"
        + "".join(parts)
        + "</td>"
    )


def ranges_html(sections: Sequence[Section], axes: Sequence[str]) -> str:
    """The two questions a two-axis table answers (``core.living.ranges``), as lists."""
    if len(axes) < 2:
        return ""
    several = len(sections) > 1
    rows = "".join(
        f"<li>{_e(rr.section + ', ') if several else ''}<strong>{_e(axes[0])} "
        f"{_e(rr.row)}</strong>: {_e(rr.sentence(axes[1]))}</li>"
        for rr in ranges.row_ranges(sections)
    )
    cols = "".join(
        f"<li>{_e(cw.section + ', ') if several else ''}{_e(axes[1])} {_e(cw.col)}: "
        + (", ".join(_e(r) + (" †" if r in cw.outside else "") for r in cw.rows) or "none")
        + "</li>"
        for cw in ranges.column_works(sections)
    )
    return (
        f"<section id='ranges'><h2>Which {_e(axes[1])} works with each {_e(axes[0])}</h2>"
        f"<ul class='ranges'>{rows}</ul><details><summary>Which {_e(axes[0])} works with "
        f"each {_e(axes[1])}</summary><ul class='ranges'>{cols}</ul></details></section>"
    )


def deep_html(cells: Sequence[Cell], probes: Sequence[str]) -> str:
    """The deep runs (``deep_probes``) on the rows' edges, one item per cell that had any."""
    ran = [c for c in cells if c.deep]
    if not ran:
        return ""
    items = "".join(
        f"<li><strong>{_e(c.combo())}</strong>{' †' if c.outside else ''}: "
        f"{_e('; '.join(deep_words(c)))}</li>"
        for c in ran
    )
    return (
        f"<section id='deep'><h2>Deeper probes on each row's edges</h2><p>"
        f"{_e(', '.join(probes))}: the first and the last cell of each row that passed, and "
        f"the newest that passed inside the pins.</p><ul class='ranges'>{items}</ul></section>"
    )


def _legend() -> str:
    words = {
        "pass": "pass",
        "fail": "fail (a Python error)",
        "crash": "crash (killed by a signal)",
        "timeout": "timeout",
        "untestable": "untestable (could not be built or probed)",
        "unresolvable": "unresolvable (no consistent environment: never built)",
        "inferred-pass": "pass, inferred from the cells on both sides",
        "inferred-fail": "fail, inferred",
        "unknown": "unknown",
    }
    return "".join(
        f"<span class='{STYLES[k][0]} key'><span class='mark'>{MARKS[k]}</span> {_e(w)}</span>"
        for k, w in words.items()
    )


def html_page(
    meta: MatrixMeta,
    cells: Sequence[Cell],
    *,
    rec_files: Mapping[str, str],
    installs: Mapping[str, str] | None = None,
    news: tuple[str, Sequence[str]] | None = None,
    caveats: Mapping[str, str] | None = None,
) -> str:
    """One standalone page: what is new since the last publish (``news``: its title and
    lines, from ``core.history``), the answer, the findings, the grid; details on click."""
    axes = meta.axes
    ids = {id(c): f"c{n}" for n, c in enumerate(cells)}
    payload = {f"c{n}": c.to_dict() for n, c in enumerate(cells)}
    sections = grid(cells, axes)
    body = []
    for s in sections:
        col_axis = axes[1] if len(axes) > 1 else ""
        body.append(
            f"<h3>{_e(s.title)}</h3><div class='scroll'><table class='grid'><thead>"
            f"<tr><th>{_e(axes[0])} \\ {_e(col_axis)}</th>"
        )
        body += [f"<th>{_e(c)}</th>" for c in s.cols]
        body.append("</tr></thead><tbody>")
        for r in s.rows:
            mine = [s.cells.get((r, col)) for col in s.cols]
            whole = all(c is not None and c.state is CellState.UNRESOLVABLE for c in mine)
            tr = "<tr class='all-unresolvable'>" if whole else "<tr>"
            body.append(f"{tr}<th>{_e(r)}</th>")
            body += ["<td></td>" if c is None else _cell_html(c, ids[id(c)]) for c in mine]
            body.append("</tr>")
        body.append("</tbody></table></div>")
    unresolvable = sum(1 for c in cells if c.state is CellState.UNRESOLVABLE)
    # Inert inside its <script type="application/json">: no "<" can start a tag there.
    data = json.dumps(payload).replace("&", "\\u0026").replace("<", "\\u003c")
    data = data.replace(">", "\\u003e")
    return _PAGE.format(
        title=_e(meta.name),
        description=_e(meta.description),
        news=news_html(news),
        command=_e(meta.command),
        measured=_e(f"{meta.measured or '?'} on {meta.machine or '?'}"),
        probes=_e(", ".join(meta.probes)),
        counts=_e(counts_text(cells)),
        answer=answer_html(cells, rec_files, installs=installs, caveats=caveats),
        findings=findings_html(fnd.findings(cells, axes, sections)),
        ranges=ranges_html(sections, axes) + deep_html(cells, meta.deep_probes),
        hide_text=(
            f"hide the {unresolvable} unresolvable cells (never built)"
            if unresolvable
            else "hide unresolvable cells (there are none)"
        ),
        disabled="" if unresolvable else " disabled",
        total=len(cells),
        tables="".join(body),
        legend=_legend()
        + (
            f"<span class='key'>{_e(OUTSIDE_LEGEND.strip())}</span>"
            if any(c.outside for c in cells)
            else ""
        ),
        data=data,
        css=_CSS,
    )


def index_page(entries: Sequence[IndexEntry]) -> str:
    """``results/index.html``: every published matrix, its answer and its main findings."""
    items = []
    for ent in entries:
        folder = ent.folder
        if not _FOLDER.fullmatch(folder):
            continue
        meta, cells = ent.meta, ent.cells
        found = fnd.findings(cells, meta.axes, grid(cells, meta.axes))
        items.append(
            f"<article class='matrix' id='m-{_e(folder)}'><h2><a href='{_href(folder)}/table.html'>"
            f"{_e(meta.name)}</a></h2><p>{_e(meta.description)}</p>"
            f"<p class='meta'>{_e(counts_text(cells))}; measured "
            f"{_e(meta.measured or '?')}</p>{_changed(ent.news)}"
            f"<h3>Use</h3>{answer_html(cells, ent.rec_files, prefix=folder + '/')}"
            f"<h3>Found</h3>{findings_html(found, limit=3)}</article>"
        )
    if not items:
        items.append("<p class='none'>No matrix is published here yet.</p>")
    return _INDEX.format(items="".join(items), css=_CSS)


def _changed(news: tuple[str, str] | None) -> str:
    """An index entry's latest change: ``(date, headline)``, or nothing."""
    if news is None:
        return ""
    return f"<p class='meta'>changed {_e(news[0])}: {_e(news[1])}</p>"


_CSS = """
:root{color-scheme:light dark;--bg:#fff;--fg:#222;--muted:#555;--line:#ccc;--pane:#fafafa;
--link:#0645ad}
@media (prefers-color-scheme:dark){:root{--bg:#121212;--fg:#e6e6e6;--muted:#aaa;--line:#444;
--pane:#1e1e1e;--link:#8ab4f8}}
*{box-sizing:border-box}
body{font-family:"DejaVu Sans",sans-serif;margin:1.5em;color:var(--fg);background:var(--bg);
line-height:1.4}
a{color:var(--link)} h1{margin:0 0 .3em;overflow-wrap:anywhere}
code{overflow-wrap:anywhere;white-space:pre-wrap}
.answer{font-size:1.1em} .answer li{margin:.3em 0} .none{color:var(--muted)}
.findings{padding-left:1.2em} .findings li{margin:.25em 0;overflow-wrap:anywhere}
.meta,details,small{color:var(--muted)}
.scroll{overflow-x:auto;max-width:100%;margin:0 0 1.5em}
table.grid{border-collapse:collapse}
.grid th,.grid td{border:1px solid var(--line);padding:4px 6px;font-size:13px;
vertical-align:top;text-align:left}
.grid th{white-space:nowrap;background:var(--bg)}
.grid tbody th,.grid thead th:first-child{position:sticky;left:0;z-index:1}
.grid td{cursor:pointer;min-width:6em;max-width:12em}
.grid td:focus{outline:2px solid var(--fg)}
.grid .what{white-space:nowrap}
.grid .why{font-size:11px;overflow:hidden;display:-webkit-box;-webkit-line-clamp:3;
-webkit-box-orient:vertical;overflow-wrap:anywhere}
.grid .lock{display:block;font-size:11px;color:inherit}
.mark{font-weight:bold}
#legend{display:flex;flex-wrap:wrap;gap:4px;margin:.5em 0}
.key{display:inline-block;padding:2px 8px;font-size:12px;border:1px solid var(--line)}
#controls{margin:.8em 0}
#details{position:sticky;top:0;z-index:2;background:var(--pane);border:1px solid var(--line);
padding:8px 12px;min-height:3em;font-size:13px;white-space:pre-wrap;overflow-wrap:anywhere}
.pass{background:#2e7d32;color:#fff} .fail{background:#c62828;color:#fff}
.crash{background:#6a1b9a;color:#fff} .timeout{background:#ef6c00;color:#000}
.untestable{background:#9e9e9e;color:#000;
background-image:radial-gradient(rgba(0,0,0,.25) 1px,transparent 1.5px);background-size:6px 6px}
.unresolvable{background:#616161;color:#fff;background-image:repeating-linear-gradient(45deg,
transparent 0 5px,rgba(255,255,255,.18) 5px 7px),repeating-linear-gradient(-45deg,
transparent 0 5px,rgba(255,255,255,.18) 5px 7px)}
.inferred-pass{background:#a5d6a7;color:#000;background-image:repeating-linear-gradient(45deg,
transparent 0 6px,rgba(255,255,255,.5) 6px 9px)}
.inferred-fail{background:#ef9a9a;color:#000;background-image:repeating-linear-gradient(45deg,
transparent 0 6px,rgba(255,255,255,.5) 6px 9px)}
.unknown{background:var(--bg);color:var(--fg)}
li.finding{background:none;color:inherit}
body:has(#hide-unresolvable:checked) .grid td.unresolvable{visibility:hidden}
body:has(#hide-unresolvable:checked) .grid tr.all-unresolvable{display:none}
@media (max-width:600px){body{margin:.6em}.answer{font-size:1em}}
"""

_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title><style>{css}</style></head><body>
<h1>{title}</h1><p>{description}</p>
{news}<section id="answer"><h2>Use this</h2>{answer}</section>
<section id="findings"><h2>What it found</h2>{findings}</section>
{ranges}<details id="how"><summary>How it was measured</summary><p><code>{command}</code><br>
probes: {probes}<br>measured {measured}<br>{counts}</p></details>
<section id="table"><h2>Every cell</h2>
<div id="legend">{legend}</div>
<div id="controls"><label><input type="checkbox" id="hide-unresolvable"{disabled}>
{hide_text}</label><br><span id="shown">{total} of {total} cells shown</span></div>
<div id="details" aria-live="polite">Click a cell for its details.</div>
{tables}</section>
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
    (c.outside ? "\\noutside the pins: " + c.outside : "") +
    (c.seconds != null ? "\\n" + c.seconds + " s" : "") +
    (c.measured_at ? ", measured " + c.measured_at : "") +
    (c.lock ? "\\nlockfile: " + c.lock : "") + (inst ? "\\ninstalled: " + inst : "");
  document.getElementById("details").dataset.cell = id;
}}
document.querySelectorAll("td[data-cell]").forEach(td => {{
  td.addEventListener("click", () => show(td.dataset.cell));
  td.addEventListener("keydown", e => {{ if (e.key === "Enter") show(td.dataset.cell); }});
}});
// The count of cells the reader sees, measured from the layout (the hiding is CSS's).
const box = document.getElementById("hide-unresolvable");
function count() {{
  const all = [...document.querySelectorAll("td[data-cell]")];
  const seen = all.filter(td => td.offsetParent !== null &&
                               getComputedStyle(td).visibility !== "hidden").length;
  document.getElementById("shown").textContent = seen + " of " + all.length + " cells shown";
}}
box.addEventListener("change", count);
// #cell=cN clicks that cell, #hide=unresolvable the checkbox: the same path as a person's
// click (the browser tests use them).
const m = location.hash.match(/cell=(c\\d+)/);
if (m) {{ const td = document.querySelector('td[data-cell="' + m[1] + '"]'); if (td) td.click(); }}
if (/hide=unresolvable/.test(location.hash) && !box.disabled) box.click();
</script></body></html>
"""

_INDEX = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Published compatibility matrices</title><style>{css}
.matrix{{border-top:1px solid var(--line);padding-top:.5em;margin-top:1em}}</style></head>
<body><h1>Published compatibility matrices</h1>
<p>Each was measured with real environments by <code>envbisect matrix</code>; the tables
link every passing cell's lockfile. What changed: <a href="feed.xml">Atom feed</a>.</p>
{items}
</body></html>
"""
