"""lock's failure-driven descent on the local index (tests/support/descent.py): an old pin on a
newer target, where no moment in time both builds here and passes, and three failures that hide
each other; a failure inside a transitive dependency's frame; a package whose every release
fails; nothing pinned exactly. Real uv environments, real probes; the locks installed with
hashes required."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from conftest import RecordingProgress
from envbisect.core.results.lock import LockResult
from envbisect.core.results.parts import Status
from envbisect.errors import NoAnswer
from envbisect.model import OutcomeKind
from envbisect.modes.lock.solve import Strategy, run_lock
from support.cli import envbisect
from support.descent import OLD_HELD
from support.index_server import LocalIndex
from support.installs import install_and_run
from support.locks import locked, options, repro

pytestmark = pytest.mark.slow


def bound(c: int, n: int) -> int:
    """The issue's probe bound for c constraints over packages of at most n versions."""
    return c * (math.ceil(math.log2(n)) + 2) + c + 2


def check_proofs(res: LockResult) -> None:
    """Each constraint's two probes are in this run: first_bad failed the way it says,
    last_good did not fail that way."""
    rows = {r.version: r for r in res.rows}
    for c in res.constraints:
        failed, passed = rows[c.failed], rows[c.passed]
        assert failed.outcome.kind is OutcomeKind.FAIL, c
        assert failed.outcome.signature == c.outcome.signature
        assert passed.outcome.signature != c.outcome.signature, c


def test_an_old_pin_on_a_newer_python_with_three_masked_failures(
    index: LocalIndex, python: str, tmp_path: Path
) -> None:
    """No moment both builds here and passes: the start (the first moment that resolves, day
    40) fails, so lock descends from the newest, one failure at a time, and finds exactly the
    three constraints; od-ok stays at its newest; the lock installs with hashes and passes."""
    # The history search first (auto would hold od-a back at once, the failure naming it):
    # no start passes, so the lock descends, which is what this test is about.
    res = run_lock(options(index, python, tmp_path, "oldapp", with_reqs=("oldapp==1.0.0",),
                           strategy=Strategy.HISTORY))  # fmt: skip
    assert res.status is Status.FOUND
    held = {c.package: (c.first_bad, c.last_good) for c in res.constraints}
    assert held == OLD_HELD
    assert {c.found_by for c in res.constraints} == {"descent"}
    check_proofs(res)
    # od-a and od-b's last good fail another way (the failure they masked); od-c's passes.
    below = {c.package: c.last_good_outcome for c in res.constraints}
    assert below["od-a"] is not None and "fb" in below["od-a"].signature
    assert below["od-b"] is not None and "fc" in below["od-b"].signature
    assert below["od-c"] is None
    assert all(
        c.still_needed is not None and c.still_needed.kind is OutcomeKind.FAIL
        for c in res.constraints
    )
    lock = locked(res.lock_path)
    assert lock == {
        "oldapp": "1.0.0",
        "od-a": "1.1.0",
        "od-b": "1.2.0",
        "od-c": "1.0.0",
        "od-helper": "2.0.0",
        "od-base": "2.0.0",
        "od-ok": "0.4.0",
    }
    built = [r for r in res.rows if not r.reused]
    assert len(built) <= bound(3, 5) + 1  # + the by-date start, which failed
    steps = res.to_dict()["descent"]
    assert steps[0].startswith("why: the starting point") and "does not pass" in steps[0]
    assert any("suspects, in order: od-a" in s for s in steps)
    report = Path(res.report_path or "").read_text()
    assert "## The descent" in report and "found by descent" in report
    install_and_run(Path(res.lock_path or ""), Path(res.pylock_path or ""), "oldapp", python,
                    tmp_path)  # fmt: skip


def test_the_descent_with_two_jobs_through_the_cli(
    index: LocalIndex, python: str, tmp_path: Path
) -> None:
    rep = repro(tmp_path, "oldapp")
    out = envbisect(
        "lock", "--with", "oldapp==1.0.0", "--strategy", "descent", "--jobs", "2",
        "--index-url", index.url, "--python", python, "--results", str(tmp_path / "results"),
        "--cache-dir", str(tmp_path / "cache"), "--repro", str(rep), "--json", cwd=tmp_path,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    held = {c["package"]: (c["first_bad"], c["last_good"]) for c in data["constraints"]}
    assert held == OLD_HELD
    assert all(c["found_by"] == "descent" for c in data["constraints"])
    assert data["descent"][0] == "--strategy descent: descending from the newest"
    assert "descent: " in out.stderr and "Traceback" not in out.stderr


def test_a_failure_inside_a_transitive_dependency_is_held_there(
    index: LocalIndex, python: str, tmp_path: Path
) -> None:
    """td-deep 2.0.0 raises in its own code, with a message that names nothing: the frame
    that raised is td-deep's, so td-deep is the first suspect, and the one held back."""
    opts = options(
        index, python, tmp_path, "tdapp", with_reqs=("tdapp==1.0.0",), strategy=Strategy.DESCENT
    )
    res = run_lock(opts)
    ((c),) = res.constraints
    assert (c.package, c.first_bad, c.last_good) == ("td-deep", "2.0.0", "1.1.0")
    assert locked(res.lock_path)["td-mid"] == "1.2.0"  # the caller stays at its newest
    assert "suspects, in order: td-deep" in res.descent[1]


def test_a_package_whose_every_release_fails_is_said_not_looped(
    index: LocalIndex, python: str, tmp_path: Path
) -> None:
    with pytest.raises(NoAnswer) as e:
        run_lock(options(index, python, tmp_path, "allbad", with_reqs=("allbad==1.0.0",),
                         strategy=Strategy.DESCENT))  # fmt: skip
    assert "ab-lib cannot be held back far enough" in e.value.message
    assert "0.0.0, fails the same way" in e.value.message
    res = e.value.result
    assert isinstance(res, LockResult) and res.report_path
    # The newest, then ab-lib's oldest: nothing else to build (allbad is pinned).
    assert sum(not r.reused for r in res.rows) == 2


def test_nothing_pinned_exactly_descends_from_the_newest(
    index: LocalIndex, python: str, tmp_path: Path
) -> None:
    """With no exact pin there is no date known to have worked: lock descends instead of
    giving up (it said "lock-no-start" before)."""
    res = run_lock(options(index, python, tmp_path, "lockone", with_reqs=("lockone",),
                           strategy=Strategy.HISTORY))  # fmt: skip
    ((c),) = res.constraints
    assert (c.package, c.first_bad, c.last_good, c.found_by) == (
        "lk-alpha", "1.3.0", "1.2.0", "descent",
    )  # fmt: skip
    assert "nothing is pinned exactly" in res.descent[0]


def test_a_start_of_mixed_dates_where_the_target_forces_it(
    index: LocalIndex, python: str, tmp_path: Path, recorder: RecordingProgress
) -> None:
    """fwd-helper's release of fwdapp's day has no wheel here: the starting point keeps that
    day for everything else and moves fwd-helper alone to its first release that installs
    (said); it passes, and the search by date holds fwd-lib back."""
    opts = options(index, python, tmp_path, "fwdapp", with_reqs=("fwdapp==1.0.0",),
                   strategy=Strategy.HISTORY)  # fmt: skip
    res = run_lock(opts, recorder)
    assert any(
        "at their first release that installs: fwd-helper 1.1.0" in m for m in recorder.messages
    )
    ((c),) = res.constraints
    assert (c.package, c.first_bad, c.last_good, c.found_by) == (
        "fwd-lib", "2.0.0", "1.0.0", "date",
    )  # fmt: skip
    assert not res.descent
    assert locked(res.lock_path) == {"fwdapp": "1.0.0", "fwd-helper": "1.1.0", "fwd-lib": "1.0.0"}
    start = next(r for r in res.rows if "start of the window" in r.version)
    assert start.outcome.kind is OutcomeKind.PASS
    assert {(d.name, d.version) for d in start.installed} >= {("fwd-helper", "1.1.0")}
