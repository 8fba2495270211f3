"""The descent's search (strategy/holdback.py) with scripted outcomes, and its probe bound: for
c constraints over packages of at most n versions, at most c·(ceil(log2 n) + 2) + c + 2 probes
(the issue's bound), property-tested over random worlds of masked failures.

The world: c packages imported in order; package i has n_i versions and drops a name from
version t_i on, so an environment fails on the first package (in import order) at or past its
t_i. That is what hides each failure behind the one before it. The loop below is the descent's
(modes/lock/descent.py) without IO: probe the newest; while it fails, hold back the package the
failure names (its ``HoldBack``, everything else at its newest under the constraints so far),
then probe the newest again; once it passes, try each constraint away. Probes of one
environment are counted once, as the store answers a second."""

from __future__ import annotations

import math
from collections.abc import Callable

from hypothesis import given, settings
from hypothesis import strategies as st

from envbisect.core.results.parts import ProbeRow, RowVerdict
from envbisect.model import Outcome, OutcomeKind
from envbisect.strategy.holdback import HoldBack, bound

PASS = Outcome(kind=OutcomeKind.PASS)
SKIP = Outcome(kind=OutcomeKind.UNTESTABLE, signature="unresolvable")


def missing(name: str) -> Outcome:
    return Outcome(
        kind=OutcomeKind.FAIL,
        exception="ImportError",
        signature=f"ImportError: cannot import name 'f' from '{name}'",
    )


def row(o: Outcome) -> ProbeRow:
    return ProbeRow(version="", outcome=o, verdict=RowVerdict.NONE, reused=False, build_seconds=0,
                    probe_seconds=0, env_id="")  # fmt: skip


def run(hb: HoldBack, probe: Callable[[int], Outcome]) -> list[int]:
    visited = []
    while batch := hb.next_batch(1):
        (i,) = batch
        visited.append(i)
        hb.record(i, row(probe(i)))
    return visited


def test_the_oldest_first_then_halving() -> None:
    # [F, ?, ?, ?, ?, ?, ?, B]: the failure starts at 5.
    ref = missing("a")
    hb = HoldBack(n=8, reference=ref)
    visited = run(hb, lambda i: ref if i >= 5 else missing("b"))
    assert visited == [0, 3, 5, 4]
    assert (hb.last_good, hb.first_bad, hb.exhausted) == (4, 5, False)
    assert len(visited) <= bound(8)


def test_every_version_failing_the_same_way_is_exhausted_in_one_probe() -> None:
    ref = missing("a")
    hb = HoldBack(n=6, reference=ref)
    assert run(hb, lambda i: ref) == [0]
    assert hb.exhausted and hb.last_good is None


def test_untestable_versions_never_narrow_the_gap() -> None:
    ref = missing("a")
    truth = [SKIP, SKIP, PASS, SKIP, PASS, SKIP, ref, ref]
    hb = HoldBack(n=8, reference=ref)
    visited = run(hb, lambda i: truth[i])
    assert visited[:3] == [0, 1, 2]  # stepped up past the untestable oldest
    assert (hb.last_good, hb.first_bad) == (4, 6) and 5 in hb.skipped


def test_two_jobs_split_the_gap() -> None:
    ref = missing("a")
    hb = HoldBack(n=9, reference=ref)
    first = hb.next_batch(2)
    assert first[0] == 0 and len(first) == 2
    for i in first:
        hb.record(i, row(ref if i >= 6 else PASS))
    while batch := hb.next_batch(2):
        for i in batch:
            hb.record(i, row(ref if i >= 6 else PASS))
    assert (hb.last_good, hb.first_bad) == (5, 6)


def test_a_coupled_search_starts_at_the_floor_and_goes_below_only_when_it_fails() -> None:
    ref = missing("a")
    # The floor (what the requirer's newest allows) passes: nothing below it is probed.
    hb = HoldBack(n=10, reference=ref, floor=6)
    assert run(hb, lambda i: ref if i >= 8 else PASS) == [6, 7, 8]
    assert (hb.last_good, hb.first_bad) == (7, 8)
    # The floor fails the same way: the oldest below it next, then halving.
    hb = HoldBack(n=10, reference=ref, floor=6)
    visited = run(hb, lambda i: ref if i >= 3 else PASS)
    assert visited[:2] == [6, 0]
    assert (hb.last_good, hb.first_bad, hb.exhausted) == (2, 3, False)
    # Every version fails: exhausted after the floor and the oldest.
    hb = HoldBack(n=10, reference=ref, floor=6)
    assert run(hb, lambda i: ref) == [6, 0] and hb.exhausted


@settings(max_examples=300, deadline=None)
@given(data=st.data(), c=st.integers(min_value=1, max_value=4), coupled=st.booleans())
def test_the_descent_finds_every_masked_failure_within_the_bound(
    data: st.DataObject, c: int, coupled: bool
) -> None:
    """``coupled``: each package's versions below a random floor need their requirer held
    back with them (strategy/holdback.py's ``floor``); the bound for a coupled search is
    c·(2·ceil(log2 n) + 3) + c + 2: the floor's part and the part below it, each a search."""
    sizes = [data.draw(st.integers(min_value=2, max_value=40), label=f"n{i}") for i in range(c)]
    firsts = [data.draw(st.integers(min_value=1, max_value=k - 1), label=f"t{i}")
              for i, k in enumerate(sizes)]  # fmt: skip
    floors = [data.draw(st.integers(min_value=0, max_value=k - 1), label=f"f{i}") if coupled
              else 0 for i, k in enumerate(sizes)]  # fmt: skip
    names = [f"p{i}" for i in range(c)]

    def outcome(env: tuple[int, ...]) -> Outcome:
        for name, v, t in zip(names, env, firsts, strict=True):
            if v >= t:
                return missing(name)
        return PASS

    probed: set[tuple[int, ...]] = set()

    def probe(env: tuple[int, ...]) -> Outcome:
        probed.add(env)
        return outcome(env)

    held: dict[int, int] = {}  # package -> highest version allowed

    def newest(without: int | None = None) -> tuple[int, ...]:
        return tuple(held[i] if i in held and i != without else k - 1
                     for i, k in enumerate(sizes))  # fmt: skip

    now = probe(newest())
    while now.kind is not OutcomeKind.PASS:
        culprit = names.index(now.signature.rsplit("'", 2)[-2])  # the package it names
        top = newest()[culprit]
        hb = HoldBack(n=top + 1, reference=now, floor=min(floors[culprit], top))

        def at(v: int, culprit: int = culprit) -> Outcome:
            env = list(newest())
            env[culprit] = v
            return probe(tuple(env))

        run(hb, at)
        assert not hb.exhausted and hb.last_good is not None
        held[culprit] = hb.last_good
        now = probe(newest())
    for i in sorted(held):  # each constraint tried away: still needed
        assert probe(newest(without=i)).kind is OutcomeKind.FAIL
    assert held == {i: t - 1 for i, t in enumerate(firsts)}  # exactly the c constraints
    n = max(sizes)
    per = 2 * math.ceil(math.log2(n)) + 3 if coupled else math.ceil(math.log2(n)) + 2
    assert len(probed) <= c * per + c + 2


def test_the_wheels_hint_is_probed_first_and_the_probes_decide() -> None:
    """``envbisect why`` read from the wheels that release 14 removed the name: 13 and 14 are
    probed first, two probes where the halving takes six; a wrong hint costs two probes and
    the search goes on as without it."""
    ref = missing("a")
    right = HoldBack(n=20, reference=ref, hint=(13, 14))
    assert run(right, lambda i: ref if i >= 14 else PASS) == [13, 14]
    assert (right.last_good, right.first_bad) == (13, 14)
    plain = HoldBack(n=20, reference=ref)
    assert len(run(plain, lambda i: ref if i >= 14 else PASS)) == 6
    wrong = HoldBack(n=20, reference=ref, hint=(5, 6))
    visited = run(wrong, lambda i: ref if i >= 14 else PASS)
    assert visited[:2] == [5, 6] and (wrong.last_good, wrong.first_bad) == (13, 14)
    assert len(visited) <= 2 + bound(20)
    early = HoldBack(n=20, reference=ref, hint=(16, 17))  # the hint's good side fails too
    visited = run(early, lambda i: ref if i >= 14 else PASS)
    assert visited[0] == 16 and (early.last_good, early.first_bad) == (13, 14)


def test_the_drawing_uses_runs_marks() -> None:
    """B the failure held back, G a pass, F another failure, S untestable, ? not yet known:
    the marks run draws and the legend explains (it drew F for the failure held back and an x
    no legend named)."""
    from envbisect.cli.display import LEGEND

    ref = missing("a")
    truth = [missing("b"), SKIP, PASS, PASS, PASS, ref, ref, ref]
    hb = HoldBack(n=8, reference=ref)
    assert hb.drawing() == "[?×7, B]"
    run(hb, lambda i: truth[i])
    assert hb.drawing() == "[F, ?, ?, G, G, B, ?, B]"
    marks = {m.split("×")[0] for m in hb.drawing().strip("[]").split(", ")}
    assert marks <= {mark for mark, _ in LEGEND}
