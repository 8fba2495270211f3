"""Pin sources: what the project the user runs asks for, read into packaging requirements.

Who does what: the ``parse_*`` functions are pure (text and an origin label in, a ``PinSet``
out; ``Pin`` and ``PinSet`` are in pinset.py, re-exported here); pip's requirements format
itself is read by reqfile.py. ``env.pinsource.load_pins`` is the
IO edge: it decides what kind of source the user named, reads files and runs an interpreter for
``installed:PYTHON``, and calls the injected ``fetch_metadata`` for a released distribution
(``name==version``); it never opens a socket.

    pinsource.load_pins(spec)
    ├── a folder              its pyproject.toml with a static [project], else requirements.txt
    ├── pylock*.toml          parse_pylock        PEP 751
    ├── *.toml                parse_pyproject     PEP 621 [project]
    ├── METADATA, *.metadata  parse_metadata      core metadata (Requires-Dist, Provides-Extra)
    ├── any other file        parse_requirements  pip's format, -r/-c includes through read()
    ├── installed:PYTHON      every distribution that interpreter sees, pinned with ==
    └── name==version         parse_metadata(fetch_metadata(name, version))

Markers are evaluated against an environment passed in (``Target.marker_environment()``), never
silently against the running process; ``env=None`` means packaging's default environment.
Extras are compared normalized (PEP 685). A project's references to its own extras
(``llamafactory[torch,metrics]`` inside its optional dependencies) are kept apart as
``self_references`` and expanded when extras are selected, never treated as a dependency.
Every error is a ``UsageError`` with a stable ``pins-*`` reference, a message naming the file
(and line, where there is one) and a hint.
"""

from __future__ import annotations

import email.parser
import re
import sys
from collections.abc import Callable, Collection
from typing import Any

from packaging.markers import Marker
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from envbisect.core.envreport.registry import some_in_words
from envbisect.core.pins.pinset import Pin, PinSet, select_extras
from envbisect.core.pins.reqfile import Collected, Reader, requirement_lines
from envbisect.errors import UsageError
from envbisect.redact import mask_text

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = [
    "FORMS_HINT",
    "FetchMetadata",
    "Pin",
    "PinSet",
    "Reader",
    "forms_hint",
    "parse_metadata",
    "parse_pylock",
    "parse_pyproject",
    "parse_requirements",
    "select_extras",
]

FetchMetadata = Callable[[str, str], str]

FORMS = (
    "a project folder, a pyproject.toml, a requirements file, a pylock.toml, "
    "installed:PYTHON, a released distribution as name==version, an environment report "
    f"({some_in_words(4)}; a Markdown file; - for stdin), or a PEP 723 script"
)
FORMS_HINT = f"--pins takes {FORMS}"


def forms_hint(named: str) -> str:
    """What the pin source the user typed as ``named`` (``--pins``, ``GOOD``, ``--lock``...)
    may be: the hint of an error about it, naming what was typed."""
    if named == "--lock":
        return "--lock takes a lockfile: a requirements file with == pins, or a pylock.toml"
    if named == "--from":
        return "--from takes a lockfile, a pylock.toml or installed:PYTHON"
    return f"{named} takes {FORMS}"


_PYPI_SIMPLE = ("https://pypi.org/simple", "https://pypi.org/simple/")


# -- pyproject.toml (PEP 621) ------------------------------------------------------------------


def parse_pyproject(text: str, *, origin: str, extras: Collection[str] = ()) -> PinSet:
    """``[project] dependencies`` and ``[project.optional-dependencies]``.

    Optional pins carry ``extra=<group>`` (normalized). ``extras`` selects groups; an unknown
    one is an error.
    """
    origin = mask_text(origin)
    project = _project_table(text, origin)
    name = project.get("name")
    self_name = canonicalize_name(name) if isinstance(name, str) else None
    deps = project.get("dependencies", [])
    listed = _pyproject_list(text, origin, deps, table="project.dependencies", extra=None)
    groups = project.get("optional-dependencies", {})
    if not isinstance(groups, dict):
        raise UsageError(
            f"{origin} [project.optional-dependencies] is not a table",
            hint="write one list of requirements per extra, e.g. metrics = ['nltk']",
            ref="pins-syntax",
        )
    for group, entries in groups.items():
        table, extra = f"project.optional-dependencies.{group}", canonicalize_name(group)
        listed += _pyproject_list(text, origin, entries, table=table, extra=extra)
    own = [p for p in listed if p.name == self_name]  # its own extras: self_references
    pins = [p for p in listed if p.name != self_name]
    requires_python = project.get("requires-python")
    pinset = PinSet(
        source=mask_text(origin),
        requirements=tuple(pins),
        is_lock=_all_exact(pins),
        project=self_name,
        provides_extras=tuple(canonicalize_name(g) for g in groups),
        self_references=tuple(own),
        requires_python=requires_python if isinstance(requires_python, str) else None,
    )
    return select_extras(pinset, extras, label=origin)


def _project_table(text: str, origin: str) -> dict[str, Any]:
    """The ``[project]`` table, whose dependencies are static; else a ``UsageError``."""
    project = _load_toml(text, origin).get("project")
    if not isinstance(project, dict):
        raise UsageError(
            f"{origin} has no [project] table",
            hint="is this a setup.py-era project? point --pins at its requirements.txt",
            ref="pins-no-project",
        )
    dynamic = project.get("dynamic", [])
    if isinstance(dynamic, list) and "dependencies" in dynamic:
        raise UsageError(
            f"{origin} declares its dependencies dynamic (computed when it is built)",
            hint="point --pins at the requirements file its build reads, "
            "or at a released distribution as name==version",
            ref="pins-dynamic",
        )
    return project


def _pyproject_list(
    text: str, origin: str, entries: object, *, table: str, extra: str | None
) -> list[Pin]:
    """The pins of one list of requirements in ``table`` (gated on ``extra``)."""
    where = f"{origin} [{table}]"
    if not isinstance(entries, list) or not all(isinstance(e, str) for e in entries):
        raise UsageError(
            f"{where} is not a list of strings",
            hint='write each requirement as a quoted string, e.g. ["torch>=2.4"]',
            ref="pins-syntax",
        )
    return [
        Pin(
            requirement=_requirement(entry, where=_line_of(text, entry, origin, table)),
            origin=where,
            extra=extra,
            text=entry.strip(),
        )
        for entry in entries
    ]


# -- requirements files (pip's format, read by reqfile.py) -------------------------------------


def parse_requirements(text: str, *, origin: str, read: Reader | None = None) -> PinSet:
    """pip's requirements format; pins are labelled ``origin:line``.

    ``read`` maps the location of an included file (``-r``/``-c``, joined onto the directory
    of the including file's location; the top file's location is ``origin``) to its text and
    label; it may raise ``OSError``. Without ``read``, an include is an error.
    """
    found = Collected()
    reqs: list[Pin] = []
    constraints: list[Pin] = []
    for line in requirement_lines(text, origin=origin, read=read, found=found):
        req = _requirement(line.text, where=line.where)
        pin = Pin(requirement=req, origin=line.where, hashes=line.hashes, text=line.text)
        (constraints if line.constraint else reqs).append(pin)
    return PinSet(
        source=mask_text(origin),
        requirements=tuple(reqs),
        constraints=tuple(constraints),
        index_url=found.index_url,
        extra_index_urls=tuple(dict.fromkeys(found.extra_index_urls)),
        find_links=tuple(dict.fromkeys(found.find_links)),
        is_lock=_all_exact(reqs),
        skipped=tuple(found.skipped),
    )


# -- pylock.toml (PEP 751) ---------------------------------------------------------------------


def parse_pylock(text: str, *, origin: str) -> PinSet:
    """``[[packages]]`` as ``name==version`` pins with their markers and file hashes, read and
    validated by ``packaging.pylock`` (a lock an installer would refuse is refused here)."""
    from packaging.pylock import Pylock, PylockValidationError

    origin = mask_text(origin)
    data = _load_toml(text, origin)
    version = data.get("lock-version")
    if not isinstance(version, str) or version.split(".")[0] != "1":
        raise UsageError(
            f"{origin}: unsupported lock-version {version!r}",
            hint="envbisect reads PEP 751 lock files (lock-version 1.x)",
            ref="pins-lock-version",
        )
    try:
        lock = Pylock.from_dict(data)
    except PylockValidationError as e:
        raise _syntax(
            origin,
            f"not a valid PEP 751 lock: {_one_line(str(e))}",
            "PEP 751 (packaging.pylock) says what each field must hold; a pylock that an "
            "older envbisect wrote without a file's URL: write it again",
        ) from e
    pins: list[Pin] = []
    skipped: list[str] = []
    indexes: list[str] = []
    for number, package in enumerate(lock.packages, 1):
        where = f"{origin} [[packages]] #{number} {package.name}"
        if package.version is None:
            skipped.append(f"{where}: no version (a directory, archive or VCS package)")
            continue
        text_req = f"{package.name}=={package.version}"
        if package.marker is not None:
            text_req += f"; {package.marker}"
        req = _requirement(text_req, where=where)
        if package.index and package.index not in _PYPI_SIMPLE:
            indexes.append(package.index)
        files = [package.sdist, package.archive, *(package.wheels or ())]
        hashes = [f"{a}:{v}" for f in files if f is not None for a, v in f.hashes.items()]
        pins.append(
            Pin(requirement=req, origin=where, hashes=tuple(dict.fromkeys(hashes)), text=text_req)
        )
    return PinSet(
        source=mask_text(origin),
        requirements=tuple(pins),
        extra_index_urls=tuple(dict.fromkeys(indexes)),
        is_lock=_all_exact(pins),
        skipped=tuple(skipped),
        provides_extras=tuple(lock.extras or ()),
        requires_python=str(lock.requires_python) if lock.requires_python else None,
    )


# -- core metadata -----------------------------------------------------------------------------


def parse_metadata(text: str, *, origin: str) -> PinSet:
    """``Requires-Dist`` (``extra == "x"`` markers set ``Pin.extra``) and ``Provides-Extra``."""
    origin = mask_text(origin)
    message = email.parser.HeaderParser().parsestr(text)
    if message.get("Metadata-Version") is None and message.get("Name") is None:
        raise UsageError(
            f"{origin} is not core metadata (no Metadata-Version or Name header)",
            hint="expected a METADATA file as a wheel or PEP 658 serves it",
            ref="pins-syntax",
        )
    name = message.get("Name")
    project = canonicalize_name(" ".join(str(name).split())) if name else None
    declared = message.get_all("Provides-Extra") or []
    provides: list[str] = [canonicalize_name(" ".join(str(v).split())) for v in declared]
    pins: list[Pin] = []
    self_refs: list[Pin] = []
    where = f"{origin} Requires-Dist"
    for value in message.get_all("Requires-Dist") or []:
        entry = " ".join(str(value).split())
        req = _requirement(entry, where=where)
        gates = _marker_extras(req.marker) if req.marker is not None else []
        provides.extend(gates)
        pin = Pin(requirement=req, origin=where, extra=gates[0] if gates else None, text=entry)
        if project is not None and canonicalize_name(req.name) == project:
            self_refs.append(pin)
        else:
            pins.append(pin)
    return PinSet(
        source=mask_text(origin),
        requirements=tuple(pins),
        is_lock=_all_exact(pins),
        project=project,
        provides_extras=tuple(dict.fromkeys(provides)),
        self_references=tuple(self_refs),
        requires_python=_str_or_none(message.get("Requires-Python")),
    )


# -- helpers -----------------------------------------------------------------------------------

_EXTRA_CLAUSE = re.compile(
    r"""\bextra\s*==\s*(['"])(?P<a>.*?)\1|(['"])(?P<b>.*?)\3\s*==\s*extra\b"""
)


def _requirement(text: str, *, where: str) -> Requirement:
    try:
        return Requirement(text)
    except InvalidRequirement as e:
        reason = (str(e).splitlines() or ["invalid"])[0]
        raise UsageError(
            f"{where}: invalid requirement {text!r}",
            hint=f"{reason}; write PEP 508 requirements, e.g. 'transformers>=4.41,<5'",
            ref="pins-syntax",
        ) from e


def _syntax(where: str, message: str, hint: str) -> UsageError:
    return UsageError(f"{where}: {message}", hint=hint, ref="pins-syntax")


def _load_toml(text: str, origin: str) -> dict[str, Any]:
    try:
        data: dict[str, Any] = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        found = re.search(r"at line (\d+)", str(e))
        line = getattr(e, "lineno", None) or (int(found.group(1)) if found else None)
        reason = str(e).split(" (at ", 1)[0]
        raise UsageError(
            f"{origin}:{line}: invalid TOML: {reason}" if line else f"{origin}: invalid TOML",
            hint="fix the TOML syntax: one quoted string per requirement, commas between them",
            ref="pins-syntax",
        ) from e
    return data


def _line_of(text: str, entry: str, origin: str, table: str) -> str:
    """``origin:line [table]`` for the first line holding ``entry`` as a TOML string."""
    for number, line in enumerate(text.splitlines(), 1):
        if f'"{entry}"' in line or f"'{entry}'" in line:
            return f"{origin}:{number} [{table}]"
    return f"{origin} [{table}]"


def _marker_extras(marker: Marker) -> list[str]:
    found = (m.group("a") or m.group("b") for m in _EXTRA_CLAUSE.finditer(str(marker)))
    return list(dict.fromkeys(canonicalize_name(e) for e in found))


def _all_exact(pins: Collection[Pin]) -> bool:
    return bool(pins) and all(pin.exact_version is not None for pin in pins)


def _str_or_none(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _one_line(text: str) -> str:
    """packaging's message on one line: a marker's or a specifier's error draws the text and
    a caret under it on the next lines ("Expected ...\\n    bad ~=\\n    ^ in 'marker'")."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if len(lines) < 2:
        return text.strip()
    where = lines[-1].lstrip("^ ").strip()
    quoted = lines[1] if len(lines) > 2 else ""
    return f"{lines[0]} ({where}{': ' + repr(quoted) if quoted else ''})"
