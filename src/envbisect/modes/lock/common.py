"""What one ``envbisect lock`` knows, in one place: its options, its requirements, the planner's
inputs, the constraints found so far and the log of every probe.

Who does what: ``open_lock`` reads the requirements once (``--pins``, ``--with``, ``--from``)
and builds a frozen ``LockContext``; modes/lock/solve.py hands it to the peer strategies that
find each round's constraint (``ByDate`` in modes/lock/bydate.py, ``Descent`` in
modes/lock/descent.py, ``Upgrade`` in modes/lock/upgrade.py), chosen by ``Strategy``. Each
strategy plans and probes through the context (``newest``, ``as_of``, ``moved_alone``,
``probe``, ``record``) and holds none of the lock's state itself: the context's fields never
change; what grows (the constraints, the rows and rounds) grows in the two objects it holds.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Protocol

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

from envbisect.core.plan import Fallback, MatchCache, Plan, PlanTarget, Policy, Unresolvable
from envbisect.core.planmemo import plan
from envbisect.core.results.lock import Constraint
from envbisect.core.results.parts import ProbeRow
from envbisect.errors import UsageError
from envbisect.index.source import IndexMetadataSource
from envbisect.modes.drive import Log, drive
from envbisect.modes.planning import read_pins
from envbisect.modes.session import Session, Want
from envbisect.options import CommonOptions
from envbisect.strategy.constraints import Constraints
from envbisect.strategy.protocol import Fixed

Pins = dict[str, Version]


class Strategy(enum.Enum):
    """How each round finds its constraint (``--strategy``)."""

    # the package the failure names, held back in the newest environment, if it names one;
    # else the search of the history (by date, or against --from's lock); and where no
    # starting point passes or none can be built, the descent from the newest environment
    AUTO = "auto"
    HISTORY = "history"  # the search of the history, every round
    DESCENT = "descent"  # the descent from the start


@dataclass(frozen=True, slots=True, kw_only=True)
class LockOptions:
    common: CommonOptions
    with_reqs: tuple[str, ...] = ()
    pins: tuple[str, ...] = ()
    extras: tuple[str, ...] = ()
    from_lock: str | None = None
    good_date: str | None = None
    pre: bool = False
    strategy: Strategy = Strategy.AUTO
    no_project: bool = False  # a release named as the pins source stays out of the lock
    now: datetime | None = None  # for tests; default: the clock


class Peer(Protocol):
    """A strategy of the lock: the constraints that make a failing newest environment's
    failure go (``NoAnswer``: it finds none)."""

    def find(self, newest: Plan, row: ProbeRow) -> list[Constraint]: ...


@dataclass(slots=True)
class Tally:
    """Every probe of the lock, in order (the diff engine's too), and the rounds run."""

    rows: list[ProbeRow] = field(default_factory=list)
    rounds: int = 0

    def add(self, log: Log[Any]) -> None:
        self.rows += log.rows
        self.rounds += log.rounds


@dataclass(frozen=True, slots=True, kw_only=True)
class LockContext:
    """One lock's inputs (module doc). ``good_date``: --good-date, parsed; ``from_pins``:
    --from's lock, read; ``now``: the clock, read once."""

    opts: LockOptions
    session: Session
    roots: tuple[Requirement, ...]
    from_pins: Pins | None
    good_date: datetime | None
    now: datetime
    source: IndexMetadataSource
    ptarget: PlanTarget
    fallback: Fallback
    cache: MatchCache = field(default_factory=dict)
    constraints: Constraints = field(default_factory=Constraints)
    tally: Tally = field(default_factory=Tally)

    @property
    def pre(self) -> bool:
        return self.opts.pre

    @property
    def markers(self) -> dict[str, str]:
        """The target's markers with no extra: what a dependency's marker is judged by."""
        return {**self.ptarget.markers, "extra": ""}

    def next_round(self) -> int:
        """The number the next constraint found takes."""
        return len(self.constraints.held) + 1

    def newest(self, specifiers: Mapping[str, SpecifierSet]) -> Plan | Unresolvable:
        return plan(
            list(self.roots),
            self.source,
            self.ptarget,
            pre=self.pre,
            constraints=specifiers,
            cache=self.cache,
            fallback=self.fallback,
        )

    def as_of(
        self, when: datetime, specifiers: Mapping[str, SpecifierSet] | None = None
    ) -> Plan | Unresolvable:
        return plan(
            list(self.roots),
            self.source,
            self.ptarget,
            policy=Policy.CONTEMPORARY,
            cutoff=when,
            pre=self.pre,
            constraints=specifiers,
            cache=self.cache,
            fallback=self.fallback,
            forward=True,  # a package with no file here that day: its first one that installs
        )

    def moved_alone(
        self, good: Plan, name: str, version: str, held: Mapping[str, SpecifierSet]
    ) -> Plan | Unresolvable:
        """``good`` with only ``name`` at ``version`` and what that forces (baseline policy),
        under the constraints on the other packages."""
        return plan(
            [*self.roots, Requirement(f"{name}=={version}")],
            self.source,
            self.ptarget,
            policy=Policy.BASELINE,
            baseline={str(k): v for k, v in good.pins.items()},
            pre=self.pre,
            cache=self.cache,
            constraints={k: v for k, v in held.items() if k != name},
            fallback=self.fallback,
        )

    def probe(self, label: str, planned: Plan) -> ProbeRow:
        """``planned`` probed (``--repeat`` times), logged; its row."""
        runs = self.session.opts.probing.repeat
        points: Fixed[str] = Fixed([label], repeat=runs)
        want = Want(label=label, spec=self.session.env_spec(planned.requirements()), runs=runs)
        log = drive(points, self.session, lambda p, n: want)
        self.tally.add(log)
        return log.rows[-1]


def open_lock(opts: LockOptions, session: Session, good_date: datetime | None) -> LockContext:
    """The context of a lock: its requirements read once, the planner's inputs made."""
    target = session.target
    ptarget = PlanTarget(markers=target.marker_environment(), python_version=target.python_version)
    roots, from_pins = _roots(opts, session, ptarget.markers)
    source = IndexMetadataSource(
        session.client,
        target,
        allow_sdist=False,
        overrides=session.opts.planning.overrides,
        provided=session.provided(r.name for r in roots),  # --inherit
    )
    return LockContext(
        opts=opts,
        session=session,
        roots=tuple(roots),
        from_pins=from_pins,
        good_date=good_date,
        now=opts.now or datetime.now(timezone.utc),
        source=source,
        ptarget=ptarget,
        # What resolvelib gives up on, uv plans (said once): in every plan of the lock, the
        # descent's and the search by date's included, as in run mode.
        fallback=session.uv_planner(),
    )


def _roots(
    opts: LockOptions, session: Session, env: Mapping[str, str]
) -> tuple[list[Requirement], Pins | None]:
    """The requirements to lock and --from's pins (None without it)."""
    roots = [Requirement(r) for r in opts.with_reqs]
    for ps in read_pins(opts.pins, session.client, cwd=session.repro.origin, extras=opts.extras):
        roots += [p.requirement for p in ps.applicable(env, opts.extras)]
        if ps.release and not opts.no_project:
            roots.append(Requirement(ps.release))
            session.progress.message(
                f"envbisect: the lock holds {ps.release} itself, the release its pins "
                "come from (--no-project leaves it out)"
            )
    from_pins: Pins | None = None
    if opts.from_lock:
        (lock,) = read_pins(
            [opts.from_lock], session.client, cwd=session.repro.origin, named="--from"
        )
        if not lock.is_lock:
            raise UsageError(
                f"--from {opts.from_lock} is not a lock: it has ranges, not one version "
                "of each package",
                hint="give a lockfile (requirements.txt with == pins, pylock.toml) or "
                "installed:PYTHON; for a project's ranges use --pins",
                ref="lock-from-not-lock",
            )
        from_pins = {canonicalize_name(n): v for n, v in lock.baseline(env).items()}
        if not roots:  # upgrade mode on its own: every package of the lock, at its newest
            roots = [Requirement(n) for n in sorted(from_pins)]
    if not roots:
        raise UsageError(
            "nothing to lock: no requirements given",
            hint="pass --pins SOURCE (e.g. llamafactory==0.9.5 or a pyproject), "
            "--with REQ, or --from LOCK",
            ref="lock-nothing",
        )
    return roots, from_pins
