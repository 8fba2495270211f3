"""envbisect lock on the local index: the newest environment the pins allow in which the repro
passes, with each held-back package proven (tests/support/corpus.py ``_lock_family``: two
independent breaks, a break a later release fixed, an interaction, upgrade mode from an old
lock), and the locks it writes installed for real with uv and pip, hashes required, in fresh
environments where the repro passes again."""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

from support.options import flat_with

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

import pytest
from packaging.pylock import Pylock

from envbisect.core.results.lock import HeldBack
from envbisect.core.results.parts import Status
from envbisect.errors import UsageError
from envbisect.model import IndexConfig
from envbisect.modes.lock.solve import Strategy, run_lock
from support.cli import envbisect
from support.corpus import EPOCH
from support.index_server import LocalIndex
from support.installs import install_and_run
from support.locks import locked, options, repro
from support.wheels import build_wheel

pytestmark = pytest.mark.slow


def test_one_break_is_held_below_its_first_bad_release(
    index: LocalIndex, python: str, tmp_path: Path
) -> None:
    res = run_lock(options(index, python, tmp_path, "lockone", with_reqs=("lockone==1.0.0",)))
    assert res.status is Status.FOUND
    (c,) = res.to_dict()["constraints"]
    assert (c["package"], c["specifier"], c["first_bad"], c["last_good"]) == (
        "lk-alpha", "<1.3.0", "1.3.0", "1.2.0",
    )  # fmt: skip
    assert c["outcome"]["kind"] == "fail"
    assert "AttributeError" in c["outcome"]["signature"] and "feature" in c["outcome"]["signature"]
    # The proof is two probes of this run, in one environment: 1.2.0 passed, 1.3.0 failed.
    rows = {r.version: r for r in res.rows}
    assert rows[c["evidence"]["passed"]].outcome.kind.value == "pass"
    assert rows[c["evidence"]["failed"]].outcome.kind.value == "fail"
    assert locked(res.lock_path) == {"lockone": "1.0.0", "lk-alpha": "1.2.0"}
    assert res.held_back == (HeldBack(package="lk-alpha", locked="1.2.0", newest="1.4.0"),)
    cons = Path(str(res.constraints_file)).read_text()
    assert "lk-alpha<1.3.0  # 1.3.0 fail (AttributeError" in cons
    report = Path(res.report_path or "").read_text()
    assert "lk-alpha<1.3.0" in report and "proof" in report
    # The locks say where their files come from, and carry hashes.
    text = Path(res.lock_path or "").read_text()
    assert f"--index-url {index.url}" in text and "--hash=sha256:" in text
    assert res.pylock_path is not None
    Pylock.from_dict(tomllib.loads(Path(res.pylock_path).read_text()))  # PEP 751, checked
    install_and_run(Path(res.lock_path or ""), Path(res.pylock_path), "lockone", python, tmp_path)
    # Asked again: every probe comes from the store, the same answer.
    again = run_lock(options(index, python, tmp_path, "lockone", with_reqs=("lockone==1.0.0",)))
    assert again.to_dict()["constraints"][0]["first_bad"] == "1.3.0"
    assert all(r.reused for r in again.rows)


@pytest.mark.parametrize("strategy", ["auto", "history"])
def test_two_breaks_two_constraints_and_a_fixed_break_none(
    index: LocalIndex, python: str, tmp_path: Path, strategy: str
) -> None:
    """lockapp's newest environment fails twice over (lk-alpha 1.3, lk-beta 2.0); lk-fix 1.2
    broke it too, but 1.3 fixed it: no constraint for lk-fix, which is locked at its newest.
    auto: each failure names its package (``module 'lk_alpha' has no attribute``), held back
    at once, in no more environments than a person upgrading one package at a time builds
    (8: bench/bench_lock.py); history: the search by date finds the same."""
    rep = repro(tmp_path, "lockapp")
    out = envbisect(
        "lock", "--with", "lockapp==1.0.0", "--strategy", strategy,
        "--index-url", index.url, "--python", python, "--results", str(tmp_path / "results"),
        "--cache-dir", str(tmp_path / "cache"), "--repro", str(rep), "--json", cwd=tmp_path,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["status"] == "found"
    held = {c["package"]: (c["first_bad"], c["last_good"]) for c in data["constraints"]}
    assert held == {"lk-alpha": ("1.3.0", "1.2.0"), "lk-beta": ("2.0.0", "1.1.0")}
    assert locked(data["lock"]) == {
        "lockapp": "1.0.0", "lk-alpha": "1.2.0", "lk-beta": "1.1.0", "lk-fix": "1.4.0",
        "lk-noise": "0.5.0",
    }  # fmt: skip
    assert data["probes"] and all("outcome" in p for p in data["probes"])
    assert {"pylock", "constraints_file", "reused", "report"} <= data.keys()
    lines = Path(data["constraints_file"]).read_text().splitlines()
    assert [ln.split()[0] for ln in lines if not ln.startswith("#")] == [
        "lk-alpha<1.3.0", "lk-beta<2.0.0",
    ]  # fmt: skip
    # Each constraint is still needed in the final lock: without it, the newest fails.
    assert all(c["still_needed"]["outcome"]["kind"] == "fail" for c in data["constraints"])
    if strategy == "history":
        # The starting point was the first moment after lockapp's upload at which it resolves.
        assert "first moment after" in out.stderr
        assert {c["found_by"] for c in data["constraints"]} == {"date"}
    else:
        assert {c["found_by"] for c in data["constraints"]} == {"descent"}
        assert len(data["probes"]) <= 8
        assert "first moment after" not in out.stderr  # no search of the history
    Pylock.from_dict(tomllib.loads(Path(data["pylock"]).read_text()))
    install_and_run(Path(data["lock"]), Path(data["pylock"]), "lockapp", python, tmp_path)


def test_upgrade_mode_from_an_old_lock(index: LocalIndex, python: str, tmp_path: Path) -> None:
    old = tmp_path / "old.txt"
    old.write_text(
        "lockapp==1.0.0\nlk-alpha==1.0.0\nlk-beta==1.0.0\nlk-fix==1.0.0\nlk-noise==0.0.0\n"
    )
    res = run_lock(options(index, python, tmp_path, "lockapp", from_lock=str(old)))
    assert locked(res.lock_path) == {
        "lockapp": "1.0.0", "lk-alpha": "1.2.0", "lk-beta": "1.1.0", "lk-fix": "1.4.0",
        "lk-noise": "0.5.0",
    }  # fmt: skip
    assert sorted(c["package"] for c in res.to_dict()["constraints"]) == ["lk-alpha", "lk-beta"]


def test_an_interaction_holds_back_the_newer_release(
    index: LocalIndex, python: str, tmp_path: Path
) -> None:
    """lockpair fails with lk-tie-a 2 and lk-tie-b 2 together. By date, lk-tie-b 2.0.0 is the
    release that broke it, proven on an environment that has lk-tie-a 2; from an old lock,
    delta debugging names the pair, and the later release is held back, proven with lk-tie-a
    at 2. Either way lk-tie-a stays at its newest."""
    want = {"lockpair": "1.0.0", "lk-tie-a": "2.0.0", "lk-tie-b": "1.0.0"}
    res = run_lock(options(index, python, tmp_path, "lockpair", with_reqs=("lockpair==1.0.0",)))
    (c,) = res.to_dict()["constraints"]
    assert (c["package"], c["first_bad"], c["last_good"]) == ("lk-tie-b", "2.0.0", "1.0.0")
    assert locked(res.lock_path) == want
    old = tmp_path / "old.txt"
    old.write_text("lockpair==1.0.0\nlk-tie-a==1.0.0\nlk-tie-b==1.0.0\n")
    res = run_lock(options(index, python, tmp_path, "lockpair", from_lock=str(old)))
    (c,) = res.to_dict()["constraints"]
    assert (c["package"], c["first_bad"], c["interaction"]) == ("lk-tie-b", "2.0.0", ["lk-tie-a"])
    assert locked(res.lock_path) == want


def test_what_a_new_major_version_drags_in_is_never_a_constraint(
    index: LocalIndex, python: str, tmp_path: Path
) -> None:
    """From an old lock, the newest rootapp (2.0) breaks and drags in rootdep1-3 (corpus
    ``_roots_family``). diff's ddmin keeps all four; its verified roots are rootapp alone, so
    the one constraint is rootapp<2.0.0, proven with nothing else held (no interaction), the
    dragged-in packages moved with it; rootlib, which rootapp 2.0 does not force, goes to its
    newest."""
    old = tmp_path / "old.txt"
    old.write_text("rootapp==1.0.0\nrootlib==1.0.0\n")
    res = run_lock(options(index, python, tmp_path, "rootapp", from_lock=str(old)))
    (c,) = res.to_dict()["constraints"]
    assert (c["package"], c["specifier"], c["interaction"]) == ("rootapp", "<2.0.0", [])
    assert [m["package"] for m in c["moved_with"]] == ["rootdep1", "rootdep2", "rootdep3"]
    assert locked(res.lock_path) == {"rootapp": "1.0.0", "rootlib": "1.1.0"}
    checks = [r.version for r in res.rows if r.version.startswith("roots: ")]
    assert checks == ["roots: GOOD + rootapp 2.0.0", "roots: GOOD (without rootapp)"]
    # The newest, the start, ddmin's six new subsets and the newest under rootapp<2.0.0; the
    # checks and the proof (the start, and GOOD + rootapp 2.0) come from the store.
    assert sum(not r.reused for r in res.rows) == 9


def test_a_starting_point_that_fails_is_said_and_the_lock_descends(
    index: LocalIndex, python: str, tmp_path: Path
) -> None:
    """As of day 2 lk-fix 1.2.0 is the newest and breaks lockapp: that is no starting point.
    It is said, and lock follows the failures down from the newest environment instead
    (modes/lock/descent.py), to the same two constraints as by date."""
    when = (EPOCH + timedelta(days=2, hours=2)).strftime("%Y-%m-%dT%H:%M:%SZ")
    res = run_lock(options(index, python, tmp_path, "lockapp", with_reqs=("lockapp==1.0.0",),
                           good_date=when, strategy=Strategy.HISTORY))  # fmt: skip
    assert "starting point" in res.descent[0] and "does not pass" in res.descent[0]
    held = {c.package: (c.first_bad, c.last_good, c.found_by) for c in res.constraints}
    assert held == {"lk-alpha": ("1.3.0", "1.2.0", "descent"),
                    "lk-beta": ("2.0.0", "1.1.0", "descent")}  # fmt: skip
    assert locked(res.lock_path)["lk-fix"] == "1.4.0"
    assert res.report_path and "## The descent" in Path(res.report_path).read_text()


def test_bad_input(index: LocalIndex, python: str, tmp_path: Path) -> None:
    ranged = tmp_path / "ranges.txt"
    ranged.write_text("lockone>=1\n")
    cases: list[tuple[dict[str, Any], str]] = [
        ({"from_lock": str(ranged)}, "lock-from-not-lock"),
        ({"with_reqs": ("lockone==1.0.0", "lk-alpha>=9")}, "lock-unresolvable"),
        ({}, "lock-nothing"),
        ({"with_reqs": ("lockone==1.0.0",), "good_date": "yesterday"}, "bad-date"),
    ]
    for kw, ref in cases:
        with pytest.raises(UsageError) as e:
            run_lock(options(index, python, tmp_path, "lockone", **kw))
        assert e.value.ref == ref, (kw, e.value.message)
    # Through the CLI: one error line with its reference, a hint, exit 2, no traceback.
    rep = repro(tmp_path, "lockone")
    out = envbisect(
        "lock", "--from", str(ranged), "--index-url", index.url, "--python", python,
        "--results", str(tmp_path / "r"), "--repro", str(rep), cwd=tmp_path,
    )  # fmt: skip
    assert out.returncode == 2
    assert "is not a lock" in out.stderr and "[lock-from-not-lock]" in out.stderr
    assert "hint:" in out.stderr and "Traceback" not in out.stderr


def test_dry_run_plans_the_newest_and_the_start(
    index: LocalIndex, python: str, tmp_path: Path
) -> None:
    rep = repro(tmp_path, "lockone")
    out = envbisect(
        "lock", "--with", "lockone==1.0.0", "--index-url",
        index.url, "--python", python, "--results", str(tmp_path / "r"), "--repro", str(rep),
        "--dry-run", "--json", cwd=tmp_path,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    plans = json.loads(out.stdout)["plans"]
    assert plans[0]["label"] == "newest" and plans[0]["pins"]["lk-alpha"] == "1.4.0"
    assert (
        plans[1]["label"].startswith("starting point") and plans[1]["pins"]["lk-alpha"] == "1.0.0"
    )
    assert not (tmp_path / "r" / "envbisect.db").exists()


def test_a_lock_from_find_links_says_where_its_files_are(
    index: LocalIndex, python: str, tmp_path: Path
) -> None:
    """A package only in a --find-links folder (as the CPU torch on this machine is): the
    requirements lock names the folder, the PEP 751 lock names the file by path, and both
    install with nothing else said."""
    folder = tmp_path / "wheels"
    folder.mkdir()
    body = "import lk_alpha\n\ndef run():\n    lk_alpha.feature()\n"
    build_wheel(folder, "flapp", "1.0.0", {"flapp/__init__.py": body}, requires=("lk-alpha",))
    opts = options(
        index, python, tmp_path, "flapp", with_reqs=("flapp==1.0.0",), good_date="2024-01-02"
    )  # a file in a folder has no upload time
    opts = replace(opts, common=flat_with(opts.common, indexes=IndexConfig(
        index_url=index.url, find_links=(str(folder),))))  # fmt: skip
    res = run_lock(opts)
    assert locked(res.lock_path) == {"flapp": "1.0.0", "lk-alpha": "1.2.0"}
    text = Path(res.lock_path or "").read_text()
    assert f"--find-links {folder}" in text
    pylock = tomllib.loads(Path(res.pylock_path or "").read_text())
    (app,) = [p for p in pylock["packages"] if p["name"] == "flapp"]
    assert app["wheels"][0]["path"] == str(folder / "flapp-1.0.0-py3-none-any.whl")
    install_and_run(Path(res.lock_path or ""), Path(res.pylock_path or ""), "flapp", python,
                    tmp_path)  # fmt: skip


def test_a_lock_names_only_the_indexes_its_files_came_from() -> None:
    """A mirror that supplied none of the locked files is left out of the lock: under uv's
    first-index rule it would otherwise claim a package whose locked file it does not hold."""
    from envbisect.core.lockfile import LockEntry, requirements_lock
    from envbisect.model import DistFile

    cfg = IndexConfig(
        index_url="https://user:secret@pypi.example/simple",
        extra_index_urls=("file:///opt/mirror/simple", "https://extra.example/simple"),
        find_links=("/srv/wheels",),
    )
    wheel = DistFile(
        filename="six-1.16.0-py2.py3-none-any.whl",
        url="https://f.example/six.whl",
        hashes=(("sha256", "ab" * 32),),
        index="https://extra.example/simple",
    )
    text = requirements_lock([LockEntry(name="six", version="1.16.0", index=None,
                                        files=(wheel,))], header=[], indexes=cfg)  # fmt: skip
    assert text.splitlines()[:2] == [
        "--index-url https://pypi.example/simple",  # no password, ever
        "--extra-index-url https://extra.example/simple",
    ]
    assert "/opt/mirror" not in text and "/srv/wheels" not in text and "secret" not in text
