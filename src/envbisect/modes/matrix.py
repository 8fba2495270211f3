"""Running a compatibility matrix: every cell a real environment, probed for real.

Who does what: ``core.matrixspec`` checks the file's schema (``load_matrix`` here reads it);
this module selects each axis's versions from the index (bounded by the pins) and plans every
cell (an unresolvable cell is shown with its conflict and never built); ``strategy.rows``
walks each row (probe the ends, infer agreeing stretches, bisect disagreeing ones, check the
middle); ``drive`` runs the walk through the session, ``--jobs`` rows side by side, every
probe through the same store as ``run``, so an interrupted matrix resumes where it stopped.
"""

from __future__ import annotations

import itertools
import json
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

from envbisect.core import findings, page, publish
from envbisect.core.candidates import build_candidates
from envbisect.core.matrixspec import SCHEMA_HINT, MatrixSpec, parse_matrix, select_versions
from envbisect.core.outcome import untestable
from envbisect.core.plan import Plan, Policy
from envbisect.core.target import Target
from envbisect.env.repro import Repro
from envbisect.env.uvplan import UvFallback
from envbisect.errors import StoreError, UsageError
from envbisect.index.client import IndexClient
from envbisect.index.pytorch import OFFICIAL, variant_url
from envbisect.index.source import IndexMetadataSource
from envbisect.model import IndexConfig, InstalledDist
from envbisect.modes.drive import drive
from envbisect.modes.outputs import inside, write_lockfiles
from envbisect.modes.planning import RunPlanner, read_pins
from envbisect.modes.portable import PublicSources
from envbisect.modes.session import Session, Want
from envbisect.options import CommonOptions
from envbisect.reporter import Reporter
from envbisect.store import Store
from envbisect.strategy.rows import Cell, MatrixRows

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

MAX_CELLS = 500
# An environment's path inside a message, as older records kept it.
_ENV_PATH = re.compile(r"/\S*?/\.envs/[0-9a-f]{16}-[^/\s]+/")


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

    def counts(self) -> dict[str, int]:
        out = {"cells": len(self.cells), "built": 0, "reused": 0, "inferred": 0,
               "unresolvable": 0, "untestable": 0}  # fmt: skip
        for c in self.cells:
            if c.state == "measured":
                out["reused" if c.reused else "built"] += 1
            elif c.state in out:
                out[c.state] += 1
        return out


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
    return replace(
        common,
        repro=matrix_repro(spec, dict(common.env)),
        indexes=matrix_indexes(spec, common.indexes.find_links),
        timeout=spec.timeout,
        repeat=spec.repeats,
        any_failure=True,
        python=None,
    )


def run_matrix(
    spec: MatrixSpec,
    common: CommonOptions,
    *,
    full: bool = False,
    max_cells: int = MAX_CELLS,
    reporter: Reporter | None = None,
) -> MatrixResult:
    opts = matrix_options(spec, common)  # unknown probe names fail here, before any build
    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    result = MatrixResult(spec=spec, command=common.command, started=started)
    with Session(opts, reporter) as session:
        _ = session.store  # an unwritable results directory fails here, before any build
        for request in spec.python or (None,):
            try:
                _run_python(spec, session, request, result, full=full, max_cells=max_cells)
            except KeyboardInterrupt as e:
                raise session.interrupted(e) from e
    return result


def _run_python(
    spec: MatrixSpec,
    session: Session,
    request: str | None,
    result: MatrixResult,
    *,
    full: bool,
    max_cells: int,
) -> None:
    python, target = session.target_for(request)
    client = session.client
    session.reporter.planning("cells (reading the axes' versions)", 0, 0)
    # Tables and file names say "3.11"; ``targets`` says which interpreter, by what it is
    # (never its path: run.json and results.json are committed).
    label = f"{target.version[0]}.{target.version[1]}"
    result.targets[label] = target.described()
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
        fallback=UvFallback(uv=session.uv, python=python, indexes=session.opts.indexes),
    )
    cells = [
        Cell(python=label, versions=tuple(
            (a.package, str(v)) for a, v in zip(spec.axes, combo, strict=True)))
        for combo in itertools.product(*axes)
    ]  # fmt: skip
    uploads = _upload_times(client, target, spec)
    for i, cell in enumerate(cells):
        session.reporter.planning("cells", i, len(cells))
        _plan_cell(cell, planner, uploads, session, target)
    session.reporter.planning("cells", len(cells), len(cells))
    rows: dict[tuple[tuple[str, str], ...], list[Cell]] = {}
    for cell in cells:
        rows.setdefault(cell.versions[:-1], []).append(cell)
    session.reporter.message(
        f"envbisect: matrix {spec.name} on Python {label}: {len(cells)} cells in "
        f"{len(rows)} row(s), {sum(c.state == 'unresolvable' for c in cells)} "
        f"unresolvable; {'every cell' if full else 'row ends first, then bisection'}"
    )

    def want(cell: Cell, runs: int) -> Want:
        assert cell.spec is not None
        return Want(label=cell.label(), spec=cell.spec, runs=runs, python=request)

    if session.opts.dry_run:  # every cell's plan, as planned above; nothing built
        from envbisect.modes.dryrun import plan_views

        result.plans += plan_views(session, [
            want(c, 1) if c.spec is not None else Want(label=c.label(), why_not=c.reason)
            for c in cells
        ])  # fmt: skip
        result.cells += cells
        return

    drive(MatrixRows(list(rows.values()), full=full, repeat=session.opts.repeat), session, want)
    for cell in cells:
        session.store.put_cell(_cell_row(spec.name, cell, session.repro.repro_id))
    result.cells += cells


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
    return parse_matrix(data, path=path)


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
    session: Session,
    target: Target,
) -> None:
    versions: dict[str, Version] = {canonicalize_name(p): Version(v) for p, v in cell.versions}
    dates = [uploads[pv] for pv in cell.versions if pv in uploads]
    planned = planner.plan_versions(versions, max(dates) if dates else None)
    if not isinstance(planned, Plan):
        cell.state, cell.reason = "unresolvable", planned.reason
        cell.outcome = untestable(f"unresolvable: {planned.reason}")
        return
    cell.spec = session.env_spec(planned.requirements(), target=target)


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


def publish_matrix(spec: MatrixSpec, session: Session) -> list[Path]:
    """Write every published file of one matrix from the store; returns their paths.

    With no cell of the matrix in the store (a fresh clone: the store is not kept) but a
    published ``results.json``, the pages are made again from it: nothing is probed and the
    lockfiles already written stay as they are. ``results/index.html`` is made again either
    way, from every matrix published under --results."""
    results = session.opts.results
    out = inside(results, results / spec.name)
    out.mkdir(parents=True, exist_ok=True)
    published = out / "results.json"
    try:
        cells = published_cells(spec, session.store)
        run_file = out / "run.json"
        run_meta = json.loads(run_file.read_text()) if run_file.is_file() else {}
        if run_meta and without_paths(run_meta) != run_meta:  # written by an older envbisect
            run_meta = without_paths(run_meta)
            run_file.write_text(json.dumps(run_meta, indent=2) + "\n", encoding="utf-8")
        if not cells and published.is_file():
            return _republish(spec, session, out)
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise StoreError(
            f"the matrix {spec.name} in {results} has damaged records ({type(e).__name__}: {e})",
            hint=f"run it again (envbisect matrix {spec.path}), or pass another --results",
            ref="store-damaged",
        ) from e
    if not cells:
        raise UsageError(
            f"the store in {results} has no cell of the matrix {spec.name}",
            hint=f"run it first: envbisect matrix {spec.path}",
            ref="matrix-not-run",
        )
    axes = [a.package for a in spec.axes]
    probes = [*spec.probes, *([spec.repro] if spec.repro else [])]
    meta = {"name": spec.name, "description": spec.description, "axes": axes,
            "probes": probes, **run_meta}  # fmt: skip
    written, rec_files = _write_locks(spec, session, out, meta, cells)
    written += _write_pages(out, meta, cells, rec_files)
    written.append(publish_index(results, session.reporter))
    return written


def _write_locks(
    spec: MatrixSpec, session: Session, out: Path, meta: dict[str, Any], cells: list[dict[str, Any]]
) -> tuple[list[Path], dict[str, str]]:
    """Each passing cell's lockfiles (``locks/py<X>/<cell>.txt``, hash-pinned, naming the
    indexes, and ``pylock.<cell>.toml`` beside it), and per Python the recommended one's
    (``recommended-py<X>.txt``, ``pylock.recommended-py<XY>.toml``)."""
    written: list[Path] = []
    rec_files: dict[str, str] = {}
    best_of = findings.recommended(cells)
    passing = [c for c in cells if c["state"] == "measured" and c["kind"] == "pass"]
    # Committed tables: the locks name the file's indexes, never this machine's folders.
    public = PublicSources(public_indexes(spec), session)
    shown = spec.path.name if spec.path.is_absolute() else spec.path.as_posix()
    again = f"envbisect publish {shown} (online; --find-links DIR where the wheels are local)"
    for py in sorted({str(c["python"]) for c in passing}):
        target = session.target_for(py)[1]
        folder = inside(out, out / "locks" / f"py{py}")
        folder.mkdir(parents=True, exist_ok=True)
        for c in (c for c in passing if c["python"] == py):
            versions: dict[str, str] = c["versions"]
            slug = "__".join(f"{k}-{v}" for k, v in versions.items())
            installed = tuple(InstalledDist(**d) for d in c["installed"])
            header = [f"{spec.name}: {', '.join(f'{k}=={v}' for k, v in versions.items())}"
                      f" passes {', '.join(meta['probes'])} on {target.short}"]  # fmt: skip
            req, pl = write_lockfiles(folder, installed, session, header=header, name=slug,
                                      target=target, public=public, again=again)  # fmt: skip
            c["lock"], c["pylock"] = req.relative_to(out).as_posix(), pl.relative_to(out).as_posix()
            written += [req, pl]
        best = best_of[py]
        rec = inside(out, out / f"recommended-py{py}.txt")
        rec_pl = inside(out, out / f"pylock.recommended-py{py.replace('.', '')}.toml")
        lock, pylock = out / str(best["lock"]), out / str(best["pylock"])
        rec.write_text(lock.read_text().replace(lock.name, rec.name)
                       .replace(pylock.name, rec_pl.name), encoding="utf-8")  # fmt: skip
        rec_pl.write_text(pylock.read_text(), encoding="utf-8")
        rec_files[py] = rec.name
        written += [rec, rec_pl]
    return written, rec_files


def _write_pages(
    out: Path, meta: dict[str, Any], cells: list[dict[str, Any]], rec_files: dict[str, str]
) -> list[Path]:
    axes = meta["axes"]
    installs = {py: cmd for py, name in rec_files.items() if (cmd := _install_line(out / name))}
    files = {
        "table.md": publish.markdown(meta, cells, rec_files),
        "table.html": page.html_page(meta, cells, rec_files=rec_files, installs=installs),
        "heatmap.svg": publish.svg(meta, cells),
        "results.csv": publish.csv_text(cells, axes),
        "results.json": json.dumps({"matrix": meta, "cells": cells}, indent=2) + "\n",
    }
    for name, text in files.items():
        (out / name).write_text(text, encoding="utf-8")
    return [out / name for name in files]


# An interpreter as older records named it: its tags, then its path in parentheses.
_OLD_TARGET = re.compile(r"(?P<interp>[a-z]+)(?P<nodot>\d+)-(?P<platform>\S+) \((?P<path>.*)\)\Z")
_INTERPRETERS = {"cp": "cpython", "pp": "pypy", "gp": "graalpy"}


def without_paths(meta: Mapping[str, Any]) -> dict[str, Any]:
    """A published matrix's meta with each target named by identity (``Target.described``),
    never by path. Older records said ``cp311-manylinux_2_36_x86_64 (/path/to/python)``:
    kept is what the label says (implementation, ABI, platform); the path and the full
    version it did not record are not guessed."""
    out = dict(meta)
    targets = meta.get("targets")
    if not isinstance(targets, dict):
        return out
    fixed: dict[str, Any] = {}
    for py, value in targets.items():
        m = _OLD_TARGET.match(value) if isinstance(value, str) else None
        if m is None:
            fixed[py] = value if not isinstance(value, str) else value.split(" (", 1)[0]
            continue
        interp = m.group("interp")
        fixed[py] = {
            "implementation": _INTERPRETERS.get(interp, interp),
            "abi": f"{interp}{m.group('nodot')}" if interp == "cp" else "none",
            "platform": m.group("platform"),
        }
    out["targets"] = fixed
    return out


def _install_line(lock: Path) -> str:
    """The install command a lockfile's header gives (``# Install: CMD  (or ...)``), or ""."""
    try:
        lines = lock.read_text(encoding="utf-8").splitlines()
    except OSError:
        return ""
    for line in lines:
        if line.startswith("# Install: "):
            return line[len("# Install: ") :].split("  (", 1)[0].strip()
        if not line.startswith("#"):
            break
    return ""


def _read_published(folder: Path) -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, str]]:
    """A published matrix read back: its meta, its cells, its recommended lockfiles present."""
    data = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    meta, cells = data["matrix"], data["cells"]
    if not isinstance(meta, dict) or not isinstance(cells, list) or "axes" not in meta:
        raise ValueError("results.json holds no matrix and cells")
    meta = without_paths(meta)
    rec_files = {
        py: f"recommended-py{py}.txt"
        for py in findings.recommended(cells)
        if (folder / f"recommended-py{py}.txt").is_file()
    }
    return meta, cells, rec_files


def _republish(spec: MatrixSpec, session: Session, out: Path) -> list[Path]:
    meta, cells, rec_files = _read_published(out)
    session.reporter.message(
        f"{spec.name}: no cell in the store; the pages are made again from {out / 'results.json'}"
    )
    written: list[Path] = []
    if not session.opts.offline and all("installed" in c for c in cells):
        # Online: the lockfiles are written again too (hashes from the index), as from the
        # store; --offline leaves them as they are.
        written, rec_files = _write_locks(spec, session, out, meta, cells)
    for c in cells:  # a lockfile named but not there is not linked
        if c.get("lock") and not (out / str(c["lock"])).is_file():
            c["lock"] = None
    return [
        *written,
        *_write_pages(out, meta, cells, rec_files),
        publish_index(session.opts.results, session.reporter),
    ]


def publish_index(results: Path, reporter: Reporter) -> Path:
    """``results/index.html`` from every folder under ``results`` with a readable
    ``results.json`` (one that cannot be read is left out, and said)."""
    entries = []
    for folder in sorted(p for p in results.iterdir() if (p / "results.json").is_file()):
        try:
            meta, cells, rec_files = _read_published(folder)
        except (ValueError, KeyError, TypeError, OSError) as e:
            reporter.message(f"{folder / 'results.json'} is left out of index.html: {e}")
            continue
        entries.append({"folder": folder.name, "meta": meta, "cells": cells,
                        "rec_files": rec_files})  # fmt: skip
    path = results / "index.html"
    path.write_text(page.index_page(entries), encoding="utf-8")
    return path
