"""Where pin sources meet the machine: files read as text, interpreters asked what they have.

Who does what: ``load_pins`` decides what kind of source the user named (a folder, a file, an
installed interpreter, a released distribution) and which parser of ``core.pins`` reads it;
the rest of this module does the IO that needs and hands back plain data, parsing nothing.
``read_text`` reads a file as UTF-8 (a BOM is dropped); ``file_reader`` is the ``read`` callable
that follows a requirements file's includes on disk; ``installed_distributions`` runs the
interpreter that ``installed:PYTHON`` names, isolated (``-I``: no ``PYTHON*`` variables, no user
site, not the current folder), and returns what ``importlib.metadata`` finds there.
``read_source`` reads a file, or standard input for ``-`` (once: a second reader gets the same
text). Every error is a ``UsageError`` with ref ``pins-unreadable`` or ``pins-no-interpreter``
(``url-not-read``: a URL where a file is read; envbisect fetches nothing but the indexes), its
hint naming what the user typed (``named``: ``--pins``, ``GOOD``, ``--lock``...).

Which parser reads a file: its name first (``pylock*.toml``, ``*.toml``, ``METADATA``); a
Markdown file (``*.md``) or standard input is an environment report (core/envreport/read.py,
mapped by core/pins/from_report.py; ``releases`` says which versions the index has, for the dev
versions it maps); a ``*.py`` file, its PEP 723 ``# /// script`` block; any other file is an
environment report when it is one (pip freeze output included: only ``name==V`` rows and pip's
comments), else a requirements file.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Collection
from dataclasses import replace
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from envbisect.core.envreport.read import is_freeze, read_report
from envbisect.core.envreport.registry import FREEZE, commands_in_words
from envbisect.core.envreport.report import EnvReport
from envbisect.core.pins.from_report import Releases, report_pins
from envbisect.core.pins.reqfile import Reader
from envbisect.core.pins.scriptmeta import read_script_metadata
from envbisect.core.pins.sources import (
    FetchMetadata,
    Pin,
    PinSet,
    forms_hint,
    parse_metadata,
    parse_pylock,
    parse_pyproject,
    parse_requirements,
    select_extras,
)
from envbisect.errors import UsageError
from envbisect.redact import mask_text

# Run with the user's interpreter (``python -I -c``); prints [[name, version], ...] in sys.path
# order, so the first row of a name is the distribution that import finds.
_INSTALLED_SCRIPT = r"""
import json
try:
    from importlib import metadata
except ImportError:
    import importlib_metadata as metadata
rows = []
for dist in metadata.distributions():
    name = dist.metadata["Name"]
    if name:
        rows.append([name, dist.version])
print(json.dumps(rows))
"""


def installed_distributions(python: str, *, cwd: Path) -> list[tuple[str, str]]:
    """(name, version) of every distribution ``python`` sees, in its ``sys.path`` order.

    ``python`` is a name looked up on PATH, or a path (relative to ``cwd``). Names and versions
    are as the distributions give them, not validated.
    """
    hint = "name an interpreter on PATH or give its path, e.g. installed:.venv/bin/python"
    if not python:
        raise UsageError("installed: names no interpreter", hint=hint, ref="pins-no-interpreter")
    if os.sep in python or (os.altsep is not None and os.altsep in python):
        path = resolve(cwd, python)
        exe = str(path) if path.is_file() else None
    else:
        exe = shutil.which(python)
    if exe is None:
        raise UsageError(f"no interpreter {python!r}", hint=hint, ref="pins-no-interpreter")
    try:
        proc = subprocess.run(
            [exe, "-I", "-c", _INSTALLED_SCRIPT],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=cwd,
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        raise UsageError(f"cannot run {exe}: {e}", hint=hint, ref="pins-no-interpreter") from e
    try:
        if proc.returncode != 0:
            raise ValueError(f"exit {proc.returncode}")
        rows = json.loads(proc.stdout)
        if not isinstance(rows, list):
            raise ValueError("not a list")
    except ValueError as e:
        tail = (proc.stderr.strip().splitlines() or [""])[-1]
        raise UsageError(
            f"{exe} could not list its distributions ({e}){': ' + tail if tail else ''}",
            hint="installed: needs a Python 3.8 or newer that starts cleanly",
            ref="pins-no-interpreter",
        ) from e
    return [(str(row[0]), str(row[1])) if isinstance(row, list) else ("?", "?") for row in rows]


def file_reader(cwd: Path) -> Reader:
    """The ``read`` callable for ``parse_requirements``: includes are files under ``cwd``.

    It raises ``OSError`` for a file it cannot read, so that the parser names the include.
    """

    def read(location: str) -> tuple[str, str]:
        return decode(resolve(cwd, location).read_bytes(), location), location

    return read


def resolve(cwd: Path, location: str) -> Path:
    """``location`` with ``~`` expanded, relative to ``cwd`` unless absolute."""
    path = Path(location).expanduser()
    return path if path.is_absolute() else cwd / path


def read_text(path: Path, label: str) -> str:
    """The text of the file at ``path``; ``label`` names it in errors."""
    try:
        data = path.read_bytes()
    except OSError as e:
        raise UsageError(
            f"cannot read {label}: {e.strerror or e}",
            hint="check the path and its permissions",
            ref="pins-unreadable",
        ) from e
    return decode(data, label)


STDIN = "-"
REPORT_FORMS = f"the output of {commands_in_words()}"


@functools.cache
def _stdin_bytes() -> bytes:
    """Standard input, read once: ``--pins -`` and ``envbisect repro -`` may both ask."""
    try:
        return sys.stdin.buffer.read()
    except (OSError, ValueError, AttributeError) as e:
        raise UsageError(
            f"cannot read standard input: {e}",
            hint="pipe the report in (pbpaste | envbisect ...) or name a file",
            ref="pins-unreadable",
        ) from e


_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")
REPORT_URL_HINT = (
    "save the issue's text to a file and name the file, or pipe the text in and name - (stdin)"
)
FILE_URL_HINT = "download the file first (curl -LO URL) and name it"


def refuse_url(spec: str, cwd: Path, *, named: str, hint: str) -> None:
    """A usage error where the user typed a URL (``named``: what they typed it as) for a file:
    a web page is not read (and no file of that name exists)."""
    if _URL.match(spec) and not resolve(cwd, spec).exists():
        raise UsageError(
            f"{named} {spec} is a URL: envbisect reads a file, not a web page",
            hint=hint,
            ref="url-not-read",
        )


def read_source(spec: str, cwd: Path, *, named: str = "the report") -> tuple[str, str]:
    """(text, label) of a file, or of standard input for ``-``."""
    if spec == STDIN:
        return decode(_stdin_bytes(), "standard input"), "stdin"
    refuse_url(spec, cwd, named=named, hint=REPORT_URL_HINT)
    return read_text(resolve(cwd, spec), spec), spec


def decode(data: bytes, label: str) -> str:
    """``data`` as UTF-8 text, without a byte-order mark."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise UsageError(
            f"{label} is not UTF-8 text", hint="save the file as UTF-8", ref="pins-unreadable"
        ) from e


# -- load_pins: which source the user named, read ------------------------------------------


def load_pins(
    spec: str,
    *,
    cwd: Path,
    extras: Collection[str] = (),
    fetch_metadata: FetchMetadata | None = None,
    releases: Releases | None = None,
    named: str = "--pins",
) -> PinSet:
    """Read the pin source the user named (see the module docstring for the forms) as
    ``named`` (``--pins``, ``GOOD``, ``--lock``: what an error's hint names)."""
    source = mask_text(spec)
    refuse_url(spec, cwd, named=named, hint=FILE_URL_HINT)
    if spec.startswith("installed:"):
        pins = _load_installed(spec.removeprefix("installed:"), cwd=cwd)
    elif spec == STDIN:
        text, label = read_source(spec, cwd)
        pins = _report(text, label, releases)
    else:
        path = resolve(cwd, spec)
        if path.is_dir():
            pins = _load_folder(spec, path, cwd, named)
        elif path.is_file():
            pins = _load_file(spec, path, cwd, releases)
        else:
            pins, extras = _load_distribution(spec, source, fetch_metadata, extras, named)
    return select_extras(replace(pins, source=source), extras, label=source)


def _report(text: str, label: str, releases: Releases | None) -> PinSet:
    """An environment report's pins; a text with none is an error."""
    if not text.strip():
        raise UsageError(
            f"{label} is empty", hint=f"paste {REPORT_FORMS} into it", ref="pins-empty"
        )
    return report_pins(report_with_versions(text, label), origin=label, releases=releases)


def report_with_versions(text: str, label: str) -> EnvReport:
    """The environment report ``text`` (``label``: what names it in an error) holds; one that
    names no package versions is a usage error."""
    report = read_report(text)
    if report is None or not report.rows:
        raise UsageError(
            f"{label} names no package versions",
            hint=f"add the reporter's environment to it: {REPORT_FORMS}",
            ref="pins-no-versions",
        )
    return report


def _script(text: str, label: str) -> PinSet:
    meta = read_script_metadata(text, origin=label)
    if meta is None:
        raise UsageError(
            f"{label} has no '# /// script' block (PEP 723 inline script metadata)",
            hint="give it one (# /// script, # dependencies = [...], # ///) or pass "
            "its requirements with --with",
            ref="pins-no-script-metadata",
        )
    where = f"{label}:{meta.line} [script]"
    pins = tuple(Pin(requirement=Requirement(d), origin=where, text=d) for d in meta.dependencies)
    return PinSet(source=label, requirements=pins, requires_python=meta.requires_python)


def _load_folder(label: str, folder: Path, cwd: Path, named: str) -> PinSet:
    pyproject, requirements = folder / "pyproject.toml", folder / "requirements.txt"
    if pyproject.is_file():
        pyproject_label = os.path.join(label, "pyproject.toml")
        try:
            return parse_pyproject(read_text(pyproject, pyproject_label), origin=pyproject_label)
        except UsageError as e:
            # A setup.py-era project: only its requirements.txt says what it needs.
            if e.ref not in ("pins-no-project", "pins-dynamic") or not requirements.is_file():
                raise
    if requirements.is_file():
        return _load_file(os.path.join(label, "requirements.txt"), requirements, cwd)
    raise UsageError(
        f"{label} has neither a pyproject.toml with a [project] table nor a requirements.txt",
        hint=forms_hint(named),
        ref="pins-not-found",
    )


def _load_file(label: str, path: Path, cwd: Path, releases: Releases | None = None) -> PinSet:
    text = read_text(path, label)
    name = path.name
    if name == "pylock.toml" or re.fullmatch(r"pylock\.[^.]+\.toml", name):
        return parse_pylock(text, origin=label)
    if name.endswith(".toml"):
        return parse_pyproject(text, origin=label)
    if name == "METADATA" or name.endswith(".metadata"):
        return parse_metadata(text, origin=label)
    if name.lower().endswith((".md", ".markdown")):
        return _report(text, label, releases)
    if name.endswith(".py"):
        return _script(text, label)
    report = read_report(text) if text.strip() else None
    if report is not None and (report.formats != (FREEZE.name,) or is_freeze(text)):
        return report_pins(report, origin=label, releases=releases)
    return parse_requirements(text, origin=label, read=file_reader(cwd))


def _load_distribution(
    spec: str, source: str, fetch: FetchMetadata | None, extras: Collection[str], named: str
) -> tuple[PinSet, Collection[str]]:
    try:
        req: Requirement | None = Requirement(spec)
    except InvalidRequirement:
        req = None
    specs = list(req.specifier) if req is not None and not req.url and not req.marker else []
    if req is None or len(specs) != 1 or specs[0].operator != "==" or "*" in specs[0].version:
        what = "file" if named in ("--lock", "--from") else "pin source"
        where = "" if named == "--pins" else f" ({named})"
        raise UsageError(
            f"no such {what}: {source}{where}", hint=forms_hint(named), ref="pins-not-found"
        )
    version = specs[0].version
    if fetch is None:
        raise UsageError(
            f"cannot read the metadata of {req.name}=={version}: no index to ask",
            hint="point --pins at a local file, or allow envbisect to read the index",
            ref="pins-no-index",
        )
    text = fetch(req.name, version)
    pins = parse_metadata(text, origin=f"{req.name}=={version} METADATA")
    pins = replace(pins, release=f"{canonicalize_name(req.name)}=={version}")
    return pins, (*extras, *sorted(req.extras))


def _load_installed(python: str, *, cwd: Path) -> PinSet:
    pins: dict[str, Pin] = {}
    skipped: list[str] = []
    for name, version in installed_distributions(python, cwd=cwd):
        text = f"{name}=={version}"
        try:
            Version(version)
            req = Requirement(text)
        except (InvalidVersion, InvalidRequirement):
            skipped.append(f"installed:{python}: {name} {version} (not a PEP 440 version)")
            continue
        pins.setdefault(
            canonicalize_name(name), Pin(requirement=req, origin=f"installed:{python}", text=text)
        )
    found = tuple(pins[key] for key in sorted(pins))
    return PinSet(source="", requirements=found, is_lock=bool(found), skipped=tuple(skipped))
