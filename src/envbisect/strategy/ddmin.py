"""Delta debugging (Zeller and Hildebrandt, 2002) as a state machine: ``next_batch(k)`` /
``record(subset, result)``, like the Bisector.

ddmin shrinks a set of changes to a 1-minimal subset that still brings the failure. It tries
the chunks of a partition, then their complements, and takes the *first* that fails, in
order. With ``k`` > 1 the next ``k`` of them are tested at once and the first failing one in
order is taken: the same choice a one-at-a-time run makes (it would have stopped there), in
fewer rounds. Unresolved subsets are neither pass nor fail: they never shrink the set.

                [c1 c2 c3 c4 | c5 c6 c7 c8]   n=2: test each half, then each complement
                [c5 c6 c7 c8]                 a half failed: keep it, n=2 again
                [c5 c6 | c7 c8] -> ... [c7]   until no chunk or complement fails
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Sequence
from typing import Generic, Literal, TypeVar

Result = Literal["fail", "pass", "unresolved"]
C = TypeVar("C")
Subset = tuple[C, ...]


class Ddmin(Generic[C]):
    """A 1-minimal failing subset of ``changes``; the whole set is taken to fail (the caller
    verified the bad end). ``result`` is set once ``next_batch`` returns nothing."""

    def __init__(self, changes: Sequence[C]) -> None:
        self._k = 1
        self._asked: list[Subset[C]] = []
        self._seen: dict[Subset[C], Result] = {}
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
                asked = self._steps.send([self._seen[s] for s in self._asked])
        except StopIteration:
            self._asked = []
            return []
        self._asked = asked
        return list(asked)

    def record(self, subset: Subset[C], result: Result) -> None:
        self._seen[subset] = result
        self.tests += 1

    def _run(self, current: list[C]) -> Generator[list[Subset[C]], list[Result], None]:
        n = 2
        while len(current) >= 2:
            chunks = _split(current, n)
            found = yield from self._first_failing([tuple(c) for c in chunks])
            if found is not None:
                current, n = list(found), 2
                continue
            complements = [tuple(c for c in current if c not in chunk) for chunk in chunks]
            found = yield from self._first_failing([c for c in complements if c])
            if found is not None:
                current, n = list(found), max(n - 1, 2)
                continue
            if n >= len(current):
                break
            n = min(len(current), 2 * n)
        self.result = current

    def _first_failing(
        self, candidates: list[Subset[C]]
    ) -> Generator[list[Subset[C]], list[Result], Subset[C] | None]:
        """Test the candidates in order, ``k`` at a time; the first that fails, in order."""
        i = 0
        while i < len(candidates):
            batch = candidates[i : i + self._k]
            results = yield batch
            for subset, result in zip(batch, results, strict=True):
                if result == "fail":
                    return subset
            i += len(batch)
        return None


def ddmin(changes: Sequence[C], test: Callable[[Sequence[C]], Result]) -> list[C]:
    """ddmin with a test function, one subset at a time."""
    machine: Ddmin[C] = Ddmin(changes)
    while batch := machine.next_batch(1):
        for subset in batch:
            machine.record(subset, test(list(subset)))
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
