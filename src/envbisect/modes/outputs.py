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
    target, client = session.target, session.client
    run_dir = inside(session.opts.results, session.opts.results / result.run_id)
    run_dir.mkdir(parents=True, exist_ok=True)
    working = None
    if result.status != "no-answer":
        working = result.row(
            result.last_old if result.direction == "regression" else result.first_new
        )
    if working is not None and working.installed:
        entries = lock_entries(working.installed, target, client, allow_sdist=allow_sdist)
        header = [
            f"Known-good environment written by envbisect {__version__} for {target.short}",
            f"{label} {working.version}: {working.outcome.describe()} with `{result.repro}`",
            "Install: uv pip install --require-hashes -r requirements.txt",
        ]
        lock = run_dir / "requirements.txt"
        lock.write_text(requirements_lock(entries, header=header), encoding="utf-8")
        py = f"=={target.version[0]}.{target.version[1]}.*"
        env_marker = (
            f"python_version == '{target.version[0]}.{target.version[1]}' and "
            f"sys_platform == '{target.marker_environment().get('sys_platform', '')}' and "
            f"platform_machine == '{target.marker_environment().get('platform_machine', '')}'"
        )
        pl = run_dir / "pylock.toml"
        pl.write_text(
            pylock(
                entries, requires_python=py, environment=env_marker, when=datetime.now(timezone.utc)
            ),
            encoding="utf-8",
        )
        result.lock_path, result.pylock_path = str(lock), str(pl)
    report = run_dir / "report.md"
    result.report_path = str(report)
    report.write_text(report_markdown(result), encoding="utf-8")


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
