"""PEP 723 inline script metadata: a repro file that says what it needs.

Who does what: ``read_script_metadata`` finds the ``# /// script`` block of a Python file's
text and reads its ``dependencies`` and ``requires-python``; the CLI adds the dependencies to
every environment as ``--with`` requirements (so the search moves them like any other) and
asks uv for an interpreter the ``requires-python`` allows when ``--python`` is not given.
Pure: text in, metadata out.

The block is found with the reference regular expression of PEP 723 (as in the packaging
guide's specification). As PEP 723 asks of tools, two ``script`` blocks are an error; so is a
``# /// script`` line that no ``# ///`` line closes, which the regular expression alone would
silently pass over. Every error is a ``UsageError`` (ref ``script-metadata``) naming the file's
line and carrying a hint.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet

from envbisect.errors import UsageError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = ["ScriptMetadata", "read_script_metadata"]

# PEP 723's reference expression.
REGEX = r"(?m)^# /// (?P<type>[a-zA-Z0-9-]+)$\s(?P<content>(^#(| .*)$\s)+)^# ///$"
_OPEN = re.compile(r"^# /// script\s*$")
HINT = (
    "inline script metadata is TOML between a '# /// script' line and a '# ///' line, each "
    "line in between starting with '#' (PEP 723), e.g. # dependencies = [\"numpy<2\"]"
)


@dataclass(frozen=True, slots=True, kw_only=True)
class ScriptMetadata:
    """What a script's ``# /// script`` block asks for; ``line``: where the block starts."""

    dependencies: tuple[str, ...]
    requires_python: str | None
    line: int
    # [tool.uv] exclude-newer: the cut-off ``uv run --script`` resolves it with (as written).
    exclude_newer: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "dependencies": list(self.dependencies),
            "requires_python": self.requires_python,
            "line": self.line,
        }


def read_script_metadata(text: str, *, origin: str) -> ScriptMetadata | None:
    """The ``script`` block of ``text`` (None when it has none); ``origin`` names the file."""
    blocks = [m for m in re.finditer(REGEX, text) if m["type"] == "script"]
    opened = [n for n, line in enumerate(text.splitlines(), 1) if _OPEN.match(line)]
    if len(blocks) > 1:
        second = _line_at(text, blocks[1].start())
        raise _error(origin, second, "a second '# /// script' block (PEP 723 allows one)")
    if not blocks:
        if opened:
            raise _error(origin, opened[0], "'# /// script' is never closed by a '# ///' line")
        return None
    block = blocks[0]
    first = _line_at(text, block.start())
    if len(opened) > 1:
        raise _error(origin, opened[1], "a second '# /// script' block (PEP 723 allows one)")
    content = "".join(
        line[2:] if line.startswith("# ") else line[1:]
        for line in block["content"].splitlines(keepends=True)
    )
    try:
        data: dict[str, Any] = tomllib.loads(content)
    except tomllib.TOMLDecodeError as e:
        found = re.search(r"at line (\d+)", str(e))
        offset = getattr(e, "lineno", None) or (int(found.group(1)) if found else 1)
        reason = str(e).split(" (at ", 1)[0]
        message = f"invalid TOML in the script metadata: {reason}"
        raise _error(origin, first + offset, message) from e
    return ScriptMetadata(
        dependencies=_dependencies(data, text, origin, first),
        requires_python=_requires_python(data, text, origin, first),
        line=first,
        exclude_newer=_tool_uv_exclude_newer(data, text, origin, first),
    )


def _tool_uv_exclude_newer(data: dict[str, Any], text: str, origin: str, first: int) -> str | None:
    tool = data.get("tool")
    uv = tool.get("uv") if isinstance(tool, dict) else None
    value = uv.get("exclude-newer") if isinstance(uv, dict) else None
    if value is None:
        return None
    if not isinstance(value, str):
        where = _key_line(text, "exclude-newer", first)
        raise _error(origin, where, "[tool.uv] 'exclude-newer' is not a string")
    return value.strip()


def _dependencies(data: dict[str, Any], text: str, origin: str, first: int) -> tuple[str, ...]:
    deps = data.get("dependencies", [])
    where = _key_line(text, "dependencies", first)
    if not isinstance(deps, list) or not all(isinstance(d, str) for d in deps):
        raise _error(origin, where, "'dependencies' is not a list of strings")
    for dep in deps:
        try:
            Requirement(dep)
        except InvalidRequirement as e:
            reason = (str(e).splitlines() or ["invalid"])[0]
            raise _error(
                origin, _key_line(text, dep, first), f"invalid requirement {dep!r} ({reason})"
            ) from e
    return tuple(d.strip() for d in deps)


def _requires_python(data: dict[str, Any], text: str, origin: str, first: int) -> str | None:
    wanted = data.get("requires-python")
    if wanted is None:
        return None
    where = _key_line(text, "requires-python", first)
    if not isinstance(wanted, str):
        raise _error(origin, where, "'requires-python' is not a string")
    try:
        SpecifierSet(wanted)
    except InvalidSpecifier as e:
        raise _error(origin, where, f"'requires-python' {wanted!r} is not a specifier") from e
    return wanted.strip()


def _line_at(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _key_line(text: str, needle: str, first: int) -> int:
    """The first line of the block, from ``first``, that holds ``needle``."""
    for number, line in enumerate(text.splitlines()[first - 1 :], first):
        if needle in line:
            return number
    return first


def _error(origin: str, line: int, message: str) -> UsageError:
    return UsageError(f"{origin}:{line}: {message}", hint=HINT, ref="script-metadata")
