"""``envbisect probe``: build one environment, run the repro in it, record it.

The environment is the ``--with`` requirements plus the requirements of ``--pins`` that apply
to the target (uv resolves them) plus every pin of ``--lock`` (exactly those versions). The
answer is the typed ``ProbeResult`` (core/results/probe.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from envbisect.core.results.probe import ProbeResult
from envbisect.errors import UsageError
from envbisect.model import EnvSpec
from envbisect.modes.searchoptions import check_requirements, parse_exclude_newer
from envbisect.modes.session import Session, Want
from envbisect.options import CommonOptions
from envbisect.progress import Progress


@dataclass(frozen=True, slots=True, kw_only=True)
class ProbeOptions:
    common: CommonOptions
    with_reqs: tuple[str, ...] = ()
    pins: tuple[str, ...] = ()
    extras: tuple[str, ...] = ()
    lock: str | None = None
    exclude_newer: str | None = None
    pre: bool = False
    allow_sdist: bool = False


def probe_one(opts: ProbeOptions, progress: Progress | None = None) -> ProbeResult:
    """What the environment did (``--repeat`` runs), and whether it came from the store."""
    with Session(opts.common, progress) as session:
        spec = _spec(opts, session)
        try:
            rec, reused = session.probe(spec)
        except KeyboardInterrupt as e:
            raise session.interrupted(e) from e
        repro = session.repro
    return ProbeResult.of(rec, reused=reused, repro=repro.describe(), env=repro.user_env)


def plan_one(opts: ProbeOptions, progress: Progress | None = None) -> list[dict[str, Any]]:
    """``--dry-run``: the environment's plan; nothing is built."""
    from envbisect.modes.dryrun import plan_views

    with Session(opts.common, progress) as session:
        want = Want(label="the environment", spec=_spec(opts, session))
        # The spec is what uv installs (--with, the pins): exact pins may still be part of the
        # environment only (an environment report's few packages, one NAME==V): uv resolves
        # the rest now, as the build will.
        return plan_views(session, [want], resolve=True)


def _spec(opts: ProbeOptions, session: Session) -> EnvSpec:
    check_requirements("", opts.with_reqs)
    parse_exclude_newer(opts.exclude_newer)
    requirements = list(opts.with_reqs)
    if opts.pins or opts.lock:
        from envbisect.modes.planning import read_pins  # the index client: pins only

        env = session.target.marker_environment()
        client, origin = session.client, session.repro.origin
        for ps in read_pins(opts.pins, client, cwd=origin, extras=opts.extras):
            requirements += [str(p.requirement) for p in ps.applicable(env, opts.extras)]
        if opts.lock:
            locked = read_pins([opts.lock], client, cwd=origin, named="--lock")[0]
            if not locked.is_lock:
                raise UsageError(
                    f"--lock {opts.lock} does not pin every requirement with ==",
                    hint="use --pins for a file with ranges; --lock takes a lockfile",
                    ref="not-a-lock",
                )
            requirements += [f"{n}=={v}" for n, v in locked.baseline(env).items()]
    return session.env_spec(
        requirements,
        only_binary=not opts.allow_sdist,
        exclude_newer=opts.exclude_newer,
        prerelease=opts.pre,
    )
