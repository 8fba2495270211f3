"""``envbisect matrix`` as one mode: the cells run, ``run.json`` written, the table published.

Who does what: ``modes.living.matrix`` runs the whole matrix, ``modes.living.update`` plans and
probes what is new since the published table (``--update``); this module runs one of them,
writes ``run.json`` (how the run was made: ``core.living.lastrun``) and publishes the table
(``modes.living.publish``, in a session of its own, as ``envbisect publish`` does). With
``--dry-run`` it only plans: nothing is written. The command prints the answer.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from envbisect.core.living.lastrun import LastRun
from envbisect.core.living.spec import MatrixSpec
from envbisect.errors import UsageError
from envbisect.modes.living.matrix import MAX_CELLS, MatrixResult, matrix_options, run_matrix
from envbisect.modes.living.publish import Published, publish_table, read_table
from envbisect.modes.living.update import UpdateResult, update_matrix
from envbisect.modes.outputs import inside
from envbisect.modes.session import Session
from envbisect.options import CommonOptions
from envbisect.progress import Progress
from envbisect.redact import mask_env_map


@dataclass(frozen=True, slots=True, kw_only=True)
class TableRun:
    """What a matrix run came to: its cells (``update``: what an update planned and did),
    and unless it was a dry run, the table's folder, ``run.json`` as written and what
    publishing wrote and changed."""

    matrix: MatrixResult
    update: UpdateResult | None = None
    out: Path | None = None
    run: LastRun | None = None
    published: Published | None = None


def run_table(
    spec: MatrixSpec,
    common: CommonOptions,
    *,
    machine: str,
    update: bool = False,
    recheck_days: float | None = None,
    full: bool = False,
    max_cells: int = MAX_CELLS,
    progress: Progress | None = None,
) -> TableRun:
    """Run the matrix whole, or with ``update`` what is new since its published table (and
    recheck the old cells: ``recheck_days``); then write ``run.json`` and publish.
    ``machine``: this machine in a few words, as ``run.json`` names it."""
    res: UpdateResult | None = None
    if update:
        res = update_matrix(
            spec,
            common,
            recheck_days=recheck_days,
            full=full,
            max_cells=max_cells,
            progress=progress,
        )
        matrix = res.matrix
    else:
        matrix = run_matrix(spec, common, full=full, max_cells=max_cells, progress=progress)
    if common.dry_run:
        return TableRun(matrix=matrix, update=res)
    out = inside(common.results, common.results / spec.name)
    run = _last_run(common, matrix, res, out, machine=machine, full=full)
    out.mkdir(parents=True, exist_ok=True)
    (out / "run.json").write_text(json.dumps(run.to_dict(), indent=2) + "\n", encoding="utf-8")
    with Session(matrix_options(spec, common), progress) as session:
        pub = publish_table(spec, session)
    return TableRun(matrix=matrix, update=res, out=out, run=run, published=pub)


def _last_run(
    common: CommonOptions,
    matrix: MatrixResult,
    update: UpdateResult | None,
    out: Path,
    *,
    machine: str,
    full: bool,
) -> LastRun:
    """``run.json``: how this run was made (the command as a published table shows it)."""
    note = update.note() if update is not None else None
    measured = matrix.started
    if note is not None and not note.probed:
        # An update that probed nothing measured nothing: the table's date stays the last
        # measurement's, and ``checked`` says when the index was last read for it.
        measured = _published_measured(out, matrix.started)
    return LastRun(
        command=common.command,
        measured=measured,
        checked=matrix.started if note is not None else None,
        machine=machine,
        targets=matrix.targets,
        axis_versions=matrix.axes,
        counts=matrix.counts(),
        full=full,
        jobs=common.parallel.jobs,
        update=note,
        env=mask_env_map(common.probing.env) if common.probing.env else {},
    )


def _published_measured(folder: Path, default: str) -> str:
    """The ``measured`` date of the committed ``results.json`` (``default`` if unreadable)."""
    try:
        measured = read_table(folder).meta.measured
    except (OSError, ValueError, UsageError):
        return default
    return measured if measured is not None else default
