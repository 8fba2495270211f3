"""Builds of one session answer from uv's cache where this session revalidated the pages of
everything they install (env/uvfresh.py): real uv, a real index on 127.0.0.1 that sends
``max-age=0, must-revalidate`` (so uv itself would ask for every page at every install), and
its request counts as the witness of what uv asked for."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from envbisect.env import uvfresh
from envbisect.env.uv import BuiltEnv, Materializer, Uv, find_uv
from envbisect.model import EnvSpec, IndexConfig
from support.index_server import IndexFile, LocalIndex
from support.wheels import build_wheel

WHEN = datetime(2024, 1, 1, tzinfo=timezone.utc)


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    """The registry ages by a clock the test moves (the window is 600 s)."""
    c = Clock()
    monkeypatch.setattr(uvfresh, "REVALIDATED", uvfresh.Revalidated(clock=c))
    return c


@pytest.fixture
def private(tmp_path: Path) -> Iterator[tuple[LocalIndex, Path]]:
    """app (needs dep), other (needs dep), dep 1.0; pages every client must ask for again."""
    out = tmp_path / "wheels"
    out.mkdir()
    index = LocalIndex(page_cache="max-age=0, must-revalidate")
    for name, version, requires in [
        ("app", "1.0", ["dep"]),
        ("app", "1.1", ["dep"]),
        ("other", "1.0", ["dep"]),
        ("dep", "1.0", []),
    ]:
        path = build_wheel(out, name, version, {f"{name}/__init__.py": ""}, requires=requires)
        index.add(IndexFile(project=name, path=path, upload_time=WHEN))
    index.start()
    yield index, out
    index.stop()


def _pages(index: LocalIndex) -> int:
    return sum(n for k, n in index.hits.items() if k.startswith("GET /simple/"))


def _build(
    m: Materializer, index: LocalIndex, python: str, *reqs: str, overrides: tuple[str, ...] = ()
) -> BuiltEnv:
    indexes = IndexConfig(index_url=index.url)
    spec = EnvSpec.build(list(reqs), python="cp3", indexes=indexes, overrides=overrides)
    built = m.build(spec, python)
    assert isinstance(built, BuiltEnv), built
    return built


def _have(built: BuiltEnv) -> dict[str, str]:
    return {d.name: d.version for d in built.installed}


def _materializer(tmp_path: Path, session: str) -> Materializer:
    return Materializer(
        Uv(binary=find_uv(), offline=False), tmp_path / "envs", verbose=True, session=session
    )


def test_a_session_asks_for_a_page_once_and_a_new_file_is_still_fetched(
    private: tuple[LocalIndex, Path], python: str, tmp_path: Path, clock: Clock
) -> None:
    index, _ = private
    m = _materializer(tmp_path, "session-a")
    first = _build(m, index, python, "app==1.0")
    asked = _pages(index)
    assert asked >= 2 and "from uv's cache" not in first.log  # app's and dep's pages
    second = _build(m, index, python, "app==1.0")
    assert _pages(index) == asked, "pages this session revalidated were asked for again"
    assert "from uv's cache" in second.log and _have(second) == _have(first)
    # A version never downloaded: uv's cache lacks its file, so the build goes online, in a
    # venv made again with the files uv reads (an --overrides file) written again.
    third = _build(m, index, python, "app==1.1", overrides=("dep==1.0",))
    assert _have(third)["app"] == "1.1" and "from uv's cache" not in third.log
    assert _pages(index) > asked


def test_a_page_this_session_never_revalidated_sends_the_build_online(
    private: tuple[LocalIndex, Path], python: str, tmp_path: Path, clock: Clock
) -> None:
    """dep 2.0 is published after this session installed dep 1.0 with app; a build of
    "other" (whose page this session never revalidated) would get dep 1.0 from uv's stale
    cache: it is made again online, and gets dep 2.0, as uv alone would give."""
    index, out = private
    m = _materializer(tmp_path, "session-b")
    # uv's cache knows other's page (another session, long ago), not dep 2.0.
    assert _have(_build(_materializer(tmp_path, "elsewhere"), index, python, "other"))
    assert _have(_build(m, index, python, "app==1.0"))["dep"] == "1.0"
    path = build_wheel(out, "dep", "2.0", {"dep/__init__.py": ""})
    index.add(IndexFile(project="dep", path=path, upload_time=WHEN + timedelta(days=1)))
    built = _build(m, index, python, "other")
    assert _have(built) == {"other": "1.0", "dep": "2.0"}
    assert "from uv's cache" not in built.log


def test_the_window_and_the_scope(
    private: tuple[LocalIndex, Path], python: str, tmp_path: Path, clock: Clock
) -> None:
    index, _ = private
    m = _materializer(tmp_path, "session-c")
    _build(m, index, python, "app==1.0")
    clock.t += uvfresh.WINDOW + 1  # older than PyPI's own max-age: asked for again
    asked = _pages(index)
    assert "from uv's cache" not in _build(m, index, python, "app==1.0").log
    assert _pages(index) > asked
    # Another session (or none: "") never counts what this one revalidated.
    for session in ("session-d", ""):
        asked = _pages(index)
        built = _build(_materializer(tmp_path, session), index, python, "app==1.0")
        assert "from uv's cache" not in built.log and _pages(index) > asked


def test_the_registry_by_itself() -> None:
    c = Clock()
    r = uvfresh.Revalidated(clock=c)
    assert not r.any_fresh("s") and not r.fresh("s", ["a"])
    assert r.fresh("s", [])  # nothing installed: nothing stale
    r.mark("s", ["a", "b"], at=c.t)
    assert r.any_fresh("s") and r.fresh("s", ["a", "b"]) and not r.fresh("s", ["a", "c"])
    assert not r.fresh("t", ["a"])
    c.t += uvfresh.WINDOW - 1
    r.mark("s", ["b"], at=c.t - 1000)  # an older mark never moves a newer one back
    assert r.fresh("s", ["a", "b"])
    c.t += 2
    assert not r.fresh("s", ["a"]) and not r.any_fresh("s")
