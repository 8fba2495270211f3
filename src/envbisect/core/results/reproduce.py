"""``envbisect repro``'s answer: did the report's failure happen here, and what to run next.

Who does what: ``decide`` compares the outcome seen here with the one the report shows
(``outcome.same_failure``: the one rule for "the same failure"); ``next_commands`` writes the
commands that go on from the answer; ``ReproResult`` is the typed answer, with ``to_dict`` for
``--json`` and ``lines`` for text. Pure.

    reproduced      the same failure as the report's          exit 0
    fails           a failure, and the report shows no error   exit 0
    different       a failure unlike the report's (both shown) exit 4
    not-reproduced  the repro passes here                      exit 4
    cannot          something this machine lacks (one line)    exit 1
    untestable      the environment could not be built here    exit 1
    dry-run         planned, nothing built                     exit 0
"""

from __future__ import annotations

import enum
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from packaging.utils import canonicalize_name

from envbisect.core.envreport.facts import Mapped
from envbisect.core.outcome import failed, same_failure
from envbisect.model import InstalledDist, Outcome, OutcomeKind


class ReproStatus(enum.Enum):
    REPRODUCED = "reproduced"
    FAILS = "fails"
    DIFFERENT = "different"
    PASSES = "not-reproduced"
    CANNOT = "cannot-reproduce"
    UNTESTABLE = "untestable"
    DRY_RUN = "dry-run"

    @property
    def exit_code(self) -> int:
        return _EXIT[self]


# 0: the failure happened here; 4 (as envbisect probe's "it does not pass"): the repro ran
# and the report's failure did not happen; 1 (every mode's "no answer"): it could not be run.
_EXIT = {
    ReproStatus.REPRODUCED: 0,
    ReproStatus.FAILS: 0,
    ReproStatus.DRY_RUN: 0,
    ReproStatus.DIFFERENT: 4,
    ReproStatus.PASSES: 4,
    ReproStatus.CANNOT: 1,
    ReproStatus.UNTESTABLE: 1,
}


def decide(expected: Outcome | None, seen: Outcome) -> ReproStatus:
    """The answer for the outcome ``seen`` here against the report's ``expected`` one."""
    if seen.kind is OutcomeKind.UNTESTABLE:
        return ReproStatus.UNTESTABLE
    if not failed(seen):
        return ReproStatus.PASSES
    if expected is None:
        return ReproStatus.FAILS
    return ReproStatus.REPRODUCED if same_failure(expected, seen) else ReproStatus.DIFFERENT


@dataclass(frozen=True, slots=True, kw_only=True)
class ReproResult:
    """The typed answer of ``envbisect repro``."""

    status: ReproStatus
    source: str
    formats: tuple[str, ...] = ()
    requirements: tuple[str, ...] = ()
    mapped: tuple[Mapped, ...] = ()
    python: str | None = None  # the report's
    target: str = ""
    repro: str = ""
    files: tuple[str, ...] = ()
    expected: Outcome | None = None
    seen: Outcome | None = None
    why: str = ""
    hint: str = ""
    next: tuple[tuple[str, str], ...] = ()  # (command, what it finds)
    env_id: str = ""
    reused: bool = False
    installed: tuple[InstalledDist, ...] = ()
    output: str = ""  # the tail of what the repro printed here (untrusted text)
    plans: tuple[dict[str, Any], ...] = field(default=())
    # The report's versions its own packages do not allow ("transformers 4.52.4 (llamafactory
    # 0.9.2 requires <=4.49.0)"): the environment was built with them overridden, as the
    # reporter runs it (DISABLE_VERSION_CHECK=1, a newer library for a newer model).
    off_pins: tuple[str, ...] = ()

    @property
    def exit_code(self) -> int:
        return self.status.exit_code

    def headline(self) -> str:
        s, seen = self.status, self.seen.describe() if self.seen else ""
        if s is ReproStatus.REPRODUCED:
            return f"reproduced: the same failure: {seen}"
        if s is ReproStatus.FAILS:
            return f"fails here: {seen} (the report shows no error to compare with)"
        if s is ReproStatus.DIFFERENT:
            return "a different failure"
        if s is ReproStatus.PASSES:
            return "not reproduced (passes here)"
        if s is ReproStatus.UNTESTABLE:
            return f"not reproduced: the report's environment cannot be built here: {self.why}"
        if s is ReproStatus.CANNOT:
            return f"cannot reproduce here: {self.why}"
        return f"dry run: the report's environment planned, nothing built{self._obstacle()}"

    def _obstacle(self) -> str:
        return f" (and it cannot be reproduced here: {self.why})" if self.why else ""

    def lines(self) -> list[str]:
        """The answer as text (data for stdout)."""
        out = [self.headline()]
        if self.off_pins:
            out.append(f"  off the pins: {'; '.join(self.off_pins)} (built as listed)")
        if self.status is ReproStatus.DIFFERENT and self.seen is not None:
            out.append(f"  here:     {self.seen.describe()}")
            out.append(f"  reported: {self.expected.describe() if self.expected else '?'}")
        out += [f"next: {command}   # {why}" for command, why in self.next]
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status.value,
            "report": self.source,
            "formats": list(self.formats),
            "environment": {
                "requirements": list(self.requirements),
                "mapped": [m.to_dict() for m in self.mapped],
                "report_python": self.python,
                "target": self.target,
                "env_id": self.env_id or None,
                "reused": self.reused,
                "installed": [d.to_dict() for d in self.installed],
                **({"off_pins": list(self.off_pins)} if self.off_pins else {}),
            },
            "repro": self.repro,
            "repro_files": list(self.files),
            "output": self.output or None,
            "expected": self.expected.to_dict() if self.expected else None,
            "outcome": self.seen.to_dict() if self.seen else None,
            "why": self.why or None,
            "next": [{"command": c, "finds": why} for c, why in self.next],
            **({"plans": list(self.plans)} if self.status is ReproStatus.DRY_RUN else {}),
        }


# -- what to run next ------------------------------------------------------------------------

_FRAME_PACKAGE = re.compile(r"(?:site|dist)-packages[\\/](?P<mod>[A-Za-z_][\w]*)[\\/]")


def culprit(error: str | None, pins: dict[str, str], subject: str | None) -> str | None:
    """The package to bisect: the innermost frame of the report's traceback that lies in one
    of the pinned packages, else the package the report is about, else the first pin."""
    if error:
        for m in reversed(list(_FRAME_PACKAGE.finditer(error))):
            name = canonicalize_name(m["mod"])
            if name in pins:
                return name
    if subject and subject in pins:
        return subject
    return next(iter(pins), None)


def next_commands(
    *,
    report: str,
    pins: dict[str, str],
    error: str | None,
    subject: str | None,
    repro_args: Sequence[str],
    flags: Sequence[str],
    named: int,
    overrides: Sequence[str] = (),
    within: Mapping[str, str] | None = None,
) -> tuple[tuple[str, str], ...]:
    """``envbisect lock`` (the newest environment where the repro passes, the report's
    subject held at its version) and ``envbisect run`` (the first release of the culprit with
    this failure, the rest of the report's environment held). ``pins``: name -> the version
    used; ``named``: how many packages the report names (a short list is the reporter's own
    choice of what matters: all of them go to lock, free); ``flags``: the interpreter, torch
    and index flags both commands take, as this run used them; ``overrides``: the report's
    versions off its packages' pins, which run must override to build the same environment
    (lock looks for the newest environment within the pins: it takes none); ``within``: for
    each package off the pins, its newest release the pins allow, the good end of a
    bisection across the cap (``run --package P --good WITHIN --bad REPORTED``, the rest as
    of each candidate's day, P overridden), listed first: the version past the pins is the
    first suspect."""
    across = []
    for name, good in (within or {}).items():
        bad = next((v for n, v in pins.items() if canonicalize_name(n) == name), None)
        if bad is None:
            continue
        cmd = ["envbisect", "run", "--package", name, "--pins", report, "--good", good]
        cmd += ["--bad", bad, "--override", name, "--rest", "contemporary"]
        across.append(
            (
                shlex.join([*cmd, *flags, *repro_args]),
                f"the first {name} past the pins that fails (from {good}, the newest they allow)",
            )
        )
    target = culprit(error, pins, subject)
    if target is None:
        return tuple(across)
    held = subject if subject in pins else target
    lock = ["envbisect", "lock", "--with", f"{held}=={pins[held]}"]
    others = [n for n in pins if n != held] if named <= 12 else [target] if target != held else []
    for name in others:
        lock += ["--with", name]
    run = ["envbisect", "run", "--package", target, "--pins", report, "--bad", pins[target]]
    for o in overrides:
        run += ["--override", o]
    return (
        *across,
        (shlex.join([*lock, *flags, *repro_args]), "the newest environment that passes"),
        (shlex.join([*run, *flags, *repro_args]), f"the first {target} release that fails"),
    )
