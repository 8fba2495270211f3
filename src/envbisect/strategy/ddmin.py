"""Delta debugging (Zeller and Hildebrandt, 2002) as a state machine: ``next_batch(k)`` /
``record(subset, result)``, like the Bisector.

ddmin shrinks a set of changes to a 1-minimal subset that still brings the failure. It tries
the chunks of a partition, then their complements, and takes the *first* that fails, in
order. With ``k`` > 1 the next ``k`` of them are tested at once and the first failing one in
order is taken: the same choice a one-at-a-time run makes (it would have stopped there), in
fewer rounds. Unresolved subsets are neither pass nor fail: they never shrink the set.

Subsets are told with what was really tested, not only what was asked. Applying a change can
force others (an upgrade of one package needs a newer version of another), so ``record`` takes
the *effective* subset as well: every change the tested environment holds. A failure is
evidence about that effective set, so ddmin reasons over it: a failing subset shrinks the
current set to its effective set, and only when that is strictly smaller than the current set
(a chunk that cannot be tested without dragging the rest along is not a smaller failure, and
an effective set that reaches outside the current one is not inside the search). So each
shrink makes the set smaller (ddmin ends), the result is an effective set that failed (or the
whole set), and it is 1-minimal in effective terms: no chunk or complement of it was tested,
on its own, as a smaller failing set.

                [c1 c2 c3 c4 | c5 c6 c7 c8]   n=2: test each half, then each complement
                [c5 c6 c7 c8]                 a half failed: keep it, n=2 again
                [c5 c6 | c7 c8] -> ... [c7]   until no chunk or complement fails
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Generator, Sequence
from typing import Generic, TypeVar


class Result(enum.Enum):
    """What testing one subset says."""

    FAIL = "fail"
    PASS = "pass"
    UNRESOLVED = "unresolved"  # untestable, or another failure: evidence of nothing


C = TypeVar("C")
Subset = tuple[C, ...]
_Told = tuple[Result, Subset[C]]  # a tested subset's result and its effective set


class Ddmin(Generic[C]):
    """A 1-minimal failing subset of ``changes``; the whole set is taken to fail (the caller
    verified the bad end). ``result`` is set once ``next_batch`` returns nothing."""

    def __init__(self, changes: Sequence[C]) -> None:
        self._k = 1
        self._asked: list[Subset[C]] = []
        self._seen: dict[Subset[C], Result] = {}
        self._effective: dict[Subset[C], Subset[C]] = {}
        self.tests = 0  # subsets tested
        self.result: list[C] | None = None
        self._steps = self._run(list(changes))
        self._started = False

    def next_batch(self, k: int = 1) -> list[Subset[C]]:
        """Up to ``k`` subsets to test now; empty once the minimal set is known."""
        self._k = max(1, k)
        try:
            if not self._started:
                self._started = True
                asked = next(self._steps)
            else:
                asked = self._steps.send(
                    [(self._seen[s], self._effective.get(s, s)) for s in self._asked]
                )
        except StopIteration:
            self._asked = []
            return []
        self._asked = asked
        return list(asked)

    def record(
        self, subset: Subset[C], result: Result, effective: Sequence[C] | None = None
    ) -> None:
        """What testing ``subset`` said; ``effective``: the changes the tested environment
        really held (the subset and what it forced), when more than asked."""
        self._seen[subset] = result
        if effective is not None:
            self._effective[subset] = tuple(effective)
        self.tests += 1

    def _run(self, current: list[C]) -> Generator[list[Subset[C]], list[_Told[C]], None]:
        n = 2
        while len(current) >= 2:
            chunks = _split(current, n)
            found = yield from self._first_failing([tuple(c) for c in chunks], current)
            if found is not None:
                current, n = list(found), 2
                continue
            complements = [tuple(c for c in current if c not in chunk) for chunk in chunks]
            found = yield from self._first_failing([c for c in complements if c], current)
            if found is not None:
                current, n = list(found), max(n - 1, 2)
                continue
            if n >= len(current):
                break
            n = min(len(current), 2 * n)
        self.result = current

    def _first_failing(
        self, candidates: list[Subset[C]], current: list[C]
    ) -> Generator[list[Subset[C]], list[_Told[C]], Subset[C] | None]:
        """Test the candidates in order, ``k`` at a time; the effective set of the first that
        fails and is strictly inside ``current``, in order (in ``current``'s order)."""
        i = 0
        while i < len(candidates):
            batch = candidates[i : i + self._k]
            told = yield batch
            for result, effective in told:
                inside = set(effective) < set(current)
                if result is Result.FAIL and inside:
                    return tuple(c for c in current if c in effective)
            i += len(batch)
        return None


def ddmin(
    changes: Sequence[C],
    test: Callable[[Sequence[C]], Result | tuple[Result, Sequence[C]]],
) -> list[C]:
    """ddmin with a test function, one subset at a time; the test returns the result, or the
    result and the effective subset."""
    machine: Ddmin[C] = Ddmin(changes)
    while batch := machine.next_batch(1):
        for subset in batch:
            told = test(list(subset))
            if isinstance(told, tuple):
                machine.record(subset, told[0], told[1])
            else:
                machine.record(subset, told)
    assert machine.result is not None
    return machine.result


def _split(items: list[C], n: int) -> list[list[C]]:
    size, extra = divmod(len(items), n)
    out, start = [], 0
    for i in range(n):
        end = start + size + (1 if i < extra else 0)
        if end > start:
            out.append(items[start:end])
        start = end
    return out
