"""The bisection state machine on scripted outcomes: the path and the answer.

No environments: outcomes are fed in as the engine would feed them (mozregression's habit).
"""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from envbisect.model import Outcome, OutcomeKind
from envbisect.strategy.bisect import Bisector, StandIn

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
    assert res is not None and res.status == "found"
    assert (res.first_new, res.last_old, res.direction) == (5, 4, "regression")
    assert len(visited) <= math.ceil(math.log2(16)) + 2


def test_an_untestable_midpoint_is_stepped_around() -> None:
    truth = [PASS] * 4 + [SKIP] + [SEGV] * 4
    bis = Bisector(n=9)
    visited = drive(bis, truth)
    # ends, then the middle (4) is untestable: its nearest neighbour (3) is tried next.
    assert visited[:4] == [0, 8, 4, 3]
    res = bis.result
    assert res is not None and res.status == "ambiguous" and res.possible == (4, 5)
    assert 5 in visited


def test_named_good_end_must_pass() -> None:
    bis = Bisector(n=5, good=1, bad=3)
    assert drive(bis, [PASS, SEGV, SEGV, SEGV, SEGV]) == [1, 3]
    res = bis.result
    assert res is not None and res.status == "no-answer" and "both ends fail" in res.reason


def test_good_newer_than_bad_searches_for_the_fix() -> None:
    truth = [VALUE] * 3 + [PASS] * 3
    bis = Bisector(n=6, good=5, bad=0)
    drive(bis, truth)
    res = bis.result
    assert res is not None and (res.direction, res.first_new, res.last_old) == ("fix", 3, 2)


def test_named_ends_contradicting_the_truth_say_so() -> None:
    # --good 0 --bad 4 but the old end fails and the new one passes: not a regression.
    bis = Bisector(n=5, good=0, bad=4)
    drive(bis, [VALUE, VALUE, PASS, PASS, PASS])
    res = bis.result
    assert res is not None and res.status == "no-answer"
    assert "good end does not pass" in res.reason


def test_unnamed_ends_step_inward_past_untestable_points() -> None:
    truth = [SKIP, SKIP, PASS, PASS, SEGV, SEGV, SKIP]
    bis = Bisector(n=7, untestable=[0])
    visited = drive(bis, truth)
    assert visited[:4] == [1, 2, 6, 5]
    res = bis.result
    assert res is not None and (res.first_new, res.last_old) == (4, 3)


def test_named_end_that_is_untestable_gives_no_answer() -> None:
    bis = Bisector(n=4, good=0, bad=3, untestable=[0])
    assert bis.next() is None
    res = bis.result
    assert res is not None and res.status == "no-answer" and "cannot be tested" in res.reason


def test_a_different_signal_is_skipped_unless_any_failure() -> None:
    truth = [PASS, PASS, ABRT, SEGV, SEGV]
    bis = Bisector(n=5)
    drive(bis, truth)
    res = bis.result
    assert res is not None and res.status == "ambiguous" and res.possible == (2, 3)
    bis2 = Bisector(n=5, any_failure=True)
    drive(bis2, truth)
    res2 = bis2.result
    assert res2 is not None and (res2.status, res2.first_new) == ("found", 2)


def test_drawing_shows_the_range() -> None:
    bis = Bisector(n=5)
    truth = [PASS, PASS, SKIP, SEGV, SEGV]
    bis.record(bis.next() or 0, truth[0])
    bis.record(4, truth[4])
    assert bis.drawing() == "[G, ?, ?, ?, B]"
    drive(bis, truth)
    assert bis.drawing() == "[G, G, S, B, B]"


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
    if res.status == "found":
        assert res.first_new == boundary and res.last_old is not None
        assert res.last_old < boundary
        assert all(i in hidden for i in range(res.last_old + 1, boundary))
    else:
        assert res.status == "ambiguous"
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
        StandIn(end="old", asked=0, used=2),
        StandIn(end="new", asked=6, used=5),
    ]
    assert (bis.old.index, bis.new.index) == (2, 5)
    visited = drive(bis, truth)
    assert visited[:2] == [2, 5] and 0 not in visited and 6 not in visited
    res = bis.result
    assert res is not None and (res.status, res.first_new, res.last_old) == ("found", 4, 3)


def test_a_stood_in_good_end_newer_than_bad_still_searches_for_the_fix() -> None:
    truth = [SEGV, SEGV, PASS, PASS, PASS]
    bis = Bisector(n=5, good=4, bad=0, untestable=[4], stand_in=True)
    assert bis.stand_ins == [StandIn(end="new", asked=4, used=3)]
    drive(bis, truth)
    res = bis.result
    assert res is not None and (res.direction, res.first_new, res.last_old) == ("fix", 2, 1)


def test_a_stand_in_that_meets_the_other_end_gives_no_answer() -> None:
    bis = Bisector(n=3, good=0, bad=2, untestable=[0, 1], stand_in=True)
    assert bis.next() is None
    res = bis.result
    assert res is not None and res.status == "no-answer" and "fewer than two" in res.reason
