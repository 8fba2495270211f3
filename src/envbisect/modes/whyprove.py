"""``envbisect why --prove``: the two environments that show a finding, built and probed.

A static answer proposes; an environment decides. For each finding's first fix, the release
on each side of the change it rests on: the last good one must pass and the first bad one
fail, the other side of the failure held at the version the text states. The repro is the
question the history asked, made a command (``from M import X``, ``import M``, a signature
bound as the call was made; a change on the caller's side: importing the caller's module).
Built and run by the usual probe machinery (a Session: uv environments, the runner, the
store), so a proof is recorded like any probe and reused the next time.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from envbisect.core.evidence.boundaries import Change, Fix, History
from envbisect.core.results.why import Explained, WhyResult
from envbisect.model import Outcome, OutcomeKind
from envbisect.options import CommonOptions
from envbisect.progress import Progress

if TYPE_CHECKING:
    from envbisect.env.repro import Repro


@dataclass(frozen=True, slots=True, kw_only=True)
class Proof:
    """One fix shown, or not: ``good`` and ``bad`` are the requirements of the two
    environments, with what each did."""

    fix: Fix
    command: tuple[str, ...]
    good: tuple[str, ...]
    bad: tuple[str, ...]
    good_outcome: Outcome | None = None
    bad_outcome: Outcome | None = None
    reason: str = ""  # why there is no proof to run

    @property
    def proven(self) -> bool:
        return (
            self.good_outcome is not None
            and self.bad_outcome is not None
            and self.good_outcome.kind is OutcomeKind.PASS
            and self.bad_outcome.kind in (OutcomeKind.FAIL, OutcomeKind.CRASH)
        )

    def line(self) -> str:
        if self.reason:
            return f"  not proven: {self.fix.requirement}: {self.reason}"
        assert self.good_outcome is not None and self.bad_outcome is not None
        verdict = "proven" if self.proven else "NOT proven"
        return (
            f"  {verdict}: {' '.join(self.good)}: {self.good_outcome.describe()}; "
            f"{' '.join(self.bad)}: {self.bad_outcome.describe()} "
            f"(repro: {shlex.join(self.command)})"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "fix": self.fix.requirement,
            "proven": self.proven,
            "repro": list(self.command),
            "good": {
                "requirements": list(self.good),
                "outcome": self.good_outcome.to_dict() if self.good_outcome else None,
            },
            "bad": {
                "requirements": list(self.bad),
                "outcome": self.bad_outcome.to_dict() if self.bad_outcome else None,
            },
            "reason": self.reason or None,
        }


def _change(h: History, fix: Fix) -> Change | None:
    return next((c for c in h.changes if c.first_new == fix.version), None)


def plan(e: Explained, stated: dict[str, str]) -> Proof | None:
    """The two environments of ``e``'s first fix, or why there are none."""
    if not e.fixes:
        return None
    fix = e.fixes[0]
    h = next((h for h in e.histories if h.package == fix.package and h.role == fix.role), None)
    change = _change(h, fix) if h is not None else None
    if h is None or change is None:
        return Proof(fix=fix, command=(), good=(), bad=(), reason="no change to show")
    code = h.repro
    if not code:
        return Proof(
            fix=fix,
            command=(),
            good=(),
            bad=(),
            reason="the call is made deep in a run: prove it with your own repro "
            f"(envbisect probe --with '{fix.requirement}' -- YOUR COMMAND)",
        )
    good_v, bad_v = change.last_old, change.first_new
    if change.new == (1 if h.role == "callee" else 0):
        good_v, bad_v = change.first_new, change.last_old
    held = tuple(
        f"{o.package}=={stated[o.package]}"
        for o in e.histories
        if o.package != h.package and o.package in stated
    )
    return Proof(
        fix=fix,
        command=("python", "-c", code),
        good=(f"{h.package}=={good_v}", *held),
        bad=(f"{h.package}=={bad_v}", *held),
    )


def prove(
    result: WhyResult,
    stated: dict[str, str],
    common: Callable[[Repro], CommonOptions],
    progress: Progress | None = None,
) -> tuple[Proof, ...]:
    """Each finding's first fix shown by two environments (see the module's docstring)."""
    from dataclasses import replace
    from pathlib import Path

    from envbisect.env.repro import Repro
    from envbisect.modes.session import Session

    out = []
    for e in result.explained:
        p = plan(e, stated)
        if p is None:
            continue
        if p.reason:
            out.append(p)
            continue
        repro = Repro.build(origin=Path.cwd(), command=p.command)
        with Session(common(repro), progress) as session:
            (good, _), (bad, _) = (
                session.probe(session.env_spec(list(p.good))),
                session.probe(session.env_spec(list(p.bad))),
            )
        out.append(replace(p, good_outcome=good.outcome, bad_outcome=bad.outcome))
    return tuple(out)
