"""lock on the shapes of a real Hugging Face stack (tests/support/stacks.py, an index of its
own): a coupled pair held back together, a plan resolvelib gives up on that uv answers, and a
pin that only picks a build, which must not move the start. Real uv environments and probes;
the locks installed with hashes required."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import RecordingProgress
from envbisect.core import resolve
from envbisect.core.results.parts import Status
from envbisect.model import OutcomeKind
from envbisect.modes.lock.solve import Strategy, run_lock
from support.index_server import LocalIndex
from support.installs import install_and_run
from support.locks import locked, options

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("strategy", ["auto", "descent"])
def test_a_coupled_pair_is_held_back_together(
    stacks: LocalIndex, python: str, tmp_path: Path, strategy: str
) -> None:
    """cp-helper's newest requires cp-lib>=2.0, and cpapp needs cp-lib below 2.0: cp-lib is
    held below 2.0.0 with cp-helper brought down with it (1.1.0, its newest that allows
    1.5.0), proven by 2.0.0 failing and 1.5.0 passing in the same environment."""
    res = run_lock(options(stacks, python, tmp_path, "cpapp", with_reqs=("cpapp==1.0.0",),
                           strategy=Strategy(strategy)))  # fmt: skip
    assert res.status is Status.FOUND
    (c,) = res.constraints
    assert (c.package, c.first_bad, c.last_good) == ("cp-lib", "2.0.0", "1.5.0")
    assert c.found_by == "descent"
    assert c.held_with == ("cp-helper 2.1.0 -> 1.1.0",)
    assert "held back with it: cp-helper 2.1.0 -> 1.1.0" in c.describe()
    rows = {r.version: r for r in res.rows}
    assert rows[c.failed].outcome.kind is OutcomeKind.FAIL
    assert "old_api" in rows[c.failed].outcome.signature
    assert rows[c.passed].outcome.kind is OutcomeKind.PASS
    assert c.still_needed is not None and c.still_needed.kind is OutcomeKind.FAIL
    assert locked(res.lock_path) == {"cpapp": "1.0.0", "cp-lib": "1.5.0", "cp-helper": "1.1.0"}
    assert res.to_dict()["constraints"][0]["held_with"] == ["cp-helper 2.1.0 -> 1.1.0"]
    # The wheels say cp-lib 2.0.0 removed old_api (envbisect why, nothing built): 1.5.0 and
    # 2.0.0 are probed first, and nothing else of cp-lib is (without the hint the floor, 2.0.0,
    # what cp-helper 2.1.0 allows, would come first: tests/lock/test_holdback.py).
    tried = [r.version for r in res.rows if r.version.startswith("cp-lib ")]
    assert [t.split(" (")[0] for t in tried] == ["cp-lib 1.5.0", "cp-lib 2.0.0"], tried
    install_and_run(Path(res.lock_path or ""), Path(res.pylock_path or ""), "cpapp", python,
                    tmp_path)  # fmt: skip


def test_a_plan_resolvelib_gives_up_on_is_planned_by_uv(
    stacks: LocalIndex, python: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """wdapp's only environment needs resolvelib to backtrack through 55 wd-gr releases, two
    rounds each. The give-up is made to come at 40 rounds instead of 3000 (so the test takes
    seconds; the backtracking and uv are real): the lock's plans go to uv, said once, and
    the lock is uv's answer (wd-gr 1.4.0), installed with hashes required."""
    monkeypatch.setattr(resolve, "MAX_ROUNDS", 40)
    progress = RecordingProgress()
    res = run_lock(options(stacks, python, tmp_path, "wdapp", with_reqs=("wdapp==1.0.0",)),
                   progress)  # fmt: skip
    assert res.status is Status.FOUND
    assert locked(res.lock_path) == {"wdapp": "1.0.0", "wd-gr": "1.4.0", "wd-hub": "0.9.0"}
    said = [m for m in progress.messages if "uv planned it" in m]
    assert len(said) == 1, progress.messages
    assert "the resolver gave up on a plan (wdapp==1.0.0)" in said[0]
    install_and_run(Path(res.lock_path or ""), Path(res.pylock_path or ""), "wdapp", python,
                    tmp_path)  # fmt: skip


def test_resolvelib_gives_up_without_uv_and_the_give_up_is_not_remembered(
    stacks: LocalIndex, python: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without a fallback the same plan is "gave up", an answer about resolvelib and not
    about the requirements: marked so, and never kept as the plan's answer (a plan that
    resolves is kept)."""
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name
    from packaging.version import Version

    from envbisect.core.plan import Plan, PlanTarget, Unresolvable
    from envbisect.core.planmemo import plan
    from envbisect.env.interp import locate
    from envbisect.env.uv import Uv, find_uv
    from envbisect.index.client import IndexClient
    from envbisect.index.source import IndexMetadataSource
    from envbisect.model import IndexConfig

    monkeypatch.setattr(resolve, "MAX_ROUNDS", 40)
    target = locate(Uv(binary=find_uv(), offline=False), python, None)[1]
    with IndexClient(IndexConfig(index_url=stacks.url)) as client:
        source = IndexMetadataSource(client, target)
        kept: list[str] = []
        monkeypatch.setattr(source, "keep", lambda key, entry, read: kept.append(key))
        ptarget = PlanTarget(markers=target.marker_environment(),
                             python_version=target.python_version)  # fmt: skip
        reqs = [Requirement("wdapp==1.0.0")]
        got = plan(reqs, source, ptarget)
        assert isinstance(got, Unresolvable) and got.gave_up, got
        assert "gave up after 40 rounds" in got.reason
        assert kept == []
        monkeypatch.setattr(resolve, "MAX_ROUNDS", 3000)  # enough rounds: it resolves
        again = plan(reqs, source, ptarget)
        assert isinstance(again, Plan)
        assert again.pins[canonicalize_name("wd-gr")] == Version("1.4.0")
        assert len(kept) == 1


def test_a_pin_that_only_picks_a_build_does_not_move_the_start(
    stacks: LocalIndex, python: str, tmp_path: Path
) -> None:
    """bo-build==1.0.0+cpu (a local version, uploaded on day 200) is a build, not a date: the
    start is bopin's own day, whose environment passes (bo-lib 1.0.0), said on stderr; the
    history then holds bo-lib below 2.0.0."""
    progress = RecordingProgress()
    reqs = ("bopin==1.0.0", "bo-build==1.0.0+cpu")
    opts = options(stacks, python, tmp_path, "bopin", with_reqs=reqs, strategy=Strategy.HISTORY)
    res = run_lock(opts, progress)
    assert res.status is Status.FOUND
    assert any("starting point as of 2024-06-01 00:00:00 (upload of bopin==1.0.0)" in m
               for m in progress.messages), progress.messages  # fmt: skip
    (start,) = [r for r in res.rows if r.version.startswith("2024-06-01 00:00:00 (start")]
    assert start.outcome.kind is OutcomeKind.PASS
    assert any("bo-build==1.0.0+cpu only picks a build (a local version)" in m
               for m in progress.messages), progress.messages  # fmt: skip
    (c,) = res.constraints
    assert (c.package, c.first_bad, c.last_good) == ("bo-lib", "2.0.0", "1.0.0")
    assert locked(res.lock_path) == {"bopin": "1.0.0", "bo-lib": "1.0.0",
                                     "bo-build": "1.0.0+cpu"}  # fmt: skip
