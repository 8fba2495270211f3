"""Where lock starts (``starting_point``): --from's lock, the environment as of --good-date, or
as of the upload of the newest exact pin, where a pin that only picks a build (``build_only``)
is not a date; and what the lock says of the torch build it pairs (``other_builds``). Read by
the searches of the history (modes/lock/bydate.py, modes/lock/upgrade.py) and by --dry-run."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from envbisect.core.candidates import build_candidates, file_version
from envbisect.core.names import TORCH_BUILT, TORCH_PACKAGES
from envbisect.core.plan import Plan
from envbisect.core.target import Target
from envbisect.errors import NoAnswer
from envbisect.index.client import IndexClient
from envbisect.model import DistFile
from envbisect.modes.bydate import timeline
from envbisect.modes.lock.common import LockContext, Pins

MAX_START_MOMENTS = 200  # release moments tried after the newest pin's upload


def starting_point(ctx: LockContext, newest: Plan) -> tuple[str, Pins, datetime | None]:
    """The first environment known to pass (not yet probed): its label, its pins and,
    unless it is --from's lock, the moment it is the environment of."""
    if ctx.from_pins is not None:
        return f"--from {ctx.opts.from_lock}", dict(ctx.from_pins), None
    session = ctx.session
    when, why = ctx.good_date, "--good-date"
    if when is None:
        when, why = newest_pin_upload(
            ctx.roots,
            session.client,
            session.target,
            torch_index=bool(session.indexes().torch_index),
            say=session.progress.message,
        )
    planned = ctx.as_of(when)
    if isinstance(planned, Plan):
        label = f"as of {when:%Y-%m-%d %H:%M:%S} ({why})"
        return label + _forward(planned), _pins(planned), when
    names = sorted(str(n) for n in newest.pins)
    moments = timeline(names, session.client, session.target, when, ctx.now, pre=ctx.pre)[
        :MAX_START_MOMENTS
    ]
    for m in moments:
        planned = ctx.as_of(m.when)
        if isinstance(planned, Plan):
            label = f"as of {m.label()} (first moment after {why} that resolves)"
            return label + _forward(planned), _pins(planned), m.when
    raise NoAnswer(
        f"no starting point: the requirements do not resolve as of {when:%Y-%m-%d} ({why}) "
        f"nor at any of the {len(moments)} release moment(s) after it",
        hint="give --good-date DATE of an environment that works, or --from LOCK",
    )


def _forward(planned: Plan) -> str:
    """What a start of mixed dates says: the packages moved past its date, and where to."""
    if not planned.forward:
        return ""
    moved = ", ".join(f"{n} {planned.pins[n]}" for n in planned.forward)
    return f"; with no file here that day, at their first release that installs: {moved}"


def _pins(planned: Plan) -> Pins:
    return {str(n): v for n, v in planned.pins.items()}


def newest_pin_upload(
    roots: Sequence[Requirement],
    client: IndexClient,
    target: Target,
    *,
    torch_index: bool,
    say: Callable[[str], None],
) -> tuple[datetime, str]:
    """The upload of the newest exact pin (``NoAnswer``: nothing is pinned exactly).

    A pin that only picks a build (``build_only``: torch==2.13.0+cpu, a wheel from a
    --find-links folder, torch from --torch-backend's index) says which file, not which
    day: it does not move the start, unless every exact pin is one (said once)."""
    best: tuple[datetime, str] | None = None
    builds: tuple[datetime, str] | None = None
    said: list[str] = []
    for r in roots:
        exact = [s.version for s in r.specifier if s.operator in ("==", "===")]
        if len(exact) != 1 or "*" in exact[0]:
            continue
        files = client.project_files(r.name).files
        only = build_only(r.name, exact[0], files, torch_index=torch_index)
        for c in build_candidates(files, target, pre=True).candidates:
            if c.version != _v(exact[0]) or c.upload_time is None:
                continue
            found = (c.upload_time, f"upload of {r.name}=={exact[0]}")
            if only:
                builds = found if builds is None or found[0] > builds[0] else builds
            elif best is None or c.upload_time > best[0]:
                best = found
        if only:
            said.append(f"{r.name}=={exact[0]} only picks a build ({only})")
    if said and best is not None:
        say(f"envbisect: {'; '.join(said)}: not the start's date")
    best = best or builds
    if best is None:
        raise NoAnswer(
            "no starting point: nothing is pinned exactly, so there is no date the "
            "environment is known to have worked",
            hint="give --good-date DATE (an environment that worked then) or --from LOCK "
            "(your working environment)",
        )
    return best


def other_builds(planned: Plan) -> str:
    """Said when the plan takes a torch build without a label although a labelled one of the
    same version is at hand (a folder of CPU wheels): the torch family paired it so."""
    family = sorted(n for n in planned.pins if n in TORCH_BUILT)
    if not family or not (planned.exact & {"torch"}):
        return ""
    with_it = ", ".join(f"{n} {planned.pins[n]}" for n in family)
    torch = planned.pins[canonicalize_name("torch")]
    return (
        f"torch {torch} is the index's build, not the labelled one at hand: these indexes "
        f"have no labelled build of {with_it} to go with it (torch, torchvision and "
        "torchaudio come from one build)"
    )


def build_only(name: str, version: str, files: Sequence[DistFile], *, torch_index: bool) -> str:
    """Why a pin ``name==version`` only picks a build of a release (a variant), not the
    release: "" when it picks the release.

    A local version (``2.13.0+cpu``), a version whose files come from a --find-links folder
    only, or a torch package read from the PyTorch index (--torch-backend)."""
    v = _v(version)
    if v is None:
        return ""
    if v.local:
        return "a local version"
    if torch_index and canonicalize_name(name) in TORCH_PACKAGES:
        return "the PyTorch index's build"
    # ==2.13.0 is met by 2.13.0+cpu too (PEP 440): the build the planner takes, newest first.
    mine = [
        f for f in files if (fv := file_version(f.filename)) is not None and fv.public == v.public
    ]
    if any((fv := file_version(f.filename)) is not None and fv.local for f in mine):
        return "a local version matches it"
    if mine and any(f.url.startswith("file:") for f in mine):
        return "a wheel from a --find-links folder"
    return ""


def _v(text: str) -> Version | None:
    try:
        return Version(text)
    except InvalidVersion:
        return None
