"""The culprit between two environments: ``envbisect diff GOOD BAD``.

Who does what: the two ends are read as exact pins (lockfiles, ``pylock.toml``,
``installed:PYTHON``; a source with ranges is resolved first); both are probed and must
verify. ``ddmin`` (Zeller's delta debugging, pure, below) then shrinks the set of changed
packages to a 1-minimal set that still brings the failure; each subset it tries is the good
environment with those changes applied, made consistent by the planner (what it forces is
recorded, and a subset with no consistent environment counts as unresolved, never as a
pass or a failure). Finally each culprit package is bisected between its good and bad
versions, the other culprits applied. A minimal set of two or more packages is an
interaction: the failure needs them together.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import httpx
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from envbisect.core.candidates import build_candidates
from envbisect.core.outcome import same_failure, untestable
from envbisect.core.pins import PinSet
from envbisect.core.plan import MatchCache, Plan, PlanTarget, Policy, plan
from envbisect.core.report import ProbeRow, RunResult
from envbisect.core.target import Target
from envbisect.env.prober import Prober
from envbisect.env.repro import Repro
from envbisect.env.uv import find_python, find_uv, inspect_target
from envbisect.errors import Interrupted, NoAnswer, UsageError
from envbisect.index.client import IndexClient, default_cache_dir
from envbisect.index.source import IndexMetadataSource
from envbisect.model import EnvSpec, IndexConfig, Outcome, OutcomeKind
from envbisect.modes.planning import read_pins
from envbisect.modes.run import record_row, write_outputs
from envbisect.redact import mask_text
from envbisect.reporter import Reporter
from envbisect.store import Store
from envbisect.strategy.bisect import Bisector

Result = Literal["fail", "pass", "unresolved"]
Change = tuple[str, str | None, str | None]  # (package, good version, bad version)


def ddmin(changes: Sequence[Change], test: Callable[[Sequence[Change]], Result]) -> list[Change]:
    """A 1-minimal subset of ``changes`` for which ``test`` still says "fail".

    ``test(changes)`` is taken to be "fail" (the caller verified the bad end). Unresolved
    subsets are neither: they never shrink the set (Zeller and Hildebrandt, 2002).
    """
    current = list(changes)
    n = 2
    while len(current) >= 2:
        chunks = _split(current, n)
        for chunk in chunks:
            if test(chunk) == "fail":
                current, n = chunk, 2
                break
        else:
            for chunk in chunks:
                complement = [c for c in current if c not in chunk]
                if complement and test(complement) == "fail":
                    current, n = complement, max(n - 1, 2)
                    break
            else:
                if n >= len(current):
                    break
                n = min(len(current), 2 * n)
    return current


def _split(items: list[Change], n: int) -> list[list[Change]]:
    size, extra = divmod(len(items), n)
    out, start = [], 0
    for i in range(n):
        end = start + size + (1 if i < extra else 0)
        if end > start:
            out.append(items[start:end])
        start = end
    return out


@dataclass(frozen=True, slots=True, kw_only=True)
class DiffOptions:
    good: str
    bad: str
    repro: Repro
    indexes: IndexConfig = field(default_factory=IndexConfig)
    python: str | None = None
    timeout: float = 600.0
    results: Path = Path("results")
    any_failure: bool = False
    keep_envs: bool = False
    native_backtrace: str = "auto"
    command: str = ""
    offline: bool = False
    cache_dir: Path | None = None
    repeat: int = 1  # runs per environment; a failure in any run marks it


def run_diff(
    opts: DiffOptions,
    reporter: Reporter | None = None,
    *,
    transport: httpx.BaseTransport | None = None,
) -> RunResult:
    reporter = reporter or Reporter()
    uv = find_uv()
    python = find_python(uv, opts.python)
    target = inspect_target(python)
    client = IndexClient(opts.indexes, transport=transport, offline=opts.offline,
                         cache_dir=opts.cache_dir or default_cache_dir())  # fmt: skip
    with client:
        env = target.marker_environment()
        source = IndexMetadataSource(client, target)
        ptarget = PlanTarget(markers=env, python_version=target.python_version)
        cache: MatchCache = {}
        good_set, bad_set = read_pins([opts.good, opts.bad], client, cwd=opts.repro.origin)
        _same_python(good_set, bad_set, target)
        good = _exact(good_set, "GOOD", source, ptarget, env, cache)
        bad = _exact(bad_set, "BAD", source, ptarget, env, cache)
        changes: list[Change] = [
            (n, str(good[n]) if n in good else None, str(bad[n]) if n in bad else None)
            for n in sorted(good.keys() | bad.keys())
            if good.get(n) != bad.get(n)
        ]
        if not changes:
            raise UsageError(
                "GOOD and BAD pin the same versions: nothing to isolate",
                hint="compare two different environments",
                ref="diff-same",
            )
        prober = Prober(uv=uv, python=python, target=target, repro=opts.repro,
                        results=opts.results, timeout=opts.timeout, keep_envs=opts.keep_envs,
                        native_backtrace=opts.native_backtrace, reporter=reporter)  # fmt: skip
        result = RunResult(
            package="(diff)", status="no-answer", direction="regression", first_new=None,
            last_old=None, candidates=len(changes),
            target=f"{target.short} ({python}, Python {target.python_version})",
            command=mask_text(opts.command), repro=opts.repro.describe(),
            run_id=_run_id(opts, target),
        )  # fmt: skip
        session = _Session(good=good, source=source, ptarget=ptarget, cache=cache,
                           prober=prober, indexes=opts.indexes, reporter=reporter,
                           result=result, any_failure=opts.any_failure,
                           repeat=opts.repeat)  # fmt: skip
        with Store(opts.results) as store:
            session.store = store
            try:
                session.verify_ends(bad, changes)
                reporter.message(f"envbisect: {len(changes)} changed package(s); ddmin")
                minimal = ddmin(changes, session.test)
                culprits = [session.first_bad(c, [o for o in minimal if o != c], client, target)
                            for c in minimal]  # fmt: skip
            except KeyboardInterrupt as e:
                raise Interrupted(
                    f"interrupted; finished probes are kept in {store.path}",
                    hint="run the same command again to resume: finished probes are reused",
                ) from e
        result.status = "found"
        result.first_new, result.last_old = "BAD", "GOOD"
        result.extra = {
            "culprits": culprits,
            "interaction": len(minimal) > 1,
            "changed": [{"package": n, "good_version": g, "bad_version": b} for n, g, b in changes],
        }
        names = ", ".join(f"{c['package']} {c['good_version']} -> {c['bad_version']}"
                          for c in culprits)  # fmt: skip
        kind = "an interaction: the failure needs all of them together" if len(minimal) > 1 else ""
        result.sections = [f"## Culprit\n\n- {names}" + (f"\n- {kind}" if kind else "")]
        write_outputs(result, results=opts.results, allow_sdist=False, label="environment",
                      target=target, client=client)  # fmt: skip
    return result


@dataclass(slots=True, kw_only=True)
class _Session:
    good: dict[str, Version]
    source: IndexMetadataSource
    ptarget: PlanTarget
    cache: MatchCache
    prober: Prober
    indexes: IndexConfig
    reporter: Reporter
    result: RunResult
    any_failure: bool
    repeat: int = 1
    store: Store | None = None
    reference: Outcome | None = None

    def environment(self, applied: Sequence[Change]) -> tuple[Plan | None, str]:
        """The good environment with these changes applied, made consistent by the planner."""
        exact = {n: b for n, _, b in applied if b is not None}
        dropped = {n for n, _, b in applied if b is None}
        roots = [Requirement(f"{n}=={v}") for n, v in exact.items()]
        roots += [Requirement(n) for n in self.good if n not in exact and n not in dropped]
        baseline = {n: v for n, v in self.good.items() if n not in dropped}
        planned = plan(roots, self.source, self.ptarget, policy=Policy.BASELINE,
                       baseline=baseline, cache=self.cache)  # fmt: skip
        if not isinstance(planned, Plan):
            return None, planned.reason
        return planned, ""

    def probe(self, label: str, planned: Plan | None, reason: str) -> ProbeRow:
        assert self.store is not None
        self.reporter.probe_started(label, 0, 0)
        if planned is None:
            row = ProbeRow(version=label, outcome=untestable(f"unresolvable: {reason}"),
                           verdict="skip", reused=False, build_seconds=0.0, probe_seconds=0.0,
                           env_id="")  # fmt: skip
        else:
            spec = EnvSpec.build(planned.requirements(), python=self.prober.python_label(),
                                 indexes=self.indexes)  # fmt: skip
            rec, reused = self.prober.probe(self.store, spec, self.repeat)
            moved = tuple((n, str(b) if b else None, str(v) if v else None)
                          for n, b, v in planned.moved)  # fmt: skip
            row = record_row(label, rec, reused, env_id=spec.env_id, moved=moved)
        self.reporter.probe_finished(label, row.outcome, row.build_seconds + row.probe_seconds,
                                     row.reused, "")  # fmt: skip
        self.result.rows.append(row)
        return row

    def verify_ends(self, bad: dict[str, Version], changes: Sequence[Change]) -> None:
        good_row = self.probe("GOOD", *self.environment([]))
        bad_row = self.probe("BAD", *self.environment(changes))
        if good_row.outcome.kind is not OutcomeKind.PASS:
            raise NoAnswer(f"the GOOD environment does not pass: {good_row.outcome.describe()}",
                           hint="GOOD must be an environment where the repro passes")  # fmt: skip
        if bad_row.outcome.kind in (OutcomeKind.PASS, OutcomeKind.UNTESTABLE):
            raise NoAnswer(f"the BAD environment does not fail: {bad_row.outcome.describe()}",
                           hint="BAD must be an environment where the repro fails")  # fmt: skip
        self.reference = bad_row.outcome

    def verdict(self, outcome: Outcome) -> Result:
        if outcome.kind is OutcomeKind.PASS:
            return "pass"
        if outcome.kind is OutcomeKind.UNTESTABLE:
            return "unresolved"
        assert self.reference is not None
        if self.any_failure or same_failure(outcome, self.reference):
            return "fail"
        return "unresolved"  # another bug: not evidence either way

    def test(self, subset: Sequence[Change]) -> Result:
        label = "apply " + ", ".join(f"{n} {g or '-'}->{b or '-'}" for n, g, b in subset)
        row = self.probe(label, *self.environment(subset))
        return self.verdict(row.outcome)

    def first_bad(
        self, change: Change, others: Sequence[Change], client: IndexClient, target: Target
    ) -> dict[str, Any]:
        """The first version of the culprit, between its good and bad versions, that fails
        (the other culprits applied, so that an interaction can show)."""
        name, good_v, bad_v = change
        if good_v is None or bad_v is None:
            return {"package": name, "good_version": good_v, "bad_version": bad_v}
        lo, hi = Version(good_v), Version(bad_v)
        files = client.project_files(name).files
        versions = [c.version for c in build_candidates(files, target).candidates
                    if c.installable and lo <= c.version <= hi]  # fmt: skip
        if lo > hi or len(versions) <= 2:
            return {"package": name, "good_version": good_v, "bad_version": bad_v}
        self.reporter.message(f"envbisect: first bad {name} between {good_v} and {bad_v}")
        bis = Bisector(n=len(versions), good=0, bad=len(versions) - 1, any_failure=True)
        while (i := bis.next()) is not None:
            applied = [*others, (name, good_v, str(versions[i]))]
            row = self.probe(f"{name} {versions[i]}", *self.environment(applied))
            verdict = self.verdict(row.outcome)
            outcome = row.outcome if verdict != "unresolved" else untestable("another outcome")
            bis.record(i, outcome)
        final = bis.result
        if final is None or final.status == "no-answer" or final.first_new is None:
            return {"package": name, "good_version": good_v, "bad_version": bad_v}
        last_good = versions[final.last_old] if final.last_old is not None else lo
        return {"package": name, "good_version": str(last_good),
                "bad_version": str(versions[final.first_new])}  # fmt: skip


def _exact(
    pins: PinSet,
    which: str,
    source: IndexMetadataSource,
    ptarget: PlanTarget,
    env: dict[str, str],
    cache: MatchCache,
) -> dict[str, Version]:
    """Exact versions of a lock; a source with ranges is resolved (newest versions)."""
    if pins.is_lock:
        return {canonicalize_name(n): v for n, v in pins.baseline(env).items()}
    planned = plan([p.requirement for p in pins.applicable(env)], source, ptarget, cache=cache)
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


def _run_id(opts: DiffOptions, target: Target) -> str:
    blob = json.dumps({"good": opts.good, "bad": opts.bad, "repro": opts.repro.repro_id,
                       "python": target.executable,
                       **({"repeat": opts.repeat} if opts.repeat != 1 else {})},
                      sort_keys=True)  # fmt: skip
    return f"diff-{hashlib.sha256(blob.encode()).hexdigest()[:8]}"
