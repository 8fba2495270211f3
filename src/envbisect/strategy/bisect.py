"""Bisection over ordered candidates, as a state machine: ``next()`` / ``record(i, outcome)``.

The strategy never runs anything: the engine asks it which index to probe next and tells it
what happened. It works on indices into the candidate list (oldest first) so that it knows
nothing about versions or environments.

Phases:
    ends    probe the old end, then the new end. An end the user did not name is stepped
            inward past untestable points; a named end must verify, except that with
            ``stand_in`` a named end with no installable file is stepped inward to the
            nearest testable point, which stands in for it (``stand_ins``). The ends decide the
            direction: old passes and new fails -> "regression" (find the first bad);
            old fails and new passes -> "fix" (find the first fixed).
    search  the range is a sequence of segments, each with one outcome class: a pass, the
            reference failure (the failing end's), or another failure (another kind, signal,
            exception or missing name: ``same_failure``). Every gap between two neighbouring
            probed points of different classes is bisected (``segments.py``), so the search
            finds the first failure of any kind and every boundary where the failure changes,
            in log time. Untestable points are stepped around and never narrow a gap:

                [G, ?, ?, ?, B]  probe the middle
                [G, ?, S, ?, B]  middle untestable: probe its nearest neighbour
                [G, G, S, ?, B]  ...
                [G, G, S, B, B]  nothing left to probe: "the first bad is one of S, B"
                [G, F, F, B, B]  another failure (F) before the reference's: two breakpoints

The answer (regression): ``first_new`` is where the reference failure starts (with
``any_failure``, the first failure of any kind), ``last_old`` the last pass before it; when
the point right before ``first_new`` fails in another way, ``neighbour`` names it. A fix
search is the mirror image: ``last_old`` is where the reference failure ends, ``first_new``
the first pass after it. ``breakpoints`` lists every boundary, oldest first.

Several runs per point (``--repeat``): a point whose runs include the reference failure is in
the failing state ("a crash in any run marks it"). When the runs at a point disagree, or a
verdict contradicts an earlier one (the reference failure below a pass in a regression;
another failure may come and go, as a bug of its own), the search turns probabilistic
(``flaky.py``): a posterior over the boundary from every run seen so far, probes where the
expected information is highest (points may be probed again, with more runs), and a
stop when one boundary reaches ``confidence``.

Several probes per round (``next_batch(k)``): k points split the open range k + 1 ways, so a
search takes about log_{k+1}(n) rounds (with several gaps open, the round's points are shared
among them, oldest first); in the first round the ends go with k - 2 guesses
inside, applied once the ends have decided the direction. Points the caller already has
(``cached``: in the store) are taken first, for free.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from envbisect.core.outcome import representative
from envbisect.core.results.parts import Direction, SearchMode, Status
from envbisect.model import Outcome, OutcomeKind
from envbisect.strategy import answers, ends, flaky, segments
from envbisect.strategy.classes import Classes, disorder
from envbisect.strategy.ends import End, decide, place
from envbisect.strategy.segments import (
    PASS_CLASS,
    Breakpoint,
    Gap,
    choose,
    split,
)
from envbisect.strategy.verdicts import BisectResult, Step, SteppedEnd, Verdict, judge, tally


@dataclass(slots=True, kw_only=True)
class Bisector:
    """Find the boundary between the old end's behaviour and the new end's.

    ``good`` and ``bad`` are indices the user named (either may be None: the ends then default
    to the oldest and newest testable points). ``untestable`` are indices known up front to be
    untestable (no installable file): never probed. ``repeat`` is the number of runs each
    probe makes (the probabilistic mode weighs a probe by it); ``probabilistic`` starts in that
    mode; ``max_probes`` caps the probes made in it (None: ``default_max_probes(n)``).
    """

    n: int
    good: int | None = None
    bad: int | None = None
    untestable: Iterable[int] = ()
    any_failure: bool = False
    repeat: int = 1
    confidence: float = 0.95
    probabilistic: bool = False
    max_probes: int | None = None
    switch: bool = True  # False: never turn probabilistic (plain bisection, for comparisons)
    stand_in: bool = False  # a named end with no installable file: step it inward
    history: list[Step] = field(default_factory=list)
    skipped: set[int] = field(init=False)
    upfront: frozenset[int] = field(init=False)  # untestable known without a probe
    old: End = field(init=False)
    new: End = field(init=False)
    direction: Direction | None = field(init=False, default=None)
    reference: Outcome | None = field(init=False, default=None)
    runs: dict[int, tuple[Outcome, ...]] = field(init=False, default_factory=dict)
    # The plain search's segments: each probed testable point's outcome class (PASS_CLASS,
    # or a failure's class in ``classes``, a representative of each failure seen).
    cls: dict[int, int] = field(init=False, default_factory=dict)
    classes: Classes = field(init=False, default_factory=Classes)
    ref_class: int = field(init=False, default=1)
    mode: SearchMode = field(init=False, default=SearchMode.PLAIN)
    switch_reason: str = field(init=False, default="")
    probes_since_switch: int = field(init=False, default=0)
    _applied: set[int] = field(init=False, default_factory=set)
    _expected: Direction | None = field(init=False, default=None)
    _asked: dict[ends.Name, int] = field(init=False, default_factory=dict)  # -> named index
    _result: BisectResult | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        self.upfront = frozenset(self.untestable)
        self.skipped = set(self.upfront)
        if self.n < 2:
            self._result = BisectResult(status=Status.NO_ANSWER, reason="fewer than two candidates")
        if self.probabilistic:
            self.mode = SearchMode.PROBABILISTIC
            self.switch_reason = "asked for (--probabilistic)"
        self.old, self.new, self._expected = place(self.n, self.good, self.bad)
        if self.stand_in:
            self._asked = ends.step_in(self.old, self.new, self.skipped)
            self._settle_ends()  # a stand-in's point, where stand_ins can name it

    @property
    def expected_direction(self) -> Direction | None:
        return self._expected

    @property
    def stand_ins(self) -> list[SteppedEnd]:
        """The named ends stepped inward (``stand_in``), with the point standing in for each."""
        return ends.stand_ins(self.old, self.new, self._asked)

    # -- asking -------------------------------------------------------------------------------

    def next(self) -> int | None:
        """The index to probe next, or None when a result is ready."""
        batch = self.next_batch(1)
        return batch[0] if batch else None

    def next_batch(self, k: int = 1, cached: Callable[[int], bool] | None = None) -> list[int]:
        """Up to ``k`` indices to probe next, all at once (empty when a result is ready).

        ``cached(i)``: whether the caller already has index i's outcome (stored); while any
        lies in the open range, the ones nearest the split points are asked for first, since
        they cost nothing (a rerun with the same bounds retraces its path; one with shifted
        bounds takes what it can from the store before it builds anything).
        """
        k = max(1, k)
        if self._result is not None or not self._settle_ends():
            return []
        pending = ends.waiting(self.old, self.new)  # the ends first
        if pending:
            if k == 1:
                return pending[:1]
            inside = [i for i in self.open_points if i not in self.runs]
            return pending + split(inside, self.old.index, self.new.index, k - len(pending))
        if self.mode is SearchMode.PROBABILISTIC:
            return self._next_probabilistic(k)
        open_gaps = [g for g in self.gaps() if g.open]
        if not open_gaps:
            self._finish()
            return []
        return choose(open_gaps, k, cached)

    def runs_wanted(self, index: int) -> int:
        """How many runs the next probe of ``index`` should have in all (a point probed again
        in the probabilistic mode gets ``repeat`` more than it has)."""
        have = len(self.runs.get(index, ()))
        again = self.mode is SearchMode.PROBABILISTIC or any(
            e.retry and e.index == index for e in (self.old, self.new)
        )
        return have + self.repeat if again and have else self.repeat

    @property
    def open_points(self) -> list[int]:
        """The points strictly inside the range not known untestable, oldest first."""
        return [i for i in range(self.old.index + 1, self.new.index) if i not in self.skipped]

    @property
    def finished(self) -> bool:
        """Whether the answer (or no answer) is in: nothing is left to probe."""
        return self._result is not None

    def gaps(self) -> list[Gap]:
        """The gaps between neighbouring probed points of different classes (segments.py)."""
        return segments.gaps(self.cls, self.skipped, self.old.index, self.new.index)

    def _settle_ends(self) -> bool:
        """Point each end that has no outcome yet at what it should probe: a named end stays
        (it must verify); an unnamed one looks for the first testable point from its side
        (ends.py). An end whose point is already probed takes its outcome from there. False
        once there is no answer."""
        changed = True
        while changed and self._result is None:
            changed = False
            for end in (self.old, self.new):
                if end.outcome is not None or end.retry:
                    continue
                if end.fixed:
                    if end.index in self.skipped and end.index not in self.runs:
                        self._no_answer(
                            f"the {self._end_name(end)} end cannot be tested (no installable file)"
                        )
                        return False
                    if end.index in self.runs:
                        self._record_end(end, self.runs[end.index])
                        changed = True
                    continue
                other = self.new if end is self.old else self.old
                at = ends.point(
                    end, other, probed=self.runs, untestable=self.skipped, free=self.upfront
                )
                if at is None:
                    self._no_answer("fewer than two testable candidates in the range")
                    return False
                end.index = at
                if at in self.runs:  # its point: the first testable one from its side
                    self._settle_end(end)
                    changed = True
        return self._result is None

    # -- telling ------------------------------------------------------------------------------

    def record(self, index: int, outcome: Outcome, runs: Sequence[Outcome] = ()) -> Verdict | None:
        """Record probing ``index``: ``outcome`` decides, ``runs`` are every run made there so
        far (one probe with ``--repeat`` N has N). Returns the verdict it counted as (None for
        an end, or a guess made before the ends decided the direction)."""
        all_runs = tuple(runs) or (outcome,)
        self.runs[index] = all_runs
        for end in (self.old, self.new):
            if end.outcome is None and index == end.index:
                self._record_end(end, all_runs)
                self._settle_ends()  # an unnamed end's point, and with both the direction
                return None
        if self.direction is None:
            return None  # a guess from the first round: applied once the direction is known
        if self.mode is SearchMode.PROBABILISTIC:
            self.probes_since_switch += 1
        return self._apply(index)

    def verdict(self, outcome: Outcome) -> Verdict:
        """What one run counts as, once the direction is known (verdicts.judge)."""
        assert self.direction is not None and self.reference is not None
        return judge(
            outcome,
            direction=self.direction,
            reference=self.reference,
            any_failure=self.any_failure,
        )

    def counts(self, index: int) -> tuple[int, int]:
        """(runs failing like the reference, runs passing) at ``index``."""
        if self.direction is None or self.reference is None:
            return 0, 0
        return tally(
            self.runs.get(index, ()),
            direction=self.direction,
            reference=self.reference,
            any_failure=self.any_failure,
        )

    def _failing(self) -> Verdict:
        return Verdict.NEW if self.direction == Direction.REGRESSION else Verdict.OLD

    def _apply(self, index: int) -> Verdict:
        """Count the runs at ``index`` into the search (again, when it was probed again)."""
        fails, passes = self.counts(index)
        runs = self.runs[index]
        note = ""
        c = self._point_class(runs) if self.mode is SearchMode.PLAIN else None
        if c is not None and c not in (PASS_CLASS, self.ref_class) and not self.any_failure:
            verdict = Verdict.OTHER  # a bug of its own: its segment is searched too
            note = "another failure than the reference: a segment of its own"
            self.cls[index] = c
        elif not fails and not passes:
            verdict = Verdict.SKIP
            self.skipped.add(index)
            if any(o.kind is not OutcomeKind.UNTESTABLE for o in runs):
                note = "a different failure than the reference: counted as untestable"
        else:
            failing = self._failing()
            other = Verdict.OLD if failing is Verdict.NEW else Verdict.NEW
            verdict = failing if fails else other
            if fails and passes:
                note = "flaky"
                self._switch(f"the runs at one point disagree ({fails} of {fails + passes} failed)")
            if self.mode is SearchMode.PLAIN and c is not None and self._in_order(index, c):
                self.cls[index] = c
        self._applied.add(index)
        self.history.append(
            Step(
                index=index,
                outcome=representative(runs),
                verdict=verdict,
                note=note,
                runs=len(runs),
                fails=fails,
            )
        )
        return verdict

    def _point_class(self, runs: Sequence[Outcome]) -> int | None:
        """A point's class from its runs (classes.py); None: every run was untestable."""
        assert self.reference is not None
        return self.classes.point(
            runs, reference=self.reference, ref_class=self.ref_class, any_failure=self.any_failure
        )

    def _in_order(self, index: int, c: int) -> bool:
        """Whether a point of class ``c`` at ``index`` agrees with the segments so far. A pass
        and the reference failure in the wrong order (the failure below a pass in a
        regression) contradict each other: the repro is flaky, and the search turns
        probabilistic (with ``switch=False`` the point is left out, as a plain bisection
        ignores a verdict that would widen its range). Other failures may come and go."""
        why = disorder(
            self.cls,
            index,
            c,
            ref_class=self.ref_class,
            regression=self.direction == Direction.REGRESSION,
        )
        if why:
            self._switch(why)
        return not why

    def _switch(self, reason: str) -> None:
        if self.mode is SearchMode.PLAIN and self.switch:
            self.mode = SearchMode.PROBABILISTIC
            self.switch_reason = reason
            # The posterior weighs the pass and the reference failure only: another failure
            # is no evidence there, and probing it again would buy nothing.
            self.skipped |= {
                i for i, c in self.cls.items() if c not in (PASS_CLASS, self.ref_class)
            }

    def _record_end(self, end: End, runs: tuple[Outcome, ...]) -> None:
        end.retry, end.tries = False, end.tries + 1
        outcome = representative(runs)
        self.history.append(Step(index=end.index, outcome=outcome, verdict=None, runs=len(runs)))
        if outcome.kind is OutcomeKind.UNTESTABLE:
            self.skipped.add(end.index)
            if end.fixed:
                self._no_answer(
                    f"the {self._end_name(end)} end is untestable: {outcome.describe()}"
                )
            else:
                end.landed_untestable()
            return None
        if end.fixed:
            self._settle_end(end)
        # An unnamed end: whether this is its point, ``_settle_ends`` decides (ends.look).
        return None

    def _settle_end(self, end: End) -> None:
        """The end's point is known and probed: its outcome; with both, the direction."""
        end.outcome = representative(self.runs[end.index])
        if self.old.outcome is not None and self.new.outcome is not None:
            if self.old.index >= self.new.index:
                self._no_answer("fewer than two testable candidates in the range")
                return None
            if self._retry_bad_end():
                return None
            self._decide_direction()
            if self.direction is not None:
                self._after_direction()
        return None

    def _retry_bad_end(self) -> bool:
        """Both ends passed so far, and the repro is known or said to be flaky (probabilistic
        mode, or --repeat): the failure may just not have shown yet at the end expected to
        fail (the new end, unless the user named the good end newer than the bad). Probe it
        again: within the probe budget in the probabilistic mode, up to four probes in all
        with --repeat."""
        if self.mode is not SearchMode.PROBABILISTIC and self.repeat < 2:
            return False
        bad = ends.unfailed(self.old, self.new, self.expected_direction)
        if bad is None:
            return False
        if self.mode is SearchMode.PROBABILISTIC:
            if self.probes_since_switch >= self.probe_budget():
                return False
            self.probes_since_switch += 1
        elif bad.retries >= 3:
            return False
        bad.retries += 1
        bad.outcome, bad.retry = None, True
        return True

    def _after_direction(self) -> None:
        """The ends are known: check them for flakiness, then apply the first round's guesses."""
        self._applied |= {self.old.index, self.new.index}
        for end in (self.old, self.new):
            fails, passes = self.counts(end.index)
            if fails and passes:
                self._switch(
                    f"the runs at the {self._end_name(end)} end disagree "
                    f"({fails} of {fails + passes} failed)"
                )
        for i in sorted(self.runs):
            if i not in self._applied and self.old.index < i < self.new.index:
                self._apply(i)

    def _decide_direction(self) -> None:
        """Both ends have their outcome: the direction (ends.py), and the reference failure."""
        found, why = decide(
            self.old,
            self.new,
            self.expected_direction,
            old_runs=self.runs.get(self.old.index, ()),
            new_runs=self.runs.get(self.new.index, ()),
        )
        if found is None:
            self._no_answer(why)
            return
        failing, passing = (
            (self.new, self.old) if found == Direction.REGRESSION else (self.old, self.new)
        )
        assert failing.outcome is not None
        self.direction, self.reference = found, failing.outcome
        self.ref_class = self.classes.of(self.reference)
        self.cls[failing.index], self.cls[passing.index] = self.ref_class, PASS_CLASS

    def _end_name(self, end: End) -> ends.Name:
        return "old" if end is self.old else "new"

    # -- the probabilistic mode ----------------------------------------------------------------

    def posterior(self) -> flaky.Posterior | None:
        if self.direction is None:
            return None
        points = [self.old.index, *self.open_points, self.new.index]
        counts = {i: self.counts(i) for i in points if i in self.runs}
        return flaky.posterior(points, counts, regression=self.direction == Direction.REGRESSION)

    def probe_budget(self) -> int:
        if self.max_probes is not None:
            return self.max_probes
        return flaky.default_max_probes(self.n, self.repeat)

    def _next_probabilistic(self, k: int) -> list[int]:
        post = self.posterior()
        assert post is not None
        _, p = post.best()
        if p >= self.confidence or self.probes_since_switch >= self.probe_budget():
            self._finish_probabilistic(post)
            return []
        chosen = flaky.choose(post, runs=self.repeat, k=k)
        if not chosen:
            self._finish_probabilistic(post)
        return chosen

    def _finish_probabilistic(self, post: flaky.Posterior) -> None:
        assert self.direction is not None and self.reference is not None
        self._result = answers.from_posterior(
            post,
            direction=self.direction,
            reference=self.reference,
            runs=self.runs,
            confidence=self.confidence,
            probes=self.probes_since_switch,
        )

    # -- answers ------------------------------------------------------------------------------

    def _no_answer(self, reason: str) -> None:
        self._result = BisectResult(
            status=Status.NO_ANSWER, direction=self.direction, reason=reason
        )

    def _finish(self) -> None:
        """The answer from the segments, once no gap has a point left to probe."""
        assert self.direction is not None
        self._result = answers.from_segments(
            self.cls,
            ref_class=self.ref_class,
            direction=self.direction,
            any_failure=self.any_failure,
            outcome_at=self._outcome_at,
            lo=self.old.index,
            hi=self.new.index,
        )

    def _outcome_at(self, index: int) -> Outcome:
        return representative(self.runs[index])

    @property
    def result(self) -> BisectResult | None:
        """The answer held so far (None: not reached, or not yet worked out: ``conclude``)."""
        return self._result

    def conclude(self) -> BisectResult | None:
        """Work out the answer where the search has reached it (as ``next`` does on its way)
        and return it; None while points remain to probe."""
        if self._result is None:
            self.next()
        return self._result


__all__ = ["BisectResult", "Bisector", "Breakpoint", "Step", "SteppedEnd", "Verdict"]
