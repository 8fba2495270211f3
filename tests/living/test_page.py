"""The published pages: what they lead with, what they found, and how they read in a real
browser (headless Chromium: the DOM after the page's own script, screenshots, a measuring
frame 390 px wide, dark mode).

The data is real: the tables published in ``results/`` (measured on real environments, kept
as ``results.json``), made again with ``envbisect publish`` into a copy (nothing is probed:
the store is not kept, the page comes from ``results.json``). The grid matrix of the local
index, run for real, is in test_matrix.py.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from envbisect.core.living import findings, page, ranges, tables
from envbisect.core.living.cell import CellState, PublishedCell
from envbisect.core.living.document import PublishedTable
from envbisect.core.living.meta import MatrixMeta
from envbisect.model import OutcomeKind
from support import browser
from support.cli import envbisect

ROOT = Path(__file__).resolve().parents[2]
PUBLISHED = ROOT / "results"


def _load(name: str) -> tuple[MatrixMeta, tuple[PublishedCell, ...]]:
    table = PublishedTable.from_dict(json.loads((PUBLISHED / name / "results.json").read_text()))
    return table.meta, table.cells


def _cells(dicts: list[dict[str, Any]]) -> list[PublishedCell]:
    return [PublishedCell.from_dict(d) for d in dicts]


def _found(name: str) -> list[findings.Finding]:
    meta, cells = _load(name)
    return findings.findings(cells, meta.axes, tables.grid(cells, meta.axes))


def test_findings_of_transformers_peft_name_the_ranges_and_the_cause() -> None:
    found = _found("transformers-peft")
    _, cells = _load("transformers-peft")
    failing = [c for c in cells if c.kind is OutcomeKind.FAIL]
    assert [f.sentence() for f in found] == [
        "peft 0.16.0 to 0.17.1 fail with every transformers >= 5.0.0: "
        "ImportError: cannot import name 'HybridCache' from 'transformers'"
    ]
    assert found[0].cells == len(failing) == 21 and found[0].kind == "fail"


def test_findings_of_datasets_pyarrow_group_unresolvable_cells_by_their_conflict() -> None:
    found = _found("datasets-pyarrow")
    _, cells = _load("datasets-pyarrow")
    assert [(f.sentence(), f.cells) for f in found] == [
        ("datasets >= 2.20.0 cannot be installed with every pyarrow <= 14.0.2: "
         "datasets needs pyarrow>=15.0.0", 50),
        ("datasets 2.17.1 to 2.19.2 cannot be installed with every pyarrow <= 11.0.0: "
         "datasets needs pyarrow>=12.0.0", 6),
    ]  # fmt: skip
    assert sum(f.cells for f in found) == sum(c.state is CellState.UNRESOLVABLE for c in cells)


OUTCOMES = st.sampled_from(["pass", "fail", "crash", "unresolvable"])


@given(st.lists(st.lists(OUTCOMES, min_size=1, max_size=5), min_size=1, max_size=5))
def test_findings_cover_every_cell_that_does_not_pass_once(grid: list[list[str]]) -> None:
    width = min(len(r) for r in grid)
    cells = []
    for i, row in enumerate(grid):
        for j, kind in enumerate(row[:width]):
            cells.append({
                "python": "3.11", "versions": {"a": f"1.{i}", "b": f"2.{j}"},
                "state": "unresolvable" if kind == "unresolvable" else "measured",
                "kind": "untestable" if kind == "unresolvable" else kind,
                "signal": "SIGSEGV" if kind == "crash" else None,
                "signature": f"{kind} of a 1.{i}" if kind != "pass" else "",
            })  # fmt: skip
    typed = _cells(cells)
    found = findings.findings(typed, ["a", "b"], tables.grid(typed, ["a", "b"]))
    assert sum(f.cells for f in found) == sum(
        c.state is CellState.UNRESOLVABLE or c.kind is not OutcomeKind.PASS for c in typed
    )
    # The cell's own version is taken out of its signature: one cause per kind.
    assert len({(f.kind, f.reason) for f in found}) == len({f.kind for f in found})


def test_untrusted_names_versions_and_messages_are_escaped_and_never_linked() -> None:
    evil = '"><img src=x onerror=alert(1)>'
    cells = [
        {"python": "3.11", "versions": {"<b>a</b>": evil, "b": "1.0"}, "state": "measured",
         "kind": "fail", "signal": None, "signature": "</script><script>alert(2)</script>",
         "lock": "../../../etc/passwd"},
        {"python": "3.11", "versions": {"<b>a</b>": "2.0", "b": "1.0"}, "state": "measured",
         "kind": "pass", "signal": None, "signature": "", "lock": "javascript:alert(3)"},
    ]  # fmt: skip
    meta = MatrixMeta.from_dict(
        {"name": "<i>m</i>", "axes": ["<b>a</b>", "b"], "description": evil}
    )
    typed = _cells(cells)
    text = page.html_page(meta, typed, rec_files={"3.11": "recommended-py3.11.txt"})
    assert "<img" not in text and "<b>" not in text and "<i>" not in text
    assert text.count("<script") == 2  # the page's own: the data and the handlers
    assert "etc/passwd'" not in text and "href='javascript" not in text
    assert "<a class='lock'" not in text  # neither lock is one the publisher writes
    index = page.index_page([page.IndexEntry(folder="../up", meta=meta, cells=typed)])
    assert "../up" not in index


@pytest.fixture(scope="module")
def republished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The committed tables made again into a copy of results/ by ``envbisect publish``."""
    out = tmp_path_factory.mktemp("published") / "results"
    matrices = sorted((ROOT / "matrices").glob("*.toml"))
    for m in matrices:
        shutil.copytree(PUBLISHED / m.stem, out / m.stem,
                        ignore=shutil.ignore_patterns("table.*", "heatmap.svg"))  # fmt: skip
    proc = envbisect(
        "publish", "--offline", "--results", str(out),
        *map(str, matrices), cwd=out.parent,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "made again from" in proc.stderr and str(out / "index.html") in proc.stdout
    return out


@pytest.mark.slow
def test_republished_pages_match_the_committed_ones(republished: Path) -> None:
    for name in (m.stem for m in (ROOT / "matrices").glob("*.toml")):
        for f in ("table.html", "table.md", "heatmap.svg", "results.json"):
            assert (republished / name / f).read_text() == (PUBLISHED / name / f).read_text(), f
    assert (republished / "index.html").read_text() == (PUBLISHED / "index.html").read_text()
    md = (republished / "transformers-peft" / "table.md").read_text()
    use = "**Use on Python 3.11: transformers 5.6.0 + peft 0.21.2**: [recommended-py3.11.txt]"
    assert md.index(use) < md.index("- peft 0.16.0 to 0.17.1 fail") < md.index("## Python 3.11")


@pytest.mark.slow
def test_the_page_leads_with_the_answer_in_a_real_browser(
    republished: Path, tmp_path: Path
) -> None:
    html_file = republished / "transformers-peft" / "table.html"
    got = browser.dom(html_file.as_uri(), tmp_path / "chrome")
    # The recommended combination, first, with a link that reaches its lockfile.
    answer = got.split('id="answer"', 1)[1].split("</section>", 1)[0]
    assert "transformers 5.6.0 + peft 0.21.2" in answer
    href = re.search(r'<a class="rec" id="rec-py3.11" href="([^"]+)"', answer)
    assert href is not None and href.group(1) == "recommended-py3.11.txt"
    rec = (html_file.parent / href.group(1)).read_text()
    assert "transformers==5.6.0" in rec and "peft==0.21.2" in rec and "--hash=sha256:" in rec
    assert got.index('id="answer"') < got.index('id="findings"') < got.index('class="grid"')
    found = got.split('id="findings"', 1)[1].split("</section>", 1)[0]
    assert "peft 0.16.0 to 0.17.1 fail with every transformers &gt;= 5.0.0" in found
    # Every cell says its reason and a passing cell links its lockfile, relatively.
    tds = re.findall(r"<td [^>]*data-cell[^>]*>.*?</td>", got)
    assert len(tds) == 150
    fails = [td for td in tds if 'class="fail"' in td]
    assert len(fails) == 21 and all("HybridCache" in td.split('class="why"', 1)[1] for td in fails)
    links = [re.search(r'class="lock" href="([^"]+)"', td) for td in tds if 'class="pass"' in td]
    assert len(links) == 129 and all(m is not None for m in links)
    for m in links:
        assert m is not None and not m.group(1).startswith(("/", "file:", "http"))
        assert (html_file.parent / m.group(1)).is_file(), m.group(1)
    # Nothing outside the page: no src= or stylesheet link anywhere.
    assert not re.search(r'<(script|img|link)[^>]+(src|href)="', got)


@pytest.mark.slow
def test_the_filter_hides_unresolvable_cells_when_clicked(
    republished: Path, tmp_path: Path
) -> None:
    html_file = republished / "datasets-pyarrow" / "table.html"
    before = browser.dom(html_file.as_uri(), tmp_path / "a")
    assert "238 of 238 cells shown" in before  # nothing hidden until the reader asks
    after = browser.dom(html_file.as_uri() + "#hide=unresolvable", tmp_path / "b")
    assert "182 of 238 cells shown" in after  # counted from the layout, after the click
    frame = browser.measure(html_file, tmp_path / "c", width=1280)
    assert frame["cells"] == frame["seen"] == 238
    assert frame["seenAfterClick"] == 182 and frame["shownText"] == "182 of 238 cells shown"
    shot = tmp_path / "filtered.png"
    assert browser.screenshot(html_file.as_uri() + "#hide=unresolvable", shot, tmp_path / "d",
                              width=1280, height=1400) == (1280, 1400)  # fmt: skip


@pytest.mark.slow
def test_a_phone_width_and_dark_mode(republished: Path, tmp_path: Path) -> None:
    for name in ("transformers-peft", "datasets-pyarrow"):
        html_file = republished / name / "table.html"
        light = browser.measure(html_file, tmp_path / f"l-{name}", width=390)
        # The page fits the phone; the grid scrolls inside its own box.
        assert light["width"] == 390 and light["scrollWidth"] <= 390, light
        assert light["dark"] is False and light["background"] == "rgb(255, 255, 255)"
        dark = browser.measure(html_file, tmp_path / f"d-{name}", width=390, dark=True)
        assert dark["dark"] is True and dark["background"] == "rgb(18, 18, 18)"
        shot = tmp_path / f"{name}-390.png"
        size = browser.screenshot(html_file.as_uri(), shot, tmp_path / f"s-{name}",
                                  width=390, height=1600)  # fmt: skip
        assert size == (390, 1600)
    index = browser.measure(republished / "index.html", tmp_path / "i", width=390)
    assert index["scrollWidth"] <= 390


def test_the_index_lists_every_published_matrix_with_its_finding(
    republished: Path, tmp_path: Path
) -> None:
    got = browser.dom((republished / "index.html").as_uri(), tmp_path / "chrome")
    for name in ("transformers-peft", "datasets-pyarrow"):
        art = got.split(f'id="m-{name}"', 1)[1].split("</article>", 1)[0]
        assert f'href="{name}/table.html"' in art
        rec = re.search(r'class="rec" id="rec-py3.11" href="([^"]+)"', art)
        assert rec is not None and (republished / rec.group(1)).is_file()
    peft = got.split('id="m-transformers-peft"', 1)[1].split("</article>", 1)[0]
    assert "peft 0.16.0 to 0.17.1 fail with every transformers &gt;= 5.0.0" in peft
    pyarrow = got.split('id="m-datasets-pyarrow"', 1)[1].split("</article>", 1)[0]
    assert "datasets &gt;= 2.20.0 cannot be installed with every pyarrow &lt;= 14.0.2" in pyarrow


def test_a_damaged_results_json_is_a_clean_error(tmp_path: Path) -> None:
    out = tmp_path / "results" / "transformers-peft"
    out.mkdir(parents=True)
    (out / "results.json").write_text('{"matrix": {"name": "x"}, "cells": 7}')
    proc = envbisect(
        "publish", "--offline", "--results",
        str(tmp_path / "results"), str(ROOT / "matrices" / "transformers-peft.toml"), cwd=tmp_path,
    )  # fmt: skip
    # A results.json that is not what publish writes: the file's error, not the store's.
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and "[results-malformed]" in proc.stderr
    assert "hint:" in proc.stderr


def test_findings_of_a_third_axis_name_their_section() -> None:
    cells = [
        {"python": "3.11", "versions": {"a": a, "b": b, "c": c}, "state": "measured",
         "kind": "fail" if (c == "2.0" and b == "1.1") else "pass", "signal": None,
         "signature": "ValueError: boom" if (c == "2.0" and b == "1.1") else ""}
        for a in ("1.0", "1.1") for b in ("1.0", "1.1") for c in ("1.0", "2.0")
    ]  # fmt: skip
    typed = _cells(cells)
    sections = tables.grid(typed, ["a", "b", "c"])
    assert [s.title for s in sections] == ["Python 3.11, c 1.0", "Python 3.11, c 2.0"]
    (found,) = findings.findings(typed, ["a", "b", "c"], sections)
    assert found.section == "Python 3.11, c 2.0" and found.cells == 2
    assert found.sentence() == "b 1.1 fails with every a: ValueError: boom"
    md = tables.markdown(MatrixMeta.from_dict({"name": "m", "axes": ["a", "b", "c"]}), typed)
    assert "- b 1.1 fails with every a: ValueError: boom (2 cells)" in md


def test_ranges_answer_both_questions_and_mark_cells_outside_the_pins() -> None:
    """A row that passes in a window (too old below, too new above): its range, the first
    failure on each side with its message, and the passing cells outside its pins; per
    column, the rows that pass; the recommendation stays inside the pins."""

    def cell(app: str, lib: str, kind: str, outside: str | None = None) -> dict[str, Any]:
        return {"python": "3.11", "versions": {"app": app, "lib": lib}, "state": "measured",
                "kind": kind, "signature": "" if kind == "pass" else f"ImportError: {lib}",
                **({"outside": outside} if outside else {})}  # fmt: skip

    cells = _cells([
        cell("1.0", "4.0", "fail", "lib 4.0 is outside app 1.0's lib>=4.1"),
        cell("1.0", "4.1", "pass"),
        cell("1.0", "4.2", "pass", "lib 4.2 is outside app 1.0's lib<4.2"),
        cell("1.0", "5.0", "fail", "lib 5.0 is outside app 1.0's lib<4.2"),
        cell("2.0", "4.0", "fail"), cell("2.0", "4.1", "fail"), cell("2.0", "4.2", "fail"),
        cell("2.0", "5.0", "pass"),
    ])  # fmt: skip
    sections = tables.grid(cells, ("app", "lib"))
    (one, two) = ranges.row_ranges(sections)
    assert one.sentence("lib") == (
        "works with lib 4.1 to 4.2 (4.2 outside its pins); below: 4.0 (outside its pins) fails: "
        "ImportError: 4.0; above: 5.0 (outside its pins) fails: ImportError: 5.0"
    )
    assert two.runs == (("5.0", "5.0"),) and two.below == ("4.2", "fails: ImportError: 4.2")
    works = {c.col: c.rows for c in ranges.column_works(sections)}
    assert works == {"4.0": (), "4.1": ("1.0",), "4.2": ("1.0",), "5.0": ("2.0",)}
    meta = MatrixMeta(name="t", description="", axes=("app", "lib"), probes=("p",), run={})
    md = tables.markdown(meta, cells)
    assert "| **1.0** | ❌ fail † | ✅ pass | ✅ pass † | ❌ fail † |" in md
    assert "- lib 4.2: 1.0 †" in md and "† outside the pins" in md
    html = page.html_page(meta, cells, rec_files={})
    assert "<section id='ranges'>" in html and "class='outside'" in html
    assert findings.recommended(cells)["3.11"].versions == (("app", "2.0"), ("lib", "5.0"))
    inside_only = [c for c in cells if c.version("app") == "1.0"]
    assert findings.recommended(inside_only)["3.11"].version("lib") == "4.1"  # not 4.2 †
