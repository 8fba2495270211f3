"""The commands that only read: ``envbisect pins`` and ``envbisect versions``.

Who does what: a session that only plans (nothing is built) gives the target and the index
client; the pins are read as every mode reads them (planning.read_pins); the answers are the
typed ``PinsResult`` and ``VersionsResult`` (core/results/), whose ``excluded_reason`` decides
why a version is left out.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from envbisect.core.results.pins import PinsResult
from envbisect.core.results.versions import VersionsResult
from envbisect.core.target import Target, with_platform
from envbisect.errors import UsageError
from envbisect.modes.session import Session
from envbisect.options import CommonOptions
from envbisect.progress import Progress


@dataclass(frozen=True, slots=True, kw_only=True)
class ListingOptions:
    common: CommonOptions
    extras: tuple[str, ...] = ()
    platform: str | None = None  # a wheel platform tag: another machine's target


def target_of(session: Session, platform: str | None) -> Target:
    """The session's target, on ``platform`` when one is named."""
    if not platform:
        return session.target
    try:
        return with_platform(session.target, platform)
    except ValueError:
        raise UsageError(
            f"--platform {platform!r} is not a wheel platform tag",
            hint="e.g. manylinux_2_28_x86_64, manylinux2014_aarch64, macosx_11_0_arm64, win_amd64",
            ref="bad-platform",
        ) from None


def show_pins(source: str, opts: ListingOptions, progress: Progress | None = None) -> PinsResult:
    """What the pin source ``source`` asks for, for the target."""
    from envbisect.modes.planning import read_pins

    with Session(opts.common, progress, plan_only=True) as session:
        target = target_of(session, opts.platform)
        (pins,) = read_pins(
            [source], session.client, cwd=Path.cwd(), extras=opts.extras, named="SOURCE"
        )
    return PinsResult(
        pins=pins,
        markers=tuple(target.marker_environment().items()),
        extras=opts.extras,
        target=target.short,
        python=str(target.python_version),
    )


def list_versions(
    package: str,
    opts: ListingOptions,
    *,
    pins: tuple[str, ...] = (),
    pre: bool = False,
    allow_sdist: bool = False,
    progress: Progress | None = None,
) -> VersionsResult:
    """Every version of ``package`` on the index (yanked ones too), each with its reason."""
    from packaging.specifiers import SpecifierSet

    from envbisect.core.candidates import build_candidates
    from envbisect.modes.planning import read_pins

    with Session(opts.common, progress, plan_only=True) as session:
        target = target_of(session, opts.platform)
        env = target.marker_environment()
        spec = SpecifierSet()
        for ps in read_pins(pins, session.client, cwd=Path.cwd(), extras=opts.extras):
            spec &= ps.specifier_for(package, env, opts.extras)
        files = session.client.project_files(package).files
    everything = build_candidates(files, target, allow_sdist=allow_sdist, pre=True)
    every_version = [*everything.dropped, *(c.version for c in everything.candidates)]
    listed = build_candidates(files, target, allow_sdist=allow_sdist, pre=True, keep=every_version)
    return VersionsResult.of(package, target.short, spec, listed.candidates, pre=pre)
