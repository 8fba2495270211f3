"""Outcomes as the segments' class numbers: a pass, or one failure among those seen.

The plain search (segments.py) works on class numbers: ``PASS_CLASS`` for a pass, and each
failure unlike every failure seen before gets the next number (``same_failure``: its kind,
signal, exception or missing name). ``Classes`` keeps a representative of each failure class
and tells a point's class from its runs; ``disorder`` says when a pass and the reference
failure lie in the wrong order. Who uses it: the Bisector (bisect.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from envbisect.core.outcome import failed, same_failure
from envbisect.model import Outcome, OutcomeKind
from envbisect.strategy.segments import PASS_CLASS


@dataclass(slots=True, kw_only=True)
class Classes:
    """The failures seen, one representative per class (class ``j + 1`` is ``seen[j]``)."""

    seen: list[Outcome] = field(default_factory=list)

    def of(self, outcome: Outcome) -> int:
        """The class of a pass or a failure: a failure like one seen before gets its class."""
        if outcome.kind is OutcomeKind.PASS:
            return PASS_CLASS
        for j, seen in enumerate(self.seen):
            if same_failure(outcome, seen):
                return j + 1
        self.seen.append(outcome)
        return len(self.seen)

    def point(
        self, runs: Sequence[Outcome], *, reference: Outcome, ref_class: int, any_failure: bool
    ) -> int | None:
        """A point's class from its runs: the reference failure (``ref_class``) if any run shows
        it; a pass if any run passed and (unless ``any_failure``) no other failure counts
        against it; else the first failure's. None: every run was untestable."""
        failures = [o for o in runs if failed(o)]
        if any(same_failure(o, reference) for o in failures):
            return ref_class
        passed = any(o.kind is OutcomeKind.PASS for o in runs)
        if failures and (any_failure or not passed):
            return self.of(failures[0])
        return PASS_CLASS if passed else None


def disorder(
    cls: Mapping[int, int], index: int, c: int, *, ref_class: int, regression: bool
) -> str:
    """Why a point of class ``c`` at ``index`` contradicts the classes so far (``cls``), or ""
    when it agrees. A pass and the reference failure in the wrong order (the failure below a
    pass in a regression) contradict each other; other failures may come and go."""
    if c not in (PASS_CLASS, ref_class):
        return ""
    old_state = (c == PASS_CLASS) == regression
    other = ref_class if c == PASS_CLASS else PASS_CLASS
    others = [i for i, k in cls.items() if k == other]
    if old_state and any(i < index for i in others):
        return "a point in the old state lies past one in the new state"
    if not old_state and any(i > index for i in others):
        return "a point in the new state lies before one in the old state"
    return ""
