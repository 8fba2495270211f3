"""``envbisect lock``'s answer: the newest environment that passes, and every held-back
package with its proof.

Pure values. A ``Constraint`` holds one package below the release that broke the repro, with
its evidence (strategy/constraints.py keeps them as they are found and tried away). A lock search
ends in a ``LockOutcome``, which modes/lock/solve.py hands its outputs (modes/lock/outputs.py); they
write the files and make the ``LockResult``, whose ``to_dict`` is lock's ``--json``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from envbisect.core.results.parts import Moved, ProbeRow, Status
from envbisect.core.results.search import SearchResult
from envbisect.model import Outcome


@dataclass(frozen=True, slots=True, kw_only=True)
class Constraint:
    """``package<first_bad``, proven in one environment (the rest held): ``last_good``
    passed there (``passed``: that probe's label) and ``first_bad`` failed the way the newest
    environment did (``failed``). ``moment``: the release moment where the failure it answers
    started (a by-date search), else ""; ``still_needed``: the drop check against the final
    lock (without this constraint, what failed, and where)."""

    package: str
    first_bad: str
    last_good: str
    outcome: Outcome  # how first_bad failed
    passed: str
    failed: str
    moved_with: tuple[Moved, ...] = ()
    interaction: tuple[str, ...] = ()  # the other packages it needs
    # Coupled: the packages whose newest release requires first_bad or newer (trl's
    # transformers>=X), held back with it in last_good's environment, "name old -> new".
    held_with: tuple[str, ...] = ()
    round: int = 0
    moment: str = ""
    still_needed: Outcome | None = None
    still_needed_label: str = ""
    # How it was found: "date" (a release moment's culprit), "descent" (held back from the
    # newest environment's failure), "from" (delta debugging against --from's lock).
    found_by: str = "date"
    # The descent's last_good may fail another way (the failure this one masked): how.
    last_good_outcome: Outcome | None = None

    @property
    def specifier(self) -> str:
        return f"<{self.first_bad}"

    @property
    def below(self) -> str:
        """What last_good did: "passes", or "does not fail that way (...)"."""
        o = self.last_good_outcome
        return "passes" if o is None else f"does not fail that way ({o.describe()})"

    def line(self) -> str:
        """One constraints.txt line, its comment saying why (package metadata never reaches
        the comment unescaped: names and versions are checked, the signature is one line)."""
        sig = " ".join((self.outcome.signature or self.outcome.describe()).split())
        return (
            f"{self.package}{self.specifier}  # {self.first_bad} {self.outcome.kind.value}"
            f"{f' ({sig})' if sig else ''}; {self.last_good} "
            + ("passes" if self.last_good_outcome is None else "does not fail that way")
        )

    def describe(self) -> str:
        text = (
            f"{self.package} held below {self.first_bad}: {self.first_bad} "
            f"{self.outcome.describe()}; {self.last_good} {self.below} in the same environment"
        )
        if self.moved_with:
            text += f" (moved with it: {', '.join(m.describe() for m in self.moved_with)})"
        if self.interaction:
            text += f" (an interaction with {', '.join(self.interaction)})"
        if self.held_with:
            text += f" (held back with it: {', '.join(self.held_with)})"
        return text

    def held_line(self) -> str:
        """The CLI's line: ``held back: lib<2.0 (2.0 fail (sig); 1.9 passes)``."""
        o = self.outcome
        why = o.kind.value + (f" ({o.signature})" if o.signature else "")
        return (
            f"held back: {self.package}{self.specifier} ({self.first_bad} {why}; "
            f"{self.last_good} {self.below})"
        )

    def to_dict(self) -> dict[str, Any]:
        o = self.outcome
        return {
            "package": self.package,
            "specifier": self.specifier,
            "first_bad": self.first_bad,
            "last_good": self.last_good,
            "outcome": {"kind": o.kind.value, "signal": o.signal, "signature": o.signature},
            "evidence": {"passed": self.passed, "failed": self.failed},
            "moved_with": [m.to_dict() for m in self.moved_with],
            "interaction": list(self.interaction),
            **({"held_with": list(self.held_with)} if self.held_with else {}),
            "round": self.round,
            "found_by": self.found_by,
            **(
                {"last_good_outcome": self.last_good_outcome.to_dict()}
                if self.last_good_outcome is not None
                else {}
            ),
            **({"breakpoint": self.moment} if self.moment else {}),
            "still_needed": (
                {"label": self.still_needed_label, "outcome": self.still_needed.to_dict()}
                if self.still_needed is not None
                else None
            ),
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class Dropped:
    """A constraint tried away, and why it could go."""

    constraint: Constraint
    why: str

    def to_dict(self) -> dict[str, Any]:
        return {**self.constraint.to_dict(), "why": self.why}


@dataclass(frozen=True, slots=True, kw_only=True)
class HeldBack:
    """A package the lock holds below the newest version the requirements allow."""

    package: str
    locked: str
    newest: str

    def to_dict(self) -> dict[str, str]:
        return {"package": self.package, "locked": self.locked, "newest": self.newest}


@dataclass(frozen=True, slots=True, kw_only=True)
class LockResult(SearchResult):
    """The lock (``status`` found, with its files) or why there is none (no answer, with the
    evidence so far). ``held_back``: None where no lock was written."""

    constraints_file: str | None = None
    constraints: tuple[Constraint, ...] = ()
    dropped: tuple[Dropped, ...] = ()
    rounds: int = 0
    held_back: tuple[HeldBack, ...] | None = None
    descent: tuple[str, ...] = ()  # the descent's steps, in order (none: it did not descend)

    def to_dict(self) -> dict[str, Any]:
        """lock's ``--json`` (docs/reference/json.md): no version pair, the lock's files;
        ``--dry-run``: the plans."""
        if self.status is Status.DRY_RUN:
            return {"dry_run": True, "plans": list(self.plans)}
        return {
            "status": self.status.value,
            **({"reason": self.reason} if self.status is Status.NO_ANSWER else {}),
            "lock": self.lock_path,
            "pylock": self.pylock_path,
            "constraints_file": self.constraints_file,
            "constraints": [c.to_dict() for c in self.constraints],
            "probes": [r.to_dict() for r in self.rows if not r.reused],
            "reused": [r.to_dict() for r in self.rows if r.reused],
            "report": self.report_path,
            **self.header_dict(),
            "dropped": [d.to_dict() for d in self.dropped],
            "rounds": self.rounds,
            **({"descent": list(self.descent)} if self.descent else {}),
            **(
                {"held_back": [h.to_dict() for h in self.held_back]}
                if self.held_back is not None
                else {}
            ),
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class LockOutcome:
    """Where a lock search ended, handed to its outputs: the result so far (its header, rows,
    status and reason), the constraints held and dropped, and for a lock that was found the
    newest environment that passes (``passing``), its pins (``locked``) and the newest pins
    without any constraint (``unconstrained``: None when they do not resolve)."""

    result: LockResult
    held: tuple[Constraint, ...] = ()
    dropped: tuple[Dropped, ...] = ()
    rounds: int = 0
    passing: ProbeRow | None = None
    locked: Mapping[str, str] = field(default_factory=dict)
    unconstrained: Mapping[str, str] | None = None
    descent: tuple[str, ...] = ()
