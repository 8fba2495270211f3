"""envbisect diff: delta debugging between two locks on the local index (a transitive break,
an interaction that needs two upgrades together, a dependency that forces another package to
move, a version outside both ends the planner must not take), ddmin on scripted tests, bad
input."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

import pytest

from envbisect.env.repro import Repro
from envbisect.errors import NoAnswer, UsageError
from envbisect.model import IndexConfig, OutcomeKind
from envbisect.modes.diff import Change, DiffOptions, culprit_text, run_diff
from envbisect.modes.options import CommonOptions
from envbisect.strategy.ddmin import Result, ddmin
from support.corpus import flaky_crashes
from support.index_server import LocalIndex
from support.installs import install_and_run


def scripted(
    culprits: set[str], unresolved: frozenset[str] = frozenset()
) -> tuple[Callable[[Sequence[Change]], Result], list[list[str]]]:
    calls: list[list[str]] = []

    def test(subset: Sequence[Change]) -> Result:
        names = {c[0] for c in subset}
        calls.append(sorted(names))
        if names & unresolved:
            return "unresolved"
        return "fail" if culprits <= names else "pass"

    return test, calls


CHANGES: list[Change] = [(f"p{i}", "1", "2") for i in range(8)]


def test_ddmin_finds_one_culprit_in_few_tests() -> None:
    test, calls = scripted({"p5"})
    assert ddmin(CHANGES, test) == [("p5", "1", "2")]
    assert len(calls) <= 8


def test_ddmin_finds_an_interaction() -> None:
    test, _ = scripted({"p1", "p6"})
    assert sorted(c[0] for c in ddmin(CHANGES, test)) == ["p1", "p6"]


def test_ddmin_never_shrinks_on_unresolved_subsets() -> None:
    test, _ = scripted({"p2"}, unresolved=frozenset({"p3"}))
    result = {c[0] for c in ddmin(CHANGES, test)}
    assert "p2" in result  # the culprit is never lost


def test_ddmin_reasons_over_what_was_probed() -> None:
    """Asking for app brings lib along (app needs the new lib); lib alone is the failure.
    Told what each subset really held, ddmin names lib, not app."""
    changes: list[Change] = [("noise", "1", "2"), ("app", "1", "2"), ("lib", "1", "2")]
    by_name = {c[0]: c for c in changes}

    def test(subset: Sequence[Change]) -> tuple[Result, list[Change]]:
        names = {c[0] for c in subset} | ({"lib"} if any(c[0] == "app" for c in subset) else set())
        return ("fail" if "lib" in names else "pass"), [by_name[n] for n in sorted(names)]

    assert ddmin(changes, test) == [("lib", "1", "2")]
    # Told only what was asked, the same tests blame app: the trap this guards against.
    assert ddmin(changes, lambda s: test(s)[0]) == [("app", "1", "2")]


def test_ddmin_keeps_a_pair_that_cannot_be_applied_apart() -> None:
    """Each of app and lib forces the other: no smaller failure can be probed, both stay."""
    changes: list[Change] = [("app", "1", "2"), ("lib", "1", "2")]
    assert ddmin(changes, lambda s: ("fail", changes)) == changes


def test_culprit_text_names_what_moved() -> None:
    plain = {"package": "lib", "good_version": "1.1.0", "bad_version": "2.0.0"}
    assert culprit_text(plain) == "lib 1.1.0 -> 2.0.0"
    moved = {**plain, "moved_with": [{"package": "app", "from": "1.5.0", "to": "2.0.0"}]}
    assert culprit_text(moved) == "lib 1.1.0 -> 2.0.0 (moved with it: app 1.5.0 -> 2.0.0)"


def options(
    index: LocalIndex, python: str, tmp_path: Path, good: str, bad: str, repro: str
) -> DiffOptions:
    (tmp_path / "good.txt").write_text(good)
    (tmp_path / "bad.txt").write_text(bad)
    (tmp_path / "repro.py").write_text(repro)
    return DiffOptions(
        good=str(tmp_path / "good.txt"),
        bad=str(tmp_path / "bad.txt"),
        common=CommonOptions(
            repro=Repro.build(origin=tmp_path, repro_file=str(tmp_path / "repro.py")),
            indexes=IndexConfig(index_url=index.url),
            python=python,
            results=tmp_path / "r",
            cache_dir=tmp_path / "c",
        ),
    )


@pytest.mark.slow
def test_transitive_break_between_two_locks(index: LocalIndex, python: str, tmp_path: Path) -> None:
    res = run_diff(options(
        index, python, tmp_path,
        good="dateapp==1.0.0\ndatelib==1.1.0\nnoiselib==0.0.0\n",
        bad="dateapp==1.0.0\ndatelib==1.4.0\nnoiselib==0.4.0\n",
        repro="import dateapp\ndateapp.run()\n",
    ))  # fmt: skip
    assert res.extra["interaction"] is False
    # ddmin names datelib; its first bad version between 1.1.0 and 1.4.0 is 1.3.0.
    assert res.extra["culprits"] == [
        {"package": "datelib", "good_version": "1.2.0", "bad_version": "1.3.0"}
    ]
    assert "datelib==1.1.0" in Path(str(res.lock_path)).read_text()
    # The lock and its PEP 751 twin install elsewhere on their own, and pass there.
    install_and_run(
        Path(str(res.lock_path)), Path(str(res.pylock_path)), "dateapp", python, tmp_path
    )


@pytest.mark.slow
def test_an_interaction_needs_both_upgrades(index: LocalIndex, python: str, tmp_path: Path) -> None:
    res = run_diff(options(
        index, python, tmp_path,
        good="pairapp==1.0.0\npair-a==1.0.0\npair-b==1.0.0\nnoiselib==0.0.0\n",
        bad="pairapp==1.0.0\npair-a==2.0.0\npair-b==2.0.0\nnoiselib==0.4.0\n",
        repro="import pairapp\npairapp.run()\n",
    ))  # fmt: skip
    assert res.extra["interaction"] is True
    assert sorted(c["package"] for c in res.extra["culprits"]) == ["pair-a", "pair-b"]
    assert "interaction" in Path(str(res.report_path)).read_text()


@pytest.mark.slow
def test_ends_that_do_not_verify(index: LocalIndex, python: str, tmp_path: Path) -> None:
    repro = "import dateapp\ndateapp.run()\n"
    good_fails = options(index, python, tmp_path, good="dateapp==1.0.0\ndatelib==1.4.0\n",
                         bad="dateapp==1.0.0\ndatelib==1.3.0\n", repro=repro)  # fmt: skip
    with pytest.raises(NoAnswer, match="GOOD environment does not pass"):
        run_diff(good_fails)
    bad_passes = options(index, python, tmp_path, good="dateapp==1.0.0\ndatelib==1.0.0\n",
                         bad="dateapp==1.0.0\ndatelib==1.2.0\n", repro=repro)  # fmt: skip
    with pytest.raises(NoAnswer, match="BAD environment does not fail"):
        run_diff(bad_passes)
    same = options(index, python, tmp_path, good="datelib==1.0.0\n", bad="datelib==1.0.0\n",
                   repro=repro)  # fmt: skip
    with pytest.raises(UsageError, match="same versions"):
        run_diff(same)


@pytest.mark.slow
def test_two_locks_for_different_pythons(index: LocalIndex, python: str, tmp_path: Path) -> None:
    """A pylock.toml for Python 3.99 cannot be compared with one for this interpreter."""
    opts = options(index, python, tmp_path, good="datelib==1.0.0\n", bad="datelib==1.3.0\n",
                   repro="import datelib\n")  # fmt: skip
    (tmp_path / "pylock.toml").write_text(
        'lock-version = "1.0"\nrequires-python = "==3.99.*"\n\n'
        '[[packages]]\nname = "datelib"\nversion = "1.0.0"\n'
    )
    with pytest.raises(UsageError, match=r"is for Python ==3\.99\.\*") as err:
        run_diff(replace(opts, good=str(tmp_path / "pylock.toml")))
    assert "--python" in (err.value.hint or "")


@pytest.mark.slow
def test_repeat_lets_a_flaky_bad_environment_verify(
    index: LocalIndex, python: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """flakylib 1.8.0 crashes on about half the runs: with a seed whose first run passes,
    one run says BAD does not fail; --repeat 6 sees the crash and names the package."""
    seed = next(s for s in map(str, range(100))
                if not flaky_crashes("1.8.0", 0, s) and flaky_crashes("1.8.0", 1, s))  # fmt: skip
    monkeypatch.setenv("FLAKY_SEED", seed)
    opts = options(index, python, tmp_path, good="flakylib==1.0.0\n", bad="flakylib==1.8.0\n",
                   repro="import flakylib\nflakylib.run()\n")  # fmt: skip
    with pytest.raises(NoAnswer, match="BAD environment does not fail"):
        run_diff(opts)
    res = run_diff(replace(opts, common=replace(opts.common, repeat=6)))
    assert [c["package"] for c in res.extra["culprits"]] == ["flakylib"]
    bad = res.row("BAD")
    assert bad is not None and bad.runs == 6 and 0 < bad.fails < 6


@pytest.mark.slow
def test_a_forced_move_is_blamed_on_the_package_that_broke(
    index: LocalIndex, python: str, tmp_path: Path
) -> None:
    """tiedapp 2.0 needs tiedlib>=2, whose 2.x breaks it. Applying tiedapp (with noiselib)
    moves tiedlib to 2.0: that subset fails, but as all three changes, not as tiedapp's.
    tiedlib alone fails: it is the culprit, and nothing had to move with it."""
    res = run_diff(options(
        index, python, tmp_path,
        good="tiedapp==1.0.0\ntiedlib==1.0.0\nnoiselib==0.0.0\n",
        bad="tiedapp==2.0.0\ntiedlib==2.1.0\nnoiselib==0.4.0\n",
        repro="import tiedapp\ntiedapp.run()\n",
    ))  # fmt: skip
    assert res.extra["interaction"] is False
    assert res.extra["culprits"] == [
        {"package": "tiedlib", "good_version": "1.1.0", "bad_version": "2.0.0"}
    ]
    forced = res.row("apply noiselib 0.0.0->0.4.0, tiedapp 1.0.0->2.0.0")
    assert forced is not None and forced.outcome.kind is OutcomeKind.FAIL
    assert forced.moved == (("tiedlib", "1.0.0", "2.0.0"),)
    assert [r.version for r in res.rows][2:4] == [
        "apply noiselib 0.0.0->0.4.0, tiedapp 1.0.0->2.0.0",
        "apply tiedlib 1.0.0->2.1.0",
    ]


@pytest.mark.slow
def test_packages_that_cannot_move_apart_are_reported_with_each_other(
    index: LocalIndex, python: str, tmp_path: Path
) -> None:
    """tiedapp 1.5 needs tiedlib<2 and tiedapp 2.0 needs tiedlib>=2: neither change can be
    probed without the other. Both are named, each with what moved with it; with --jobs 2."""
    opts = options(
        index, python, tmp_path,
        good="tiedapp==1.5.0\ntiedlib==1.0.0\n",
        bad="tiedapp==2.0.0\ntiedlib==2.1.0\n",
        repro="import tiedapp\ntiedapp.run()\n",
    )  # fmt: skip
    res = run_diff(replace(opts, common=replace(opts.common, jobs=2)))
    assert res.extra["interaction"] is True
    assert res.extra["culprits"] == [
        {"package": "tiedapp", "good_version": "1.5.0", "bad_version": "2.0.0",
         "moved_with": [{"package": "tiedlib", "from": "1.0.0", "to": "2.0.0"}]},
        {"package": "tiedlib", "good_version": "1.1.0", "bad_version": "2.0.0",
         "moved_with": [{"package": "tiedapp", "from": "1.5.0", "to": "2.0.0"}]},
    ]  # fmt: skip
    report = Path(str(res.report_path)).read_text()
    assert "tiedlib 1.1.0 -> 2.0.0 (moved with it: tiedapp 1.5.0 -> 2.0.0)" in report


@pytest.mark.slow
def test_a_culprit_bisection_stays_inside_both_ends(
    index: LocalIndex, python: str, tmp_path: Path
) -> None:
    """spanlib 1.2 fits only spandep 0.9, older than both ends (and failing the same way for
    an old reason). That environment is outside the span, so untestable, not bad: the answer
    is spanlib 1.3 after 1.1, and no probe ever installs spandep 0.9."""
    res = run_diff(options(
        index, python, tmp_path,
        good="spandep==1.0.0\nspanlib==1.0.0\n",
        bad="spandep==2.0.0\nspanlib==2.0.0\n",
        repro="import spanlib\nspanlib.run()\n",
    ))  # fmt: skip
    assert res.extra["culprits"] == [
        {"package": "spanlib", "good_version": "1.1.0", "bad_version": "1.3.0"}
    ]
    outside = res.row("spanlib 1.2.0")
    assert outside is not None and outside.outcome.kind is OutcomeKind.UNTESTABLE
    assert all((d.name, d.version) != ("spandep", "0.9.0") for r in res.rows for d in r.installed)


@pytest.mark.slow
def test_the_cli_names_what_moved_with_each_culprit(
    index: LocalIndex, python: str, tmp_path: Path
) -> None:
    """The text lines and --json of the tied pair (the second run is answered by the store)."""
    (tmp_path / "good.txt").write_text("tiedapp==1.5.0\ntiedlib==1.0.0\n")
    (tmp_path / "bad.txt").write_text("tiedapp==2.0.0\ntiedlib==2.1.0\n")
    (tmp_path / "repro.py").write_text("import tiedapp\ntiedapp.run()\n")
    args = [sys.executable, "-m", "envbisect", "diff", str(tmp_path / "good.txt"),
            str(tmp_path / "bad.txt"), "--index-url", index.url, "--python", python,
            "--results", str(tmp_path / "r"), "--cache-dir", str(tmp_path / "c"),
            "--repro", str(tmp_path / "repro.py")]  # fmt: skip
    text = subprocess.run(args, capture_output=True, text=True, timeout=300)
    assert text.returncode == 0, text.stderr
    assert text.stdout.splitlines()[:2] == [
        "interaction: tiedapp 1.5.0 -> 2.0.0 (moved with it: tiedlib 1.0.0 -> 2.0.0)",
        "interaction: tiedlib 1.1.0 -> 2.0.0 (moved with it: tiedapp 1.5.0 -> 2.0.0)",
    ]
    data = json.loads(subprocess.run([*args, "--json"], capture_output=True, text=True,
                                     timeout=300).stdout)  # fmt: skip
    assert [c["moved_with"] for c in data["culprits"]] == [
        [{"package": "tiedlib", "from": "1.0.0", "to": "2.0.0"}],
        [{"package": "tiedapp", "from": "1.5.0", "to": "2.0.0"}],
    ]
