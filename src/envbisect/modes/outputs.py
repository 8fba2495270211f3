"""What a run leaves in ``results/<run-id>/``: report.md, and the known-good environment's
requirements.txt (hash-pinned) and pylock.toml. The text comes from ``core.report``; this
module finds the files of each installed version on the index and writes them."""

from __future__ import annotations

import contextlib
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

from envbisect import __version__
from envbisect.core.names import is_project_name, is_version
from envbisect.core.report import LockEntry, RunResult, pylock, report_markdown, requirements_lock
from envbisect.core.target import Target
from envbisect.errors import EnvbisectError, UsageError
from envbisect.index.client import IndexClient, local_sha256
from envbisect.model import InstalledDist
from envbisect.modes.session import Session


def write_outputs(
    result: RunResult, session: Session, *, label: str, allow_sdist: bool = False
) -> None:
    """report.md always; the working environment's lockfiles when the search found one."""
    target = session.target
    run_dir = inside(session.opts.results, session.opts.results / result.run_id)
    run_dir.mkdir(parents=True, exist_ok=True)
    working = None
    if result.status != "no-answer":
        working = result.row(
            result.last_old if result.direction == "regression" else result.first_new
        )
    if working is not None and working.installed:
        header = [
            f"Known-good environment written by envbisect {__version__} for {target.short}",
            f"{label} {working.version}: {working.outcome.describe()} with `{result.repro}`",
        ]
        lock, pl = write_lockfiles(run_dir, working.installed, session, header=header,
                                   allow_sdist=allow_sdist)  # fmt: skip
        result.lock_path, result.pylock_path = str(lock), str(pl)
    report = run_dir / "report.md"
    result.report_path = str(report)
    report.write_text(report_markdown(result), encoding="utf-8")


def write_lockfiles(
    folder: Path,
    installed: tuple[InstalledDist, ...],
    session: Session,
    *,
    header: list[str],
    name: str = "",
    target: Target | None = None,
    allow_sdist: bool = False,
) -> tuple[Path, Path]:
    """A hash-pinned requirements file and a PEP 751 lock of one environment, both saying
    where their files come from (the session's indexes and --find-links folders), so that
    ``uv pip install --require-hashes -r``, ``pip install --require-hashes -r`` and
    ``uv pip sync`` install them on another machine. ``name`` makes ``NAME.txt`` and
    ``pylock.NAME.toml`` (uv takes only ``pylock.<name>.toml`` with no dots in the name);
    without it, ``requirements.txt`` and ``pylock.toml``."""
    target = target or session.target
    indexes = session.opts.indexes
    entries = lock_entries(installed, target, session.client, allow_sdist=allow_sdist)
    stem = name.replace(".", "_")
    req = inside(session.opts.results, folder / (f"{name}.txt" if name else "requirements.txt"))
    pl = inside(session.opts.results, folder / (f"pylock.{stem}.toml" if name else "pylock.toml"))
    req.write_text(
        requirements_lock(entries, indexes=indexes, header=[
            *header,
            f"Install: uv pip install --require-hashes -r {req.name}  "
            f"(or pip install --require-hashes -r {req.name}, or uv pip sync {pl.name})",
        ]),
        encoding="utf-8",
    )  # fmt: skip
    major, minor = target.version[0], target.version[1]
    markers = target.marker_environment()
    env_marker = (
        f"python_version == '{major}.{minor}' and "
        f"sys_platform == '{markers.get('sys_platform', '')}' and "
        f"platform_machine == '{markers.get('platform_machine', '')}'"
    )
    pl.write_text(
        pylock(entries, requires_python=f"=={major}.{minor}.*", environment=env_marker,
               when=datetime.now(timezone.utc)),
        encoding="utf-8",
    )  # fmt: skip
    return req, pl


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
        return LockEntry(name=name, version=version, index=index, files=tuple(files))

    # read_installed checked these already; a store written by an older envbisect did not.
    return [one(d) for d in installed if is_project_name(d.name) and is_version(d.version)]
