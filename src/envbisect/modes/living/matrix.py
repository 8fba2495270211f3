"""Running a compatibility matrix: every cell a real environment, probed for real.

Who does what: ``core.living.spec`` checks the file's schema (``load_matrix`` here reads it);
this module selects each axis's versions from the index (bounded by the pins) and plans every
cell (an unresolvable cell is shown with its conflict and never built); ``strategy.rows``
walks each row (probe the ends, infer agreeing stretches, bisect disagreeing ones, check the
middle); ``drive`` runs the walk through the session, ``--jobs`` rows side by side, every
probe through the same store as ``run``, so an interrupted matrix resumes where it stopped.
``run_cells`` takes a ``pick``: ``modes.living.update`` (``matrix --update``) keeps only the cells a
published table does not have. Publishing is ``modes.living.publish``'s.
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

from envbisect.core.candidates import build_candidates
from envbisect.core.living.cell import CellState
from envbisect.core.living.lastrun import COUNTED, Counts
from envbisect.core.living.spec import SCHEMA_HINT, MatrixSpec, parse_matrix, select_versions
from envbisect.core.outcome import untestable
from envbisect.core.plan import Plan, Policy
from envbisect.core.target import Target
from envbisect.env.repro import Repro
from envbisect.errors import UsageError
from envbisect.exec.kinds import kinds
from envbisect.index.client import IndexClient
from envbisect.index.pytorch import OFFICIAL, variant_url
from envbisect.index.source import IndexMetadataSource
from envbisect.model import IndexConfig
from envbisect.modes.drive import drive
from envbisect.modes.living.deep import check_probes, run_deep
from envbisect.modes.living.outside import OutsidePlanners
from envbisect.modes.planning import RunPlanner, read_pins
from envbisect.modes.session import Session, Want
from envbisect.options import CommonOptions
from envbisect.progress import Progress
from envbisect.store import CellRow
from envbisect.strategy.rows import Cell, MatrixRows

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

MAX_CELLS = 500


@dataclass(slots=True, kw_only=True)
class MatrixResult:
    spec: MatrixSpec
    axes: dict[str, list[list[str]]] = field(default_factory=dict)  # python -> axis versions
    cells: list[Cell] = field(default_factory=list)
    # python -> the interpreter's identity (Target.described: no path)
    targets: dict[str, dict[str, str]] = field(default_factory=dict)
    command: str = ""
    started: str = ""
    plans: list[dict[str, Any]] = field(default_factory=list)  # --dry-run: every cell's plan

    def counts(self) -> Counts:
        """What became of the cells (``built``: probed by this run, ``reused``: stored)."""
        n: dict[str, int] = dict.fromkeys(COUNTED, 0)
        n["cells"] = len(self.cells)
        for c in self.cells:
            if c.state is CellState.MEASURED:
                n["reused" if c.reused else "built"] += 1
            elif c.state.value in n:
                n[c.state.value] += 1
        return Counts(**n)


def matrix_indexes(spec: MatrixSpec, folders: tuple[str, ...] = ()) -> IndexConfig:
    """Where a matrix's packages come from: the public sources its file names (``index_url``,
    ``extra_index_urls``, ``find_links``, ``torch_backend``), unless this machine has a wheel
    folder of its own (``folders``: ``--find-links`` or the user's settings), which overrides
    the file: the folder replaces its ``find_links`` and stands in for its PyTorch index
    (the torch packages then come from the folder, else the main index, as with find_links
    alone). A lock written for the table names the file's sources all the same
    (``public_indexes``; modes/portable.py checks each file taken from the folder)."""
    public = public_indexes(spec)
    if not folders:
        return public
    return replace(public, find_links=folders, torch_index=None)


def public_indexes(spec: MatrixSpec) -> IndexConfig:
    """The sources the matrix file names, as any machine reads them."""
    torch = None
    if spec.torch_backend:
        torch = variant_url(spec.torch_backend, spec.torch_index_url or OFFICIAL)
    return IndexConfig(
        index_url=spec.index_url,
        extra_index_urls=spec.extra_index_urls,
        find_links=tuple(
            str((spec.path.parent / p).resolve()) if "://" not in p else p for p in spec.find_links
        ),
        torch_index=torch,
    )


def matrix_repro(spec: MatrixSpec, env: Mapping[str, str] | None = None) -> Repro:
    """The probes (and repro file) of every cell (each cell gets ``repeats`` runs of them);
    ``env``: the command line's ``--env``."""
    return Repro.build(
        origin=spec.path.parent,
        repro_file=spec.repro,
        probes=spec.probes,
        extra_env={"DISABLE_VERSION_CHECK": "1"},
        user_env=env,
    )


def matrix_options(spec: MatrixSpec, common: CommonOptions) -> CommonOptions:
    """The session's options for a matrix: its file names the indexes, probes, timeout and
    runs per cell (a wheel folder of the command line or the user's settings overrides its
    folders: ``matrix_indexes``); the command line the rest (results, cache, jobs, executor)."""
    check_probes(spec)  # an unknown deep probe fails here too, before any build
    return replace(
        common,
        planning=replace(
            common.planning,
            indexes=matrix_indexes(spec, common.planning.indexes.find_links),
            python=None,
        ),
        probing=replace(
            common.probing,
            repro=matrix_repro(spec, dict(common.probing.env)),
            timeout=spec.timeout,
            repeat=spec.repeats,
            any_failure=True,
        ),
    )


# ``matrix --update``: of one Python's cells (its label, the interpreter asked for, each
# axis's versions now), the ones to probe.
Pick = Callable[[str, "str | None", list[list[Version]], list[Cell]], list[Cell]]


def run_matrix(
    spec: MatrixSpec,
    common: CommonOptions,
    *,
    full: bool = False,
    max_cells: int = MAX_CELLS,
    progress: Progress | None = None,
) -> MatrixResult:
    opts = matrix_options(spec, common)  # unknown probe names fail here, before any build
    result = new_result(spec, common)
    with Session(opts, progress) as session:
        run_cells(spec, session, result, full=full, max_cells=max_cells)
    return result


def new_result(spec: MatrixSpec, common: CommonOptions) -> MatrixResult:
    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    return MatrixResult(spec=spec, command=common.command, started=started)


def run_cells(
    spec: MatrixSpec,
    session: Session,
    result: MatrixResult,
    *,
    full: bool,
    max_cells: int,
    pick: Pick | None = None,
) -> None:
    """Probe the matrix's cells (``pick``: only those it keeps of each Python's) in a session
    opened with ``matrix_options``; ``result`` gathers them."""
    _ = session.store  # an unwritable results directory fails here, before any build
    for request in spec.python or (None,):
        try:
            _run_python(spec, session, request, result, full=full, max_cells=max_cells, pick=pick)
        except KeyboardInterrupt as e:
            raise session.interrupted(e) from e


def _run_python(
    spec: MatrixSpec,
    session: Session,
    request: str | None,
    result: MatrixResult,
    *,
    full: bool,
    max_cells: int,
    pick: Pick | None,
) -> None:
    """One Python's cells: chosen, planned, then probed row by row (``--dry-run``: only
    planned); ``result`` gathers them."""
    python, target = session.target_for(request)
    label, cells = _cells(spec, session, request, result, pick=pick)
    if len(cells) > max_cells and not full:
        raise UsageError(
            f"{spec.path}: the matrix has {len(cells)} cells to probe for Python {label}, more "
            f"than --max-cells {max_cells}",
            hint="narrow an axis (select, range, versions), raise --max-cells, or pass "
            "--full to sweep them all",
            ref="matrix-too-big",
        )
    if not cells:
        return
    _plan_cells(spec, session, python, target, cells)
    rows: dict[tuple[tuple[str, str], ...], list[Cell]] = {}
    for cell in cells:
        rows.setdefault(cell.versions[:-1], []).append(cell)
    session.progress.message(
        f"envbisect: matrix {spec.name} on Python {label}: {len(cells)} cells in "
        f"{len(rows)} row(s), {sum(c.state is CellState.UNRESOLVABLE for c in cells)} "
        f"unresolvable; {'every cell' if full else 'row ends first, then bisection'}"
    )

    def want(cell: Cell, runs: int) -> Want:
        assert cell.spec is not None
        return Want(label=cell.label(), spec=cell.spec, runs=runs, python=request)

    if session.opts.dry_run:  # every cell's plan, as planned above; nothing built
        from envbisect.modes.dryrun import plan_views

        result.plans += plan_views(
            session,
            [
                want(c, 1) if c.spec is not None else Want(label=c.label(), why_not=c.reason)
                for c in cells
            ],
        )
        result.cells += cells
        return

    drive(
        MatrixRows(list(rows.values()), full=full, repeat=session.opts.probing.repeat),
        session,
        want,
    )
    for cell in cells:
        session.store.put_cell(_cell_row(spec.name, cell, session.repro.repro_id))
    result.cells += cells
    if spec.deep_probes:  # a real training run on each row's edges (modes/living/deep.py)
        run_deep(spec, session, list(rows.values()), request, target)


def _cells(
    spec: MatrixSpec,
    session: Session,
    request: str | None,
    result: MatrixResult,
    *,
    pick: Pick | None,
) -> tuple[str, list[Cell]]:
    """One Python's label (``3.11``) and its cells: every combination of the axes' versions
    (``pick``: those it keeps), each axis's versions into ``result``."""
    target = session.target_for(request)[1]
    client = session.client
    session.progress.planning("cells (reading the axes' versions)", 0, 0)
    # Tables and file names say "3.11"; ``targets`` says which interpreter, by what it is
    # (never its path: run.json and results.json are committed).
    label = f"{target.version[0]}.{target.version[1]}"
    result.targets[label] = target.described()
    axes = axis_versions(spec, client, target, lenient=pick is not None)
    result.axes[label] = [[str(v) for v in a] for a in axes]
    cells = [
        Cell(
            python=label,
            versions=tuple((a.package, str(v)) for a, v in zip(spec.axes, combo, strict=True)),
        )
        for combo in itertools.product(*axes)
    ]
    if pick is not None:
        cells = pick(label, request, axes, cells)
    return label, cells


def _plan_cells(
    spec: MatrixSpec, session: Session, python: str, target: Target, cells: list[Cell]
) -> None:
    """Plan every cell into an environment (an unresolvable one keeps its conflict)."""
    planner = _planner(spec, session, python, target)
    outside = (
        OutsidePlanners(
            planner,
            (*session.opts.planning.overrides, *_axis_overrides(spec)),
            target,
            lambda over: replace(session.uv_planner(python), overrides=over),
        )
        if spec.outside_pins
        else None
    )
    uploads = _upload_times(session.client, target, spec)
    try:
        for i, cell in enumerate(cells):
            session.progress.planning("cells", i, len(cells))
            _plan_cell(cell, planner, uploads, session, target, outside)
    finally:
        if outside is not None:
            outside.close()
    session.progress.planning("cells", len(cells), len(cells))


def _axis_overrides(spec: MatrixSpec) -> tuple[str, ...]:
    """``outside_pins``: each axis package overridden (to the cell's own version: an exact
    pin is its project's override, core/overrides.py)."""
    if not spec.outside_pins:
        return ()
    return tuple(str(canonicalize_name(a.package)) for a in spec.axes)


def _planner(spec: MatrixSpec, session: Session, python: str, target: Target) -> RunPlanner:
    """The planner of one Python's cells: every axis moves, the rest as the file's policy."""
    client = session.client
    return RunPlanner(
        package=spec.axes[0].package,
        also_moving=tuple(a.package for a in spec.axes[1:]),
        target=target,
        source=IndexMetadataSource(
            client, target, overrides=(*session.opts.planning.overrides, *_axis_overrides(spec))
        ),
        pins=read_pins(spec.pins, client, cwd=spec.path.parent, extras=spec.extras),
        with_reqs=spec.with_reqs,
        policy=Policy(spec.rest),
        extras=spec.extras,
        fallback=replace(
            session.uv_planner(python),
            overrides=(*session.opts.planning.overrides, *_axis_overrides(spec)),
        ),
    )


def load_matrix(path: Path) -> MatrixSpec:
    """Read and validate a matrix file; every error names the file and the key."""
    shown = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise UsageError(
            f"{shown}: not UTF-8 text (byte {e.start}: {e.reason})",
            hint="a matrix file is TOML, which is UTF-8: save it as UTF-8",
            ref="matrix-schema",
        ) from e
    except OSError as e:
        raise UsageError(
            f"cannot read the matrix file {shown}: {e.strerror}",
            hint="pass the path of a matrices/*.toml file",
            ref="matrix-missing",
        ) from e
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise UsageError(
            f"{shown}: not valid TOML ({e})", hint=SCHEMA_HINT, ref="matrix-schema"
        ) from e
    return parse_matrix(data, path=path, executors=tuple(kinds()))


def axis_versions(
    spec: MatrixSpec, client: IndexClient, target: Target, *, lenient: bool = False
) -> list[list[Version]]:
    """Each axis's versions: explicit, or selected among the installable candidates that the
    axis range and the pins (``range_from`` and ``pins``) allow. ``lenient`` (an update of a
    published table): an explicit version with no installable file now (yanked, deleted) is
    left out, not refused."""
    env = target.marker_environment()
    pinsets = read_pins(
        [*spec.range_from, *spec.pins], client, cwd=spec.path.parent, extras=spec.extras
    )
    out = []
    for i, axis in enumerate(spec.axes, 1):
        files = client.project_files(axis.package).files
        cl = build_candidates(files, target)
        available = {c.version for c in cl.candidates if c.installable}
        if axis.versions:
            chosen = [Version(v) for v in axis.versions]
            missing = [str(v) for v in chosen if v not in available]
            if lenient:
                chosen = [v for v in chosen if v in available]
            elif missing:
                raise UsageError(
                    f"{spec.path}: [[axis]] {i} versions: {axis.package} {', '.join(missing)} "
                    f"has no installable file for {target.short}",
                    hint="list versions that exist on the index with a wheel for the target",
                    ref="matrix-axis-empty",
                )
        else:
            allowed = SpecifierSet(axis.range or "")
            for ps in pinsets if axis.use_pins else []:
                allowed &= ps.specifier_for(axis.package, env, spec.extras)
            chosen = select_versions(
                axis.select,
                [v for v in available if not v.is_prerelease and allowed.contains(v)],
            )
        if not chosen:
            raise UsageError(
                f"{spec.path}: [[axis]] {i} ({axis.package}) selects no version for {target.short}",
                hint="check its range and select, the pins in range_from, and the Python version",
                ref="matrix-axis-empty",
            )
        out.append(sorted(chosen))
    return out


def _upload_times(
    client: IndexClient, target: Target, spec: MatrixSpec
) -> dict[tuple[str, str], datetime]:
    out = {}
    for axis in spec.axes:
        for c in build_candidates(client.project_files(axis.package).files, target).candidates:
            if c.upload_time is not None:
                out[(axis.package, str(c.version))] = c.upload_time
    return out


def _plan_cell(
    cell: Cell,
    planner: RunPlanner,
    uploads: dict[tuple[str, str], datetime],
    session: Session,
    target: Target,
    outside: OutsidePlanners | None = None,
) -> None:
    versions: dict[str, Version] = {canonicalize_name(p): Version(v) for p, v in cell.versions}
    dates = [uploads[pv] for pv in cell.versions if pv in uploads]
    followed: tuple[str, ...] = ()
    if outside is not None:  # outside_pins (modes/living/outside.py)
        planner, followed = outside.for_cell(cell.versions)
    planned = planner.plan_versions(versions, max(dates) if dates else None)
    if not isinstance(planned, Plan):
        cell.state, cell.reason = CellState.UNRESOLVABLE, planned.reason
        cell.outcome = untestable(f"unresolvable: {planned.reason}")
        return
    # outside_pins: the cell's axis versions installed over what its packages allow, and
    # what the later axis needs where two axis packages disagree.
    over = tuple(p for p, _ in cell.versions if canonicalize_name(p) in planner.source.overrides)
    cell.spec = session.env_spec(
        planned.requirements(), target=target, overrides=(*over, *followed)
    )


def _cell_row(matrix: str, cell: Cell, repro_id: str) -> CellRow:
    o = cell.outcome
    return CellRow(
        matrix=matrix,
        python=cell.python,
        cell=cell.key,
        state=cell.state.value,  # the store keeps the word
        env_id=cell.spec.env_id if cell.spec else None,
        repro_id=repro_id,
        kind=o.kind.value if o else None,
        signature=(o.signature if o else "") or cell.reason,
        inferred_from=cell.inferred_from,
        updated_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
    )
