"""Two different failures in one range, for real (tests/support/corpus.py ``_two_family``):
twoapp 1.0.0 is pinned; twolib 1.3.0 removes the a() it calls, 1.8.0 the b() it calls first.
The newest environment fails on b, the middle of the window on a. Each mode must find both
breakpoints in log time (within k·(ceil(log2 n) + 1) + 2 probes for k = 2 failures over n
candidates), never by walking past the other failure: by version, by date, and the lock.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest

from conftest import RecordingProgress
from envbisect.core.results.parts import ProbeRow, RowVerdict, Status
from envbisect.core.runreport import breakpoints_line, verdict_line
from envbisect.env.repro import Repro
from envbisect.model import IndexConfig
from envbisect.modes.bydate import DateOptions, run_by_date
from envbisect.modes.lock.solve import LockOptions, Strategy, run_lock
from envbisect.modes.run import RunOptions, run_bisect
from envbisect.options import CommonOptions
from support.corpus import EPOCH, TWO_A, TWO_B
from support.index_server import LocalIndex
from support.options import flat_options, flat_with

pytestmark = pytest.mark.slow

A_ERROR = "AttributeError: module 'twolib' has no attribute 'a'"
B_ERROR = "AttributeError: module 'twolib' has no attribute 'b'"


def bound(k: int, n: int) -> int:
    """The issue's bound on probes for k distinct failures over n candidates."""
    return k * (math.ceil(math.log2(n)) + 1) + 2


def common(index: LocalIndex, python: str, tmp: Path) -> CommonOptions:
    repro = tmp / "repro.py"
    repro.write_text("import twoapp\ntwoapp.run()\n")
    return flat_options(
        repro=Repro.build(origin=tmp, repro_file=str(repro)),
        indexes=IndexConfig(index_url=index.url),
        python=python,
        results=tmp / "results",
        cache_dir=tmp / "cache",
    )


def built(rows: Sequence[ProbeRow]) -> int:
    return sum(1 for r in rows if not r.reused and r.build_seconds > 0)


def test_by_version_both_breakpoints_in_log_time(
    index: LocalIndex, python: str, tmp_path: Path, recorder: RecordingProgress
) -> None:
    opts = RunOptions(package="twolib", common=common(index, python, tmp_path),
                      with_reqs=("twoapp==1.0.0", "twonoise==0.0.0"))  # fmt: skip
    res = run_bisect(opts, recorder)
    first_a, first_b = f"1.{TWO_A}.0", f"1.{TWO_B}.0"
    # The bad end's failure (b) starts at 1.8.0; 1.7.0 before it fails on a; 1.2.0 passes.
    assert (res.status, res.first_new, res.last_old, res.neighbour) == (
        Status.FOUND, first_b, f"1.{TWO_A - 1}.0", f"1.{TWO_B - 1}.0",
    )  # fmt: skip
    assert [(b.first_new, b.outcome.signature) for b in res.breakpoints] == [
        (first_a, A_ERROR),
        (first_b, B_ERROR),
    ]
    assert len(recorder.started) <= bound(2, res.candidates)
    assert len(recorder.started) == len(set(recorder.started))  # never a point twice
    assert RowVerdict.SKIP not in {
        r.verdict for r in res.rows
    }  # a's failure is a segment, not a gap
    line = verdict_line(res)
    assert f"first bad version of twolib: {first_b}" in line
    assert f"the version before it, 1.{TWO_B - 1}.0, fails another way" in line
    assert breakpoints_line(res) == (
        f"breakpoints: {first_a}: fail ({A_ERROR}) (the first failure); {first_b}: fail ({B_ERROR})"
    )
    data = res.to_dict()
    assert [(b["first_bad"], b["last_good"]) for b in data["breakpoints"]] == [
        (first_a, f"1.{TWO_A - 1}.0"),
        (first_b, f"1.{TWO_B - 1}.0"),
    ]
    # With --any-failure the answer is the first failure of any kind; the store answers the
    # points it shares with the first search.
    anyf = run_bisect(replace(opts, common=flat_with(opts.common, any_failure=True)))
    assert (anyf.first_new, anyf.last_old, anyf.neighbour) == (first_a, f"1.{TWO_A - 1}.0", None)
    assert [b.first_new for b in anyf.breakpoints] == [first_a, first_b]
    assert all(r.reused for r in anyf.rows)


def test_by_date_both_breakpoints_in_log_time(
    index: LocalIndex, python: str, tmp_path: Path, recorder: RecordingProgress
) -> None:
    opts = DateOptions(
        good=(EPOCH + timedelta(hours=12)).isoformat(),
        bad=(EPOCH + timedelta(days=40)).isoformat(),
        with_reqs=("twoapp==1.0.0",),
        common=common(index, python, tmp_path),
    )
    res = run_by_date(opts, recorder)
    assert res.status is Status.FOUND
    assert res.first_new is not None and f"twolib 1.{TWO_B}.0" in res.first_new
    assert res.neighbour is not None  # the moment before it fails on a
    points = [(b.first_new, b.outcome.signature) for b in res.breakpoints]
    assert [sig for _, sig in points] == [A_ERROR, B_ERROR]
    assert f"twolib 1.{TWO_A}.0" in points[0][0]
    # About 50 release moments (twolib and twonoise): both boundaries in log time, plus the
    # culprit confirmed alone on the environment right before the first bad moment.
    assert res.candidates > 45
    search = [v for v in recorder.started if not v.startswith("envbisect")]
    assert len(search) <= bound(2, res.candidates) + 1
    culprits = res.to_dict()["culprits"]
    assert [(c["package"], c["bad_version"]) for c in culprits] == [("twolib", f"1.{TWO_B}.0")]
    (conf,) = res.to_dict()["confirmation"]
    assert conf["confirmed"] is True  # 1.7.0's environment with twolib 1.8.0 fails on b


def test_lock_past_a_second_failure(
    index: LocalIndex, python: str, tmp_path: Path, recorder: RecordingProgress
) -> None:
    # The search by date is what this checks (auto would hold twolib back at once: each
    # failure names it).
    opts = LockOptions(common=common(index, python, tmp_path), with_reqs=("twoapp==1.0.0",),
                       strategy=Strategy.HISTORY)  # fmt: skip
    res = run_lock(opts, recorder)
    assert res.status is Status.FOUND
    (c,) = res.to_dict()["constraints"]
    # Every failure fails the environment: the first one (a, from twolib 1.3.0) is held
    # back; b's breakpoint (1.8.0) has the same culprit, covered by it.
    assert (c["package"], c["specifier"], c["last_good"]) == (
        "twolib", f"<1.{TWO_A}.0", f"1.{TWO_A - 1}.0",
    )  # fmt: skip
    assert c["outcome"]["signature"] == A_ERROR  # the failure this constraint answers
    assert "twolib 1.3.0" in c["breakpoint"]
    locked = Path(str(res.lock_path)).read_text()
    assert f"twolib==1.{TWO_A - 1}.0" in locked
    # One date bisection over ~50 moments (two breakpoints in log time), the proof, the
    # newest under the constraint and the check without it: no walk past the other failure.
    moments = next(m for m in recorder.messages if "release moment(s)" in m)
    n = int(moments.split("envbisect: ")[1].split(" ")[0]) + 1
    assert n > 45
    assert len(res.rows) <= bound(2, n) + 6
    assert built(res.rows) <= bound(2, n) + 4
