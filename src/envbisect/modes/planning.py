"""Pins and the planner, for a run: which versions are in range, and what each environment is.

Who does what: ``pinsource.load_pins`` reads the sources the user named; ``RunPlanner`` turns them
(the requirements that apply to the target, the constraints, a baseline) plus the ``--with``
requirements into a root set, and asks ``plan.plan`` for the environment of each candidate
under the ``--rest`` policy. The engine builds only what the planner says is consistent.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

from envbisect.core.candidates import CandidateList, file_version
from envbisect.core.pins.from_report import Releases
from envbisect.core.pins.sources import PinSet
from envbisect.core.plan import Fallback, MatchCache, Plan, PlanTarget, Policy, Unresolvable
from envbisect.core.planmemo import plan
from envbisect.core.target import Target
from envbisect.env.pinsource import load_pins
from envbisect.errors import UnknownPackage, UsageError
from envbisect.index.client import IndexClient
from envbisect.index.source import IndexMetadataSource
from envbisect.model import Candidate


def read_pins(
    sources: Sequence[str],
    client: IndexClient,
    *,
    cwd: Path,
    extras: Sequence[str] = (),
    named: str = "--pins",
) -> list[PinSet]:
    """Each pin source, a released distribution's read through ``client`` (its metadata), an
    environment report's dev versions mapped to what ``client``'s indexes have. ``named``: what
    the user typed them as (``--pins``, ``SOURCE``, ``--lock``...), for an error's hint."""
    fetch, releases = client.metadata_for, index_releases(client)
    return [
        load_pins(s, cwd=cwd, extras=extras, fetch_metadata=fetch, releases=releases, named=named)
        for s in sources
    ]


def index_releases(client: IndexClient) -> Releases:
    """Every version the indexes have of a project (None for a project they do not have)."""

    def releases(name: str) -> list[Version] | None:
        try:
            files = client.project_files(name).files
        except UnknownPackage:
            return None
        return sorted({v for f in files if not f.yanked and (v := file_version(f.filename))})

    return releases


@dataclass(slots=True, kw_only=True)
class RunPlanner:
    package: str
    target: Target
    source: IndexMetadataSource
    pins: list[PinSet] = field(default_factory=list)
    baseline_pins: PinSet | None = None
    with_reqs: tuple[str, ...] = ()
    policy: Policy = Policy.LATEST
    pre: bool = False
    extras: tuple[str, ...] = ()
    fallback: Fallback | None = None
    also_moving: tuple[str, ...] = ()  # other packages set per environment (matrix axes)
    key: str = field(init=False, default="")
    roots: list[Requirement] = field(init=False, default_factory=list)
    constraints: dict[str, SpecifierSet] = field(init=False, default_factory=dict)
    baseline: dict[str, Version] = field(init=False, default_factory=dict)
    cache: MatchCache = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        self.key = canonicalize_name(self.package)
        env = self.target.marker_environment()
        moving = {self.key, *(canonicalize_name(n) for n in self.also_moving)}
        for ps in self.pins:
            for pin in ps.applicable(env, self.extras):
                if pin.name not in moving:
                    self.roots.append(pin.requirement)
            for pin in ps.constraints:
                if pin.applies(env):
                    spec = self.constraints.get(pin.name, SpecifierSet())
                    self.constraints[pin.name] = spec & pin.requirement.specifier
        self.roots += [Requirement(r) for r in self.with_reqs]
        for ps in [*self.pins, *([self.baseline_pins] if self.baseline_pins else [])]:
            if ps.is_lock:
                self.baseline.update(ps.baseline(env))

    def allowed(self) -> SpecifierSet:
        """The package's own range according to the pins (``!=`` exclusions included).

        An environment report's pin of the package is where the reporter was (a baseline
        version, as ``--bad`` names it), not a range: it does not narrow the search."""
        spec = SpecifierSet()
        env = self.target.marker_environment()
        for ps in self.pins:
            if ps.report is None:
                spec &= ps.specifier_for(self.key, env, self.extras)
        return spec

    def restrict(self, cl: CandidateList, keep: Sequence[Version]) -> CandidateList:
        """Only the versions the pins allow (the ends the user named stay)."""
        spec = self.allowed()
        if not str(spec):
            return cl
        kept = tuple(
            c
            for c in cl.candidates
            if c.version in keep or spec.contains(c.version, prereleases=True)
        )
        dropped = dict(cl.dropped)
        for c in cl.candidates:
            if c not in kept:
                dropped[c.version] = f"outside the pins ({spec})"
        if len(kept) < 2:
            raise UsageError(
                f"the pins allow {len(kept)} candidate version(s) of {self.package} ({spec})",
                hint="widen the range with --good/--bad, or check the pins and --python",
                ref="no-candidates",
            )
        return CandidateList(candidates=kept, dropped=dropped)

    def plan_for(self, cand: Candidate) -> Plan | Unresolvable:
        return self.plan_versions({self.key: cand.version}, cand.upload_time)

    def plan_versions(
        self, versions: Mapping[str, Version], uploaded: datetime | None
    ) -> Plan | Unresolvable:
        """The environment with these exact versions (the candidate, or a matrix cell)."""
        cutoff = None
        if self.policy is Policy.CONTEMPORARY and uploaded is not None:
            # "As of the candidate's upload": its own files, and what was out by then (a
            # project with no file here that day: its first one that installs, as lock does).
            cutoff = uploaded + timedelta(seconds=1)
        roots = [*self.roots, *(Requirement(f"{n}=={v}") for n, v in versions.items())]
        return plan(
            roots,
            self.source,
            PlanTarget(
                markers=self.target.marker_environment(),
                python_version=self.target.python_version,
            ),
            policy=self.policy,
            baseline=self.baseline,
            cutoff=cutoff,
            pre=self.pre,
            constraints=self.constraints,
            fallback=self.fallback,
            cache=self.cache,
            forward=cutoff is not None,
        )


def choose_policy(rest: str | None, *, has_baseline: bool) -> Policy:
    if rest is None:
        return Policy.BASELINE if has_baseline else Policy.LATEST
    return Policy(rest)
