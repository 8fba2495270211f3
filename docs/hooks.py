"""MkDocs hook: the reference pages made from the code at build time, so they cannot drift.

A page asks for generated text with a marker line, and ``on_page_markdown`` puts the text there:

    <!-- generated: cli -->            every subcommand of ``envbisect.cli.parser.build_parser()``,
                                       its usage, every argument and flag with its help text
    <!-- generated: exit-codes -->     the exit codes: one per error class of
                                       ``envbisect.errors``, and the CLI's own (probe, signals)
    <!-- generated: errors -->         every error reference the source raises, read with
                                       ``ast`` from src/envbisect: its class and exit code, each
                                       raise site's message pattern and hint where they are literal
    <!-- generated: matrix-schema -->  the schema block of ``envbisect.core.living.spec`` and the
                                       keys and values it accepts
    <!-- generated: changelog -->      CHANGELOG.md at the top of the repository, but its title
    <!-- generated: config-keys -->    every ``[tool.envbisect]`` key, from the options that
                                       declare one (``envbisect.cli.projectconf.keys()``)

The functions that make the text (``cli_markdown``, ``exit_codes_markdown``,
``errors_markdown``, ``matrix_schema_markdown``) are plain: tests call them without MkDocs. A
problem that would make a page wrong (a marker nobody fills, a ``ref`` that is not a literal
and cannot be traced to one, a matrix key the schema block does not name) is a warning, and
``mkdocs build --strict`` fails on it. No MkDocs import: the hook receives MkDocs' objects and
only reads ``page.file.src_uri``.
"""

from __future__ import annotations

import argparse
import ast
import html
import inspect
import logging
import re
import signal
import textwrap
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import envbisect
from envbisect import errors

log = logging.getLogger("mkdocs.hooks.envbisect")  # under mkdocs.*: --strict counts its warnings

SRC = Path(envbisect.__file__).parent
MARKER = re.compile(r"^<!-- generated: ([a-z-]+) -->$", re.MULTILINE)


def text(s: str) -> str:
    """Plain text made safe for a Markdown table cell (help texts name ``<matrix>``, ``*``)."""
    s = html.escape(" ".join(s.split()), quote=False)
    return re.sub(r"([\\`*_\[\]|])", r"\\\1", s)


def code(s: str) -> str:
    """An inline code span that holds any text, backticks and pipes included."""
    s = " ".join(s.split())  # a pipe inside backticks is a table cell's content
    ticks = "`" * (max((len(m) for m in re.findall(r"`+", s)), default=0) + 1)
    pad = " " if s.startswith("`") or s.endswith("`") else ""
    return f"{ticks}{pad}{s}{pad}{ticks}"


# -- the CLI ------------------------------------------------------------------------------------


def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """The subparsers of ``parser``, in the order ``--help`` lists them."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def documented(parser: argparse.ArgumentParser) -> Iterator[argparse.Action]:
    """The actions ``--help`` shows (help not suppressed), subcommand tables aside."""
    for action in parser._actions:
        if action.help is not argparse.SUPPRESS and not isinstance(
            action, argparse._SubParsersAction
        ):
            yield action


def _rows(parser: argparse.ArgumentParser) -> list[str]:
    fmt = parser._get_formatter()
    positional = [a for a in documented(parser) if not a.option_strings]
    flags = [a for a in documented(parser) if a.option_strings]
    out: list[str] = []
    for title, actions in (("argument", positional), ("option", flags)):
        if not actions:
            continue
        out += ["", f"| {title} | what it does |", "|---|---|"]
        for a in actions:
            helped = fmt._expand_help(a) if a.help else ""
            if a.option_strings:
                invocation = fmt._format_action_invocation(a)
            else:  # a positional by its name; --help would show only its choices
                invocation = str(a.metavar or a.dest)
                if a.choices:
                    helped += f" (one of: {', '.join(map(str, a.choices))})"
            out.append(f"| {code(invocation)} | {text(helped.strip())} |")
    return out


def cli_markdown() -> str:
    """The CLI reference: the top-level usage, then one section per subcommand."""
    from envbisect.cli.parser import build_parser

    parser = build_parser()
    for one in (parser, *subcommands(parser).values()):  # the page's width, not the terminal's
        one.formatter_class = lambda prog: argparse.HelpFormatter(prog, width=100)
    out = ["## envbisect", "", "```text", parser.format_usage().strip(), "```", ""]
    out += [text(parser.description or "")]
    out += _rows(parser)
    if parser.epilog:
        out += ["", text(parser.epilog)]
    out += ["", "Subcommands:", ""]
    for name in subcommands(parser):
        out.append(f"- [`envbisect {name}`](#{name})")
    for name, sub in subcommands(parser).items():
        usage = sub.format_usage().strip()
        out += ["", f"## envbisect {name} {{#{name}}}", "", "```text", usage, "```"]
        if sub.description:
            out += ["", text(sub.description)]
        out += _rows(sub)
    return "\n".join(out) + "\n"


# -- exit codes and errors ---------------------------------------------------------------------


def error_classes() -> list[type[errors.EnvbisectError]]:
    """Every class of the error tree, root first, depth first (the docstring's order)."""
    found: list[type[errors.EnvbisectError]] = []

    def walk(cls: type[errors.EnvbisectError]) -> None:
        if cls.__module__ == errors.__name__:
            found.append(cls)
        for sub in cls.__subclasses__():
            walk(sub)

    walk(errors.EnvbisectError)
    return found


def _doc(obj: object) -> str:
    return (inspect.getdoc(obj) or "").split("\n\n")[0]


def _head(exit_code: int) -> type[errors.EnvbisectError]:
    """The class that stands for an exit code: the first that sets it, the root last."""
    own = [c for c in error_classes() if c.exit_code == exit_code]
    return next((c for c in own if c is not errors.EnvbisectError), own[0])


def exit_codes_markdown() -> str:
    """One row per exit code: the error classes' own, then the CLI's."""
    from envbisect.cli import main
    from envbisect.core.results.probe import EXIT_PROBE_FAILED

    by_code: dict[int, list[type[errors.EnvbisectError]]] = {}
    for cls in error_classes():
        by_code.setdefault(cls.exit_code, []).append(cls)
    rows = [
        (0, 'done: the command answered (a boundary found, exactly or as "one of"; a lock written)')
    ]
    for exit_code, classes in sorted(by_code.items()):
        top = _head(exit_code)
        names = ", ".join(f"`{c.__name__}`" for c in classes)
        rows.append((exit_code, f"{text(_doc(top))} ({names}; [references](#exit-{exit_code}))"))
    probe = (
        "`envbisect probe`: the environment was built and probed, and it does not pass; "
        "`envbisect repro`: not reproduced (it passes here, or fails another way)"
    )
    rows.append((EXIT_PROBE_FAILED, probe))
    for sig in main.forwarded():
        rows.append((128 + sig, f"{signal.Signals(sig).name} received: taken as Ctrl-C "
                     f"(the `interrupted` path: 128 + the signal)"))  # fmt: skip
    rows.append((128 + signal.SIGPIPE, f"stdout closed by its reader ({code('| head')}): "
                 "it stops quietly, no traceback"))  # fmt: skip
    out = ["| exit code | meaning |", "|---:|---|"]
    out += [f"| {c} | {m} |" for c, m in sorted(rows)]
    return "\n".join(out) + "\n"


@dataclass(frozen=True, slots=True, kw_only=True)
class Site:
    """One place the source raises (or builds) an error with a reference."""

    path: str  # relative to src/envbisect
    line: int
    cls: str
    message: str | None  # the pattern, {expression} for what is filled in; None: not literal
    hint: str | None  # the same; "": none given


@dataclass(slots=True)
class Refs:
    """Every reference the source uses, with its raise sites; what could not be read."""

    sites: dict[str, list[Site]] = field(default_factory=dict)
    unresolved: list[str] = field(default_factory=list)  # "path:line: why"


def pattern(node: ast.expr | None) -> str | None:
    """A string literal, an f-string (``{expr}`` in place of each value) or a sum of them."""
    if node is None:
        return None
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        parts = []
        for v in node.values:
            if isinstance(v, ast.Constant):
                parts.append(str(v.value))
            elif isinstance(v, ast.FormattedValue):
                parts.append("{" + ast.unparse(v.value) + "}")
        return "".join(parts)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = pattern(node.left), pattern(node.right)
        return None if left is None or right is None else left + right
    return None


def _called(node: ast.Call) -> str | None:
    f = node.func
    return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None


Found = tuple[Site, ast.expr | None, list[str], str]
Function = ast.FunctionDef | ast.AsyncFunctionDef


def _sites(tree: ast.Module, rel: str, classes: dict[str, Any]) -> Iterator[Found]:
    """Each call of an error class: its site, its ``ref=`` node, and the parameters and name
    of the innermost function around it."""

    def visit(node: ast.AST, fn: Function | None) -> Iterator[Found]:
        if isinstance(node, Function):
            fn = node
        if isinstance(node, ast.Call) and _called(node) in classes:
            kw = {k.arg: k.value for k in node.keywords if k.arg}
            site = Site(path=rel, line=node.lineno, cls=_called(node) or "",
                        message=pattern(node.args[0]) if node.args else None,
                        hint=pattern(kw["hint"]) if "hint" in kw else "")  # fmt: skip
            args = (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs) if fn else ()
            yield site, kw.get("ref"), [a.arg for a in args], fn.name if fn else ""
        for child in ast.iter_child_nodes(node):
            yield from visit(child, fn)

    yield from visit(tree, None)


def collect_refs(src: Path = SRC) -> Refs:
    """Every error reference raised in ``src``: the class's own, or a ``ref=`` given at the
    call. A ``ref`` that is a parameter of the function around the call is traced to the
    literals its callers pass for it."""
    classes = {c.__name__: c for c in error_classes()}
    refs = Refs()
    trees = {p.relative_to(src).as_posix(): ast.parse(p.read_text(encoding="utf-8"))
             for p in sorted(src.rglob("*.py"))}  # fmt: skip
    traced: dict[str, tuple[int, str]] = {}  # function -> (index, name) of its ref parameter
    pending: list[tuple[str, Site]] = []
    for rel, tree in trees.items():
        for site, given, params, fn in _sites(tree, rel, classes):
            if given is None:
                refs.sites.setdefault(classes[site.cls].ref, []).append(site)
            elif isinstance(given, ast.Constant) and isinstance(given.value, str):
                refs.sites.setdefault(given.value, []).append(site)
            elif isinstance(given, ast.Name) and given.id in params:
                traced[fn] = (params.index(given.id), given.id)
                pending.append((fn, site))
            else:
                refs.unresolved.append(f"{rel}:{site.line}: ref={ast.unparse(given)}")
    passed: dict[str, set[str]] = {}  # function -> the literals its callers pass as the ref
    for rel, tree in trees.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and (name := _called(node)) in traced:
                index, param = traced[name or ""]
                kw = {k.arg: k.value for k in node.keywords if k.arg}
                arg = kw.get(param, node.args[index] if len(node.args) > index else None)
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    passed.setdefault(name or "", set()).add(arg.value)
                else:
                    refs.unresolved.append(f"{rel}:{node.lineno}: {param} is not a literal")
    for fn, site in pending:
        for ref in sorted(passed.get(fn, ())):
            refs.sites.setdefault(ref, []).append(site)
    for cls in classes.values():  # a class whose own ref is raised nowhere is still listed
        refs.sites.setdefault(cls.ref, [])
    return refs


def _class_of(ref: str, sites: list[Site]) -> type[errors.EnvbisectError]:
    classes = {c.__name__: c for c in error_classes()}
    if sites:
        return classes[sites[0].cls]
    return next(c for c in classes.values() if c.ref == ref)


def errors_markdown(refs: Refs | None = None) -> str:
    """Every reference, grouped by exit code, each with its raise sites."""
    refs = refs or collect_refs()
    for why in refs.unresolved:
        log.warning("errors page: cannot read a reference at %s", why)
    groups: dict[int, list[str]] = {}
    for ref, sites in refs.sites.items():
        groups.setdefault(_class_of(ref, sites).exit_code, []).append(ref)
    out: list[str] = []
    for exit_code in sorted(groups):
        top = _head(exit_code)
        out += ["", f"## Exit {exit_code}: {text(_doc(top))} {{#exit-{exit_code}}}", ""]
        for ref in sorted(groups[exit_code]):
            sites = refs.sites[ref]
            cls = _class_of(ref, sites)
            out += [f"### `{ref}` {{#{ref}}}", ""]
            kinds = sorted({s.cls for s in sites} or {cls.__name__})
            doc = _doc(cls)
            out.append(f"Class: {', '.join(f'`{k}`' for k in kinds)}, exit {exit_code}."
                       + (f" {text(doc)}" if doc and cls.ref == ref else ""))  # fmt: skip
            if not sites:
                out += ["", "Not raised under this reference by the source (its subclasses' "
                        "references are listed instead)."]  # fmt: skip
                out.append("")
                continue
            out += ["", "| raised at | message | hint |", "|---|---|---|"]
            for s in sites:
                message = code(s.message) if s.message else "(made at the raise site)"
                hint = (
                    code(s.hint) if s.hint else "(made at the raise site)" if s.hint is None else ""
                )
                out.append(f"| `{s.path}:{s.line}` | {message} | {hint} |")
            out.append("")
    return "\n".join(out).lstrip("\n") + "\n"


# -- the matrix file schema --------------------------------------------------------------------


def matrix_schema_markdown() -> str:
    """The schema block of core/living/spec.py's docstring, then the keys and values it accepts."""
    from envbisect.core.living import spec as ms
    from envbisect.exec.kinds import kinds

    doc = ms.__doc__ or ""
    block = [line for line in doc.splitlines() if line.startswith("    ") or not line.strip()]
    schema = textwrap.dedent("\n".join(block)).strip("\n")
    for key in sorted(ms._MATRIX_KEYS | ms._AXIS_KEYS):
        if not re.search(rf"\b{re.escape(key)}\b", schema):
            log.warning("matrix schema page: the spec's docstring does not name %r", key)
    out = ["```toml", schema, "```", ""]
    out += ["Keys of `[matrix]`: " + ", ".join(f"`{k}`" for k in sorted(ms._MATRIX_KEYS)) + ".", ""]
    out += [
        "Keys of each `[[axis]]`: " + ", ".join(f"`{k}`" for k in sorted(ms._AXIS_KEYS)) + ".",
        "",
    ]
    out += [
        "| key | accepted values |",
        "|---|---|",
        f"| `select` | {', '.join(f'`{v}`' for v in ms.SELECT_RULES)} |",
        f"| `rest` | {', '.join(f'`{v}`' for v in ms.POLICIES)} |",
        f"| `executor` | {', '.join(f'`{v}`' for v in kinds())} |",
    ]
    return "\n".join(out) + "\n"


def config_keys_markdown() -> str:
    """The ``[tool.envbisect]`` keys: each with the flag it sets and what its value must be,
    read from the option records that declare a key."""
    from envbisect.cli.projectconf import keys

    out = ["| key | sets | its value |", "|---|---|---|"]
    for key, option in keys().items():
        where = " (relative to the pyproject.toml's folder)" if option.key_relative else ""
        out.append(f"| `{key}` | `{option.long}` | {text(option.key_what)}{where} |")
    return "\n".join(out) + "\n"


def changelog_markdown() -> str:
    """CHANGELOG.md without its title (the page has its own)."""
    text = (Path(__file__).resolve().parent.parent / "CHANGELOG.md").read_text(encoding="utf-8")
    return re.sub(r"\A# [^\n]*\n+", "", text)


GENERATORS: dict[str, Callable[[], str]] = {
    "cli": cli_markdown,
    "exit-codes": exit_codes_markdown,
    "errors": errors_markdown,
    "matrix-schema": matrix_schema_markdown,
    "changelog": changelog_markdown,
    "config-keys": config_keys_markdown,
}


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """Fill each marker of the page with its generated text."""

    def fill(m: re.Match[str]) -> str:
        make = GENERATORS.get(m.group(1))
        if make is None:
            log.warning("%s: no generator for marker %r", page.file.src_uri, m.group(1))
            return m.group(0)
        return make()

    return MARKER.sub(fill, markdown)
