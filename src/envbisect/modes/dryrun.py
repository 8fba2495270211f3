"""``--dry-run``: plan every environment a command would build first, print the plans, build
nothing. Users want to see what will be built before an hour of GPU time, and it makes
planning measurable on its own.

A plan is what the environment would hold: every package and version. Where the mode's own
planner already pinned everything (``--pins``, a matrix cell), that is the plan; where uv would
resolve at build time (``NAME==V`` plus ``--with``), uv resolves it now, the same way
(``uv pip compile`` for the target interpreter and the same indexes, wheels only).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from envbisect.core.plan import Plan, Policy, Question
from envbisect.env.uvplan import UvFallback
from envbisect.modes.searchoptions import parse_exclude_newer
from envbisect.modes.session import Session, Want


def plan_views(
    session: Session, wants: Sequence[Want], *, resolve: bool = False
) -> list[dict[str, Any]]:
    """Each wanted environment as ``{"label", "requirements", "pins", "conflict"}``.

    ``resolve``: uv resolves even requirements that are all exact pins, which are then only
    part of the environment (an environment report's few packages), not all of it."""
    out = []
    for w in wants:
        view: dict[str, Any] = {"label": w.label, "requirements": [], "pins": {}, "conflict": None}
        if w.spec is None:
            view["conflict"] = w.why_not
            out.append(view)
            continue
        view["requirements"] = list(w.spec.requirements)
        exact = None if resolve else _exact_pins(w.spec.requirements)
        if exact is not None:
            view["pins"] = exact
        else:
            uv = UvFallback(
                uv=session.uv,
                python=session.interpreter,
                indexes=w.spec.indexes,
                only_binary=w.spec.only_binary,
                overrides=w.spec.overrides,
            )
            cutoff = parse_exclude_newer(w.spec.exclude_newer)
            planned = uv(
                Question(
                    requirements=[Requirement(r) for r in w.spec.requirements],
                    pre=w.spec.prerelease,
                    # as the install will: every package held to the cut-off, none exempt
                    policy=Policy.CONTEMPORARY if cutoff else Policy.LATEST,
                    cutoff=cutoff,
                )
            )
            if isinstance(planned, Plan):
                view["pins"] = {str(n): str(v) for n, v in sorted(planned.pins.items())}
            else:
                view["conflict"] = planned.reason
        if w.moved:
            view["moved"] = [m.to_dict() for m in w.moved]
        out.append(view)
    return out


def render(views: Sequence[dict[str, Any]]) -> list[str]:
    """The plans as text lines (data for stdout)."""
    lines = [f"dry run: {len(views)} environment(s) planned, nothing built"]
    for v in views:
        if v["conflict"]:
            lines.append(f"{v['label']}: unresolvable: {v['conflict']}")
            continue
        pins = v["pins"]
        lines.append(f"{v['label']}: {len(pins)} package(s)")
        lines += [f"  {name}=={version}" for name, version in pins.items()]
    return lines


def _exact_pins(requirements: Sequence[str]) -> dict[str, str] | None:
    """Every requirement an exact ``==`` pin without markers: the plan itself; else None."""
    pins: dict[str, str] = {}
    for text in requirements:
        try:
            req = Requirement(text)
        except InvalidRequirement:
            return None
        specs = list(req.specifier)
        if req.marker or req.url or len(specs) != 1 or specs[0].operator != "==":
            return None
        pins[canonicalize_name(req.name)] = specs[0].version
    return dict(sorted(pins.items()))
