"""One module's source judged: is a name there (signatures.py says what a function takes,
callers.py whether a caller still makes the import or the call).

Read with the standard ``ast`` (measured against griffe in docs/explanation/why.md: one module
is all a question needs, and ``ast.parse`` of transformers' 10,000-line ``__init__.py`` takes
about 0.1 s; griffe loads whole packages and their inheritance, which a single member read
from a wheel cannot feed). What counts as "the name is there":

- defined at the module's top (``def``, ``class``, an assignment, an import, inside top-level
  ``if``/``try``/``with`` blocks too);
- listed in a lazy table: transformers' ``_import_structure`` (its dict literal, ``.append``,
  ``.extend`` and item assignments), or in ``__all__`` where ``__getattr__`` serves it;
- re-exported by ``from .sub import *``: the answer is to read those modules (``Judged.follow``)
  and take their public names (``__all__`` when they have one);
- a module-level ``__getattr__`` that returns it (a deprecation table: present, with a
  warning) or raises for it (numpy's ``__former_attrs__``: absent).

``UNKNOWN`` where the source cannot say (a ``__getattr__`` whose table does not name it, a
source this Python cannot parse and no plain definition): a search steps around it, as around
an environment that cannot be built. Pure: text in, verdicts out.
"""

from __future__ import annotations

import ast
import enum
import re
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass


class Verdict(enum.Enum):
    PRESENT = "present"
    ABSENT = "absent"
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True, kw_only=True)
class Judged:
    """A verdict, or the modules to read before there is one (``follow``: absolute import
    paths whose public names this module re-exports with ``*``)."""

    verdict: Verdict
    follow: tuple[str, ...] = ()


# CPython 3.11 and 3.12 can raise "SystemError: AST constructor recursion depth mismatch"
# when threads parse at once (python/cpython#106905): the releases are read on a few threads,
# so one parse at a time (it holds the interpreter lock all the same).
_PARSING = threading.Lock()


def parse(source: str) -> ast.Module | None:
    try:
        with _PARSING:
            return ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError, SystemError):
        return None


def resolve(module: str, is_package: bool, level: int, name: str | None) -> str:
    """The absolute import path of ``from {'.' * level}{name} import ...`` in ``module``."""
    if level == 0:
        return name or ""
    parts = module.split(".")
    base = parts if is_package else parts[:-1]
    base = base[: len(base) - (level - 1)] if level > 1 else base
    return ".".join([*base, name] if name else base)


_TRY = (ast.Try, *(t for t in (getattr(ast, "TryStar", None),) if t is not None))


def top_level(body: Sequence[ast.stmt]) -> Iterator[ast.stmt]:
    """The module's top-level statements, into ``if``, ``try`` and ``with`` blocks (where
    optional names are defined), not into functions or classes."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, ast.If):
            yield from top_level(stmt.body)
            yield from top_level(stmt.orelse)
        elif isinstance(stmt, _TRY):
            yield from top_level(stmt.body)
            for h in stmt.handlers:
                yield from top_level(h.body)
            yield from top_level(stmt.orelse)
            yield from top_level(stmt.finalbody)
        elif isinstance(stmt, ast.With):
            yield from top_level(stmt.body)


def targets(node: ast.expr) -> Iterator[str]:
    if isinstance(node, ast.Name):
        yield node.id
    elif isinstance(node, ast.Tuple | ast.List):
        for elt in node.elts:
            yield from targets(elt)
    elif isinstance(node, ast.Starred):
        yield from targets(node.value)


def defined_names(tree: ast.Module) -> set[str]:
    """Every name bound at the top of the module (see ``_top``)."""
    out: set[str] = set()
    for stmt in top_level(tree.body):
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            out.add(stmt.name)
        elif isinstance(stmt, ast.Assign):
            for t in stmt.targets:
                out.update(targets(t))
        elif isinstance(stmt, ast.AnnAssign | ast.AugAssign):
            out.update(targets(stmt.target))
        elif isinstance(stmt, ast.Import):
            out.update((a.asname or a.name).split(".")[0] for a in stmt.names)
        elif isinstance(stmt, ast.ImportFrom):
            out.update(a.asname or a.name for a in stmt.names if a.name != "*")
    return out


def strings(node: ast.AST) -> Iterator[str]:
    for sub in ast.walk(node):
        if isinstance(sub, ast.Constant) and isinstance(sub.value, str):
            yield sub.value


def lazy_names(tree: ast.Module) -> set[str]:
    """The names of transformers-style lazy tables: ``_import_structure``'s lists."""
    out: set[str] = set()
    table = "_import_structure"
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            for t in node.targets:
                named = isinstance(t, ast.Name) and t.id == table
                item = (
                    isinstance(t, ast.Subscript)
                    and isinstance(t.value, ast.Name)
                    and t.value.id == table
                )
                if named and isinstance(node.value, ast.Dict):
                    for v in node.value.values:
                        out.update(strings(v))
                elif item:
                    out.update(strings(node.value))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("append", "extend")
            and isinstance(node.func.value, ast.Subscript)
            and isinstance(node.func.value.value, ast.Name)
            and node.func.value.value.id == table
        ):
            for a in node.args:
                out.update(strings(a))
    return out


def all_names(tree: ast.Module) -> list[str] | None:
    """``__all__`` as a literal list or tuple (with ``+=`` additions), None where it is not
    written as one."""
    found: list[str] | None = None
    for stmt in top_level(tree.body):
        if isinstance(stmt, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in stmt.targets
        ):
            if isinstance(stmt.value, ast.List | ast.Tuple):
                found = list(strings(stmt.value))
        elif (
            isinstance(stmt, ast.AugAssign)
            and isinstance(stmt.target, ast.Name)
            and stmt.target.id == "__all__"
            and isinstance(stmt.value, ast.List | ast.Tuple)
        ):
            found = [*(found or []), *strings(stmt.value)]
    return found


def star_sources(tree: ast.Module, module: str, is_package: bool) -> tuple[str, ...]:
    """The modules ``from X import *`` brings names from, as absolute import paths."""
    out = []
    for stmt in top_level(tree.body):
        if isinstance(stmt, ast.ImportFrom) and any(a.name == "*" for a in stmt.names):
            out.append(resolve(module, is_package, stmt.level, stmt.module))
    return tuple(dict.fromkeys(out))


def _module_getattr(tree: ast.Module) -> ast.FunctionDef | None:
    for stmt in top_level(tree.body):
        if isinstance(stmt, ast.FunctionDef) and stmt.name == "__getattr__":
            return stmt
    return None


def _tables(tree: ast.Module, fn: ast.FunctionDef, name: str) -> set[str]:
    """The names of tables that hold ``name`` where ``__getattr__`` reads them, in the
    module's order: assigned a value that names it, or filled (``T.update(...)``,
    ``T = {... for n in S}``) from a table that does at that point; assigned again without
    it, or deleted, it no longer does (numpy builds ``__former_attrs__`` from one
    ``_type_info`` and ``__deprecated_attrs__`` from another of the same name)."""
    tables: set[str] = set()

    def names_it(value: ast.AST) -> bool:
        return name in set(strings(value)) or any(
            isinstance(n, ast.Name) and n.id in tables for n in ast.walk(value)
        )

    for stmt in [*top_level(tree.body), *ast.walk(fn)]:
        if isinstance(stmt, ast.Assign):
            for target in targets(stmt.targets[0]):
                if names_it(stmt.value):
                    tables.add(target)
                else:
                    tables.discard(target)
        elif isinstance(stmt, ast.Delete):
            for t in stmt.targets:
                tables.difference_update(targets(t))
        elif (
            isinstance(stmt, ast.Expr)
            and isinstance(stmt.value, ast.Call)
            and isinstance(stmt.value.func, ast.Attribute)
            and stmt.value.func.attr == "update"
            and isinstance(stmt.value.func.value, ast.Name)
            and names_it(stmt.value)
        ):
            tables.add(stmt.value.func.value.id)
    return tables


def _getattr_verdict(tree: ast.Module, fn: ast.FunctionDef, name: str) -> Verdict:
    """What a module-level ``__getattr__`` does for ``name``: the block that tests a table
    naming it (``if attr in TABLE``, ``TABLE[attr]`` in a ``try``) or the name itself
    (``if attr == "name"``) returns (PRESENT) or only raises (ABSENT)."""
    tables = _tables(tree, fn, name)
    for node in ast.walk(fn):
        if isinstance(node, ast.If):
            tested = node.test
            names_it = name in set(strings(tested)) or any(
                isinstance(n, ast.Name) and n.id in tables for n in ast.walk(tested)
            )
            if names_it:
                return _block_verdict(node.body)
        elif isinstance(node, ast.Try):
            reads = any(
                isinstance(n, ast.Subscript)
                and isinstance(n.value, ast.Name)
                and n.value.id in tables
                for s in node.body
                for n in ast.walk(s)
            )
            if reads:
                return _block_verdict([*node.body, *node.orelse])
    if name in set(strings(fn)):
        return Verdict.UNKNOWN
    return Verdict.UNKNOWN if tables else Verdict.ABSENT


def _block_verdict(body: Sequence[ast.stmt]) -> Verdict:
    returns = any(isinstance(n, ast.Return) for s in body for n in ast.walk(s))
    raises = any(isinstance(n, ast.Raise) for s in body for n in ast.walk(s))
    if returns:
        return Verdict.PRESENT
    return Verdict.ABSENT if raises else Verdict.UNKNOWN


_PLAIN_DEF = r"^(?:def|class|async def)\s+{n}\b|^{n}\s*[:=]|^\s*(?:from\s+\S+\s+)?import\b.*\b{n}\b"


def has_name(source: str, module: str, name: str, *, is_package: bool) -> Judged:
    """Whether ``module`` (its ``source``) offers ``name`` to ``from module import name`` and
    ``module.name`` (see the module's docstring). A submodule of that name is the caller's
    to check (it needs the wheel's file list)."""
    tree = parse(source)
    if tree is None:
        plain = re.compile(_PLAIN_DEF.format(n=re.escape(name)), re.MULTILINE)
        return Judged(verdict=Verdict.PRESENT if plain.search(source) else Verdict.UNKNOWN)
    if name in defined_names(tree) or name in lazy_names(tree):
        return Judged(verdict=Verdict.PRESENT)
    fn = _module_getattr(tree)
    if fn is not None:
        listed = all_names(tree)
        if listed is not None and name in listed:
            return Judged(verdict=Verdict.PRESENT)
        verdict = _getattr_verdict(tree, fn, name)
        if verdict is not Verdict.ABSENT:
            return Judged(verdict=verdict)
    stars = star_sources(tree, module, is_package)
    if stars:
        return Judged(verdict=Verdict.ABSENT, follow=stars)
    return Judged(verdict=Verdict.ABSENT)


def public_names(source: str) -> set[str] | None:
    """What ``from this import *`` brings: ``__all__``, else the names without a leading
    underscore; None where the source does not parse."""
    tree = parse(source)
    if tree is None:
        return None
    listed = all_names(tree)
    if listed is not None:
        return set(listed)
    return {n for n in defined_names(tree) | lazy_names(tree) if not n.startswith("_")}
