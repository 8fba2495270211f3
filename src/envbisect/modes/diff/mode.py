"""The culprit between two environments: ``envbisect diff GOOD BAD``.

Who does what: the two ends are read as exact pins (lockfiles, ``pylock.toml``,
``installed:PYTHON``; a source with ranges is resolved first); both are probed and must
verify. ``ddmin`` (Zeller's delta debugging: a state machine in strategy/ddmin.py, driven
by the loop every mode uses, so ``--jobs K`` tests K subsets a round) then shrinks the set of
changed packages to a 1-minimal set that still brings the failure; that set is reduced to its
roots (what no other member forces), verified by probes. Finally each culprit package is
bisected between its good and bad versions. Two or more culprits are an interaction: the
failure needs them together. The engine (``DiffEngine``, modes/diff/engine.py) is lock's
too; this module reads the two ends and makes the ``DiffResult``.

What was probed, not what was asked. Each subset ddmin tries is the good environment with
those changes applied, made consistent by the planner (baseline GOOD, so the rest moves as
little as it can). The planner may have to move other packages with it (app 2.0 needs lib>=2:
asking for app brings lib along), so the subset's *effective* change set is read from the
plan: every package whose planned version differs from GOOD's. ddmin is told that set and
reasons over it: a failure is evidence against the effective set, never against the subset
asked for, and it shrinks the search only when the effective set is strictly smaller than the
current one (a chunk that drags the rest along is no smaller failure). So the minimal set is
a set of effective changes that failed together, and it names every package the failure
needed (lib, not app, when lib alone fails; both, when neither can be probed without the
other).

The span. Every plan is kept between the two ends: each changed package between its GOOD and
BAD versions (constraints given to the planner), every other package either end names at
GOOD's version. A plan that still moves one outside (a version not between, a package dropped
or added against both ends) is unresolved, never evidence, like a subset with no consistent
environment. A package neither end names (ends that list direct requirements only) is left
to the planner: the ends say nothing of it.

Roots. A member of the minimal set that the others' BAD versions require (a package a new
major version drags in) is forced, not a cause: the set is reduced to its roots and the roots
verified with probes (modes/diff/roots.py); where they do not verify, the culprits are the minimal
set, with a note. A single root is a single culprit, whatever it forces; two or more roots
are an interaction.

Culprits. Each culprit is bisected between its good and bad versions, the other culprits
applied at BAD (so an interaction can show), except those its own change forces, which the
planner moves within their spans; an old version of another package never fails in its
place. Each culprit is reported with what had to move with it (``moved_with``: package,
GOOD's version, the version planned where the culprit's first bad version failed; absent when
nothing moved; what another culprit's change moves is that culprit's) and, once the roots
verified, the members of the minimal set it forces (``forced``; absent when none).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from packaging.utils import canonicalize_name
from packaging.version import Version

from envbisect.core.pins.sources import PinSet
from envbisect.core.plan import Fallback, MatchCache, Plan, PlanTarget
from envbisect.core.planmemo import plan
from envbisect.core.results.diff import DiffResult, changes_between
from envbisect.core.results.parts import Direction, Status
from envbisect.core.target import Target
from envbisect.errors import NoAnswer, UsageError
from envbisect.index.source import IndexMetadataSource
from envbisect.modes.diff.engine import DiffEngine
from envbisect.modes.outputs import write_outputs
from envbisect.modes.planning import read_pins
from envbisect.modes.session import Session
from envbisect.options import CommonOptions
from envbisect.progress import Progress


@dataclass(frozen=True, slots=True, kw_only=True)
class DiffOptions:
    good: str
    bad: str
    common: CommonOptions


def run_diff(opts: DiffOptions, progress: Progress | None = None) -> DiffResult:
    """Both ends verified, ddmin over the changed packages, each culprit's first bad version.

    Ends that do not verify raise ``NoAnswer`` once report.md is written."""
    with Session(opts.common, progress) as session:
        return _run(opts, session)


def _run(opts: DiffOptions, session: Session) -> DiffResult:
    target, client = session.target, session.client
    env = target.marker_environment()
    source = IndexMetadataSource(client, target, overrides=session.opts.planning.overrides)
    ptarget = PlanTarget(markers=env, python_version=target.python_version)
    cache: MatchCache = {}
    (good_set,) = read_pins([opts.good], client, cwd=session.repro.origin, named="GOOD")
    (bad_set,) = read_pins([opts.bad], client, cwd=session.repro.origin, named="BAD")
    _same_python(good_set, bad_set, target)
    fallback = session.uv_planner()
    good = _exact(good_set, "GOOD", source, ptarget, env, cache, fallback)
    bad = _exact(bad_set, "BAD", source, ptarget, env, cache, fallback)
    changes = changes_between(good, bad)
    if not changes:
        raise UsageError(
            "GOOD and BAD pin the same versions: nothing to isolate",
            hint="compare two different environments",
            ref="diff-same",
        )
    result = session.result(
        DiffResult,
        package="(diff)",
        candidates=len(changes),
        direction=Direction.REGRESSION,
        run_id=_run_id(opts, session),
    )
    engine = DiffEngine(
        good=good,
        bad=bad,
        changes=changes,
        source=source,
        ptarget=ptarget,
        cache=cache,
        session=session,
    )
    try:
        engine.verify_ends(changes)
        session.progress.message(f"envbisect: {len(changes)} changed package(s); ddmin")
        culprits = engine.culprits(engine.ddmin(changes))
    except NoAnswer as e:
        result = replace(result, reason=e.message, rows=tuple(engine.rows), search=engine.search)
        e.result = write_outputs(result, session, label="environment")
        raise
    except KeyboardInterrupt as e:
        raise session.interrupted(e) from e
    assert engine.found is not None
    result = replace(
        result,
        status=Status.FOUND,
        first_new="BAD",
        last_old="GOOD",
        rows=tuple(engine.rows),
        search=engine.search,
        culprits=culprits,
        roots=engine.found,
        changed=tuple(changes),
    )
    section = "## Culprit\n\n" + "\n".join(f"- {line}" for line in result.lines())
    return write_outputs(replace(result, sections=(section,)), session, label="environment")


def _exact(
    pins: PinSet,
    which: str,
    source: IndexMetadataSource,
    ptarget: PlanTarget,
    env: dict[str, str],
    cache: MatchCache,
    fallback: Fallback,
) -> dict[str, Version]:
    """Exact versions of a lock; a source with ranges is resolved (newest versions)."""
    if pins.is_lock:
        return {canonicalize_name(n): v for n, v in pins.baseline(env).items()}
    reqs = [p.requirement for p in pins.applicable(env)]
    planned = plan(reqs, source, ptarget, cache=cache, fallback=fallback)
    if not isinstance(planned, Plan):
        raise UsageError(
            f"{which} ({pins.source}) has no consistent environment: {planned.reason}",
            hint="check the pins",
            ref="diff-unresolvable",
        )
    return {str(n): v for n, v in planned.pins.items()}


def _same_python(good: PinSet, bad: PinSet, target: Target) -> None:
    """Two locks for different Pythons cannot be compared on one interpreter."""
    for which, ps in (("GOOD", good), ("BAD", bad)):
        wanted = ps.requires_python
        if wanted and not target.accepts_requires_python(wanted):
            raise UsageError(
                f"{which} ({ps.source}) is for Python {wanted}; the target is Python "
                f"{target.python_version}",
                hint="lock both for the same Python, or pass --python to match them",
                ref="diff-python",
            )


def _run_id(opts: DiffOptions, session: Session) -> str:
    return session.run_id("diff", {"good": opts.good, "bad": opts.bad})
