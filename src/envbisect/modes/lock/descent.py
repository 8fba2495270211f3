"""``envbisect lock``'s failure-driven descent: when no environment of the past passes (an old
pin on a new Python: the environment of the pin's day cannot be built here), or none can be
built, start from the newest environment and follow its failures down, as a person with uv
would, one failure at a time.

Coupled packages (trl with transformers, peft with transformers, datasets with pyarrow): a
suspect is held back past what the rest of the newest environment allows as it is (trl's
newest requires transformers>=4.56.2; the release pinned needs 4.47): below that floor each
version is planned with the rest re-resolved, so the requirer comes down with it (said in the
constraint: "held back with it: trl"). The search starts at the floor and goes below it only
when the floor fails the same way (strategy/holdback.py). When a suspect cannot be held back
at all, the requirers that bound it are the next suspects.

Who does what: modes/lock/solve.py runs the rounds and hands each failing newest environment to
``Descent.find``, one of the lock's peer strategies; the lock's context (modes/lock/common.py)
plans and probes. The failure names its suspects (core/implicate.py: the module the message
names, the distributions that own the traceback's frames, then the packages closest to the
pins); for each suspect in turn, ``HoldBack`` (strategy/holdback.py) bisects its versions,
everything else resolved newest under the constraints so far, for the newest version where
*this* failure is gone (a different failure there is the next one a masked failure let
through: progress). The two neighbouring versions are the constraint's proof, in the newest
environment with each: ``first_bad`` fails the way the newest did, ``last_good`` does not. A
suspect that cannot be held back far enough (its oldest version here fails the same way) is
said, and the next is tried. The lock then resolves the newest again under the new
constraint and repeats; once one passes, it tries each constraint away as it always does.
"""

from __future__ import annotations

from collections.abc import Mapping

from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

from envbisect.core.evidence.failure import read_failure
from envbisect.core.implicate import evidence, implicated, missing_module, named_owners
from envbisect.core.markers import applies
from envbisect.core.outcome import failed, same_failure
from envbisect.core.plan import Plan
from envbisect.core.results.lock import Constraint
from envbisect.core.results.parts import Moved, ProbeRow
from envbisect.errors import EnvbisectError, NoAnswer
from envbisect.model import Outcome
from envbisect.modes.drive import drive
from envbisect.modes.lock.common import LockContext
from envbisect.modes.session import Want
from envbisect.strategy.holdback import HoldBack

# Suspects tried for one failure before the descent gives up, unless the failure's own
# evidence (and the requirers that bound it) names more.
MAX_SUSPECTS = 6
MAX_SCANNED = 40  # suspects whose metadata is read for a module that is not installed


class Descent:
    """The descent, a peer strategy of the lock; its steps, in order (``steps``: one line
    each, for report.md and --json)."""

    def __init__(self, ctx: LockContext, *, why: str = "") -> None:
        self.ctx = ctx
        self.steps: list[str] = [why] if why else []
        self._statics: dict[str, list[tuple[str, Version]]] = {}

    def find(self, newest: Plan, row: ProbeRow) -> list[Constraint]:
        return [self.step(newest, row)]

    def say(self, text: str, *, quiet: bool = False) -> None:
        self.steps.append(text)
        if not quiet:
            self.ctx.session.progress.message(f"envbisect: descent: {text}")

    def step(self, newest: Plan, row: ProbeRow) -> Constraint:
        """The constraint that makes ``row``'s failure go from the newest environment: the
        first suspect that can be held back far enough (``NoAnswer``: none can)."""
        ctx, session = self.ctx, self.ctx.session
        held = ctx.constraints.specifiers()
        rec = session.store.get(row.env_id, session.repro.repro_id)
        modules = ((rec.env_report or {}).get("modules") if rec is not None else None) or {}
        rest = [
            s
            for s in implicated(row.outcome, row.installed, modules, newest.depths)
            if canonicalize_name(s) in newest.pins
        ]
        # The evidence first (the owner the message names, the frames' owners), then the
        # packages whose requirement bounds one of those from below (the requirer that
        # blocks a hold-back: trl for transformers), then the rest by distance from the pins.
        named = [s for s in evidence(row.outcome, row.installed, modules) if s in rest]
        # a package the wheels say removed what the failure names: first of all
        static = [p for p, _ in self._static(row) if p in rest]
        named = [*static, *(s for s in named if s not in static)]
        bounders = [b for b in self._bounders(named, newest) if b not in named]
        suspects = [*named, *bounders, *(s for s in rest if s not in named + bounders)]
        suspects = self._who_brought(missing_module(row.outcome), suspects, newest, held)
        cap = max(MAX_SUSPECTS, len(named) + len(bounders))
        self.say(
            f"{row.version} fails ({row.outcome.describe()}); suspects, in order: "
            + (", ".join(suspects[:cap]) or "none")
        )
        why: list[str] = []
        for i, name in enumerate(suspects[:cap]):
            found = self._hold(name, newest, row, held)
            if isinstance(found, Constraint):
                self.say(f"{name}{found.specifier}: {found.describe()}", quiet=True)
                return found
            why.append(found)
            after = suspects[i + 1] if i + 1 < min(len(suspects), cap) else None
            self.say(found + (f"; next suspect: {after}" if after else ""))
        raise NoAnswer(
            f"the descent found no package to hold back for {row.outcome.describe()}"
            + (f": {'; '.join(why)}" if why else ": the failure names no installed package"),
            hint="see report.md for each suspect tried; give --from LOCK of an environment "
            "that works, or widen the pins",
        )

    def owner_step(self, newest: Plan, row: ProbeRow) -> Constraint | None:
        """``--strategy auto``'s first try each round: when the failure names the package
        that lost what is imported (``cannot import name 'x' from 'pkg'``, ``module 'pkg' has
        no attribute``), hold that package back in the newest environment, which costs a
        bisection of its versions and no search of the history; None when the failure names
        no installed package, or holding it back does not make this failure go (the round
        then searches the history)."""
        ctx, session = self.ctx, self.ctx.session
        if missing_module(row.outcome) is not None:
            return None  # a module not installed at all: who brought it is the question
        rec = session.store.get(row.env_id, session.repro.repro_id)
        modules = ((rec.env_report or {}).get("modules") if rec is not None else None) or {}
        named = [
            s
            for s in named_owners(row.outcome, row.installed, modules)
            if canonicalize_name(s) in newest.pins
        ]
        if not named:
            return None
        name = named[0]
        self.say(f"{row.version} fails ({row.outcome.describe()}), naming {name}: held back first")
        found = self._hold(name, newest, row, ctx.constraints.specifiers())
        if isinstance(found, Constraint):
            self.say(f"{name}{found.specifier}: {found.describe()}", quiet=True)
            return found
        self.say(found + "; searching the history instead")
        return None

    def _who_brought(
        self,
        module: str | None,
        suspects: list[str],
        newest: Plan,
        held: Mapping[str, SpecifierSet],
    ) -> list[str]:
        """For a module that is not installed at all (``No module named 'x'``): first the
        suspects whose oldest version here required a distribution of that name (the
        package that stopped bringing it in), in their order; then the rest. One metadata
        read per suspect looked at, not an environment."""
        if module is None:
            return suspects
        top = module.split(".", 1)[0]
        wanted = {canonicalize_name(top), canonicalize_name(top.replace("_", "-"))}
        if wanted & set(newest.pins):
            return suspects  # it is installed: the message is about a part of it
        markers = self.ctx.markers
        brought = []
        for name in suspects[:MAX_SCANNED]:
            current = newest.pins[canonicalize_name(name)]
            versions, floor = self._versions(name, current, held.get(name, SpecifierSet()), newest)
            try:
                deps = self.ctx.source.dependencies(name, versions[floor])
            except EnvbisectError:  # metadata that cannot be read: not a reason to suspect
                continue
            if any(
                canonicalize_name(r.name) in wanted and applies(r.marker, markers) for r in deps
            ):
                brought.append(name)
        if brought:
            self.say(
                f"{top} is not installed; {', '.join(brought)} required it in an older "
                "release: suspected first"
            )
        return brought + [s for s in suspects if s not in brought]

    def _bounders(self, names: list[str], newest: Plan) -> list[str]:
        """The packages of the newest environment whose requirement on one of ``names`` has
        a lower bound (``trl 0.24`` needs ``transformers>=4.56.2``), in ``names``' order,
        then by name."""
        markers = self.ctx.markers
        wanted = {canonicalize_name(n): i for i, n in enumerate(names)}
        found: dict[str, int] = {}
        for parent, version in newest.pins.items():
            for r in self.ctx.source.dependencies(parent, version):
                i = wanted.get(canonicalize_name(r.name))
                if i is None or not applies(r.marker, markers):
                    continue
                if any(s.operator in (">=", ">", "~=", "==", "===") for s in r.specifier):
                    found[str(parent)] = min(i, found.get(str(parent), i))
        return sorted(found, key=lambda p: (found[p], p))

    def _versions(
        self, name: str, current: Version, held: SpecifierSet, newest: Plan
    ) -> tuple[list[Version], int]:
        """The versions of ``name`` the target can install, up to ``current``, that the
        constraints and the pins allow (the requirements given, and those of each release
        pinned exactly, which cannot move), oldest first; and the floor: the index of the
        oldest of them that the other packages of the newest environment, at their versions
        there, also allow (below it, they must be held back too)."""
        spec = held
        markers = self.ctx.markers
        fixed: dict[str, Version] = {}
        for r in self.ctx.roots:
            if canonicalize_name(r.name) == name:
                spec &= r.specifier
            exact = [s.version for s in r.specifier if s.operator in ("==", "===")]
            pinned = newest.pins.get(canonicalize_name(r.name))
            if len(exact) == 1 and "*" not in exact[0] and pinned is not None:
                fixed[canonicalize_name(r.name)] = pinned
        rest = SpecifierSet()
        for parent, version in newest.pins.items():
            for r in self.ctx.source.dependencies(parent, version):
                if canonicalize_name(r.name) != name:
                    continue
                if applies(r.marker, markers):
                    if parent in fixed:
                        spec &= r.specifier
                    else:
                        rest &= r.specifier
        versions = sorted(
            {
                pv.version
                for pv in self.ctx.source.versions(canonicalize_name(name))
                if pv.installable
                and pv.version <= current
                and spec.contains(pv.version, prereleases=True)
                and (self.ctx.pre or not pv.version.is_prerelease or pv.version == current)
            }
            | {current}
        )
        floor = next(
            (i for i, v in enumerate(versions) if rest.contains(v, prereleases=True)),
            len(versions) - 1,
        )
        return versions, floor

    def _hold(
        self, name: str, newest: Plan, row: ProbeRow, held: Mapping[str, SpecifierSet]
    ) -> Constraint | str:
        """``name`` bisected for the newest version without ``row``'s failure: the
        constraint, or why there is none."""
        ctx, session = self.ctx, self.ctx.session
        current = newest.pins[canonicalize_name(name)]
        versions, floor = self._versions(name, current, held.get(name, SpecifierSet()), newest)
        if len(versions) < 2:
            return f"{name} {current}: no older version here that the pins allow"
        plans: dict[int, Plan] = {len(versions) - 1: newest}

        def want(i: int, runs: int) -> Want:
            v = versions[i]
            label = f"{name} {v} (descent)"
            planned = ctx.newest({**held, name: SpecifierSet(f"=={v}")})
            if not isinstance(planned, Plan):
                return Want(label=label, why_not=f"unresolvable: {planned.reason}")
            plans[i] = planned
            return Want(label=label, spec=session.env_spec(planned.requirements()), runs=runs)

        any_failure = session.opts.probing.any_failure
        hint = self._hint(name, row, versions)
        hb = HoldBack(
            n=len(versions),
            reference=row.outcome,
            same=(lambda a, b: failed(a)) if any_failure else same_failure,
            repeat=session.opts.probing.repeat,
            floor=floor,
            hint=hint,
        )
        log = drive(hb, session, want)
        ctx.tally.add(log)
        rows = {p: r for p, r in zip(log.points, log.rows, strict=True)}
        rows[len(versions) - 1] = row
        if hb.last_good is None:
            tried = [versions[i] for i in sorted(hb.seen) if i < len(versions) - 1]
            if not tried:
                return f"{name}: no older version can be built with the rest"
            return (
                f"{name} cannot be held back far enough: its oldest version that can be "
                f"built here, {tried[0]}, fails the same way"
            )
        lo, hi = hb.last_good, hb.first_bad
        good, bad = plans[lo], plans[hi]
        below: Outcome | None = rows[lo].outcome
        moved = tuple(
            Moved(package=str(n), before=_s(good.pins.get(n)), after=_s(bad.pins.get(n)))
            for n in sorted(set(good.pins) | set(bad.pins))
            if n != name and good.pins.get(n) != bad.pins.get(n)
        )
        return Constraint(
            package=name,
            first_bad=str(versions[hi]),
            last_good=str(versions[lo]),
            outcome=rows[hi].outcome,
            passed=rows[lo].version,
            failed=rows[hi].version,
            moved_with=moved,
            held_with=self._held_with(name, versions[lo], newest, good),
            round=ctx.next_round(),
            found_by="descent",
            last_good_outcome=below if below is not None and failed(below) else None,
        )

    def _static(self, row: ProbeRow) -> list[tuple[str, Version]]:
        """What the wheels say of ``row``'s failure (``envbisect why``, nothing built): for
        each package a release removed what the failure names from, that release, in the
        order why gives its fixes (once per failure: remembered)."""
        key = row.env_id
        if key not in self._statics:
            self._statics[key] = []
            text = row.outcome.detail or row.outcome.signature
            if read_failure(text).items:
                from envbisect.modes.why import explain

                held = "\n".join(f"{d.name}=={d.version}" for d in row.installed)
                session = self.ctx.session
                minor = ".".join(str(p) for p in session.target.version[:2])
                try:
                    found = explain(
                        f"{held}\n\n{text}", origin=row.version, client=session.client, python=minor
                    )
                except EnvbisectError:  # a static guess that cannot be made: none
                    return []
                for fix in found.fixes:
                    if fix.op == "<":
                        self._statics[key].append(
                            (str(canonicalize_name(fix.package)), Version(fix.version))
                        )
        return self._statics[key]

    def _hint(self, name: str, row: ProbeRow, versions: list[Version]) -> tuple[int, int] | None:
        """The release the wheels say removed what ``row``'s failure names from ``name``, as
        indices into ``versions``: (the one before it, it); None where they say nothing."""
        for package, first_bad in self._static(row):
            if package != canonicalize_name(name):
                continue
            hi = next((i for i, v in enumerate(versions) if v >= first_bad), None)
            if hi is not None and hi > 0:
                self.say(
                    f"the wheels say {name} {versions[hi]} removed what the failure names: "
                    f"{versions[hi - 1]} and {versions[hi]} probed first",
                    quiet=True,
                )
                return hi - 1, hi
        return None

    def _held_with(
        self, name: str, last_good: Version, newest: Plan, good: Plan
    ) -> tuple[str, ...]:
        """The packages whose version in the newest environment does not allow
        ``last_good`` and that were held back with it in last_good's environment."""
        markers = self.ctx.markers
        out = []
        for parent, version in sorted(newest.pins.items()):
            after = good.pins.get(parent)
            if parent == name or after is None or after >= version:
                continue
            for r in self.ctx.source.dependencies(parent, version):
                if canonicalize_name(r.name) != name:
                    continue
                if applies(r.marker, markers) and not r.specifier.contains(
                    last_good, prereleases=True
                ):
                    out.append(f"{parent} {version} -> {after}")
                    break
        return tuple(out)


def _s(v: Version | None) -> str | None:
    return str(v) if v is not None else None
