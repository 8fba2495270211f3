"""The bisection state machine on scripted outcomes: the path and the answer.

No environments: outcomes are fed in as the engine would feed them (mozregression's habit).
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from envbisect.core.results.parts import Direction, ProbeRow, RowVerdict, SearchMode, Status
from envbisect.model import Outcome, OutcomeKind
from envbisect.strategy.bisect import Bisector, SteppedEnd
from envbisect.strategy.protocol import Bisection, drawing

PASS = Outcome(kind=OutcomeKind.PASS, exit_code=0)
SEGV = Outcome(kind=OutcomeKind.CRASH, signal="SIGSEGV", signature="SIGSEGV")
ABRT = Outcome(kind=OutcomeKind.CRASH, signal="SIGABRT", signature="SIGABRT")
VALUE = Outcome(kind=OutcomeKind.FAIL, exit_code=1, exception="ValueError", signature="ValueError")
SKIP = Outcome(kind=OutcomeKind.UNTESTABLE, signature="uv failed")


def drive(bis: Bisector, truth: list[Outcome]) -> list[int]:
    visited = []
    while (i := bis.next()) is not None:
        visited.append(i)
        bis.record(i, truth[i])
    return visited


def test_path_and_answer_on_a_plain_regression() -> None:
    truth = [PASS] * 5 + [SEGV] * 11
    bis = Bisector(n=16)
    visited = drive(bis, truth)
    assert visited == [0, 15, 7, 3, 5, 4]
    res = bis.result
    assert res is not None and res.status == Status.FOUND
    assert (res.first_new, res.last_old, res.direction) == (5, 4, Direction.REGRESSION)
    assert len(visited) <= math.ceil(math.log2(16)) + 2


def test_an_untestable_midpoint_is_stepped_around() -> None:
    truth = [PASS] * 4 + [SKIP] + [SEGV] * 4
    bis = Bisector(n=9)
    visited = drive(bis, truth)
    # ends, then the middle (4) is untestable: its nearest neighbour (3) is tried next.
    assert visited[:4] == [0, 8, 4, 3]
    res = bis.result
    assert res is not None and res.status == Status.AMBIGUOUS and res.possible == (4, 5)
    assert 5 in visited


def test_named_good_end_must_pass() -> None:
    bis = Bisector(n=5, good=1, bad=3)
    assert drive(bis, [PASS, SEGV, SEGV, SEGV, SEGV]) == [1, 3]
    res = bis.result
    assert res is not None and res.status == Status.NO_ANSWER and "both ends fail" in res.reason


def test_good_newer_than_bad_searches_for_the_fix() -> None:
    truth = [VALUE] * 3 + [PASS] * 3
    bis = Bisector(n=6, good=5, bad=0)
    drive(bis, truth)
    res = bis.result
    assert res is not None and (res.direction, res.first_new, res.last_old) == (Direction.FIX, 3, 2)


def test_named_ends_contradicting_the_truth_say_so() -> None:
    # --good 0 --bad 4 but the old end fails and the new one passes: not a regression.
    bis = Bisector(n=5, good=0, bad=4)
    drive(bis, [VALUE, VALUE, PASS, PASS, PASS])
    res = bis.result
    assert res is not None and res.status == Status.NO_ANSWER
    assert "good end does not pass" in res.reason


def test_unnamed_ends_step_inward_past_untestable_points() -> None:
    truth = [SKIP, SKIP, PASS, PASS, SEGV, SEGV, SKIP]
    bis = Bisector(n=7, untestable=[0])
    visited = drive(bis, truth)
    assert visited[:4] == [1, 6, 2, 5]
    res = bis.result
    assert res is not None and (res.first_new, res.last_old) == (4, 3)


def test_named_end_that_is_untestable_gives_no_answer() -> None:
    bis = Bisector(n=4, good=0, bad=3, untestable=[0])
    assert bis.next() is None
    res = bis.result
    assert res is not None and res.status == Status.NO_ANSWER and "cannot be tested" in res.reason


def test_a_different_signal_is_a_segment_of_its_own() -> None:
    truth = [PASS, PASS, ABRT, SEGV, SEGV]
    bis = Bisector(n=5)
    drive(bis, truth)
    res = bis.result
    # The reference (SIGSEGV) starts at 3; 2 before it fails another way; 1 is the last pass.
    assert res is not None and res.status == Status.FOUND
    assert (res.first_new, res.last_old, res.neighbour) == (3, 1, 2)
    assert [(b.last_old, b.first_new, b.outcome.signal) for b in res.breakpoints] == [
        (1, 2, "SIGABRT"),
        (2, 3, "SIGSEGV"),
    ]
    assert drawing(bis) == "[G, G, F, B, B]"
    bis2 = Bisector(n=5, any_failure=True)
    drive(bis2, truth)
    res2 = bis2.result
    assert res2 is not None and (res2.status, res2.first_new, res2.last_old) == (Status.FOUND, 2, 1)
    assert res2.neighbour is None and len(res2.breakpoints) == 2


def test_a_fix_search_past_another_failure() -> None:
    # Old end crashes (the reference); 3-4 fail with a ValueError; 5 on pass.
    truth = [SEGV] * 3 + [VALUE] * 2 + [PASS] * 3
    bis = Bisector(n=8, good=7, bad=0)
    drive(bis, truth)
    res = bis.result
    assert res is not None and (res.direction, res.status) == (Direction.FIX, Status.FOUND)
    # The crash ends at 2 (last broken like the reference); 3 fails another way; 5 is fixed.
    assert (res.last_old, res.neighbour, res.first_new) == (2, 3, 5)
    assert [(b.last_old, b.first_new) for b in res.breakpoints] == [(2, 3), (4, 5)]


def test_a_failure_that_comes_and_goes_is_not_a_contradiction() -> None:
    # importy's shape: 3-4 cannot import alpha, 5 passes, 6 on cannot import beta (the bad
    # end's). A pass after another failure is that failure's fix, not a flaky repro.
    cannot = "ImportError: cannot import name"
    alpha = replace(VALUE, exception="ImportError", signature=f"{cannot} 'alpha'")
    beta = replace(VALUE, exception="ImportError", signature=f"{cannot} 'beta'")
    truth = [PASS] * 3 + [alpha] * 2 + [PASS] + [beta] * 3
    bis = Bisector(n=9)
    drive(bis, truth)
    res = bis.result
    assert bis.mode == SearchMode.PLAIN and res is not None and res.status == Status.FOUND
    assert (res.first_new, res.last_old, res.neighbour) == (6, 5, None)
    assert [b.first_new for b in res.breakpoints] == [3, 5, 6]


def test_several_gaps_share_a_round() -> None:
    truth = [PASS] * 10 + [VALUE] * 10 + [SEGV] * 12
    bis = Bisector(n=32)
    assert bis.next_batch(2) == [0, 31]
    bis.record(0, PASS)
    bis.record(31, SEGV)
    (mid,) = bis.next_batch(1)
    bis.record(mid, truth[mid])
    assert truth[mid] is VALUE  # two gaps now: G..F and F..B
    batch = bis.next_batch(2)
    assert len(batch) == 2 and batch[0] < mid < batch[1]  # one point in each gap


def _segment_truth(n: int, cuts: list[int], hidden: set[int]) -> list[Outcome]:
    """A pass, then one failure class per cut: F1 from cuts[0], F2 from cuts[1]..."""
    kinds = [
        Outcome(kind=OutcomeKind.FAIL, exit_code=1, exception=f"E{j}Error", signature=f"E{j}Error")
        for j in range(len(cuts))
    ]
    out = []
    for i in range(n):
        j = sum(1 for c in cuts if i >= c)
        out.append(SKIP if i in hidden else (PASS if j == 0 else kinds[j - 1]))
    return out


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(n=st.integers(min_value=3, max_value=400), data=st.data())
def test_every_breakpoint_in_log_time(n: int, data: st.DataObject) -> None:
    """k failure classes after a pass, over n candidates: every boundary found exactly, the
    answer where the bad end's failure starts, within k·ceil(log2(n - 1)) + 2 probes (the
    bound stated in docs/explanation/algorithms.md is k·(ceil(log2 n) + 1) + 2)."""
    k = data.draw(st.integers(min_value=1, max_value=min(4, n - 1)), label="failures")
    cuts = sorted(data.draw(st.sets(st.integers(min_value=1, max_value=n - 1), min_size=k,
                                    max_size=k), label="cuts"))  # fmt: skip
    truth = _segment_truth(n, cuts, set())
    bis = Bisector(n=n)
    visited = drive(bis, truth)
    res = bis.result
    assert res is not None and res.status == Status.FOUND
    assert [b.first_new for b in res.breakpoints] == cuts
    assert (res.first_new, res.last_old) == (cuts[-1], cuts[0] - 1)
    assert res.neighbour == (cuts[-1] - 1 if k > 1 else None)
    assert len(visited) == len(set(visited))
    assert len(visited) <= k * math.ceil(math.log2(n - 1)) + 2
    assert len(visited) <= k * (math.ceil(math.log2(n)) + 1) + 2
    anyf = Bisector(n=n, any_failure=True)
    drive(anyf, truth)
    assert anyf.result is not None and anyf.result.first_new == cuts[0]


@settings(max_examples=200, deadline=None)
@given(n=st.integers(min_value=3, max_value=80), data=st.data())
def test_breakpoints_with_untestable_points_are_exact_or_honest(
    n: int, data: st.DataObject
) -> None:
    k = data.draw(st.integers(min_value=1, max_value=min(3, n - 1)), label="failures")
    cuts = sorted(data.draw(st.sets(st.integers(min_value=1, max_value=n - 1), min_size=k,
                                    max_size=k), label="cuts"))  # fmt: skip
    hidden = data.draw(st.sets(st.integers(min_value=1, max_value=n - 2)), label="untestable")
    truth = _segment_truth(n, cuts, hidden)
    bis = Bisector(n=n)
    visited = drive(bis, truth)
    res = bis.result
    assert res is not None and res.status in (Status.FOUND, Status.AMBIGUOUS)
    assert len(visited) == len(set(visited))
    for b in res.breakpoints:
        if b.possible:
            assert all(i in hidden for i in b.possible[:-1])
            assert any(c in b.possible for c in cuts)
        else:
            assert b.first_new in cuts and b.last_old == b.first_new - 1
    # A cut with a testable point on each side of it is found exactly.
    exact = {(b.last_old, b.first_new) for b in res.breakpoints if not b.possible}
    for c in cuts:
        if c not in hidden and c - 1 not in hidden:
            assert (c - 1, c) in exact


def test_drawing_shows_the_range() -> None:
    bis = Bisector(n=5)
    truth = [PASS, PASS, SKIP, SEGV, SEGV]
    bis.record(bis.next() or 0, truth[0])
    bis.record(4, truth[4])
    assert drawing(bis) == "[G, ?, ?, ?, B]"
    drive(bis, truth)
    assert drawing(bis) == "[G, G, S, B, B]"


@pytest.mark.slow
@settings(max_examples=400, deadline=None)
@given(
    n=st.integers(min_value=2, max_value=60),
    data=st.data(),
)
def test_any_monotone_truth_with_untestable_points(n: int, data: st.DataObject) -> None:
    """The answer is the true boundary, or an honest "one of" that contains it."""
    boundary = data.draw(st.integers(min_value=1, max_value=n - 1), label="first bad")
    hidden: set[int] = data.draw(
        st.sets(st.integers(min_value=1, max_value=n - 2)) if n > 2 else st.just(set()),
        label="untestable",
    )
    known = data.draw(
        st.sets(st.sampled_from(sorted(hidden)) if hidden else st.nothing()),
        label="known untestable",
    )
    truth = [SKIP if i in hidden else (PASS if i < boundary else SEGV) for i in range(n)]
    bis = Bisector(n=n, untestable=known)
    visited = drive(bis, truth)
    res = bis.result
    assert res is not None
    assert not set(visited) & known, "a known-untestable point was probed"
    assert len(visited) == len(set(visited)), "a point was probed twice"
    if res.status == Status.FOUND:
        assert res.first_new == boundary and res.last_old is not None
        assert res.last_old < boundary
        assert all(i in hidden for i in range(res.last_old + 1, boundary))
    else:
        assert res.status == Status.AMBIGUOUS
        assert boundary in res.possible
        assert all(i in hidden for i in res.possible[:-1])
    testable = n - len(hidden)
    # Without untestable points, the bound from the issue: ceil(log2 n) + 2 environments.
    if not hidden:
        assert len(visited) <= math.ceil(math.log2(n)) + 2
    assert len(visited) <= testable + len(hidden - known)


def test_a_named_end_without_a_file_is_stood_in_for_by_the_nearest_testable_point() -> None:
    # good=0 and bad=6 named; 0 and 1 have no installable file, nor has 6: 2 and 5 stand in.
    truth = [SKIP, SKIP, PASS, PASS, SEGV, SEGV, SKIP]
    bis = Bisector(n=7, good=0, bad=6, untestable=[0, 1, 6], stand_in=True)
    assert bis.stand_ins == [
        SteppedEnd(end="old", asked=0, used=2),
        SteppedEnd(end="new", asked=6, used=5),
    ]
    assert (bis.old.index, bis.new.index) == (2, 5)
    visited = drive(bis, truth)
    assert visited[:2] == [2, 5] and 0 not in visited and 6 not in visited
    res = bis.result
    assert res is not None and (res.status, res.first_new, res.last_old) == (Status.FOUND, 4, 3)


def test_a_stood_in_good_end_newer_than_bad_still_searches_for_the_fix() -> None:
    truth = [SEGV, SEGV, PASS, PASS, PASS]
    bis = Bisector(n=5, good=4, bad=0, untestable=[4], stand_in=True)
    assert bis.stand_ins == [SteppedEnd(end="new", asked=4, used=3)]
    drive(bis, truth)
    res = bis.result
    assert res is not None and (res.direction, res.first_new, res.last_old) == (Direction.FIX, 2, 1)


def test_a_stand_in_that_meets_the_other_end_gives_no_answer() -> None:
    bis = Bisector(n=3, good=0, bad=2, untestable=[0, 1], stand_in=True)
    assert bis.next() is None
    res = bis.result
    assert res is not None and res.status == Status.NO_ANSWER and "fewer than two" in res.reason


def test_an_unnamed_end_gallops_past_untestable_points() -> None:
    # 57 old versions cannot be installed with the rest (found only by probing them), as
    # huggingface-hub below diffusers 0.24's lower bound. The old end gallops 0, 1, 3, 7, 15,
    # 31, 63 (testable), then bisects the gap before 63 for the first testable point, 57.
    truth = [SKIP] * 57 + [PASS] * 20 + [SEGV] * 10
    bis = Bisector(n=len(truth))
    visited = drive(bis, truth)
    assert visited[:13] == [0, 86, 1, 3, 7, 15, 31, 63, 47, 55, 59, 57, 56]
    res = bis.result
    assert res is not None and (res.status, res.first_new, res.last_old) == (Status.FOUND, 77, 76)
    assert bis.old.index == 57  # the first testable point, as a step by one would find it
    assert len(visited) <= 2 * math.ceil(math.log2(57)) + math.ceil(math.log2(30)) + 3
    assert len(visited) < 25  # against 57 + 7 one at a time


def test_points_known_untestable_up_front_are_stepped_over_for_free() -> None:
    truth = [SKIP] * 10 + [PASS] * 5 + [SEGV] * 5
    bis = Bisector(n=len(truth), untestable=range(10))
    visited = drive(bis, truth)
    assert visited[0] == 10  # no gallop over what costs nothing
    res = bis.result
    assert res is not None and (res.first_new, res.last_old) == (15, 14)


def test_both_ends_gallop_until_one_finds_a_testable_point() -> None:
    # Untestable on both sides, 16 below and 30 above: the ends take turns, each galloping
    # inward, until one lands on a testable point; each then bisects its own gap.
    truth = [SKIP] * 16 + [PASS] * 2 + [SEGV] * 12 + [SKIP] * 30
    bis = Bisector(n=len(truth))
    visited = drive(bis, truth)
    assert visited[:11] == [0, 59, 1, 58, 3, 56, 7, 52, 15, 44, 31]
    res = bis.result
    assert res is not None and (res.first_new, res.last_old) == (18, 17)
    assert (bis.old.index, bis.new.index) == (16, 29) and len(visited) < 20


def test_the_new_end_searches_back_to_the_old_ends_point() -> None:
    truth = [PASS] * 6 + [SEGV] * 6 + [SKIP] * 20
    bis = Bisector(n=len(truth))
    visited = drive(bis, truth)
    assert visited[:6] == [0, 31, 30, 28, 24, 16]
    res = bis.result
    assert res is not None and (res.first_new, res.last_old) == (6, 5)
    assert bis.new.index == 11 and len(visited) <= 13


@settings(max_examples=200, deadline=None)
@given(n=st.integers(min_value=4, max_value=300), data=st.data())
def test_galloping_ends_find_the_boundary_in_log_time(n: int, data: st.DataObject) -> None:
    lead = data.draw(st.integers(min_value=0, max_value=n - 3), label="untestable below")
    tail = data.draw(st.integers(min_value=0, max_value=n - lead - 3), label="untestable above")
    boundary = data.draw(st.integers(min_value=lead + 1, max_value=n - tail - 1), label="bad")
    truth = [SKIP if i < lead or i >= n - tail else PASS if i < boundary else SEGV
             for i in range(n)]  # fmt: skip
    bis = Bisector(n=n)
    visited = drive(bis, truth)
    res = bis.result
    assert res is not None and res.status == Status.FOUND
    assert (res.first_new, res.last_old) == (boundary, boundary - 1)
    assert (bis.old.index, bis.new.index) == (lead, n - tail - 1)
    assert len(visited) == len(set(visited))
    # When the testable points are more than the untestable ones on either side, a gallop
    # lands among them: each end costs a gallop and a search back, in log time. (Fewer, and
    # a gallop may jump over them all: the widest unknown runs are looked at then.)
    if n - lead - tail > max(lead, tail):
        ends = sum(2 * math.ceil(math.log2(k + 1)) + 1 for k in (lead, tail))
        assert len(visited) <= ends + math.ceil(math.log2(n)) + 1


def _row(o: Outcome) -> ProbeRow:
    return ProbeRow(
        version="",
        outcome=o,
        verdict=RowVerdict.NONE,
        reused=False,
        build_seconds=0,
        probe_seconds=0,
        env_id="",
    )


def _drive_hinted(n: int, first_bad: int, hint: tuple[int, int] | None) -> tuple[list[int], Any]:
    strategy = Bisection(Bisector(n=n), hint_for=lambda row: hint)
    visited = []
    while batch := strategy.next_batch(1):
        (i,) = batch
        visited.append(i)
        strategy.record(i, _row(VALUE if i >= first_bad else PASS))
    return visited, strategy.bis.result


def test_the_wheels_hint_is_probed_once_the_bad_end_fails() -> None:
    """run: where ``envbisect why`` read the boundary from the wheels, its two releases are
    probed right after the ends, and the answer is the same; a wrong hint costs its probes."""
    plain, res = _drive_hinted(64, 41, None)
    assert len(plain) == 8 and res.first_new == 41
    hinted, res = _drive_hinted(64, 41, (40, 41))
    assert hinted == [0, 63, 40, 41] and (res.first_new, res.last_old) == (41, 40)
    wrong, res = _drive_hinted(64, 41, (10, 11))
    assert wrong[:4] == [0, 63, 10, 11] and res.first_new == 41 and len(wrong) <= len(plain) + 2
