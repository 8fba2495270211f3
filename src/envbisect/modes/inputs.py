"""What a command's inputs say before any mode runs: the environment reports among its pin
sources (read with the index at hand where a version needs it), a CPU build of the report's
torch in a folder of wheels, and a ``--repro`` script's PEP 723 block.

Who does what: the command line asks (cli/implied.py offers what these say as option values,
each below what was typed); this module reads the files and opens the index client. A source
that is no report, or cannot be read, is left to the mode that reads it again and says what is
wrong with it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from envbisect.errors import EnvbisectError, UsageError

if TYPE_CHECKING:
    from envbisect.core.envreport.facts import ReportFacts
    from envbisect.core.envreport.report import EnvReport
    from envbisect.core.pins.scriptmeta import ScriptMetadata
    from envbisect.model import IndexConfig


def report_facts(
    sources: Sequence[str],
    cwd: Path,
    *,
    index: Callable[[], IndexConfig | None] = lambda: None,
    cache_dir: Path | None = None,
    offline: bool = False,
) -> list[ReportFacts]:
    """The environment reports among ``sources``, in their order; a report whose dev versions
    map to releases is read again with the index ``index()`` names at hand (asked only then),
    so that what is said names each release (the mode reads it the same way, from the same
    cache)."""
    from envbisect.env.pinsource import STDIN, load_pins, resolve

    out = []
    for spec in sources:
        if spec != STDIN and not resolve(cwd, spec).is_file():
            continue  # a folder, installed:PYTHON, name==version: no report
        try:
            facts = load_pins(spec, cwd=cwd).report
            if facts is not None and any(m.used and "<" in m.used for m in facts.mapped):
                facts = _with_releases(spec, cwd, index(), cache_dir, offline) or facts
        except UsageError:
            continue  # the mode reads it again and says what is wrong with it
        if facts is not None:
            out.append(facts)
    return out


def _with_releases(
    spec: str, cwd: Path, index: IndexConfig | None, cache_dir: Path | None, offline: bool
) -> ReportFacts | None:
    from envbisect.diskcache import default_cache_dir
    from envbisect.env.pinsource import load_pins
    from envbisect.index.client import IndexClient
    from envbisect.modes.planning import index_releases

    if index is None:
        return None
    try:
        with IndexClient(index, cache_dir=cache_dir or default_cache_dir(), offline=offline) as c:
            return load_pins(spec, cwd=cwd, releases=index_releases(c)).report
    except EnvbisectError:
        return None  # the index is the mode's to reach, and its errors the mode's to say


def cpu_build_at_hand(report: EnvReport, folders: Sequence[str]) -> str | None:
    """The first of ``folders`` (wheel folders, as the settings name them) that holds a
    ``+cpu`` wheel of the report's torch version (None: none, or the report names no torch
    version)."""
    from packaging.version import InvalidVersion, Version

    from envbisect.core.candidates import file_version

    row = next((r for r in report.rows if r.name.lower() == "torch" and r.version), None)
    if row is None:
        return None
    try:
        wanted = Version(row.version).public
    except InvalidVersion:
        return None
    for url in folders:
        folder = Path(url.removeprefix("file://")).expanduser()
        if not folder.is_dir():
            continue
        for wheel in folder.glob("torch-*.whl"):
            v = file_version(wheel.name)
            if v is not None and v.public == wanted and v.local == "cpu":
                return url
    return None


def script_metadata(name: str, cwd: Path) -> ScriptMetadata | None:
    """A ``--repro`` file's ``# /// script`` block (None: not a Python file, none, or no such
    file: the repro says so)."""
    if not name.endswith(".py"):
        return None
    from envbisect.core.pins.scriptmeta import read_script_metadata
    from envbisect.env.pinsource import read_text, resolve

    path = resolve(cwd, name)
    if not path.is_file():
        return None
    return read_script_metadata(read_text(path, name), origin=name)
