"""Deeper probes on a matrix's row edges (``deep_probes``: a real training run where the cheap
probe passed): the cells a user would pick, probed the way the user will run them.

A matrix's ``probes`` run on every cell (cheap: an import, an entry point). ``deep_probes``
(``llamafactory-train``, ``llamafactory-train:ppo``) run only on each row's edge cells: the
first and the last cell of the row that passed, and the newest that passed inside the pins
(what the row recommends). Each deep probe is a run of its own (its own repro, so its own
record in the store), in the cell's own environment. ``publish`` attaches what each gave to the
table's edge cells now (results.json's ``deep``): the store's runs, else what was published for
the same environment; a cell off the edges shows none.

Who does what: ``modes.living.matrix`` calls ``run_deep`` once a Python's cells are probed;
``edges`` picks the cells (pure); ``attach`` reads the records back for ``publish``.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import replace
from datetime import datetime, timezone

from envbisect.core.living.cell import CellState, DeepRun, PublishedCell, without_env_path
from envbisect.core.living.ranges import edge_keys, edge_positions
from envbisect.core.living.spec import MatrixSpec
from envbisect.core.results.parts import ProbeRow
from envbisect.core.target import Target
from envbisect.env.repro import Repro
from envbisect.index.source import IndexMetadataSource
from envbisect.model import OutcomeKind
from envbisect.modes.drive import each
from envbisect.modes.living.outside import outside_note
from envbisect.modes.session import Session, Want
from envbisect.store import CellRow, Store
from envbisect.strategy.rows import Cell

Inside = Callable[[Cell], bool]


def deep_repro(spec: MatrixSpec, probe: str, env: Mapping[str, str] | None = None) -> Repro:
    """One deep probe as a repro (``env``: the command line's ``--env``, as the cells had)."""
    return Repro.build(
        origin=spec.path.parent,
        probes=(probe,),
        extra_env={"DISABLE_VERSION_CHECK": "1"},
        user_env=env,
    )


def check_probes(spec: MatrixSpec) -> None:
    """An unknown deep probe is the same usage error as an unknown probe, before any build."""
    for probe in spec.deep_probes:
        deep_repro(spec, probe)


def edges(row: Sequence[Cell], inside: Inside) -> list[Cell]:
    """The row's edge cells (``core.living.ranges.edge_positions``: what publish shows too),
    of the cells measured passing, in column order."""
    passes = [
        c.state is CellState.MEASURED
        and c.outcome is not None
        and c.outcome.kind is OutcomeKind.PASS
        for c in row
    ]
    within = [p and inside(c) for p, c in zip(passes, row, strict=True)]
    return [row[i] for i in edge_positions(passes, within)]


def run_deep(
    spec: MatrixSpec,
    session: Session,
    rows: Sequence[Sequence[Cell]],
    python: str | None,
    target: Target,
) -> int:
    """Every deep probe on every row's edge cells (``python``: the interpreter the cells
    were built with, ``target`` its facts); how many runs were asked for. Stored runs are
    not repeated."""
    with _inside(spec, session, target) as inside:
        cells = [c for row in rows for c in edges(row, inside)]
    if not cells:
        return 0
    session.progress.message(
        f"envbisect: deep probes ({', '.join(spec.deep_probes)}) on {len(cells)} edge "
        f"cell(s) of {len(rows)} row(s)"
    )
    built = [c for c in cells if c.spec is not None]
    for probe in spec.deep_probes:
        _probe_edges(spec, session, probe, built, python)
    return len(cells) * len(spec.deep_probes)


def _probe_edges(
    spec: MatrixSpec, session: Session, probe: str, cells: Sequence[Cell], python: str | None
) -> None:
    """One deep probe on these cells, in a session of its own (its repro), ``--jobs`` at
    once; each cell's row stored as its round ends."""
    repro = deep_repro(spec, probe, dict(session.opts.probing.env))
    opts = replace(session.opts, probing=replace(session.opts.probing, repro=repro))
    wants = [Want(label=f"{c.label()} [{probe}]", spec=c.spec, python=python) for c in cells]
    with Session(opts, session.progress) as deep:

        def done(i: int, row: ProbeRow) -> None:
            session.store.put_cell(_deep_row(spec.name, probe, cells[i], row, deep))

        each(deep, wants, done)


def _deep_row(matrix: str, probe: str, cell: Cell, row: ProbeRow, deep: Session) -> CellRow:
    """The store's row of one deep run (``attach`` finds its record through it)."""
    return CellRow(
        matrix=deep_table(matrix, probe),
        python=cell.python,
        cell=cell.key,
        state=CellState.MEASURED.value,
        env_id=row.env_id,
        repro_id=deep.repro.repro_id,
        kind=row.outcome.kind.value,
        signature=row.outcome.signature,
        inferred_from=None,
        updated_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
    )


@contextlib.contextmanager
def _inside(spec: MatrixSpec, session: Session, target: Target) -> Iterator[Inside]:
    """Whether a cell lies inside its packages' pins (every cell does, without
    ``outside_pins``): the reason publish would show is none."""
    if not spec.outside_pins:
        yield lambda cell: True
        return
    source = IndexMetadataSource(session.client, target)
    try:
        yield (
            lambda cell: (
                outside_note(
                    cell.versions, source, target, [(d.name, d.version) for d in cell.installed]
                )
                is None
            )
        )
    finally:
        source.close()


def deep_table(matrix: str, probe: str) -> str:
    """The store's name for one deep probe's cells of a matrix (a matrix name has no "/")."""
    return f"{matrix}/deep/{probe}"


def attach(
    spec: MatrixSpec,
    store: Store,
    cells: Sequence[PublishedCell],
    previous: Sequence[PublishedCell] | None,
) -> list[PublishedCell]:
    """``cells`` (the whole table) with the deep runs of each row's edge cells: the store's
    (in the cell's environment), or, where it has none, what ``previous`` published for the
    same environment. A cell off the edges shows none (a run kept from when it was one is
    not the table's answer now)."""
    if not spec.deep_probes:
        return list(cells)
    rows = {
        probe: {(r.python, r.cell): r for r in store.cells(deep_table(spec.name, probe))}
        for probe in spec.deep_probes
    }
    before = {c.key: c for c in previous or ()}
    at_edges = edge_keys(cells)
    out = []
    for cell in cells:
        if cell.key not in at_edges:
            out.append(replace(cell, deep=()) if cell.deep else cell)
            continue
        runs = []
        for probe, mine in rows.items():
            row = mine.get((cell.python, json.dumps(cell.versions_dict())))
            if row is None or row.env_id != cell.env_id or not row.env_id or not row.repro_id:
                continue
            rec = store.get(row.env_id, row.repro_id)
            if rec is not None:
                runs.append(
                    DeepRun(
                        probe=probe,
                        kind=rec.outcome.kind,
                        signature=without_env_path(rec.outcome.signature),
                        seconds=round(rec.build_seconds + rec.probe_seconds, 2),
                        measured_at=rec.started_at,
                    )
                )
        old = before.get(cell.key)
        if not runs and old is not None and old.env_id == cell.env_id:
            runs = list(old.deep)
        out.append(replace(cell, deep=tuple(runs)))
    return out
