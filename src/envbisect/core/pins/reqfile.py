"""pip's requirements-file format: logical lines, options, includes and hashes.

Who does what: this module reads the format and nothing more. ``requirement_lines`` joins
continued lines, drops comments, splits each line into its requirement text and its options,
follows ``-r``/``-c`` includes through the ``read`` callable it is given (it never opens a file
itself), refuses include loops and remote includes, and sets aside lines that name no index
requirement (editables, local paths, bare URLs). Turning the requirement text into packaging
requirements and a ``PinSet`` is ``parse_requirements``'s job, in pins.py. Options that change
how pip installs but not what the project asks for (``--pre``, ``--only-binary`` ...) are
accepted and ignored. Every error is a ``UsageError`` naming ``file:line``, with ref
``pins-syntax``, ``pins-include`` or ``pins-include-loop``.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from envbisect.errors import UsageError
from envbisect.redact import mask_text

Reader = Callable[[str], tuple[str, str]]

_MAX_INCLUDE_DEPTH = 32

# option -> (meaning, takes a value); as pip accepts them in requirements files.
_OPTIONS: dict[str, tuple[str, bool]] = {
    "-r": ("requirement", True),
    "--requirement": ("requirement", True),
    "-c": ("constraint", True),
    "--constraint": ("constraint", True),
    "-e": ("editable", True),
    "--editable": ("editable", True),
    "-i": ("index-url", True),
    "--index-url": ("index-url", True),
    "--extra-index-url": ("extra-index-url", True),
    "-f": ("find-links", True),
    "--find-links": ("find-links", True),
    "--hash": ("hash", True),
    # Accepted and ignored: they change how pip installs, not what the project asks for.
    "--pre": ("ignored", False),
    "--prefer-binary": ("ignored", False),
    "--no-index": ("ignored", False),
    "--require-hashes": ("ignored", False),
    "--only-binary": ("ignored", True),
    "--no-binary": ("ignored", True),
    "--trusted-host": ("ignored", True),
    "--use-feature": ("ignored", True),
    "-C": ("ignored", True),
    "--config-settings": ("ignored", True),
    "--global-option": ("ignored", True),
}
_COMMENT = re.compile(r"(^|\s+)#.*$")
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://|^file:")
_ARCHIVES = (".whl", ".tar.gz", ".tgz", ".tar.bz2", ".tbz", ".tar.xz", ".txz", ".tar", ".zip")
_HASH = re.compile(r"[A-Za-z0-9]+:[0-9A-Fa-f]+")


@dataclass(frozen=True, slots=True, kw_only=True)
class RequirementLine:
    """One requirement as written, with where it was written and the ``--hash`` values on it."""

    text: str
    where: str  # label:line of the (first physical) line
    hashes: tuple[str, ...] = ()
    constraint: bool = False  # read from a -c file, or from a file that one includes


@dataclass(slots=True)
class Collected:
    """What the files say besides their requirements, filled in while the lines are read."""

    index_url: str | None = None
    extra_index_urls: list[str] = field(default_factory=list)
    find_links: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


def requirement_lines(
    text: str, *, origin: str, read: Reader | None, found: Collected
) -> Iterator[RequirementLine]:
    """The requirement lines of a file and of the files it includes, in pip's order.

    Lazy: a caller that rejects a line raises before the next line, or the next include, is
    read, so the first error in the files is the one reported. ``read`` is as for
    ``parse_requirements`` (pins.py); ``found`` receives the index options and the skipped
    lines, complete once the iterator is exhausted.
    """
    return _lines(
        text, label=origin, location=origin, read=read, found=found, constraint=False, stack=()
    )


def _lines(
    text: str,
    *,
    label: str,
    location: str,
    read: Reader | None,
    found: Collected,
    constraint: bool,
    stack: tuple[str, ...],
) -> Iterator[RequirementLine]:
    stack = (*stack, os.path.normpath(location))
    label = mask_text(label)
    for number, line in _logical_lines(text):
        where = f"{label}:{number}"
        args, options = _split_line(line, where)
        hashes: list[str] = []
        for option, value in options:
            if option == "hash":
                if not _HASH.fullmatch(value):
                    raise _syntax(where, f"invalid --hash {value!r}", "write --hash=sha256:<hex>")
                hashes.append(value)
            elif option == "index-url":
                found.index_url = value
            elif option == "extra-index-url":
                found.extra_index_urls.append(value)
            elif option == "find-links":
                found.find_links.append(value)
            elif option in ("requirement", "constraint", "editable") and args:
                raise _syntax(where, f"{args!r} and -{option[0]} on one line", "split the line")
            elif option == "editable":
                found.skipped.append(f"{where}: -e {mask_text(value)}")
            elif option in ("requirement", "constraint"):
                child = os.path.normpath(os.path.join(os.path.dirname(location), value))
                reader = _include(value, child, where=where, stack=stack, read=read)
                try:
                    child_text, child_label = reader(child)
                except OSError as e:
                    raise UsageError(
                        f"{where}: cannot read {value}: {e.strerror or e}",
                        hint="-r and -c paths are relative to the file that names them",
                        ref="pins-include",
                    ) from e
                yield from _lines(
                    child_text,
                    label=child_label,
                    location=child,
                    read=read,
                    found=found,
                    constraint=constraint or option == "constraint",
                    stack=stack,
                )
        if hashes and not args:
            raise _syntax(where, "--hash without a requirement", "put --hash on its requirement")
        if not args:
            continue
        if _is_local(args):
            found.skipped.append(f"{where}: {mask_text(args)}")
            continue
        yield RequirementLine(text=args, where=where, hashes=tuple(hashes), constraint=constraint)


def _include(
    value: str, child: str, *, where: str, stack: tuple[str, ...], read: Reader | None
) -> Reader:
    """The reader to follow an include with; refuses one that cannot or must not be followed."""
    if _URL.match(value):
        raise UsageError(
            f"{where}: cannot follow the remote include {mask_text(value)}",
            hint="download that file and point -r/-c at the local copy",
            ref="pins-include",
        )
    if read is None:
        raise UsageError(
            f"{where}: cannot follow the include {value}: no reader was given",
            hint="pass the file to load_pins, which reads includes from disk",
            ref="pins-include",
        )
    if child in stack:
        raise UsageError(
            f"{where}: include loop: {' -> '.join((*stack, child))}",
            hint="remove one of the -r/-c lines that form the cycle",
            ref="pins-include-loop",
        )
    if len(stack) >= _MAX_INCLUDE_DEPTH:
        raise UsageError(
            f"{where}: includes nest deeper than {_MAX_INCLUDE_DEPTH} files",
            hint="look for an include loop through links, or flatten the files",
            ref="pins-include-loop",
        )
    return read


def _logical_lines(text: str) -> Iterator[tuple[int, str]]:
    """Lines joined at trailing backslashes, comments removed, blanks dropped (as pip does)."""
    first = 0
    parts: list[str] = []
    for number, raw in enumerate(text.splitlines(), 1):
        is_comment = _COMMENT.match(raw) is not None
        if raw.endswith("\\") and not is_comment:
            if not parts:
                first = number
            parts.append(raw[:-1])
            continue
        if parts:
            parts.append(" " + raw if is_comment else raw)
            number, raw = first, "".join(parts)
            parts = []
        line = _COMMENT.sub("", raw).strip()
        if line:
            yield number, line
    if parts:
        line = _COMMENT.sub("", "".join(parts)).strip()
        if line:
            yield first, line


def _split_line(line: str, where: str) -> tuple[str, list[tuple[str, str]]]:
    """The requirement part (up to the first token starting with '-') and the options."""
    tokens = line.split()
    cut = next((i for i, tok in enumerate(tokens) if tok.startswith("-")), len(tokens))
    args = " ".join(tokens[:cut])
    try:
        words = shlex.split(" ".join(tokens[cut:]))
    except ValueError as e:
        raise _syntax(where, f"cannot read the options of {line!r}", str(e)) from e
    options: list[tuple[str, str]] = []
    i = 0
    while i < len(words):
        word, value = words[i], None
        i += 1
        if word.startswith("--") and "=" in word:
            word, value = word.split("=", 1)
        elif not word.startswith("--") and len(word) > 2 and _OPTIONS.get(word[:2], ("", False))[1]:
            word, value = word[:2], word[2:]
        if not word.startswith("-"):
            raise _syntax(where, f"unexpected {word!r}", "one requirement or option per line")
        if word not in _OPTIONS:
            raise _syntax(where, f"unknown option {word!r}", "see pip's requirements file format")
        meaning, takes_value = _OPTIONS[word]
        if takes_value and value is None:
            if i >= len(words):
                raise _syntax(where, f"option {word} needs a value", f"write {word} VALUE")
            value = words[i]
            i += 1
        elif not takes_value and value is not None:
            raise _syntax(where, f"option {word} takes no value", f"write {word} alone")
        if meaning != "ignored":
            options.append((meaning, value or ""))
    return args, options


def _is_local(arg: str) -> bool:
    """A local path, archive or bare URL: no index requirement to plan over (pip's rules)."""
    head = arg.split(";", 1)[0].strip()
    if _URL.match(head):
        return True
    if "@" in head and not _path_like(head.split("@", 1)[0]):
        return False  # name @ url: a PEP 508 direct reference
    return _path_like(head) or head.lower().endswith(_ARCHIVES)


def _path_like(text: str) -> bool:
    text = text.strip()
    return "/" in text or "\\" in text or text.startswith((".", "~"))


def _syntax(where: str, message: str, hint: str) -> UsageError:
    return UsageError(f"{where}: {message}", hint=hint, ref="pins-syntax")
