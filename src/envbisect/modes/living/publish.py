"""Publishing a matrix: its tables, pages, lockfiles and feed, from the store and from what
was published before.

Who does what: ``core.publish`` and ``core.page`` make the text of each file, ``core.history``
the record of what changed and ``core.feed`` the Atom feeds; this module gathers the cells
(the store's, merged with the committed ``results.json``'s: a store is not kept, a published
table is), writes the files and says what changed.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from envbisect.core.living import feed, findings, history, page, tables
from envbisect.core.living import update as cellupdate
from envbisect.core.living.cell import HINT, CellState, Key, PublishedCell, without_env_path
from envbisect.core.living.document import PublishedTable
from envbisect.core.living.history import Change
from envbisect.core.living.lastrun import LastRun, UpdateNote
from envbisect.core.living.meta import MatrixMeta
from envbisect.core.living.spec import MatrixSpec
from envbisect.errors import ResultsMalformed, StoreError, UsageError
from envbisect.index.source import IndexMetadataSource
from envbisect.model import OutcomeKind
from envbisect.modes.living import checkdata, deep
from envbisect.modes.living.matrix import public_indexes
from envbisect.modes.living.outside import outside_note
from envbisect.modes.outputs import inside, write_lockfiles
from envbisect.modes.portable import PublicSources
from envbisect.modes.session import Session
from envbisect.progress import Progress
from envbisect.store import Store

# A folder of --results whose feed entries are linked (as core.page links them).
_FOLDER = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def published_cells(spec: MatrixSpec, store: Store) -> list[PublishedCell]:
    """Every cell of the matrix the store knows (its rows), with the details a table shows."""
    out: list[PublishedCell] = []
    by_key = {(r.python, r.cell): r for r in store.cells(spec.name)}
    for (python, key), row in sorted(by_key.items()):
        source, state = row, CellState(row.state)  # the store keeps the word
        if state is CellState.INFERRED and row.inferred_from:
            source = by_key.get((python, row.inferred_from), row)
        rec = (
            store.get(source.env_id, source.repro_id) if source.env_id and source.repro_id else None
        )
        mine = rec if state is CellState.MEASURED else None  # an inferred cell has no run
        out.append(
            PublishedCell(
                python=python,
                versions=tuple(json.loads(key).items()),
                state=state,
                kind=OutcomeKind(row.kind) if row.kind else None,  # the store keeps the word
                signal=rec.outcome.signal if rec else None,
                signature=without_env_path(row.signature or ""),
                library=rec.outcome.library if rec else None,
                seconds=round(mine.build_seconds + mine.probe_seconds, 2) if mine else None,
                measured_at=mine.started_at if mine else None,
                installed=mine.installed if mine else (),
                inferred_from=row.inferred_from,
                env_id=row.env_id,
            )
        )
    return out


@dataclass(frozen=True, slots=True, kw_only=True)
class Published:
    """What one publish wrote, and what it changed (``core.history``)."""

    files: list[Path]
    change: Change | None  # the history entry this publish added (None: nothing changed)
    news: Change | None  # the change the page leads with ("new since ...")

    def to_dict(self) -> dict[str, Any]:
        return {
            "files": [str(p) for p in self.files],
            "changes": self.change.to_dict() if self.change else None,
            "news": self.news.to_dict() if self.news else None,
        }


def publish_table(spec: MatrixSpec, session: Session, *, now: datetime | None = None) -> Published:
    """Write every published file of one matrix; what was written and what changed.

    The cells: the published ``results.json``'s, each replaced by the store's cell of the same
    key, then the store's new ones, inside the axes of the last run (``run.json``): a store is
    not kept (a fresh clone, a CI job) and a published table is, so ``matrix --update`` probes
    the new cells only and the old ones keep their outcomes and their lockfiles. What changed
    since the last publish is added to the history (``core.history``; ``now``: its date).
    With no cell of the matrix in the store but a published ``results.json``, the pages are
    made again from it: nothing is probed, nothing is added to the history, the lockfiles
    already written stay as they are (after ``matrix --update``, which may have found nothing
    new, the table is merged all the same: a value that left it leaves).
    ``results/index.html`` and ``results/feed.xml`` are made again either way, from every
    matrix published under --results."""
    results = session.opts.results
    out = inside(results, results / spec.name)
    out.mkdir(parents=True, exist_ok=True)
    published = out / "results.json"
    try:
        fresh = published_cells(spec, session.store)
        run_meta = _run_meta(out)
        last = LastRun.from_dict(run_meta)
        if not fresh and published.is_file() and last.update is None:
            return _republish(spec, session, out)
        before = _read_published(out)[0] if published.is_file() else None
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise StoreError(
            f"the matrix {spec.name} in {results} has damaged records ({type(e).__name__}: {e})",
            hint=f"run it again (envbisect matrix {spec.path}), or pass another --results",
            ref="store-damaged",
        ) from e
    if not fresh and before is None:
        raise UsageError(
            f"the store in {results} has no cell of the matrix {spec.name}",
            hint=f"run it first: envbisect matrix {spec.path}",
            ref="matrix-not-run",
        )
    axes = [a.package for a in spec.axes]
    probes = [*spec.probes, *([spec.repro] if spec.repro else [])]
    meta = MatrixMeta(
        name=spec.name,
        description=spec.description,
        axes=tuple(axes),
        probes=tuple(probes),
        deep_probes=spec.deep_probes,
        run=run_meta,
    )
    old_cells = list(before.cells) if before is not None else None
    if spec.outside_pins:
        fresh = _outside_notes(fresh, session)
    cells = cellupdate.merge(old_cells or [], fresh, last.axis_versions)
    cells = deep.attach(spec, session.store, cells, old_cells)  # deep_probes, on the edges
    past = list(before.history) if before is not None else []
    change = _change(old_cells, cells, axes, last, past, now)
    hist = history.append(past, change)
    fresh_keys = {c.key for c in fresh}
    written, rec_files, cells = _write_locks(spec, session, out, meta, cells, only=fresh_keys)
    news = history.latest(hist)
    written += _write_pages(out, meta, cells, rec_files, hist)
    written += publish_index(results, session.progress)
    written += checkdata.refresh(results)
    return Published(files=written, change=change, news=news)


def _outside_notes(cells: list[PublishedCell], session: Session) -> list[PublishedCell]:
    """outside_pins: each cell with why it lies outside the pins, where it does."""
    source = IndexMetadataSource(session.client, session.target)
    try:
        return [
            replace(
                c,
                outside=outside_note(
                    c.versions,
                    source,
                    session.target,
                    [(d.name, d.version) for d in c.installed or ()],
                ),
            )
            for c in cells
        ]
    finally:
        source.close()


def _as_listed(spec: MatrixSpec, cell: PublishedCell) -> str:
    """Why a cell's lock is installed as listed: every cell of an outside_pins table was
    built with its axis versions overriding every requirement on them (trl's on transformers
    too, not only the release's), so installing it resolved may refuse it."""
    if cell.outside:
        return f"outside the pins ({cell.outside})"
    if spec.outside_pins:
        return "built with outside_pins (the axis versions override every requirement on them)"
    return ""


def _run_meta(out: Path) -> dict[str, Any]:
    """``run.json``: how the last run of the matrix was made (paths dropped from older ones)."""
    run_file = out / "run.json"
    run_meta: dict[str, Any] = json.loads(run_file.read_text()) if run_file.is_file() else {}
    if run_meta and without_paths(run_meta) != run_meta:  # written by an older envbisect
        run_meta = without_paths(run_meta)
        run_file.write_text(json.dumps(run_meta, indent=2) + "\n", encoding="utf-8")
    return run_meta


def _change(
    old: list[PublishedCell] | None,
    cells: list[PublishedCell],
    axes: list[str],
    last: LastRun,
    past: list[Change],
    now: datetime | None,
) -> Change | None:
    """This publish's history entry: ``run.json``'s ``update`` says why cells left and which
    were rechecked (counted once: a second publish of the same run rechecked nothing)."""
    update = last.update or UpdateNote()
    run = last.measured
    again = not past or past[-1].run != run
    rechecked = frozenset(r.key for r in update.rechecked) if again else frozenset()
    date = (now or datetime.now(timezone.utc)).isoformat(timespec="seconds")
    since = past[-1].date if past else (None if old is None else _measured(old, last))
    return history.diff(
        old,
        cells,
        axes,
        date=date,
        since=since,
        command=last.command,
        why_removed=update.why_removed(),
        rechecked=rechecked,
        run=run,
    )


def _measured(old: list[PublishedCell], last: LastRun) -> str:
    """When the cells published before were measured: the newest of their dates."""
    dates = [c.measured_at for c in old if c.measured_at]
    return max(dates, default=last.measured or "?")


def _write_locks(
    spec: MatrixSpec,
    session: Session,
    out: Path,
    meta: MatrixMeta,
    cells: Sequence[PublishedCell],
    *,
    only: set[Key] | None = None,
) -> tuple[list[Path], dict[str, str], list[PublishedCell]]:
    """Each passing cell's lockfiles (``locks/py<X>/<cell>.txt``, hash-pinned, naming the
    indexes, and ``pylock.<cell>.toml`` beside it), and per Python the recommended one's
    (``recommended-py<X>.txt``, ``pylock.recommended-py<XY>.toml``). ``only``: the cells to
    write them for (the others' stay as they were written), and any whose lockfile is gone.
    Returns the files written, the recommended lockfile per Python, and the cells with the
    lockfiles written for them (in the order given)."""
    written: list[Path] = []
    rec_files: dict[str, str] = {}
    best_of = findings.recommended(cells)
    passing = [c for c in cells if c.passes]
    kept = {c.key for c in passing if only is not None and c.key not in only and _has_locks(out, c)}
    locked: dict[Key, PublishedCell] = {}
    # Committed tables: the locks name the file's indexes, never this machine's folders.
    public = PublicSources(public_indexes(spec), session)
    shown = spec.path.name if spec.path.is_absolute() else spec.path.as_posix()
    again = f"envbisect publish {shown} (online; --find-links DIR where the wheels are local)"
    for py in sorted({c.python for c in passing}):
        todo = [c for c in passing if c.python == py and c.key not in kept]
        target = session.target_for(py)[1] if todo else None
        folder = inside(out, out / "locks" / f"py{py}")
        folder.mkdir(parents=True, exist_ok=True)
        for c in todo:
            assert target is not None
            slug = "__".join(f"{k}-{v}" for k, v in c.versions)
            header = [
                f"{spec.name}: {', '.join(f'{k}=={v}' for k, v in c.versions)}"
                f" passes {', '.join(meta.probes)} on {target.short}"
            ]
            req, pl = write_lockfiles(
                folder,
                c.installed or (),
                session,
                header=header,
                name=slug,
                target=target,
                public=public,
                again=again,
                as_listed=_as_listed(spec, c),
            )
            lock, pylock = req.relative_to(out).as_posix(), pl.relative_to(out).as_posix()
            locked[c.key] = replace(c, lock=lock, pylock=pylock)
            written += [req, pl]
        best = locked.get(best_of[py].key, best_of[py])
        rec = inside(out, out / f"recommended-py{py}.txt")
        rec_pl = inside(out, out / f"pylock.recommended-py{py.replace('.', '')}.toml")
        best_lock, best_pylock = out / str(best.lock), out / str(best.pylock)
        rec.write_text(
            best_lock.read_text()
            .replace(best_lock.name, rec.name)
            .replace(best_pylock.name, rec_pl.name),
            encoding="utf-8",
        )
        rec_pl.write_text(best_pylock.read_text(), encoding="utf-8")
        rec_files[py] = rec.name
        written += [rec, rec_pl]
    return written, rec_files, [locked.get(c.key, c) for c in cells]


def _has_locks(out: Path, cell: PublishedCell) -> bool:
    """Whether a cell's lockfiles are there, its pylock one that ``packaging.pylock``
    validates (one an older envbisect wrote without a file's URL is written again)."""
    from packaging.pylock import Pylock, PylockValidationError

    if cell.lock is None or cell.pylock is None:
        return False
    if not ((out / cell.lock).is_file() and (out / cell.pylock).is_file()):
        return False
    try:
        Pylock.from_dict(tomllib.loads((out / cell.pylock).read_text(encoding="utf-8")))
    except (OSError, ValueError, PylockValidationError):
        return False
    return True


def _write_pages(
    out: Path,
    meta: MatrixMeta,
    cells: list[PublishedCell],
    rec_files: dict[str, str],
    hist: list[Change],
) -> list[Path]:
    axes = meta.axes
    installs = {py: cmd for py, name in rec_files.items() if (cmd := _install_line(out / name))}
    caveats = {py: text for py in rec_files if (text := _pylock_caveat(out, py))}
    latest = history.latest(hist)
    news = (latest.title(), latest.lines or (latest.headline(),)) if latest else None
    data = PublishedTable(meta=meta, cells=tuple(cells), history=tuple(hist)).to_dict()
    files = {
        "table.md": tables.markdown(meta, cells, rec_files, news=news, caveats=caveats),
        "table.html": page.html_page(
            meta, cells, rec_files=rec_files, installs=installs, news=news, caveats=caveats
        ),
        "heatmap.svg": tables.svg(meta, cells),
        "results.csv": tables.csv_text(cells, axes),
        "results.json": json.dumps(data, indent=2) + "\n",
        "feed.xml": feed.matrix_feed(meta, hist),
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


def _pylock_caveat(out: Path, py: str) -> str:
    """What the recommended pylock of ``py`` leaves out (``[tool.envbisect] left-out``: a file
    no public URL names), said beside the answer; "" when it holds everything."""
    name = f"pylock.recommended-py{py.replace('.', '')}.toml"
    try:
        tool = tomllib.loads((out / name).read_text(encoding="utf-8"))["tool"]["envbisect"]
    except (OSError, ValueError, KeyError, TypeError):
        return ""
    left = [str(x) for x in tool.get("left-out", []) if isinstance(tool, dict)]
    if not left:
        return ""
    return (
        f"{name} leaves out {', '.join(left)}: no public URL is known for its file; the "
        "requirements lock pins it by hash and names its index"
    )


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


def read_table(folder: Path) -> PublishedTable:
    """A folder's ``results.json`` read and checked (``PublishedTable``: a ``UsageError``
    for a malformed one), its targets named without paths (``without_paths``)."""
    path = folder / "results.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as e:  # not JSON at all: the same error as a malformed document
        raise ResultsMalformed(
            f"malformed results.json: {path} is not JSON ({e})", hint=HINT
        ) from e
    table = PublishedTable.from_dict(data, source=str(path))
    return replace(table, meta=replace(table.meta, run=without_paths(table.meta.run)))


def _read_published(folder: Path) -> tuple[PublishedTable, dict[str, str]]:
    """A published matrix read back, and its recommended lockfiles present."""
    table = read_table(folder)
    rec_files = {
        py: f"recommended-py{py}.txt"
        for py in findings.recommended(table.cells)
        if (folder / f"recommended-py{py}.txt").is_file()
    }
    return table, rec_files


def _republish(spec: MatrixSpec, session: Session, out: Path) -> Published:
    table, rec_files = _read_published(out)
    meta, cells, hist = table.meta, list(table.cells), list(table.history)
    session.progress.message(
        f"{spec.name}: no cell in the store; the pages are made again from {out / 'results.json'}"
    )
    written: list[Path] = []
    if not session.opts.planning.offline and all(c.installed is not None for c in cells):
        # Online: the lockfiles are written again too (hashes from the index), as from the
        # store; --offline leaves them as they are.
        written, rec_files, cells = _write_locks(spec, session, out, meta, cells)
    # A lockfile named but not there is not linked.
    cells = [replace(c, lock=None) if c.lock and not (out / c.lock).is_file() else c for c in cells]
    written += _write_pages(out, meta, cells, rec_files, hist)
    written += publish_index(session.opts.results, session.progress)
    return Published(files=written, change=None, news=history.latest(hist))


def publish_index(results: Path, progress: Progress) -> list[Path]:
    """``results/index.html`` and ``results/feed.xml`` from every folder under ``results``
    with a readable ``results.json`` (one that cannot be read is left out, and said)."""
    entries = []
    feeds: list[tuple[str, MatrixMeta, list[Change]]] = []
    for folder in sorted(p for p in results.iterdir() if (p / "results.json").is_file()):
        try:
            table, rec_files = _read_published(folder)
        except (UsageError, ValueError, KeyError, TypeError, OSError) as e:
            progress.message(f"{folder / 'results.json'} is left out of index.html: {e}")
            continue
        hist = list(table.history)
        last = history.latest(hist)
        entries.append(
            page.IndexEntry(
                folder=folder.name,
                meta=table.meta,
                cells=table.cells,
                rec_files=rec_files,
                news=(last.date, last.headline()) if last else None,
            )
        )
        if _FOLDER.fullmatch(folder.name):
            feeds.append((folder.name, table.meta, hist))
    path = results / "index.html"
    path.write_text(page.index_page(entries), encoding="utf-8")
    atom = results / "feed.xml"
    atom.write_text(feed.index_feed(feeds), encoding="utf-8")
    return [path, atom]
