"""Running a compatibility matrix: every cell a real environment, probed for real.

Who does what: ``matrix`` reads and checks the file; this module selects each axis's versions
from the index (bounded by the pins), plans every cell (an unresolvable cell is shown with its
conflict and never built), then walks each row (the cells that differ only in the last axis)
with the same ``Bisector`` as ``envbisect run``: outcomes along a row are taken to be
monotone, so the row's ends are probed, and when they agree the cells between are *inferred*
(marked so, never shown as measured); when they differ the boundary is bisected. ``--full``
probes every cell. Rows run in parallel up to ``--jobs``; each worker has its own store
connection and prober, and every probe goes through the same store as ``run``, so an
interrupted matrix resumes where it stopped.
"""

from __future__ import annotations

import functools
import itertools
import json
import re
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import httpx
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

from envbisect.core.candidates import build_candidates
from envbisect.core.matrixspec import MatrixSpec, select_versions
from envbisect.core.outcome import untestable
from envbisect.core.plan import Plan, Policy
from envbisect.core.target import Target
from envbisect.env.prober import Prober
from envbisect.env.repro import Repro
from envbisect.env.uv import find_python, find_uv, inspect_target
from envbisect.env.uvplan import UvFallback
from envbisect.errors import Interrupted, UsageError
from envbisect.index.client import IndexClient, default_cache_dir
from envbisect.index.pytorch import OFFICIAL, variant_url
from envbisect.index.source import IndexMetadataSource
from envbisect.model import EnvSpec, IndexConfig, InstalledDist, Outcome, OutcomeKind
from envbisect.modes.planning import RunPlanner, read_pins
from envbisect.reporter import Reporter
from envbisect.store import Store
from envbisect.strategy.bisect import Bisector

MAX_CELLS = 500
# An environment's path inside a message, as older records kept it.
_ENV_PATH = re.compile(r"/\S*?/\.envs/[0-9a-f]{16}-[^/\s]+/")
# Middle cells checked in a row whose ends agree (more finds more non-monotone rows, and costs
# a probe each): one per agreeing segment, two levels deep.
SPOT_CHECKS = 2


@dataclass(slots=True, kw_only=True)
class Cell:
    python: str
    versions: tuple[tuple[str, str], ...]  # (package, version), in axis order
    state: str = "pending"  # measured | inferred | unresolvable | untestable | unknown
    outcome: Outcome | None = None
    spec: EnvSpec | None = None
    reason: str = ""
    inferred_from: str | None = None
    installed: tuple[InstalledDist, ...] = ()
    seconds: float = 0.0
    reused: bool = False

    @property
    def key(self) -> str:
        return json.dumps(dict(self.versions), sort_keys=False)

    def label(self) -> str:
        return " ".join(f"{p}=={v}" for p, v in self.versions)


@dataclass(slots=True, kw_only=True)
class MatrixResult:
    spec: MatrixSpec
    axes: dict[str, list[list[str]]] = field(default_factory=dict)  # python -> axis versions
    cells: list[Cell] = field(default_factory=list)
    targets: dict[str, str] = field(default_factory=dict)  # python -> target label
    command: str = ""
    started: str = ""

    def counts(self) -> dict[str, int]:
        out = {"cells": len(self.cells), "built": 0, "reused": 0, "inferred": 0,
               "unresolvable": 0, "untestable": 0}  # fmt: skip
        for c in self.cells:
            if c.state == "measured":
                out["reused" if c.reused else "built"] += 1
            elif c.state in out:
                out[c.state] += 1
        return out


def matrix_indexes(spec: MatrixSpec) -> IndexConfig:
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


def matrix_repro(spec: MatrixSpec) -> Repro:
    """The probes (and repro file), each run ``repeats`` times: a failure in any run counts."""
    one = Repro.build(
        origin=spec.path.parent,
        repro_file=spec.repro,
        probes=spec.probes,
        extra_env={"DISABLE_VERSION_CHECK": "1"},
    )
    return replace(one, steps=one.steps * spec.repeats)


def run_matrix(
    spec: MatrixSpec,
    *,
    results: Path,
    jobs: int = 1,
    full: bool = False,
    max_cells: int = MAX_CELLS,
    command: str = "",
    reporter: Reporter | None = None,
    transport: httpx.BaseTransport | None = None,
    offline: bool = False,
    cache_dir: Path | None = None,
    keep_envs: bool = False,
) -> MatrixResult:
    reporter = reporter or Reporter()
    repro = matrix_repro(spec)  # unknown probe names fail here, before anything is built
    result = MatrixResult(
        spec=spec, command=command, started=datetime.now(timezone.utc).isoformat(timespec="seconds")
    )
    uv = find_uv()
    indexes = matrix_indexes(spec)
    with Store(results):  # an unwritable results directory fails here, before any build
        pass
    for request in spec.python or (None,):
        python = find_python(uv, request)
        target = inspect_target(python)
        # Tables and file names say "3.11"; the interpreter's path goes in ``targets``.
        label = f"{target.version[0]}.{target.version[1]}"
        result.targets[label] = f"{target.short} ({python})"
        with IndexClient(indexes, transport=transport, offline=offline,
                         cache_dir=cache_dir or default_cache_dir()) as client:  # fmt: skip
            axes = axis_versions(spec, client, target)
            result.axes[label] = [[str(v) for v in a] for a in axes]
            n = 1
            for a in axes:
                n *= len(a)
            if n > max_cells and not full:
                raise UsageError(
                    f"{spec.path}: the matrix has {n} cells for Python {label}, more than "
                    f"--max-cells {max_cells}",
                    hint="narrow an axis (select, range, versions), raise --max-cells, or pass "
                    "--full to sweep them all",
                    ref="matrix-too-big",
                )
            planner = RunPlanner(
                package=spec.axes[0].package,
                also_moving=tuple(a.package for a in spec.axes[1:]),
                target=target,
                source=IndexMetadataSource(client, target),
                pins=read_pins(spec.pins, client, cwd=spec.path.parent, extras=spec.extras),
                with_reqs=spec.with_reqs,
                policy=Policy(spec.rest),
                extras=spec.extras,
                fallback=UvFallback(uv=uv, python=python, indexes=indexes),
            )
            cells = [
                Cell(python=label, versions=tuple(
                    (a.package, str(v)) for a, v in zip(spec.axes, combo, strict=True)))
                for combo in itertools.product(*axes)
            ]  # fmt: skip
            uploads = _upload_times(client, target, spec)
            for cell in cells:
                _plan_cell(cell, planner, uploads, indexes, python_label=f"{python} "
                           f"({target.python_version})")  # fmt: skip
            rows: dict[tuple[tuple[str, str], ...], list[Cell]] = {}
            for cell in cells:
                rows.setdefault(cell.versions[:-1], []).append(cell)
            reporter.message(
                f"envbisect: matrix {spec.name} on Python {label}: {len(cells)} cells in "
                f"{len(rows)} row(s), {sum(c.state == 'unresolvable' for c in cells)} "
                f"unresolvable; {'every cell' if full else 'row ends first, then bisection'}"
            )
            walker = _RowWalker(
                make_prober=functools.partial(
                    Prober,
                    uv=uv,
                    python=python,
                    target=target,
                    repro=repro,
                    results=results,
                    timeout=spec.timeout,
                    reporter=reporter,
                    keep_envs=keep_envs,
                ),
                results=results,
                full=full,
                reporter=reporter,
            )
            try:
                with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
                    list(pool.map(walker.walk, rows.values()))
            except KeyboardInterrupt as e:
                walker.stop.set()
                raise Interrupted(
                    f"interrupted; every finished cell is kept in {results / 'envbisect.db'}",
                    hint="run the same command again to resume: finished cells are reused",
                ) from e
            with Store(results) as store:
                for cell in cells:
                    store.put_cell(_cell_row(spec.name, cell, repro.repro_id))
            result.cells += cells
    return result


def axis_versions(spec: MatrixSpec, client: IndexClient, target: Target) -> list[list[Version]]:
    """Each axis's versions: explicit, or selected among the installable candidates that the
    axis range and the pins (``range_from`` and ``pins``) allow."""
    env = target.marker_environment()
    pinsets = read_pins([*spec.range_from, *spec.pins], client, cwd=spec.path.parent,
                        extras=spec.extras)  # fmt: skip
    out = []
    for i, axis in enumerate(spec.axes, 1):
        files = client.project_files(axis.package).files
        cl = build_candidates(files, target)
        available = {c.version for c in cl.candidates if c.installable}
        if axis.versions:
            chosen = [Version(v) for v in axis.versions]
            missing = [str(v) for v in chosen if v not in available]
            if missing:
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
    indexes: IndexConfig,
    *,
    python_label: str,
) -> None:
    versions: dict[str, Version] = {canonicalize_name(p): Version(v) for p, v in cell.versions}
    dates = [uploads[pv] for pv in cell.versions if pv in uploads]
    planned = planner.plan_versions(versions, max(dates) if dates else None)
    if not isinstance(planned, Plan):
        cell.state, cell.reason = "unresolvable", planned.reason
        cell.outcome = untestable(f"unresolvable: {planned.reason}")
        return
    cell.spec = EnvSpec.build(planned.requirements(), python=python_label, indexes=indexes)


@dataclass(slots=True, kw_only=True)
class _RowWalker:
    make_prober: Callable[[], Prober]
    results: Path
    full: bool
    reporter: Reporter
    stop: threading.Event = field(default_factory=threading.Event)

    def walk(self, row: Sequence[Cell]) -> None:
        prober = self.make_prober()
        with Store(self.results) as store:
            if self.full or len(row) < 2:
                for cell in row:
                    if cell.state != "unresolvable":
                        self._probe(prober, store, cell)
                return
            self._bisect(prober, store, row)

    def _probe(self, prober: Prober, store: Store, cell: Cell) -> Outcome:
        if cell.state == "measured" and cell.outcome is not None:
            return cell.outcome  # a segment's end measured by the enclosing search
        if self.stop.is_set():
            raise KeyboardInterrupt
        assert cell.spec is not None
        self.reporter.probe_started(cell.label(), 0, 0)
        rec, reused = prober.probe(store, cell.spec)
        cell.state, cell.outcome, cell.installed = "measured", rec.outcome, rec.installed
        cell.seconds, cell.reused = rec.build_seconds + rec.probe_seconds, reused
        self.reporter.probe_finished(cell.label(), rec.outcome, cell.seconds, reused, "")
        return rec.outcome

    def _bisect(self, prober: Prober, store: Store, row: Sequence[Cell]) -> None:
        self._search(prober, store, row, list(range(len(row))), spot_checks=SPOT_CHECKS)
        self._infer(row)

    def _search(
        self, prober: Prober, store: Store, row: Sequence[Cell], seg: list[int], spot_checks: int
    ) -> None:
        """Ends of the segment, then the boundary between them (any failure counts as bad:
        a table shows every kind, each as measured). When the ends agree, the middle cell is
        checked too: a pass-fail-pass row (a bug in a few middle releases) is not monotone,
        and one probe often shows it; then each half is searched on its own."""
        bis = Bisector(
            n=len(seg),
            untestable=[k for k, i in enumerate(seg) if row[i].state == "unresolvable"],
            any_failure=True,
        )
        while (k := bis.next()) is not None:
            bis.record(k, self._probe(prober, store, row[seg[k]]))
        ends = bis.old.outcome, bis.new.outcome
        if spot_checks <= 0 or ends[0] is None or ends[1] is None:
            return
        if _passes(ends[0]) != _passes(ends[1]):
            return  # the bisection found the boundary
        lo, hi = bis.old.index, bis.new.index
        middle = [k for k in range(lo + 1, hi) if row[seg[k]].state == "pending"]
        if not middle:
            return
        mid = middle[len(middle) // 2]
        seen = self._probe(prober, store, row[seg[mid]])
        if _passes(seen) is None or _passes(seen) == _passes(ends[0]):
            return
        self._search(prober, store, row, seg[lo : mid + 1], spot_checks - 1)
        self._search(prober, store, row, seg[mid : hi + 1], spot_checks - 1)

    def _infer(self, row: Sequence[Cell]) -> None:
        # Measured cells that said pass or fail (untestable ones say nothing either way).
        known = [
            i
            for i, c in enumerate(row)
            if c.state == "measured" and c.outcome is not None and _passes(c.outcome) is not None
        ]
        for i, cell in enumerate(row):
            if cell.state != "pending":
                continue
            # Monotone rows: a cell between two measured cells that agree is inferred to agree
            # with them. Anything else stays unknown (shown as such, never as measured).
            left = max((j for j in known if j < i), default=None)
            right = min((j for j in known if j > i), default=None)
            if left is None or right is None:
                cell.state, cell.reason = "unknown", "outside the measured cells"
                continue
            a, b = row[left].outcome, row[right].outcome
            assert a is not None and b is not None
            if _passes(a) != _passes(b):
                cell.state, cell.reason = "unknown", "between cells that disagree"
                continue
            cell.state = "inferred"
            cell.outcome = a
            cell.inferred_from = row[left].key


def _passes(o: Outcome) -> bool | None:
    if o.kind is OutcomeKind.UNTESTABLE:
        return None
    return o.kind is OutcomeKind.PASS


def _cell_row(matrix: str, cell: Cell, repro_id: str) -> dict[str, object]:
    o = cell.outcome
    return {
        "matrix": matrix,
        "python": cell.python,
        "cell": cell.key,
        "state": cell.state,
        "env_id": cell.spec.env_id if cell.spec else None,
        "repro_id": repro_id,
        "kind": o.kind.value if o else None,
        "signature": (o.signature if o else "") or cell.reason,
        "inferred_from": cell.inferred_from,
        "updated_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }


# -- publishing ---------------------------------------------------------------------------------


def published_cells(spec: MatrixSpec, store: Store) -> list[dict[str, Any]]:
    """Every cell of the matrix the store knows, with the details a table shows."""
    out: list[dict[str, Any]] = []
    by_key = {(r["python"], r["cell"]): r for r in store.cells(spec.name)}
    for (python, key), row in sorted(by_key.items()):
        source = row
        if row["state"] == "inferred" and row["inferred_from"]:
            source = by_key.get((python, row["inferred_from"]), row)
        rec = (
            store.get(source["env_id"], source["repro_id"])
            if source["env_id"] and source["repro_id"]
            else None
        )
        mine = rec if row["state"] == "measured" else None  # an inferred cell has no run
        out.append({
            "python": python,
            "versions": json.loads(key),
            "state": row["state"],
            "kind": row["kind"],
            "signal": rec.outcome.signal if rec else None,
            "signature": _ENV_PATH.sub("<env>/", row["signature"] or ""),
            "library": rec.outcome.library if rec else None,
            "seconds": round(mine.build_seconds + mine.probe_seconds, 2) if mine else None,
            "measured_at": mine.started_at if mine else None,
            "installed": [d.to_dict() for d in mine.installed] if mine else [],
            "inferred_from": row["inferred_from"],
            "env_id": row["env_id"],
            "lock": None,
        })  # fmt: skip
    return out
