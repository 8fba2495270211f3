"""A warm plan reads what was derived from the pages, not the pages: the version lists judged
for the target and each version's requirements are kept on disk under the digests of the
page bodies they came from. The same plans warm and cold, with the bodies gone (a warm plan
does not read them), after a page changed (a new release is seen), from an entry of the older
one-file layout, and with a damaged body (refetched). Real local index on 127.0.0.1."""

from __future__ import annotations

import email.parser
import json
import shutil
from datetime import datetime, timezone
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from envbisect.core.plan import Plan, PlanTarget
from envbisect.core.planmemo import plan as memo_plan
from envbisect.core.resolve import plan
from envbisect.diskcache import DiskCache
from envbisect.env.interp import locate
from envbisect.env.uv import Uv, find_uv
from envbisect.index.cache import BODIES, DERIVED, LEGACY_PAGES, PAGES
from envbisect.index.client import IndexClient
from envbisect.index.source import IndexMetadataSource, requires_dist
from envbisect.model import IndexConfig
from support.index_server import IndexFile, LocalIndex
from support.wheels import build_wheel

REQS = ["crashy", "raisy>=1.3,!=1.7.0", "fixy<1.4", "helperlib"]


def plan_with(
    cfg: IndexConfig,
    cache: Path,
    python: str,
    *,
    offline: bool = False,
    reqs: list[str] = REQS,
    remembered: bool = False,
) -> Plan:
    """A plan through the index client's caches; ``remembered``: through core/planmemo.py
    (as every mode plans), else core/resolve.py's resolution itself."""
    target = locate(Uv(binary=find_uv(), offline=False), python, None)[1]
    with IndexClient(cfg, cache_dir=cache, offline=offline) as client:
        source = IndexMetadataSource(client, target)
        try:
            result = (memo_plan if remembered else plan)(
                [Requirement(r) for r in reqs],
                source,
                PlanTarget(
                    markers=target.marker_environment(), python_version=target.python_version
                ),
            )
        finally:
            source.close()
    assert isinstance(result, Plan), result
    return result


def test_a_warm_plan_reads_no_page_body_and_plans_the_same(
    index: LocalIndex, python: str, tmp_path: Path
) -> None:
    cfg = IndexConfig(index_url=index.url)
    cold = plan_with(cfg, tmp_path, python)
    assert list((tmp_path / DERIVED).rglob("*.json")), "nothing derived was kept"
    # The bodies gone: offline, a warm plan still answers, from the derived entries alone.
    shutil.rmtree(tmp_path / BODIES)
    warm = plan_with(cfg, tmp_path, python, offline=True)
    assert (warm.pins, warm.visited) == (cold.pins, cold.visited)


def test_a_changed_page_is_judged_again(python: str, tmp_path: Path) -> None:
    """A new release changes the page's body, so its digest: nothing derived from the old
    body (a judged version list, a remembered plan) is used for the new one."""
    when = datetime(2026, 1, 1, tzinfo=timezone.utc)
    local = LocalIndex()
    for name, version, requires in [("wp-app", "1.0.0", ["wp-lib"]), ("wp-lib", "1.0.0", [])]:
        path = build_wheel(tmp_path, name, version, {}, requires=requires)
        local.add(IndexFile(project=name, path=path, upload_time=when))
    local.start()
    try:
        cfg = IndexConfig(index_url=local.url)
        cache = tmp_path / "cache"
        before = plan_with(cfg, cache, python, reqs=["wp-app"], remembered=True)
        assert str(before.pins[canonicalize_name("wp-lib")]) == "1.0.0"
        path = build_wheel(tmp_path, "wp-lib", "2.0.0", {})
        local.add(IndexFile(project="wp-lib", path=path, upload_time=when))
        for entry in (cache / PAGES).rglob("*.json"):  # stale now: revalidated next time
            data = json.loads(entry.read_text())
            data["max_age"] = 0
            entry.write_text(json.dumps(data))
        after = plan_with(cfg, cache, python, reqs=["wp-app"], remembered=True)
        assert str(after.pins[canonicalize_name("wp-lib")]) == "2.0.0"
    finally:
        local.stop()


def test_an_entry_of_the_older_layout_is_moved_and_used_offline(
    index: LocalIndex, python: str, tmp_path: Path
) -> None:
    cfg = IndexConfig(index_url=index.url)
    cold = plan_with(cfg, tmp_path / "new", python)
    # The older layout: validators and body in one JSON entry under pages-v1.
    old = tmp_path / "old"
    for entry in (tmp_path / "new" / PAGES).rglob("*.json"):
        header = json.loads(entry.read_text())
        digest = header.pop("body_sha256")
        body = DiskCache(tmp_path / "new").path(BODIES, digest, ".bin").read_text()
        dest = old / LEGACY_PAGES / entry.relative_to(tmp_path / "new" / PAGES)
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(json.dumps({**header, "body": body}))
    shutil.copytree(tmp_path / "new" / "metadata-v1", old / "metadata-v1")
    moved = plan_with(cfg, old, python, offline=True)
    assert moved.pins == cold.pins
    assert list((old / PAGES).rglob("*.json")) and list((old / BODIES).rglob("*.bin"))


def test_a_damaged_body_is_fetched_again(index: LocalIndex, python: str, tmp_path: Path) -> None:
    cfg = IndexConfig(index_url=index.url)
    cold = plan_with(cfg, tmp_path, python)
    shutil.rmtree(tmp_path / DERIVED)  # so that the bodies are read
    for body in (tmp_path / BODIES).rglob("*.bin"):
        body.write_bytes(b"{not json")
    again = plan_with(cfg, tmp_path, python)
    assert again.pins == cold.pins
    # Offline there is nothing to fetch it from: a clear miss, not garbage.
    shutil.rmtree(tmp_path / DERIVED)
    for body in (tmp_path / BODIES).rglob("*.bin"):
        body.write_bytes(b"{not json")
    with pytest.raises(Exception, match="not in the cache"):
        plan_with(cfg, tmp_path, python, offline=True)


@pytest.mark.parametrize(
    "text",
    [
        "Metadata-Version: 2.1\nName: a\nRequires-Dist: b>=1\nrequires-dist: c ; "
        'python_version < "3.8"\n\nRequires-Dist: not-a-header\n',
        "Metadata-Version: 2.1\r\nName: a\r\nRequires-Dist: b[x,\r\n  y]>=1\r\n"
        "Summary: s\r\n\r\nbody",
        "Metadata-Version: 2.1\nName: a\nRequires-Dist:\nRequires-Dist: d\n\tcontinued\n",
        "Name: a\n",
    ],
)
def test_requires_dist_reads_what_the_email_parser_reads(text: str) -> None:
    head = text.replace("\r\n", "\n").split("\n\n", 1)[0]
    parsed = email.parser.HeaderParser().parsestr(head).get_all("Requires-Dist") or []
    expected = [" ".join(v.split()) for v in parsed if v.strip()]
    assert [" ".join(v.split()) for v in requires_dist(text)] == expected


@pytest.mark.parametrize(
    "line",
    [
        'b[x,y]>=1,<2 ; extra == "dev"',
        "c ; python_version < '3.8' and extra == \"test\"",
        "d (>=1.0)",
        "e @ https://example.org/e-1.0-py3-none-any.whl ; sys_platform == 'linux'",
        'f>=1 ; extra == "a" ; extra == "b"',
        "g>=1 ; not a marker",
        "not a requirement ; extra == 'x'",
        "h",
    ],
)
def test_a_line_read_in_halves_is_the_line_read_whole(line: str) -> None:
    """The two halves of a line (requirement, marker) are parsed once each across versions:
    the joined object says exactly what parsing the whole line says, malformed lines too."""
    from packaging.requirements import InvalidRequirement

    from envbisect.index.source import _requirement

    try:
        whole: Requirement | None = Requirement(line)
    except InvalidRequirement:
        whole = None
    halves = _requirement(line)
    if whole is None:
        assert halves is None
        return
    assert halves is not None
    assert (halves.name, halves.extras, str(halves.specifier), halves.url) == (
        whole.name, whole.extras, str(whole.specifier), whole.url)  # fmt: skip
    assert str(halves.marker) == str(whole.marker) and str(halves) == str(whole)


def test_the_same_question_again_is_remembered_not_resolved(
    index: LocalIndex, python: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A plan is kept with the digest of every page it read: asked again over the same pages
    it is answered without resolving (nothing but the pages' headers is read: with the bodies
    and what was derived from them gone, offline, it still answers), and the same as the
    resolution, which ENVBISECT_NO_PLAN_MEMO=1 makes again."""
    cfg = IndexConfig(index_url=index.url)
    cold = plan_with(cfg, tmp_path, python, remembered=True)
    shutil.rmtree(tmp_path / BODIES)
    for entry in (tmp_path / DERIVED).rglob("*.json"):
        if not json.loads(entry.read_text())["key"].startswith("plan|"):
            entry.unlink()
    warm = plan_with(cfg, tmp_path, python, offline=True, remembered=True)
    assert (warm.pins, warm.visited, warm.depths) == (cold.pins, cold.visited, cold.depths)
    monkeypatch.setenv("ENVBISECT_NO_PLAN_MEMO", "1")  # resolved, so the pages are needed
    with pytest.raises(Exception, match="not in the cache"):
        plan_with(cfg, tmp_path, python, offline=True, remembered=True)


def test_a_cold_plan_reads_the_pages_it_needs_at_once_and_plans_the_same(
    python: str, tmp_path: Path
) -> None:
    """Every root's page is asked for at once, and a dependency's likely version (the newest
    its requirement allows, here an exact pin of an older one) is read ahead: on an index
    that takes 0.2 s a page, several pages are in flight together, the pinned version's
    metadata is read and the newer one's never, and the plan is the one expected."""
    when = datetime(2026, 1, 1, tzinfo=timezone.utc)
    local = LocalIndex(page_delay=0.2)
    libs = [f"pf-lib{i}" for i in range(6)]
    wheels = [("pf-app", "1.0.0", libs), ("pf-pinned", "1.0.0", []), ("pf-pinned", "2.0.0", [])]
    for lib in libs:
        wheels += [
            (lib, "1.0.0", []),
            (lib, "2.0.0", ["pf-pinned==1.0.0"] if lib == libs[0] else []),
        ]
    for name, version, requires in wheels:
        path = build_wheel(tmp_path, name, version, {}, requires=requires)
        local.add(IndexFile(project=name, path=path, upload_time=when))
    local.start()
    try:
        cfg = IndexConfig(index_url=local.url)
        got = plan_with(cfg, tmp_path / "c", python, reqs=["pf-app", *libs], remembered=True)
    finally:
        local.stop()
    hits = dict(local.hits)
    assert local.most_pages_in_flight >= 4, local.most_pages_in_flight
    assert {str(k): str(v) for k, v in got.pins.items()} == {
        "pf-app": "1.0.0",
        **{lib: "2.0.0" for lib in libs},
        "pf-pinned": "1.0.0",
    }
    metadata = [k for k in hits if k.endswith(".metadata") and "pf_pinned" in k]
    assert metadata == ["GET /files/pf_pinned-1.0.0-py3-none-any.whl.metadata"], metadata
