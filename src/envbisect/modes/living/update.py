"""``matrix --update``: keep a published table current, probing only what is new.

Who does what: ``core.living.update`` decides (pure) which cells are new, which stay, which
leave and why, which to recheck; this module reads the published ``results.json``, asks the
index for each axis's versions now (which are yanked, which are gone), probes the new cells
through ``modes.matrix.run_cells`` (the same planning, store and row walk as a whole run),
and probes each cell to recheck in its locked environment (every package it had installed,
pinned with ==), always afresh: a verdict tested again without a moving environment. The
store then holds the new and rechecked cells; ``modes.living.publish`` merges them with the
published ones (which keep their outcomes and lockfiles) and records what changed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from packaging.utils import canonicalize_name
from packaging.version import Version

from envbisect.core.candidates import build_candidates
from envbisect.core.living.cell import CellState, Key, PublishedCell, combo
from envbisect.core.living.lastrun import Recheck, UpdateNote
from envbisect.core.living.spec import MatrixSpec
from envbisect.core.living.update import (
    AxisNow,
    Gone,
    UpdatePlan,
    gone_pythons,
    instant,
    plan_update,
)
from envbisect.core.results.parts import ProbeRow
from envbisect.errors import UsageError
from envbisect.index.client import IndexClient
from envbisect.model import Outcome, OutcomeKind, ProbeRecord
from envbisect.modes.drive import each
from envbisect.modes.living.matrix import (
    MAX_CELLS,
    MatrixResult,
    matrix_options,
    new_result,
    run_cells,
)
from envbisect.modes.living.publish import read_table
from envbisect.modes.outputs import inside
from envbisect.modes.session import Session, Want
from envbisect.options import CommonOptions
from envbisect.progress import Progress
from envbisect.store import CellRow
from envbisect.strategy.rows import Cell


@dataclass(slots=True, kw_only=True)
class UpdateResult:
    """What an update planned and did: per Python its plan, the rechecks' outcomes."""

    matrix: MatrixResult
    plans: list[UpdatePlan] = field(default_factory=list)
    gone: list[Gone] = field(default_factory=list)  # every value that left, all Pythons
    rechecked: list[Recheck] = field(default_factory=list)  # each outcome beside the published
    not_rechecked: list[Recheck] = field(default_factory=list)  # could not be built

    def note(self) -> UpdateNote:
        """``run.json``'s ``update``: what publishing needs to say why and what was checked."""
        return UpdateNote(
            new=sum(len(p.new) for p in self.plans),
            gone=tuple(self.gone),
            rechecked=tuple(self.rechecked),
            not_rechecked=tuple(self.not_rechecked),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "plans": [p.to_dict() for p in self.plans],
            **self.note().to_dict(),
            "rechecks": [r.to_dict() for r in self.rechecked],
        }

    def lines(self) -> list[str]:
        out = [line for p in self.plans for line in p.lines()]
        out += [f"leaves:  {g.text()}" for g in self.gone if g.package == "python"]
        return out


def read_published(spec: MatrixSpec, results: Path) -> list[PublishedCell]:
    """The cells of the matrix's committed ``results.json``, or a ``UsageError``: an update
    starts from a published table (a malformed one: ``results-malformed``)."""
    path = inside(results, results / spec.name) / "results.json"
    try:
        table = read_table(path.parent)
        if list(table.meta.axes) != [a.package for a in spec.axes]:
            raise ValueError("its axes are not the matrix file's")
        return list(table.cells)
    except FileNotFoundError:
        raise UsageError(
            f"--update: the matrix {spec.name} has no published table ({path} does not exist)",
            hint=f"run it whole first: envbisect matrix {spec.path} (then commit {path.parent})",
            ref="matrix-not-published",
        ) from None
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise UsageError(
            f"--update: {path} cannot be updated: {e}",
            hint=f"run the matrix whole again: envbisect matrix {spec.path}",
            ref="matrix-not-published",
        ) from e


def update_matrix(
    spec: MatrixSpec,
    common: CommonOptions,
    *,
    recheck_days: float | None = None,
    full: bool = False,
    max_cells: int = MAX_CELLS,
    progress: Progress | None = None,
    now: datetime | None = None,
) -> UpdateResult:
    """Probe the cells the matrix has now and its table has not, and recheck the old ones
    (``recheck_days``); with ``--dry-run`` plan only (the new cells' environments planned,
    nothing built). The caller publishes."""
    published = read_published(spec, common.results)
    if not common.planning.offline:  # what is new since the publish: the axes' pages asked again
        axes = {canonicalize_name(a.package) for a in spec.axes}
        fresh = tuple(sorted({*common.planning.refresh_packages, *axes}))
        common = replace(common, planning=replace(common.planning, refresh_packages=fresh))
    when = now or datetime.now(timezone.utc)
    result = UpdateResult(matrix=new_result(spec, common))
    requests: dict[str, str | None] = {}
    with Session(matrix_options(spec, common), progress) as session:

        def pick(
            label: str, request: str | None, axes: list[list[Version]], cells: list[Cell]
        ) -> list[Cell]:
            target = session.target_for(request)[1]
            now_axes = [
                _axis_now(session.client, target, a.package, vs)
                for a, vs in zip(spec.axes, axes, strict=True)
            ]
            plan = plan_update(label, published, now_axes, now=when, recheck_days=recheck_days)
            result.plans.append(plan)
            result.gone += plan.gone
            requests[label] = request
            new = set(plan.new)
            return [c for c in cells if c.versions in new]

        run_cells(spec, session, result.matrix, full=full, max_cells=max_cells, pick=pick)
        result.gone += gone_pythons(published, list(result.matrix.targets))
        if not session.opts.dry_run:
            try:
                _recheck(spec, session, result, published, requests, when)
            except KeyboardInterrupt as e:
                raise session.interrupted(e) from e
    return result


def _axis_now(client: IndexClient, target: Any, package: str, selected: list[Version]) -> AxisNow:
    listing = build_candidates(client.project_files(package).files, target)
    yanked = {str(v) for v, why in listing.dropped.items() if why == "yanked"}
    listed = {str(c.version) for c in listing.candidates} | {str(v) for v in listing.dropped}
    return AxisNow(
        package=package,
        selected=tuple(str(v) for v in selected),
        yanked=frozenset(yanked),
        listed=frozenset(listed),
    )


def _recheck(
    spec: MatrixSpec,
    session: Session,
    result: UpdateResult,
    published: list[PublishedCell],
    requests: Mapping[str, str | None],
    when: datetime,
) -> None:
    """Each cell to recheck, built afresh from exactly what it had installed and probed; the
    store gets its new record and cell row. One that cannot be built now keeps its outcome
    (untestable is never a verdict) and is said."""
    by_key: dict[Key, PublishedCell] = {c.key: c for c in published}
    todo: list[tuple[PublishedCell, Want]] = []
    for plan in result.plans:
        target = session.target_for(requests[plan.python])[1]
        for versions in plan.recheck:
            cell = by_key[(plan.python, versions)]
            pins = [f"{d.name}=={d.version}" for d in cell.installed or ()]
            env = session.env_spec(pins, target=target)
            todo.append(
                (
                    cell,
                    Want(
                        label=f"recheck {combo(versions)}",
                        spec=env,
                        runs=session.opts.probing.repeat,
                        python=requests[plan.python],
                    ),
                )
            )
    if not todo:
        return
    progress = session.progress
    progress.message(f"envbisect: rechecking {len(todo)} cell(s) in their locked environments")
    # A recheck probed since the table was published (a run cut short): kept, not run again.
    fresh = []
    for cell, want in todo:
        if (kept := _unpublished_recheck(session, cell, want)) is None:
            fresh.append((cell, want))
            continue
        progress.probe_finished(want.label, kept.outcome, 0.0, True, "")
        _rechecked(spec, session, result, cell, want, kept.outcome, when)

    def done(i: int, row: ProbeRow) -> None:
        cell, want = fresh[i]
        _rechecked(spec, session, result, cell, want, row.outcome, when)

    # --jobs at a time, each round stored as it ends; always afresh
    each(session, [w for _, w in fresh], done, again=True)


def _unpublished_recheck(session: Session, cell: PublishedCell, want: Want) -> ProbeRecord | None:
    """The store's record of this cell's locked environment when it was probed after the
    published measurement (a recheck not yet published), else None."""
    assert want.spec is not None
    rec = session.stored(want.spec, want.runs)
    measured = cell.measured_at
    if rec is None or not measured:
        return None
    return rec if instant(rec.started_at) > instant(measured) else None


def _rechecked(
    spec: MatrixSpec,
    session: Session,
    result: UpdateResult,
    cell: PublishedCell,
    want: Want,
    outcome: Outcome,
    when: datetime,
) -> None:
    """What one recheck saw: into the result, and (unless untestable) the store's cell row."""
    entry = Recheck(
        python=cell.python,
        versions=cell.versions,
        before=cell.kind.value if cell.kind else None,
        after=outcome.kind.value,
    )
    if outcome.kind is OutcomeKind.UNTESTABLE:
        result.not_rechecked.append(replace(entry, why=outcome.signature))
        return
    assert want.spec is not None
    result.rechecked.append(entry)
    session.store.put_cell(
        CellRow(
            matrix=spec.name,
            python=cell.python,
            cell=json.dumps(cell.versions_dict()),
            state=CellState.MEASURED.value,
            env_id=want.spec.env_id,
            repro_id=session.repro.repro_id,
            kind=outcome.kind.value,
            signature=outcome.signature,
            updated_at=when.isoformat(timespec="seconds"),
        )
    )
