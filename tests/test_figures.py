"""Every figure the README and the docs give comes from somewhere a reader can rerun: the
figures page, a benchmark's last run, or a run the page shows.

- A figure a benchmark records (``--record``: bench/last.json, bench/lastrun.py) is cited with
  a marker right after it, ``0.52 s<!-- figure: check.median -->``, and is the value of the
  bench's last run: a rerun that moves it fails here until the page says the new value.
- A paragraph that names such a benchmark marks every figure it gives (a figure written by
  hand beside a recording bench went stale: check's "0.16 s" when it took 0.58 s).
- A figure in prose (README, how-to, tutorial, matrices/README.md) stands in a section that
  names its source: a marker, a benchmark (``bench/*.py``), the figures, speed or real-world
  page, a dated run (``YYYY-MM-DD``), or the run itself shown in a console block (``the run
  above``); a
  figure that is a setting (a default, a timeout, a cap) is no measurement.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LAST = json.loads((ROOT / "bench" / "last.json").read_text(encoding="utf-8"))
MARKER = re.compile(r"<!-- figure: ([\w.-]+) -->")
# A measured time or size, as prose writes one.
FIGURE = re.compile(r"(?<![\w.,])\d+(?:[.,]\d+)?\s?(?:ms|s|min|h|KiB|MiB|GiB|kB|MB|GB)\b")
SOURCE = re.compile(
    r"<!-- figure: |bench/\w+\.py|figures\.md|speed\.md|real-breakages\.md|\b20\d\d-\d\d-\d\d\b"
    r"|\bMeasured\b|```|the run above"
)
# Words that make a figure a setting, not a measurement (600 s by default, a 15 s grace...).
SETTING = re.compile(
    r"default|--[a-z-]+|at most|up to|first \d|every \d|timeout|limit|cap\b|older than|"
    r"longer than|within|after \d|for \d|later|max-age|ago",
    re.IGNORECASE,
)
PAGES = sorted(
    [ROOT / "README.md", ROOT / "CHANGELOG.md", ROOT / "matrices" / "README.md",
     *(ROOT / "docs").rglob("*.md")]
)  # fmt: skip
PROSE = [
    ROOT / "README.md",
    ROOT / "matrices" / "README.md",
    *sorted((ROOT / "docs" / "how-to").glob("*.md")),
    *sorted((ROOT / "docs" / "tutorial").glob("*.md")),
]


def _recording_benches() -> set[str]:
    """The benches that keep their last run in bench/last.json."""
    return {
        p.name for p in (ROOT / "bench").glob("*.py") if "record(" in p.read_text(encoding="utf-8")
    }


def test_the_last_runs_name_the_bench_that_reproduces_each_figure() -> None:
    assert LAST, "bench/last.json holds no figure"
    for name, entry in LAST.items():
        script = re.match(r"python (bench/\w+\.py)\b", entry["command"])
        assert script, (name, entry["command"])
        assert (ROOT / script.group(1)).is_file(), (name, entry["command"])
        assert entry["measured"] and entry["on"] and entry["shown"], name


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_marked_figure_is_the_benchmarks_last_run(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    for m in MARKER.finditer(text):
        name = m.group(1)
        assert name in LAST, f"{page.name}: {name} is no figure bench/last.json records"
        shown = LAST[name]["shown"]
        before = text[: m.start()]
        assert before.endswith(shown), (
            f"{page.name}: {before[-40:]!r} is not {name}'s last run, {shown!r} "
            f"({LAST[name]['command']}, {LAST[name]['measured']})"
        )


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_a_paragraph_citing_a_recording_bench_marks_its_figures(page: Path) -> None:
    benches = _recording_benches()
    assert {"bench_check.py", "bench_publish.py"} <= benches
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.DOTALL)
    for para in re.split(r"\n\s*\n", text):
        cited = {b for b in benches if f"bench/{b}" in para}
        if not cited:
            continue
        for m in FIGURE.finditer(para):
            after = para[m.end() : m.end() + 40]
            assert after.startswith("<!-- figure: "), (
                f"{page.name}: {m.group(0)!r} beside {', '.join(sorted(cited))} carries no "
                f"marker of its last run: {' '.join(para.split())[:200]}"
            )


@pytest.mark.parametrize("page", PROSE, ids=lambda p: str(p.relative_to(ROOT)))
def test_a_figure_in_prose_names_its_source(page: Path) -> None:
    unsourced = []
    for section in re.split(r"\n(?=#{1,6} )", page.read_text(encoding="utf-8")):
        if SOURCE.search(section):
            continue
        for m in FIGURE.finditer(section):
            around = section[max(0, m.start() - 40) : m.end() + 25]
            if not SETTING.search(around):
                unsourced.append(" ".join(around.split()))
    assert not unsourced, f"{page.name}: figures with no source in their section: {unsourced}"


def test_the_rule_finds_a_figure_without_a_source() -> None:
    """The last test's reading, on a page made up: a bare figure is found, a dated or marked
    one and a setting are not."""
    assert FIGURE.findall("took 1 min 57 s and 0.9 s, 310 KiB") == ["1 min", "57 s", "0.9 s",
                                                                     "310 KiB"]  # fmt: skip
    assert not SOURCE.search("publish takes 0.9 s for all three tables")
    assert SOURCE.search("on 2026-12-05 it took 0.9 s")
    assert SETTING.search("kept fresh for 600 s when")
