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

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from envbisect.core.outcome import failed, representative, same_failure
from envbisect.model import Outcome, OutcomeKind
from envbisect.strategy import flaky, segments
from envbisect.strategy.ends import End, look
from envbisect.strategy.segments import (
    PASS_CLASS,
    Breakpoint,
    Gap,
    answer,
    breakpoints,
    collapse,
    gaps,
    split,
    split_among,
)
from envbisect.strategy.verdicts import BisectResult, Direction, StandIn, Step, Verdict


@dataclass(slots=True)
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
    # or 1 + its index in ``classes``, a representative of each failure seen).
    cls: dict[int, int] = field(init=False, default_factory=dict)
    classes: list[Outcome] = field(init=False, default_factory=list)
    ref_class: int = field(init=False, default=1)
    mode: Literal["plain", "probabilistic"] = field(init=False, default="plain")
    switch_reason: str = field(init=False, default="")
    probes_since_switch: int = field(init=False, default=0)
    _applied: set[int] = field(init=False, default_factory=set)
    _expected: Direction | None = field(init=False, default=None)
    _asked: dict[str, int] = field(init=False, default_factory=dict)  # end name -> named index
    _result: BisectResult | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        self.upfront = frozenset(self.untestable)
        self.skipped = set(self.upfront)
        if self.n < 2:
            self._result = BisectResult(status="no-answer", reason="fewer than two candidates")
        if self.probabilistic:
            self.mode = "probabilistic"
            self.switch_reason = "asked for (--probabilistic)"
        old_i, new_i, old_fixed, new_fixed = self._ends()
        self.old = End(index=old_i, fixed=old_fixed, inward=+1)
        self.new = End(index=new_i, fixed=new_fixed, inward=-1)
        if self.good is not None:
            self._expected = "regression" if self.good == old_i else "fix"
        elif self.bad is not None:
            self._expected = "regression" if self.bad == new_i else "fix"
        for end in (self.old, self.new) if self.stand_in else ():
            if end.fixed and end.index in self.skipped:
                # From here on it is an end left out: stepped past untestable points (this
                # one now, any found untestable when probed later); stand_ins says where.
                self._asked[self._end_name(end)] = end.index
                end.fixed = False
        if self.stand_in:
            self._settle_ends()  # a stand-in's point, where stand_ins can name it

    def _ends(self) -> tuple[int, int, bool, bool]:
        g, b, last = self.good, self.bad, self.n - 1
        if g is not None and b is not None:
            return (g, b, True, True) if g < b else (b, g, True, True)
        if g is not None:
            return (g, last, True, False) if g < last else (0, g, False, True)
        if b is not None:
            return (0, b, False, True) if b > 0 else (b, last, True, False)
        return (0, last, False, False)

    @property
    def expected_direction(self) -> Direction | None:
        return self._expected

    @property
    def stand_ins(self) -> list[StandIn]:
        """The named ends stepped inward (``stand_in``), with the point standing in for each
        (where it is now: a stand-in found untestable when probed moves on)."""
        out = []
        for end in (self.old, self.new):
            name = self._end_name(end)
            if name in self._asked:
                out.append(StandIn(end=name, asked=self._asked[name], used=end.index))
        return out

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
        # Ends first; while both look for their point, the one that has probed less goes
        # first (ends.py: a gallop from one side must not run into the other's untestable
        # points before the other side has looked).
        waiting = sorted((e for e in (self.old, self.new) if e.outcome is None),
                         key=lambda e: (e.tries, e is self.new))  # fmt: skip
        pending = list(dict.fromkeys(e.index for e in waiting))
        if pending:
            if k == 1:
                return pending[:1]
            inside = [i for i in self._open(self.old.index, self.new.index) if i not in self.runs]
            return pending + split(inside, self.old.index, self.new.index, k - len(pending))
        if self.mode == "probabilistic":
            return self._next_probabilistic(k)
        open_gaps = [g for g in self._gaps() if g.open]
        if not open_gaps:
            self._finish()
            return []
        if cached is not None:
            free = [replace(g, open=tuple(i for i in g.open if cached(i))) for g in open_gaps]
            if any(g.open for g in free):  # stored ones near where it would look: no build
                open_gaps = free
        chosen = []
        for g, m in split_among(open_gaps, k):
            chosen += split(list(g.open), g.lo, g.hi, m)
        return sorted(chosen)

    def runs_wanted(self, index: int) -> int:
        """How many runs the next probe of ``index`` should have in all (a point probed again
        in the probabilistic mode gets ``repeat`` more than it has)."""
        have = len(self.runs.get(index, ()))
        again = self.mode == "probabilistic" or any(
            e.retry and e.index == index for e in (self.old, self.new)
        )
        return have + self.repeat if again and have else self.repeat

    def _open(self, lo: int, hi: int) -> list[int]:
        return [i for i in range(lo + 1, hi) if i not in self.skipped]

    def _gaps(self) -> list[Gap]:
        return gaps(self.cls, self.skipped, self.old.index, self.new.index)

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
                        self._no_answer(f"the {self._end_name(end)} end cannot be tested "
                                        "(no installable file)")  # fmt: skip
                        return False
                    if end.index in self.runs:
                        self._record_end(end, self.runs[end.index])
                        changed = True
                    continue
                other = self.new if end is self.old else self.old
                testable = [i for i in self.runs if i not in self.skipped]
                at = look(end, far=other.start, untestable=self.skipped, free=self.upfront,
                          testable=testable)  # fmt: skip
                if at is None:
                    self._no_answer("fewer than two testable candidates in the range")
                    return False
                settled = other.outcome is not None or other.fixed
                if settled and end.key(at) >= end.key(other.index):  # it met the other end
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
        if self.mode == "probabilistic":
            self.probes_since_switch += 1
        return self._apply(index)

    def verdict(self, outcome: Outcome) -> Verdict:
        assert self.direction is not None and self.reference is not None
        if outcome.kind is OutcomeKind.UNTESTABLE:
            return Verdict.SKIP
        passed = outcome.kind is OutcomeKind.PASS
        if not passed and not self.any_failure and not same_failure(outcome, self.reference):
            return Verdict.SKIP
        if self.direction == "regression":
            return Verdict.OLD if passed else Verdict.NEW
        return Verdict.NEW if passed else Verdict.OLD

    def counts(self, index: int) -> tuple[int, int]:
        """(runs failing like the reference, runs passing) at ``index``."""
        if self.direction is None or self.reference is None:
            return 0, 0
        fails = passes = 0
        for o in self.runs.get(index, ()):
            v = self.verdict(o)
            if v is Verdict.SKIP:
                continue
            if o.kind is OutcomeKind.PASS:
                passes += 1
            else:
                fails += 1
        return fails, passes

    def _failing(self) -> Verdict:
        return Verdict.NEW if self.direction == "regression" else Verdict.OLD

    def _apply(self, index: int) -> Verdict:
        """Count the runs at ``index`` into the search (again, when it was probed again)."""
        fails, passes = self.counts(index)
        runs = self.runs[index]
        note = ""
        c = self._point_class(runs) if self.mode == "plain" else None
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
            if self.mode == "plain" and c is not None and self._in_order(index, c):
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

    def _class_of(self, outcome: Outcome) -> int:
        """The class of a pass or a failure: a failure like one seen before gets its class."""
        if outcome.kind is OutcomeKind.PASS:
            return PASS_CLASS
        for j, seen in enumerate(self.classes):
            if same_failure(outcome, seen):
                return j + 1
        self.classes.append(outcome)
        return len(self.classes)

    def _point_class(self, runs: Sequence[Outcome]) -> int | None:
        """A point's class from its runs: the reference failure if any run shows it; a pass
        if any run passed and (unless ``any_failure``) no other failure counts against it;
        else the first failure's. None: every run was untestable."""
        assert self.reference is not None
        failures = [o for o in runs if failed(o)]
        if any(same_failure(o, self.reference) for o in failures):
            return self.ref_class
        passed = any(o.kind is OutcomeKind.PASS for o in runs)
        if failures and (self.any_failure or not passed):
            return self._class_of(failures[0])
        return PASS_CLASS if passed else None

    def _in_order(self, index: int, c: int) -> bool:
        """Whether a point of class ``c`` at ``index`` agrees with the segments so far. A pass
        and the reference failure in the wrong order (the failure below a pass in a
        regression) contradict each other: the repro is flaky, and the search turns
        probabilistic (with ``switch=False`` the point is left out, as a plain bisection
        ignores a verdict that would widen its range). Other failures may come and go."""
        if c not in (PASS_CLASS, self.ref_class):
            return True
        old_state = (c == PASS_CLASS) == (self.direction == "regression")
        other = self.ref_class if c == PASS_CLASS else PASS_CLASS
        others = [i for i, k in self.cls.items() if k == other]
        if old_state and any(i < index for i in others):
            self._switch("a point in the old state lies past one in the new state")
            return False
        if not old_state and any(i > index for i in others):
            self._switch("a point in the new state lies before one in the old state")
            return False
        return True

    def _switch(self, reason: str) -> None:
        if self.mode == "plain" and self.switch:
            self.mode = "probabilistic"
            self.switch_reason = reason
            # The posterior weighs the pass and the reference failure only: another failure
            # is no evidence there, and probing it again would buy nothing.
            self.skipped |= {i for i, c in self.cls.items()
                             if c not in (PASS_CLASS, self.ref_class)}  # fmt: skip

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
            self._decide_direction(self.old.outcome, self.new.outcome)
            if self.direction is not None:
                self._after_direction()
        return None

    def _retry_bad_end(self) -> bool:
        """Both ends passed so far, and the repro is known or said to be flaky (probabilistic
        mode, or --repeat): the failure may just not have shown yet at the end expected to
        fail (the new end, unless the user named the good end newer than the bad). Probe it
        again: within the probe budget in the probabilistic mode, up to four probes in all
        with --repeat."""
        if self.mode != "probabilistic" and self.repeat < 2:
            return False
        assert self.old.outcome is not None and self.new.outcome is not None
        if self.old.outcome.kind is not OutcomeKind.PASS:
            return False
        if self.new.outcome.kind is not OutcomeKind.PASS:
            return False
        bad = self.old if self.expected_direction == "fix" else self.new
        if self.mode == "probabilistic":
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

    def _decide_direction(self, old: Outcome, new: Outcome) -> None:
        old_pass = old.kind is OutcomeKind.PASS
        new_pass = new.kind is OutcomeKind.PASS
        if old_pass == new_pass:
            both = "pass" if old_pass else "fail"
            self._no_answer(
                f"both ends {both} (old end: {self._rate(self.old)}{old.describe()}; "
                f"new end: {self._rate(self.new)}{new.describe()})"
            )
            return
        found: Direction = "regression" if old_pass else "fix"
        expected = self.expected_direction
        if expected is not None and expected != found:
            good_end = self.old if expected == "regression" else self.new
            bad_end = self.new if expected == "regression" else self.old
            assert good_end.outcome is not None and bad_end.outcome is not None
            self._no_answer(
                f"the good end does not pass ({good_end.outcome.describe()}) "
                f"and the bad end does not fail ({bad_end.outcome.describe()})"
            )
            return
        self.direction = found
        self.reference = new if found == "regression" else old
        self.ref_class = self._class_of(self.reference)
        failing, passing = (self.new, self.old) if found == "regression" else (self.old, self.new)
        self.cls[failing.index], self.cls[passing.index] = self.ref_class, PASS_CLASS

    def _rate(self, end: End) -> str:
        runs = self.runs.get(end.index, ())
        if len(runs) < 2:
            return ""
        failed = sum(1 for o in runs if o.kind is not OutcomeKind.PASS)
        return f"{failed} of {len(runs)} runs failed, "

    def _end_name(self, end: End) -> Literal["old", "new"]:
        return "old" if end is self.old else "new"

    # -- the probabilistic mode ----------------------------------------------------------------

    def posterior(self) -> flaky.Posterior | None:
        if self.direction is None:
            return None
        points = [self.old.index, *self._open(self.old.index, self.new.index), self.new.index]
        counts = {i: self.counts(i) for i in points if i in self.runs}
        return flaky.posterior(points, counts, regression=self.direction == "regression")

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
        assert self.direction is not None
        best, p = post.best()
        k = post.points.index(best)
        last_old = post.points[k - 1]
        hidden = tuple(range(last_old + 1, best + 1))  # untestable points before it, and it
        assert self.reference is not None
        at = best if self.direction == "regression" else last_old
        shown = next((o for o in self.runs.get(at, ()) if failed(o)), self.reference)
        point = Breakpoint(last_old=last_old, first_new=best, outcome=shown,
                           possible=hidden if len(hidden) > 1 else ())  # fmt: skip
        if p >= self.confidence:
            self._result = BisectResult(
                status="found" if len(hidden) == 1 else "ambiguous",
                direction=self.direction,
                first_new=best,
                last_old=last_old,
                possible=hidden if len(hidden) > 1 else (),
                reason="" if len(hidden) == 1 else "untestable points hide the boundary",
                probability=p,
                breakpoints=(point,),
            )
            return
        possible = tuple(post.credible(self.confidence))
        self._result = BisectResult(
            status="ambiguous",
            direction=self.direction,
            first_new=best,
            last_old=last_old,
            possible=possible,
            reason=(
                f"after {self.probes_since_switch} probabilistic probe(s) the most likely "
                f"boundary has probability {p:.2f}, below the confidence {self.confidence:.2f}"
            ),
            probability=p,
            breakpoints=(point,),
        )

    # -- answers ------------------------------------------------------------------------------

    def _no_answer(self, reason: str) -> None:
        self._result = BisectResult(status="no-answer", direction=self.direction, reason=reason)

    def _finish(self) -> None:
        """The answer from the segments, once no gap has a point left to probe."""
        assert self.direction is not None
        a = answer(self.cls, self.ref_class, regression=self.direction == "regression",
                   any_failure=self.any_failure)  # fmt: skip
        self._result = BisectResult(
            status="found" if not a.possible else "ambiguous",
            direction=self.direction,
            first_new=a.first_new,
            last_old=a.last_old,
            possible=a.possible,
            reason="untestable points hide the boundary" if a.possible else "",
            breakpoints=breakpoints(self.cls, self._outcome_at, self.old.index, self.new.index),
            neighbour=a.neighbour,
        )

    def _outcome_at(self, index: int) -> Outcome:
        return representative(self.runs[index])

    @property
    def result(self) -> BisectResult | None:
        if self._result is None:
            self.next()
        return self._result

    # -- progress -----------------------------------------------------------------------------

    def fail_rate(self, index: int) -> tuple[int, int]:
        """(runs that failed, runs) at ``index``: any failure, for reports."""
        runs = self.runs.get(index, ())
        return sum(1 for o in runs if o.kind is not OutcomeKind.PASS), len(runs)

    def remaining(self) -> tuple[int, int]:
        """(candidates left in the open range, probes left at most) for progress displays."""
        if self._result is not None:
            return 0, 0
        if self.direction is None:
            open_range = max(0, self.new.index - self.old.index - 1)
            ends_left = sum(1 for e in (self.old, self.new) if e.outcome is None)
            left = sum(
                1 for i in range(self.old.index + 1, self.new.index) if i not in self.skipped
            )
            return left, ends_left + math.ceil(math.log2(left + 1)) if open_range else ends_left
        if self.mode == "probabilistic":
            left = len(self._open(self.old.index, self.new.index)) + 1
            return left, max(0, self.probe_budget() - self.probes_since_switch)
        open_gaps = [len(g.open) for g in self._gaps()]
        return sum(open_gaps), sum(math.ceil(math.log2(n + 1)) for n in open_gaps)

    def drawing(self, labels: list[str] | None = None) -> str:
        """The current range as ``[G, ?, S, F, B]`` (G a pass, B the reference failure, F
        another failure, S untestable, ? not yet known);
        in the probabilistic mode a point that may be the first new one shows its probability
        (``[G×3, 12%, 81%, B×4]``)."""
        if self.direction is None:
            return ""
        lo, hi = self.old.index, self.new.index
        if self.mode == "probabilistic":
            post = self.posterior()
            assert post is not None
            marks = flaky.marks(post, lo, hi, self.skipped, self.direction == "regression")
        else:
            marks = segments.marks(self.cls, self.skipped, self.ref_class, lo, hi)
        return "[" + ", ".join(collapse(marks)) + "]"


__all__ = ["BisectResult", "Bisector", "Breakpoint", "StandIn", "Step", "Verdict"]
