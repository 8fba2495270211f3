"""envbisect diff: delta debugging between two locks on the local index (a transitive break,
an interaction that needs two upgrades together, a dependency that forces another package to
move, a version outside both ends the planner must not take, a new major version that drags
new packages in: the roots of ddmin's set, verified or not), ddmin on scripted tests, bad
input."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

from conftest import RecordingProgress
from envbisect.core.results.diff import Change, Culprit
from envbisect.core.results.parts import Moved
from envbisect.env.repro import Repro
from envbisect.errors import NoAnswer, UsageError
from envbisect.model import IndexConfig, OutcomeKind
from envbisect.modes.diff.mode import DiffOptions, run_diff
from envbisect.modes.diff.roots import forcing, reduce, root_names
from envbisect.strategy.ddmin import Result, ddmin
from support.cli import envbisect, on_index
from support.corpus import flaky_crashes
from support.index_server import LocalIndex
from support.installs import install_and_run
from support.options import flat_options, flat_with


def scripted(
    culprits: set[str], unresolved: frozenset[str] = frozenset()
) -> tuple[Callable[[Sequence[Change]], Result], list[list[str]]]:
    calls: list[list[str]] = []

    def test(subset: Sequence[Change]) -> Result:
        names = {c[0] for c in subset}
        calls.append(sorted(names))
        if names & unresolved:
            return Result.UNRESOLVED
        return Result.FAIL if culprits <= names else Result.PASS

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
        return (Result.FAIL if "lib" in names else Result.PASS), [by_name[n] for n in sorted(names)]

    assert ddmin(changes, test) == [("lib", "1", "2")]
    # Told only what was asked, the same tests blame app: the trap this guards against.
    assert ddmin(changes, lambda s: test(s)[0]) == [("app", "1", "2")]


def test_ddmin_keeps_a_pair_that_cannot_be_applied_apart() -> None:
    """Each of app and lib forces the other: no smaller failure can be probed, both stay."""
    changes: list[Change] = [("app", "1", "2"), ("lib", "1", "2")]
    assert ddmin(changes, lambda s: (Result.FAIL, changes)) == changes


def test_culprit_text_names_what_moved() -> None:
    plain = Culprit(package="lib", good_version="1.1.0", bad_version="2.0.0")
    assert plain.describe() == "lib 1.1.0 -> 2.0.0"
    moved = replace(plain, moved_with=(Moved(package="app", before="1.5.0", after="2.0.0"),))
    assert moved.describe() == "lib 1.1.0 -> 2.0.0 (moved with it: app 1.5.0 -> 2.0.0)"
    assert moved.to_dict()["moved_with"] == [{"package": "app", "from": "1.5.0", "to": "2.0.0"}]


def write_ends(tmp_path: Path, good: str, bad: str, repro: str) -> None:
    """The two locks and the repro, in tmp_path's good.txt, bad.txt and repro.py."""
    (tmp_path / "good.txt").write_text(good)
    (tmp_path / "bad.txt").write_text(bad)
    (tmp_path / "repro.py").write_text(repro)


def cli_args(
    index: LocalIndex, python: str, tmp_path: Path, good: str, bad: str, repro: str
) -> list[str]:
    """``diff GOOD BAD`` on the test's index, the locks and repro written (``write_ends``)."""
    write_ends(tmp_path, good, bad, repro)
    return ["diff", str(tmp_path / "good.txt"), str(tmp_path / "bad.txt"),
            *on_index(index.url, python, tmp_path, cache=True),
            "--repro", str(tmp_path / "repro.py")]  # fmt: skip


def options(
    index: LocalIndex, python: str, tmp_path: Path, good: str, bad: str, repro: str
) -> DiffOptions:
    write_ends(tmp_path, good, bad, repro)
    return DiffOptions(
        good=str(tmp_path / "good.txt"),
        bad=str(tmp_path / "bad.txt"),
        common=flat_options(
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
    assert res.to_dict()["interaction"] is False
    # ddmin names datelib; its first bad version between 1.1.0 and 1.4.0 is 1.3.0.
    assert res.to_dict()["culprits"] == [
        {"package": "datelib", "good_version": "1.2.0", "bad_version": "1.3.0"}
    ]
    assert "datelib==1.1.0" in Path(str(res.lock_path)).read_text()
    # The lock and its PEP 751 twin install elsewhere on their own, and pass there.
    install_and_run(
        Path(str(res.lock_path)), Path(str(res.pylock_path)), "dateapp", python, tmp_path
    )


@pytest.mark.slow
def test_goods_own_move_is_not_a_change(
    index: LocalIndex, python: str, tmp_path: Path, recorder: RecordingProgress
) -> None:
    """GOOD pins gapwheel 1.0.0, which has no wheel for this target: the planner installs
    1.1.0 (inside the span). That is GOOD as probed, not a change: ddmin must not tie
    gapwheel to every failing subset (bench/realworld.py's flask locks: markupsafe 2.1.1)."""
    res = run_diff(options(
        index, python, tmp_path,
        good="gapwheel==1.0.0\ngapculprit==1.0.0\n",
        bad="gapwheel==1.2.0\ngapculprit==2.0.0\n",
        repro="import gapculprit\ngapculprit.run()\n",
    ), recorder)  # fmt: skip
    assert [c.change for c in res.culprits] == [("gapculprit", "1.0.0", "2.0.0")]
    assert res.to_dict()["interaction"] is False
    assert any("GOOD as it installs here: gapwheel 1.0.0 -> 1.1.0" in m for m in recorder.messages)
    changed = {c["package"]: c["good_version"] for c in res.to_dict()["changed"]}
    assert changed == {"gapwheel": "1.1.0", "gapculprit": "1.0.0"}


@pytest.mark.slow
def test_an_interaction_needs_both_upgrades(index: LocalIndex, python: str, tmp_path: Path) -> None:
    res = run_diff(options(
        index, python, tmp_path,
        good="pairapp==1.0.0\npair-a==1.0.0\npair-b==1.0.0\nnoiselib==0.0.0\n",
        bad="pairapp==1.0.0\npair-a==2.0.0\npair-b==2.0.0\nnoiselib==0.4.0\n",
        repro="import pairapp\npairapp.run()\n",
    ))  # fmt: skip
    assert res.to_dict()["interaction"] is True
    assert sorted(c["package"] for c in res.to_dict()["culprits"]) == ["pair-a", "pair-b"]
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
        'lock-version = "1.0"\nrequires-python = "==3.99.*"\ncreated-by = "test"\n\n'
        '[[packages]]\nname = "datelib"\nversion = "1.0.0"\n'
        'wheels = [{name = "datelib-1.0.0-py3-none-any.whl", url = "https://example.org/d.whl", '
        'hashes = {sha256 = "00"}}]\n'
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
    res = run_diff(replace(opts, common=flat_with(opts.common, repeat=6)))
    assert [c["package"] for c in res.to_dict()["culprits"]] == ["flakylib"]
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
    assert res.to_dict()["interaction"] is False
    assert res.to_dict()["culprits"] == [
        {"package": "tiedlib", "good_version": "1.1.0", "bad_version": "2.0.0"}
    ]
    forced = res.row("apply noiselib 0.0.0->0.4.0, tiedapp 1.0.0->2.0.0")
    assert forced is not None and forced.outcome.kind is OutcomeKind.FAIL
    assert forced.moved == (Moved(package="tiedlib", before="1.0.0", after="2.0.0"),)
    assert [r.version for r in res.rows][2:4] == [
        "apply noiselib 0.0.0->0.4.0, tiedapp 1.0.0->2.0.0",
        "apply tiedlib 1.0.0->2.1.0",
    ]


@pytest.mark.slow
def test_a_move_another_change_forces_is_moved_with_it_not_a_culprit(
    index: LocalIndex, python: str, tmp_path: Path
) -> None:
    """tiedapp 1.5 needs tiedlib<2 and tiedapp 2.0 needs tiedlib>=2: neither change can be
    probed without the other, so ddmin keeps both. But tiedapp 2.0 forces tiedlib's move
    (GOOD's 1.0 is not >=2), and GOOD + tiedapp 2.0 (tiedlib 2.0) fails: tiedapp is the
    culprit, tiedlib moved with it; with --jobs 2."""
    opts = options(
        index, python, tmp_path,
        good="tiedapp==1.5.0\ntiedlib==1.0.0\n",
        bad="tiedapp==2.0.0\ntiedlib==2.1.0\n",
        repro="import tiedapp\ntiedapp.run()\n",
    )  # fmt: skip
    res = run_diff(replace(opts, common=flat_with(opts.common, jobs=2)))
    assert res.to_dict()["interaction"] is False
    assert res.to_dict()["culprits"] == [
        {"package": "tiedapp", "good_version": "1.5.0", "bad_version": "2.0.0",
         "moved_with": [{"package": "tiedlib", "from": "1.0.0", "to": "2.0.0"}],
         "forced": ["tiedlib"]},
    ]  # fmt: skip
    roots = res.to_dict()["roots"]
    assert (roots["ddmin"], roots["roots"], roots["verified"]) == (
        ["tiedapp", "tiedlib"],
        ["tiedapp"],
        True,
    )
    report = Path(str(res.report_path)).read_text()
    assert "- forced by tiedapp 2.0.0: tiedlib (its requirements; not culprits)\n" in report


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
    assert res.to_dict()["culprits"] == [
        {"package": "spanlib", "good_version": "1.1.0", "bad_version": "1.3.0"}
    ]
    outside = res.row("spanlib 1.2.0")
    assert outside is not None and outside.outcome.kind is OutcomeKind.UNTESTABLE
    assert all((d.name, d.version) != ("spandep", "0.9.0") for r in res.rows for d in r.installed)


@pytest.mark.slow
def test_the_cli_names_what_moved_with_each_culprit(
    index: LocalIndex, python: str, tmp_path: Path
) -> None:
    """The text lines and --json of the tied pair: tiedapp, with tiedlib forced (the second
    run is answered by the store)."""
    args = cli_args(index, python, tmp_path, good="tiedapp==1.5.0\ntiedlib==1.0.0\n",
                    bad="tiedapp==2.0.0\ntiedlib==2.1.0\n",
                    repro="import tiedapp\ntiedapp.run()\n")  # fmt: skip
    text = envbisect(*args)
    assert text.returncode == 0, text.stderr
    assert text.stdout.splitlines()[:3] == [
        "culprit: tiedapp 1.5.0 -> 2.0.0 (moved with it: tiedlib 1.0.0 -> 2.0.0)",
        "forced by tiedapp 2.0.0: tiedlib (its requirements; not culprits)",
        "roots verified: GOOD + tiedapp 2.0.0: fail; GOOD (without tiedapp): pass",
    ]
    data = json.loads(envbisect(*args, "--json").stdout)
    assert [(c["moved_with"], c["forced"]) for c in data["culprits"]] == [
        ([{"package": "tiedlib", "from": "1.0.0", "to": "2.0.0"}], ["tiedlib"]),
    ]


def test_roots_leave_out_what_a_change_forces() -> None:
    """The reduction on Requires-Dist in memory: a dependency GOOD lacks, one reached only
    through an extra, one whose GOOD version would do (not forced), one under a marker that
    never applies (not read), and a cycle (both roots)."""
    good = {"app": Version("1.0"), "lib": Version("1.0"), "old": Version("1.0")}
    requires = {
        ("app", "2.0"): ["lib", "dep1", "dep2[fast]", "old>=1"],
        ("dep1", "1.0"): ['lib>=1.1; python_version < "3"'],
        ("dep2", "1.0"): ['dep3; extra == "fast"'],
        ("dep3", "1.0"): [],
        ("lib", "1.1"): [],
        ("old", "1.5"): [],
    }

    def deps(name: str, version: Version) -> list[Requirement]:
        return [Requirement(r) for r in requires[(name, str(version))]]

    markers = {"python_version": "3.11", "python_full_version": "3.11.0"}
    members: list[Change] = [("app", "1.0", "2.0"), ("dep1", None, "1.0"),
                             ("dep2", None, "1.0"), ("dep3", None, "1.0"),
                             ("lib", "1.0", "1.1"), ("old", "1.0", "1.5")]  # fmt: skip
    roots, forced = reduce(members, good, deps, markers)
    assert [r[0] for r in roots] == ["app", "lib", "old"]
    assert forced == {"app": ("dep1", "dep2", "dep3")}
    assert forcing(members, good, deps, markers)["dep2"] == {"dep3"}
    # Each of a and b requires a version of the other GOOD lacks: neither is forced from
    # outside their cycle, so both are roots; c, which a requires, is forced by both.
    cycle = {"a": {"b", "c"}, "b": {"a"}, "c": set()}
    assert root_names(cycle) == {"a", "b"}


ROOTS_GOOD = "rootapp==1.0.0\nrootlib==1.0.0\n"
ROOTS_BAD = "rootapp==2.0.0\nrootdep1==1.0.0\nrootdep2==1.0.0\nrootdep3==1.0.0\nrootlib==1.1.0\n"
DRAGGED = [{"package": f"rootdep{i}", "from": None, "to": "1.0.0"} for i in (1, 2, 3)]


@pytest.mark.slow
def test_a_new_major_version_is_the_culprit_not_what_it_drags_in(
    index: LocalIndex, python: str, tmp_path: Path
) -> None:
    """rootapp 2.0 breaks alone and drags in rootdep1-3 (rootdep3 through rootdep2's extra).
    ddmin cannot remove them (rootapp 2.0 never comes without them); the roots can: rootapp
    is the culprit, rootdep1-3 are forced, rootlib's move is noise. The two verification
    probes are answered by the store (ddmin probed both environments): 8 builds in all."""
    res = run_diff(options(index, python, tmp_path, good=ROOTS_GOOD, bad=ROOTS_BAD,
                           repro="import rootapp\nrootapp.run()\n"))  # fmt: skip
    assert res.to_dict()["interaction"] is False
    assert res.to_dict()["culprits"] == [
        {"package": "rootapp", "good_version": "1.0.0", "bad_version": "2.0.0",
         "moved_with": DRAGGED, "forced": ["rootdep1", "rootdep2", "rootdep3"]}
    ]  # fmt: skip
    assert res.to_dict()["roots"] == {
        "ddmin": ["rootapp", "rootdep1", "rootdep2", "rootdep3"],
        "roots": ["rootapp"],
        "verified": True,
        "checks": [
            {"environment": "GOOD + rootapp 2.0.0", "expected": "fail like BAD",
             "outcome": "fail", "held": True},
            {"environment": "GOOD (without rootapp)", "expected": "pass or unresolvable",
             "outcome": "pass", "held": True},
        ],
    }  # fmt: skip
    checks = [r for r in res.rows if r.version.startswith("roots: ")]
    assert [(r.version, r.outcome.kind, r.reused) for r in checks] == [
        ("roots: GOOD + rootapp 2.0.0", OutcomeKind.FAIL, True),
        ("roots: GOOD (without rootapp)", OutcomeKind.PASS, True),
    ]
    assert checks[0].moved == tuple(
        Moved(package=f"rootdep{i}", before=None, after="1.0.0") for i in (1, 2, 3)
    )
    assert sum(not r.reused for r in res.rows) == 8
    report = Path(str(res.report_path)).read_text()
    assert report.split("## Culprit\n\n")[1].split("\n\n")[0].splitlines() == [
        f"- {line}" for line in res.lines()
    ]
    assert res.lines() == [
        "culprit: rootapp 1.0.0 -> 2.0.0 (moved with it: rootdep1 absent -> 1.0.0, "
        "rootdep2 absent -> 1.0.0, rootdep3 absent -> 1.0.0)",
        "forced by rootapp 2.0.0: rootdep1, rootdep2, rootdep3 (its requirements; not culprits)",
        "roots verified: GOOD + rootapp 2.0.0: fail; GOOD (without rootapp): pass",
    ]


@pytest.mark.slow
def test_an_interaction_of_two_roots_through_the_cli(
    index: LocalIndex, python: str, tmp_path: Path
) -> None:
    """rootapp 2.0's pair() breaks only with rootlib 1.1. ddmin keeps all five changes; the
    roots are rootapp and rootlib (rootapp 2.0 requires rootlib, but GOOD's 1.0 would do):
    an interaction, the dragged-in ones rootapp's alone. The text, report.md and --json say
    the same. 10 environments built, the three checks answered by the store (ddmin probed
    them); the --json run is answered by the store too: nothing built."""
    args = cli_args(index, python, tmp_path, good=ROOTS_GOOD, bad=ROOTS_BAD,
                    repro="import rootapp\nrootapp.pair()\n")  # fmt: skip
    text = envbisect(*args)
    assert text.returncode == 0, text.stderr
    lines = [
        "interaction: rootapp 1.0.0 -> 2.0.0 (moved with it: rootdep1 absent -> 1.0.0, "
        "rootdep2 absent -> 1.0.0, rootdep3 absent -> 1.0.0)",
        "interaction: rootlib 1.0.0 -> 1.1.0",
        "an interaction: the failure needs all of them together",
        "forced by rootapp 2.0.0: rootdep1, rootdep2, rootdep3 (its requirements; not culprits)",
        "roots verified: GOOD + rootapp 2.0.0, rootlib 1.1.0: fail; GOOD + rootlib 1.1.0 "
        "(without rootapp): pass; GOOD + rootapp 2.0.0 (without rootlib): pass",
    ]
    assert text.stdout.splitlines()[: len(lines)] == lines
    first = Path(text.stdout.splitlines()[-1].removeprefix("report: ")).read_text()
    assert "environments built this run: 10;" in first
    data = json.loads(envbisect(*args, "--json").stdout)
    assert data["interaction"] is True
    assert data["culprits"] == [
        {"package": "rootapp", "good_version": "1.0.0", "bad_version": "2.0.0",
         "moved_with": DRAGGED, "forced": ["rootdep1", "rootdep2", "rootdep3"]},
        {"package": "rootlib", "good_version": "1.0.0", "bad_version": "1.1.0"},
    ]  # fmt: skip
    roots = data["roots"]
    assert (roots["ddmin"], roots["roots"], roots["verified"]) == (
        ["rootapp", "rootdep1", "rootdep2", "rootdep3", "rootlib"],
        ["rootapp", "rootlib"],
        True,
    )
    assert [(c["environment"], c["outcome"]) for c in roots["checks"]] == [
        ("GOOD + rootapp 2.0.0, rootlib 1.1.0", "fail"),
        ("GOOD + rootlib 1.1.0 (without rootapp)", "pass"),
        ("GOOD + rootapp 2.0.0 (without rootlib)", "pass"),
    ]
    assert data["probes"] == []  # the second run built nothing
    checks = [r for r in data["reused"] if r["version"].startswith("roots: ")]
    assert len(checks) == 3
    report = Path(data["report"]).read_text()
    assert all(f"- {line}\n" in report for line in lines)


@pytest.mark.slow
def test_roots_that_do_not_verify_fall_back_to_ddmins_set(
    index: LocalIndex, python: str, tmp_path: Path
) -> None:
    """roothost 2.0 requires rootpeer>=2, so rootpeer's move looks forced; but the failure
    needs rootpeer 2.1, and GOOD + roothost 2.0 takes rootpeer 2.0, which passes. The roots
    do not verify: the culprits are ddmin's set (an interaction), with a note saying why."""
    res = run_diff(options(
        index, python, tmp_path,
        good="roothost==1.0.0\nrootpeer==1.0.0\n",
        bad="roothost==2.0.0\nrootpeer==2.1.0\n",
        repro="import roothost\nroothost.run()\n",
    ))  # fmt: skip
    assert res.to_dict()["interaction"] is True
    assert res.to_dict()["culprits"] == [
        {"package": "roothost", "good_version": "1.0.0", "bad_version": "2.0.0",
         "moved_with": [{"package": "rootpeer", "from": "1.0.0", "to": "2.0.0"}]},
        {"package": "rootpeer", "good_version": "2.0.0", "bad_version": "2.1.0",
         "moved_with": [{"package": "roothost", "from": "1.0.0", "to": "2.0.0"}]},
    ]  # fmt: skip
    roots = res.to_dict()["roots"]
    assert (roots["roots"], roots["verified"]) == (["roothost"], False)
    assert roots["note"] == (
        "the roots (roothost) did not verify (GOOD + roothost 2.0.0: pass, expected fail like "
        "BAD): the culprits are ddmin's set"
    )
    assert [(c["environment"], c["outcome"], c["held"]) for c in roots["checks"]] == [
        ("GOOD + roothost 2.0.0", "pass", False),
        ("GOOD (without roothost)", "pass", True),
    ]
    assert res.lines()[-1] == f"roots not verified: {roots['note']}"
    # GOOD, BAD and GOOD + roothost 2.0 (rootpeer 2.0): the rest, checks included, reused.
    assert sum(not r.reused for r in res.rows) == 3
