"""Living tables: a published matrix kept current with ``matrix --update`` on a local index of
its own (releases are added and yanked while the test runs), rechecked in locked
environments, its history on the page, in table.md and in Atom feeds.

The index (support/index_server.py) starts with liveapp 1.0, 1.1 and livelib 1.0, 1.1, 1.2;
liveapp fails with livelib >= 1.3. The repro fails whatever is installed while a switch file
exists (the test's lever for a recheck that changes an outcome in the same environment).
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from envbisect.core.living import feed, history, page, tables
from envbisect.core.living import update as cellupdate
from envbisect.core.living.cell import CellState, PublishedCell
from envbisect.core.living.meta import MatrixMeta
from envbisect.model import OutcomeKind
from envbisect.store import Store
from support.cli import start
from support.corpus import EPOCH
from support.index_server import IndexFile, LocalIndex
from support.wheels import build_wheel

ATOM = "{http://www.w3.org/2005/Atom}"

MATRIX = """
[matrix]
name = "live"
description = "liveapp x livelib"
python = ["{python}"]
index_url = "{index}"
repro = "repro.py"
timeout = 60

[[axis]]
package = "liveapp"

[[axis]]
package = "livelib"
"""

APP = (
    "import livelib\n\n"
    "def run():\n"
    "    if livelib.MINOR >= 3:\n"
    "        raise RuntimeError('livelib 1.3 broke liveapp')\n"
)


def _lib(root: Path, index: LocalIndex, minor: int) -> None:
    path = build_wheel(
        root, "livelib", f"1.{minor}.0", {"livelib/__init__.py": f"MINOR = {minor}\n"}
    )
    index.add(IndexFile(project="livelib", path=path, upload_time=EPOCH + timedelta(days=minor)))


def _app(root: Path, index: LocalIndex, minor: int) -> None:
    path = build_wheel(root, "liveapp", f"1.{minor}.0", {"liveapp/__init__.py": APP},
                       requires=("livelib",))  # fmt: skip
    index.add(IndexFile(project="liveapp", path=path, upload_time=EPOCH + timedelta(days=minor)))


@pytest.fixture
def live_index(tmp_path: Path) -> Any:
    root = tmp_path / "wheels"
    root.mkdir()
    # Every client asks again: a release added mid-test is seen at once.
    index = LocalIndex(page_cache="max-age=0, must-revalidate")
    for i in range(3):
        _lib(root, index, i)
    for i in range(2):
        _app(root, index, i)
    index.start()
    yield index, root
    index.stop()


def envbisect(*args: str | Path, cwd: Path) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, "-m", "envbisect", *map(str, args), "--json"],
        capture_output=True, text=True, timeout=600, cwd=cwd,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    data: dict[str, Any] = json.loads(proc.stdout)
    return data


def probes_in(results: Path) -> list[list[str]]:
    """The requirements of every probe record in the store (none when there is no store)."""
    if not (results / "envbisect.db").exists():
        return []
    with Store(results) as store:
        return [list(r.spec["requirements"]) for r in store.all()]


def fresh_store(results: Path) -> None:
    """What a CI job has: the committed results/ without the store (it is not kept)."""
    for p in results.glob("envbisect.db*"):
        p.unlink()


def cells_of(results: Path) -> dict[tuple[str, str], dict[str, Any]]:
    data = json.loads((results / "live" / "results.json").read_text())
    return {(c["versions"]["liveapp"], c["versions"]["livelib"]): c for c in data["cells"]}


def read_feed(path: Path) -> ET.Element:
    root = ET.parse(path).getroot()
    assert root.tag == f"{ATOM}feed"
    for tag in ("id", "title", "updated"):
        assert (root.findtext(f"{ATOM}{tag}") or "").strip(), tag
    assert root.find(f"{ATOM}link").get("href")  # type: ignore[union-attr]
    for entry in root.findall(f"{ATOM}entry"):
        for tag in ("id", "title", "updated", "content"):
            assert (entry.findtext(f"{ATOM}{tag}") or "").strip(), tag
        assert entry.findtext(f"{ATOM}id", "").startswith("urn:uuid:")
        datetime.fromisoformat(entry.findtext(f"{ATOM}updated", ""))  # RFC 3339
    return root


@pytest.mark.slow
def test_a_published_table_kept_current(live_index: Any, python: str, tmp_path: Path) -> None:
    index, root = live_index
    switch = tmp_path / "switch"
    (tmp_path / "repro.py").write_text(
        "import pathlib\nimport liveapp\n\n"
        f"if pathlib.Path({str(switch)!r}).exists():\n"
        "    raise RuntimeError('the switch is on')\n"
        "liveapp.run()\n"
    )
    spec = tmp_path / "live.toml"
    spec.write_text(MATRIX.format(python=python, index=index.url))
    results = tmp_path / "results"
    common = ("--results", results, "--cache-dir", tmp_path / "cache")

    first = envbisect("matrix", spec, *common, cwd=tmp_path)
    assert first["counts"]["cells"] == 6
    before = cells_of(results)
    data = json.loads((results / "live" / "results.json").read_text())
    assert [h["since"] for h in data["history"]] == [None]  # the first publish
    assert "## New since" not in (results / "live" / "table.md").read_text()

    # New on the index: a release of each axis; and livelib 1.0.0 yanked.
    _app(root, index, 2)
    _lib(root, index, 3)
    for f in index.project("livelib"):
        f.yanked = f.path.name.startswith("livelib-1.0.0-")
    fresh_store(results)

    dry = envbisect("matrix", spec, "--update", "--dry-run", *common, cwd=tmp_path)
    new = {(c["liveapp"], c["livelib"]) for p in dry["plans"] for c in p["new"]}
    assert new == {("1.2.0", "1.1.0"), ("1.2.0", "1.2.0"), ("1.2.0", "1.3.0"),
                   ("1.0.0", "1.3.0"), ("1.1.0", "1.3.0")}  # fmt: skip
    assert [(g["package"], g["version"], g["why"]) for g in dry["gone"]] == [
        ("livelib", "1.0.0", cellupdate.YANKED)
    ]
    assert len(dry["cells"]) == 5  # each new cell's plan, nothing else
    assert probes_in(results) == [] and not any((results / ".envs").glob("*"))
    assert cells_of(results) == before  # the dry run wrote nothing

    upd = envbisect("matrix", spec, "--update", *common, cwd=tmp_path)
    assert upd["counts"] == {"cells": 5, "built": 5, "reused": 0, "inferred": 0,
                             "unresolvable": 0, "untestable": 0}  # fmt: skip
    probed = probes_in(results)
    assert len(probed) == 5  # the new cells only: no published cell was probed again
    assert all("liveapp==1.2.0" in r or "livelib==1.3.0" in r for r in probed)
    after = cells_of(results)
    assert set(after) == (set(before) | new) - {("1.0.0", "1.0.0"), ("1.1.0", "1.0.0")}
    for k in set(before) & set(after):  # old cells keep their outcomes and lockfiles
        assert after[k] == before[k], k
    assert (
        after[("1.0.0", "1.3.0")]["kind"] == "fail" and after[("1.2.0", "1.2.0")]["kind"] == "pass"
    )
    change = upd["changes"]
    assert len(change["added"]) == 5 and {r["why"] for r in change["removed"]} == {
        cellupdate.YANKED
    }
    assert change["since"] == data["history"][0]["date"]

    md = (results / "live" / "table.md").read_text()
    assert md.index("## New since") < md.index("**Use on Python")
    assert "new row on Python" in md and "liveapp 1.2.0" in md
    assert "new column on Python" in md and "livelib 1.3.0" in md
    assert "found: livelib 1.3.0 fails with every liveapp" in md
    assert (
        "left the table: livelib 1.0.0 on Python" in md and "(yanked on the index): 2 cells" in md
    )
    html = (results / "live" / "table.html").read_text()
    assert html.index("id='new'") < html.index('id="answer"') and "livelib 1.3.0" in html

    feed_root = read_feed(results / "live" / "feed.xml")
    entries = feed_root.findall(f"{ATOM}entry")
    assert len(entries) == 2  # the first publish and this update, newest first
    content = entries[0].findtext(f"{ATOM}content", "")
    assert "livelib 1.3.0" in content and "liveapp 1.2.0" in content and "yanked" in content
    assert entries[0].findtext(f"{ATOM}updated") == change["date"]
    index_root = read_feed(results / "feed.xml")
    assert [e.findtext(f"{ATOM}id") for e in index_root.findall(f"{ATOM}entry")] == [
        e.findtext(f"{ATOM}id") for e in entries
    ]
    assert index_root.find(f"{ATOM}entry/{ATOM}link").get("href") == "live/table.html"  # type: ignore[union-attr]

    listing = (results / "index.html").read_text()
    assert f"changed {change['date']}: 5 new cells, 2 removed" in listing

    # Publishing again changes nothing: no new history entry, the same feed.
    feed_text = (results / "live" / "feed.xml").read_text()
    pylocks = {p: p.read_bytes() for p in (results / "live").rglob("pylock.*.toml")}
    again = envbisect("publish", spec, "--results", results, cwd=tmp_path)
    assert again["published"][0]["changes"] is None
    assert (results / "live" / "feed.xml").read_text() == feed_text
    assert pylocks and {p: p.read_bytes() for p in pylocks} == pylocks  # not even their dates

    # A recheck: every measured cell probed again in its own locked environment, with the
    # switch on: the passing ones now fail, in the same environment.
    switch.write_text("on")
    fresh_store(results)
    rec = envbisect("matrix", spec, "--update", "--recheck", "0", *common, cwd=tmp_path)
    measured = {k: c for k, c in after.items() if c["state"] == "measured"}
    assert rec["counts"]["cells"] == 0 and len(rec["rechecks"]) == len(measured) > 4
    locked = sorted(sorted(f"{d['name']}=={d['version']}" for d in c["installed"])
                    for c in measured.values())  # fmt: skip
    assert sorted(sorted(r) for r in probes_in(results)) == locked  # exactly what each had
    changed = rec["changes"]["changed"]
    was_passing = {k for k, c in measured.items() if c["kind"] == "pass"}
    assert {(c["versions"]["liveapp"], c["versions"]["livelib"]) for c in changed} == was_passing
    assert all(c["recheck"] and (c["before"], c["after"]) == ("pass", "fail") for c in changed)
    assert "the switch is on" in changed[0]["reason"]
    final = json.loads((results / "live" / "results.json").read_text())
    assert [h["rechecked"] for h in final["history"]] == [0, 0, len(measured)]
    md = (results / "live" / "table.md").read_text()
    assert f"rechecked {len(measured)} cells in their locked environments: 6 changed" in md
    assert "changed on a recheck in its locked environment" in md and "pass → fail" in md
    assert len(read_feed(results / "live" / "feed.xml").findall(f"{ATOM}entry")) == 3

    # A recheck cut short by Ctrl-C resumes: a cell it rechecked is kept, not probed again.
    started = {r.env_id: r.started_at for r in _records(results)}
    proc = start("matrix", str(spec), "--update", "--recheck", "0", *map(str, common),
                 "--jobs", "1", cwd=tmp_path)  # fmt: skip
    assert proc.stderr is not None
    seen = ""
    while "s)\n" not in seen.partition("rechecking")[2]:  # the first recheck that ends
        line = proc.stderr.readline()  # "    recheck liveapp 1.0.0 + livelib 1.1.0: ... (1.2 s)"
        assert line, seen
        seen += line
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, seen + err
    cut = {r.env_id: r.started_at for r in _records(results) if r.started_at != started[r.env_id]}
    assert 1 <= len(cut) < len(measured), seen + err
    resumed = subprocess.run(
        [sys.executable, "-m", "envbisect", "matrix", str(spec), "--update", "--recheck", "0",
         *map(str, common), "--json"],
        capture_output=True, text=True, timeout=600, cwd=tmp_path,
    )  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr
    assert len(json.loads(resumed.stdout)["rechecks"]) == len(measured)
    assert resumed.stderr.count("(from the store)") == len(cut)
    after_resume = {r.env_id: r.started_at for r in _records(results)}
    assert all(after_resume[e] == when for e, when in cut.items())  # kept, not probed again
    assert sum(after_resume[e] != started[e] for e in started) == len(measured)


def _records(results: Path) -> list[Any]:
    with Store(results) as store:
        return list(store.all())


def test_update_needs_a_published_table(tmp_path: Path) -> None:
    spec = tmp_path / "m.toml"
    spec.write_text("[matrix]\nprobes = ['import:x']\n[[axis]]\npackage = 'a'\n")
    for extra in (["--update"], ["--recheck", "3"]):
        proc = subprocess.run(
            [sys.executable, "-m", "envbisect", "matrix", str(spec), "--results",
             str(tmp_path / "r"), *extra],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert proc.returncode == 2 and "hint: " in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "r" / ".envs").exists()


def _cell(app: str, lib: str, *, kind: str = "pass", when: str = "2026-01-01T00:00:00+00:00",
          state: str = "measured") -> PublishedCell:  # fmt: skip
    return PublishedCell.from_dict({
        "python": "3.11", "versions": {"app": app, "lib": lib}, "state": state, "kind": kind,
        "signal": None, "signature": "", "measured_at": when,
        "installed": [{"name": "app", "version": app}] * (state == "measured"),
    })  # fmt: skip


def test_the_update_plan_names_new_kept_gone_and_stale_cells() -> None:
    published = [_cell("1", "1"), _cell("1", "2", when="2026-06-01T00:00:00+00:00"),
                 _cell("2", "1", state="inferred"), _cell("2", "2"), _cell("3", "1")]  # fmt: skip
    axes = [
        cellupdate.AxisNow(package="app", selected=("1", "2", "4"), listed=frozenset("1234")),
        cellupdate.AxisNow(package="lib", selected=("1", "2"), listed=frozenset("12")),
    ]
    plan = cellupdate.plan_update("3.11", published, axes, recheck_days=30,
                                    now=datetime(2026, 6, 10, tzinfo=timezone.utc))  # fmt: skip
    assert plan.new == ((("app", "4"), ("lib", "1")), (("app", "4"), ("lib", "2")))
    assert plan.kept == 4
    assert [(g.package, g.version, g.why) for g in plan.gone] == [
        ("app", "3", cellupdate.NOT_SELECTED)
    ]
    # Older than 30 days and measured (the inferred cell has no environment to lock):
    assert plan.recheck == ((("app", "1"), ("lib", "1")), (("app", "2"), ("lib", "2")))
    yanked = cellupdate.AxisNow(package="app", selected=("1", "2"), yanked=frozenset("3"),
                                  listed=frozenset("12"))  # fmt: skip
    gone = cellupdate.plan_update("3.11", published, [yanked, axes[1]],
                                    now=datetime(2026, 6, 10, tzinfo=timezone.utc))  # fmt: skip
    assert [g.why for g in gone.gone] == [cellupdate.YANKED] and gone.recheck == ()


def test_history_is_bounded_and_the_feed_escapes_untrusted_text() -> None:
    hist: list[history.Change] = []
    evil = "<script>alert(1)</script> & \x1b[31m\x00"
    old = [_cell("1", "1")]
    for i in range(25):
        new = [*old, replace(_cell(str(i + 2), "1", kind="fail"), signature=evil)]
        change = history.diff(old, new, ["app", "lib"], date=f"2026-01-{i % 28 + 1:02d}T00:00:00"
                              "+00:00", since="2025-12-31T00:00:00+00:00")  # fmt: skip
        hist = history.append(hist, change)
        old = new
    assert len(hist) == history.LIMIT
    meta = MatrixMeta.from_dict({"name": "m<&>", "description": evil, "axes": ["app", "lib"]})
    text = feed.matrix_feed(meta, hist)
    root = ET.fromstring(text)  # well-formed despite the markup and control characters
    entries = root.findall(f"{ATOM}entry")
    assert len(entries) == history.LIMIT
    assert "<script>" in (entries[0].findtext(f"{ATOM}content") or "")  # as text, escaped
    assert "<script>" not in text and "\x1b" not in text and "\x00" not in text
    assert len({e.findtext(f"{ATOM}id") for e in entries}) == history.LIMIT
    assert history.diff(old, old, ["app", "lib"], date="x", since="y") is None
    latest = history.latest(hist)
    assert latest is not None
    section = page.news_html((latest.title(), latest.lines))
    assert "<script>" not in section and "&lt;script&gt;" in section
    md = tables.markdown(meta, new, news=(latest.title(), latest.lines))
    assert "<script>" not in md and md.index("## New since") < md.index("**Use on Python")


@pytest.mark.slow
def test_an_update_right_after_a_publish_sees_a_new_release(python: str, tmp_path: Path) -> None:
    """The index sends PyPI's Cache-Control (max-age=600): a page read minutes ago counts as
    fresh, so without revalidation a release published since is not seen. ``matrix --update``
    asks again for its axes' pages; ``--refresh`` and ``--refresh-package`` do it for any
    command (one 304 or a new page per project: no page is read twice)."""
    root = tmp_path / "wheels"
    root.mkdir()
    index = LocalIndex()  # max-age=600, public: PyPI's header
    for i in range(3):
        _lib(root, index, i)
    for i in range(2):
        _app(root, index, i)
    index.start()
    try:
        (tmp_path / "repro.py").write_text("import liveapp\nliveapp.run()\n")
        spec = tmp_path / "live.toml"
        spec.write_text(MATRIX.format(python=python, index=index.url))
        results, cache = tmp_path / "results", tmp_path / "cache"
        common = ("--results", results, "--cache-dir", cache)
        assert envbisect("matrix", spec, *common, cwd=tmp_path)["counts"]["cells"] == 6
        _app(root, index, 2)  # published a minute after the table
        fresh_store(results)
        dry = envbisect("matrix", spec, "--update", "--dry-run", *common, cwd=tmp_path)
        assert {c["liveapp"] for p in dry["plans"] for c in p["new"]} == {"1.2.0"}
        versions = ("versions", "liveapp", "--index-url", index.url, "--cache-dir", cache,
                    "--python", python)  # fmt: skip

        def seen(*extra: str) -> list[str]:
            data = envbisect(*versions, *extra, cwd=tmp_path)
            return [v["version"] for v in data["candidates"]]

        _app(root, index, 3)
        assert "1.3.0" not in seen()  # the cached page is fresh for ten minutes
        before = index.hits.get("GET /simple/liveapp/", 0)
        assert "1.3.0" in seen("--refresh-package", "liveapp")
        assert index.hits["GET /simple/liveapp/"] == before + 1  # asked once
        _app(root, index, 4)
        assert "1.4.0" in seen("--refresh")
    finally:
        index.stop()


def test_the_edges_of_a_rows_passing_range() -> None:
    """deep_probes' cells: the first and the last that passed, and the last inside the pins,
    each once; a row where nothing passed has none. edge_keys reads a published table the
    same way, its columns in version order (4.10 after 4.9)."""
    from envbisect.core.living.cell import PublishedCell
    from envbisect.core.living.ranges import edge_keys, edge_positions

    assert edge_positions([False, True, True, True, False], [True] * 5) == [1, 3]
    assert edge_positions([True, True, True], [True, True, False]) == [0, 1, 2]
    assert edge_positions([True], [False]) == [0]
    assert edge_positions([False, False], [True, True]) == []

    def cell(lib: str, kind: str, outside: str | None = None) -> PublishedCell:
        return PublishedCell(python="3.11", versions=(("app", "1.0"), ("lib", lib)),
                             state=CellState.MEASURED, kind=OutcomeKind(kind),
                             outside=outside)  # fmt: skip

    row = [cell("4.10", "pass", "past app's pins"), cell("4.8", "fail"), cell("4.9", "pass")]
    assert {k[1][1][1] for k in edge_keys(row)} == {"4.9", "4.10"}


@pytest.mark.slow
def test_deep_probes_kept_through_an_update_and_run_on_the_new_rows_edges(
    live_index: Any, python: str, tmp_path: Path
) -> None:
    """A table with deep_probes, updated on a fresh clone (no store): the old rows' edge cells
    keep the deep runs published for them; the new row's edges get theirs, run by the update;
    a new failing column moves no edge."""
    index, root = live_index
    (tmp_path / "repro.py").write_text("import liveapp\nliveapp.run()\n")
    spec = tmp_path / "live.toml"
    text = MATRIX.format(python=python, index=index.url)
    spec.write_text(
        text.replace("timeout = 60\n", 'timeout = 60\ndeep_probes = ["import:liveapp"]\n')
    )
    results = tmp_path / "results"
    common = ("--results", results, "--cache-dir", tmp_path / "cache")
    envbisect("matrix", spec, *common, cwd=tmp_path)
    before = {k: c["deep"] for k, c in cells_of(results).items() if "deep" in c}
    assert set(before) == {("1.0.0", "1.0.0"), ("1.0.0", "1.2.0"), ("1.1.0", "1.0.0"),
                           ("1.1.0", "1.2.0")}  # fmt: skip
    assert all([d["kind"] for d in runs] == ["pass"] for runs in before.values())

    _app(root, index, 2)
    _lib(root, index, 3)  # liveapp fails with it: every row's passing range ends at 1.2.0
    fresh_store(results)
    envbisect("matrix", spec, "--update", *common, cwd=tmp_path)
    after = {k: c["deep"] for k, c in cells_of(results).items() if "deep" in c}
    assert set(after) == set(before) | {("1.2.0", "1.0.0"), ("1.2.0", "1.2.0")}
    for k in before:
        assert after[k] == before[k], k  # as published: no store, nothing run again
    assert [d["probe"] for d in after[("1.2.0", "1.2.0")]] == ["import:liveapp"]


def test_a_cell_known_another_way_with_the_same_outcome_is_no_change() -> None:
    """A table swept in full, then searched: a cell measured passing and now inferred passing
    has not changed (the page says how each is known); one whose outcome moved has."""
    old = [_cell("1", "1"), _cell("1", "2"), _cell("1", "3")]
    same = [_cell("1", "1"), _cell("1", "2", state="inferred"), _cell("1", "3")]
    assert history.diff(old, same, ["app", "lib"], date="x", since="y") is None
    moved = [_cell("1", "1"), _cell("1", "2", state="inferred", kind="fail"), _cell("1", "3")]
    change = history.diff(old, moved, ["app", "lib"], date="x", since="y")
    assert change is not None
    assert [(c.before, c.after) for c in change.changed] == [("pass", "fail (inferred)")]
