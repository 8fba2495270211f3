"""What a run leaves in ``results/<run-id>/``: report.md, and the known-good environment's
requirements.txt (hash-pinned) and pylock.toml. The text comes from ``core.report``; this
module finds the files of each installed version on the index and writes them."""

from __future__ import annotations

import contextlib
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import TypeVar

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from envbisect import __version__
from envbisect.core.lockfile import LockEntry, Pylocked, pylock, requirements_lock
from envbisect.core.names import TORCH_PACKAGES, is_project_name, is_version
from envbisect.core.results.search import SearchResult
from envbisect.core.runreport import report_markdown
from envbisect.core.target import Target
from envbisect.errors import EnvbisectError, UsageError
from envbisect.index.client import IndexClient, local_sha256
from envbisect.index.simple import ProjectFiles
from envbisect.model import IndexConfig, InstalledDist
from envbisect.modes.portable import Portable, PublicSources, portable_entries, public_config
from envbisect.modes.session import Session
from envbisect.redact import mask_url

R = TypeVar("R", bound=SearchResult)


def write_outputs(result: R, session: Session, *, label: str, allow_sdist: bool = False) -> R:
    """report.md always; the working environment's lockfiles when the search found one.
    Returns the result with the paths of what was written."""
    target = session.target
    run_dir = inside(session.opts.results, session.opts.results / result.run_id)
    run_dir.mkdir(parents=True, exist_ok=True)
    working = result.good_row()
    if working is not None and working.installed:
        header = [
            f"Known-good environment written by envbisect {__version__} for {target.short}",
            f"{label} {working.version}: {working.outcome.describe()} with `{result.repro}`",
        ]
        lock, pl = write_lockfiles(
            run_dir, working.installed, session, header=header, allow_sdist=allow_sdist
        )
        result = replace(result, lock_path=str(lock), pylock_path=str(pl))
    return write_report(result, run_dir)


def write_report(result: R, run_dir: Path) -> R:
    """``run_dir``/report.md, written now; the result with its path."""
    report = run_dir / "report.md"
    result = replace(result, report_path=str(report))
    report.write_text(report_markdown(result, when=datetime.now(timezone.utc)), encoding="utf-8")
    return result


def write_lockfiles(
    folder: Path,
    installed: tuple[InstalledDist, ...],
    session: Session,
    *,
    header: list[str],
    name: str = "",
    target: Target | None = None,
    allow_sdist: bool = False,
    public: PublicSources | None = None,
    again: str = "",
    as_listed: str = "",
) -> tuple[Path, Path]:
    """A hash-pinned requirements file and a PEP 751 lock of one environment, both saying
    where their files come from (the session's indexes and --find-links folders), so that
    ``uv pip install --require-hashes -r``, ``pip install --require-hashes -r`` and
    ``uv pip sync`` install them on another machine. ``name`` makes ``NAME.txt`` and
    ``pylock.NAME.toml`` (uv takes only ``pylock.<name>.toml`` with no dots in the name);
    without it, ``requirements.txt`` and ``pylock.toml``.

    ``public``: the lock is for a committed table, so it names these indexes (the matrix
    file's) and no folder of this machine: each file taken from a folder is named by its twin
    on a public index, checked by hash, or said to be unchecked or not portable
    (modes/portable.py); ``again`` is the command that writes it again. ``as_listed``: why
    a table's cell was built with overrides (it is installed as listed, as an override's)."""
    target = target or session.target
    indexes = session.indexes()
    entries = lock_entries(installed, target, session.client, allow_sdist=allow_sdist)
    req, pl = _lock_paths(session.opts.results, folder, name)
    notes: list[str] = []
    pylock_ok = True
    if public is not None:
        found = portable_entries(entries, public)
        entries, indexes = list(found.entries), public_config(public.config)
        pylock_ok = found.pylock_portable
        notes += _portability_notes(found, again)
    strategy = _index_strategy(entries, indexes)
    # Built with --override: the lock holds versions some of its packages do not allow, so
    # it is installed as listed (every package is in it, each hash-pinned), not resolved.
    listed = bool(session.opts.planning.overrides or as_listed)
    if listed:
        strategy += " --no-deps"
        why = (
            as_listed or "built with overrides (" + ", ".join(session.opts.planning.overrides) + ")"
        )
        notes.append(
            f"{why}: install it as listed, --no-deps (pip and uv would refuse the versions "
            "its packages do not allow)"
        )
    major, minor = target.version[0], target.version[1]
    locked = pylock(
        entries,
        requires_python=f"=={major}.{minor}.*",
        environment=_environment_marker(target),
        when=datetime.now(timezone.utc),
        notes=notes,
    )
    install = (
        f"Install: uv pip install{strategy} --require-hashes -r {req.name}  "
        f"(or pip install{' --no-deps' if listed else ''} "
        f"--require-hashes -r {req.name}, or {_sync_line(locked, pl, pylock_ok=pylock_ok)})"
    )
    req.write_text(
        requirements_lock(entries, indexes=indexes, header=[*header, *notes, install]),
        encoding="utf-8",
    )
    if not _same_but_date(pl, locked.text):  # a republish leaves an unchanged lock (and date)
        pl.write_text(locked.text, encoding="utf-8")
    return req, pl


def _lock_paths(results: Path, folder: Path, name: str) -> tuple[Path, Path]:
    """The requirements file and the pylock of ``name`` in ``folder`` (the unnamed pair
    without it), each checked to stay inside --results."""
    stem = name.replace(".", "_")
    req = inside(results, folder / (f"{name}.txt" if name else "requirements.txt"))
    pl = inside(results, folder / (f"pylock.{stem}.toml" if name else "pylock.toml"))
    return req, pl


def _portability_notes(found: Portable, again: str) -> list[str]:
    """The lines a committed lock carries for the files no public index vouches for, and
    the command that checks them again where it can."""
    notes = [f"unchecked: {line}" for line in found.unchecked]
    notes += [f"not portable: {line}" for line in found.not_portable]
    if notes and again:
        notes.append(f"to check it again where that index can be read: {again}")
    return notes


def _index_strategy(entries: list[LockEntry], indexes: IndexConfig) -> str:
    """The install flag the lock's indexes need: none when its files come from one."""
    named = (indexes.index_url, *indexes.extra_index_urls, *filter(None, [indexes.torch_index]))
    used = {f.index for e in entries for f in e.files} & {mask_url(u) for u in named}
    # uv's first-index rule would ask a second index (PyTorch's, which also serves numpy and
    # others at a few versions) for every package it holds: the best match across indexes,
    # pip's rule, finds each pinned file wherever it is (its hash decides).
    return " --index-strategy unsafe-best-match" if len(used) > 1 else ""


def _environment_marker(target: Target) -> str:
    """The pylock's ``environment``: the target's Python minor, platform and machine."""
    major, minor = target.version[0], target.version[1]
    markers = target.marker_environment()
    return (
        f"python_version == '{major}.{minor}' and "
        f"sys_platform == '{markers.get('sys_platform', '')}' and "
        f"platform_machine == '{markers.get('platform_machine', '')}'"
    )


def _sync_line(locked: Pylocked, pl: Path, *, pylock_ok: bool) -> str:
    """How the requirements file's header says to install from the pylock instead."""
    if locked.left_out:
        return f"uv pip install -r {pl.name}, which leaves out {', '.join(locked.left_out)}"
    if pylock_ok:
        return f"uv pip sync {pl.name}"
    return f"{pl.name} is not portable: see above"


def _same_but_date(path: Path, text: str) -> bool:
    """Whether ``path`` holds ``text`` but for the ``generated = ...`` line."""
    try:
        old = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    return _undated(old) == _undated(text)


def _undated(text: str) -> list[str]:
    return [line for line in text.splitlines() if not line.startswith("generated = ")]


def inside(results: Path, path: Path) -> Path:
    """``path`` if it stays inside ``results`` (after ``..`` and symbolic links), else a
    ``UsageError``: nothing envbisect writes may land outside --results."""
    root = results.resolve()
    full = (root / path).resolve() if not path.is_absolute() else path.resolve()
    if full != root and root not in full.parents:
        raise UsageError(
            f"refusing to write {path}: it is outside --results {results}",
            hint="names that become folders (packages, matrices) must be plain names",
            ref="outside-results",
        )
    return path


def _twinned(name: str, version: str, pf: ProjectFiles) -> bool:
    """A torch package at a version without a local label, with a labelled build of the
    same version among its files (PyPI's torch 2.13.0 beside a folder's 2.13.0+cpu)."""
    if canonicalize_name(name) not in TORCH_PACKAGES:
        return False
    try:
        v = Version(version)
    except InvalidVersion:
        return False
    return not v.local and any(o.local and o.public == v.public for o in pf.versions())


def lock_entries(
    installed: tuple[InstalledDist, ...],
    target: Target,
    client: IndexClient,
    *,
    allow_sdist: bool,
) -> list[LockEntry]:
    """For each installed distribution, the files of that version usable on the target."""
    supported = frozenset(target.supported_tags())
    with contextlib.suppress(EnvbisectError):  # one at a time below, each failure its own
        client.project_files_many(d.name for d in installed)

    def one(dist: InstalledDist) -> LockEntry:
        name, version = dist.name, dist.version
        try:
            pf = client.project_files(name)
            # Only this version's rows of a page the run already read: nothing parsed again.
            found = client.version_files(name, version)
        except EnvbisectError:
            return LockEntry(name=name, version=version, index=None, files=())
        files = []
        for f in found:
            if f.yanked:
                continue
            if f.is_wheel and not target.wheel_compatible(f.filename, supported):
                continue
            if not f.is_wheel and not allow_sdist:
                continue
            if not f.hash("sha256"):
                digest = local_sha256(f.url)
                if digest:
                    f = replace(f, hashes=(("sha256", digest),))
            files.append(f)
        index = pf.source if pf.source.startswith(("http://", "https://")) else None
        return LockEntry(
            name=name,
            version=version,
            index=index,
            files=tuple(files),
            exact=_twinned(name, version, pf),
        )

    # read_installed checked these already; a store written by an older envbisect did not.
    return [one(d) for d in installed if is_project_name(d.name) and is_version(d.version)]
