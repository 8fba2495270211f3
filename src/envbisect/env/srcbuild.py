"""One package from one commit: the checkout a source build installs from, uv's flags for
it, and whether what the build installed can be read.

Who does what: ``uv.Materializer`` builds every environment; for a spec with a ``source`` it
asks this module for the commit's tree (a clone of the mirror sharing its objects, in the
environment's own folder, removed once installed), then installs it with the rest of the
spec. The rest stays binary-only as every other probe's (``--only-binary :all:``), but the
package under test is built (``--no-binary NAME``): its build backend comes from the indexes,
as uv gets any build requirement. A tree whose build installs no readable version of the
package is untestable, as one that does not build.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from packaging.utils import canonicalize_name

from envbisect.core.outcome import untestable
from envbisect.env.git import Git, export, find_git
from envbisect.errors import InfrastructureError
from envbisect.model import EnvSpec, InstalledDist, Outcome, OutcomeKind, SourceBuild

FOLDER = "envbisect-src"


def checkout(source: SourceBuild, mirror: str | None, dest: Path) -> Path:
    """``dest``, holding the tree of ``source.commit`` from the mirror at ``mirror``."""
    if not mirror:
        raise InfrastructureError(
            f"no repository to build {source.package} {source.commit[:12]} from",
            hint="a commit probe needs the mirror envbisect made: run it through "
            "envbisect commits or run --commits",
            ref="mirror-missing",
        )
    export(Git(binary=find_git()), Path(mirror), source.commit, dest)
    return dest


def install_args(spec: EnvSpec) -> list[str]:
    """uv's flags for the package built from source (the rest as the spec says)."""
    assert spec.source is not None
    return ["--no-binary", spec.source.package] if spec.only_binary else []


def unreadable(source: SourceBuild, installed: tuple[InstalledDist, ...]) -> str:
    """Why the build's version of the package cannot be read ("" when it can)."""
    if any(canonicalize_name(d.name) == source.package for d in installed):
        return ""
    return (
        f"the build of {source.commit[:12]} installed no {source.package} distribution with "
        "a readable name and version (its metadata names another project, or no valid version)"
    )


_TIMED_OUT = "build-timeout "  # the step of a build cut at --build-timeout, with the cap


def timed_out(cap: float) -> Outcome:
    """A build cut at ``--build-timeout cap``: untestable, and the cap is kept with it."""
    why = f"the build took longer than --build-timeout {cap:g} s"
    return replace(untestable(why), step=f"{_TIMED_OUT}{cap:g}")


def stale_build(outcome: Outcome, build_timeout: float | None) -> bool:
    """A build cut under a lower cap than today's says nothing: build it again."""
    if outcome.kind is not OutcomeKind.UNTESTABLE or not outcome.step.startswith(_TIMED_OUT):
        return False
    try:
        cap = float(outcome.step[len(_TIMED_OUT) :])
    except ValueError:
        return True
    return build_timeout is None or build_timeout > cap
