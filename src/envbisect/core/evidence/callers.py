"""The caller's side of a failure: does a module (in some release) still make the import,
read the attribute or make the call a traceback shows. Imports inside a ``try`` that catches
their failure (and the fallbacks in its handlers) do not count: they cannot fail that way.
Pure: source text in, ``Verdict`` out."""

from __future__ import annotations

import ast
import re

from envbisect.core.evidence.apisource import Verdict, parse, resolve


def _guarded(tree: ast.Module) -> set[int]:
    """Line numbers of statements inside a ``try`` whose handlers catch an import failure."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Try):
            catches = any(
                h.type is None
                or any(
                    isinstance(n, ast.Name)
                    and n.id in ("ImportError", "ModuleNotFoundError", "Exception")
                    for n in ast.walk(h.type)
                )
                for h in node.handlers
            )
            if catches:  # the try's body, and the fallbacks its handlers import instead
                for s in [*node.body, *(x for h in node.handlers for x in h.body)]:
                    for n in ast.walk(s):
                        if hasattr(n, "lineno"):
                            out.add(n.lineno)
    return out


def imports_name(
    source: str, module: str, from_module: str, name: str, *, is_package: bool
) -> Verdict:
    """PRESENT where ``module`` still does ``from from_module import name`` outside a ``try``
    that catches its failure (anywhere: a function's body too); ABSENT where it does not."""
    tree = parse(source)
    if tree is None:
        pattern = rf"from\s+{re.escape(from_module)}\s+import\s+[^\n]*\b{re.escape(name)}\b"
        return Verdict.PRESENT if re.search(pattern, source) else Verdict.UNKNOWN
    guarded = _guarded(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.lineno not in guarded:
            src = resolve(module, is_package, node.level, node.module)
            if src == from_module and any(a.name == name for a in node.names):
                return Verdict.PRESENT
    return Verdict.ABSENT


def imports_module(source: str, module: str, target: str, *, is_package: bool) -> Verdict:
    """PRESENT where ``module`` imports ``target`` (``import target``, ``from target import
    x``, ``from parent import leaf``) outside a ``try`` that catches its failure."""
    tree = parse(source)
    if tree is None:
        return (
            Verdict.PRESENT if re.search(rf"\b{re.escape(target)}\b", source) else Verdict.UNKNOWN
        )
    guarded = _guarded(tree)
    parent, _, leaf = target.rpartition(".")
    for node in ast.walk(tree):
        if getattr(node, "lineno", None) in guarded:
            continue
        if isinstance(node, ast.Import) and any(
            a.name == target or a.name.startswith(target + ".") for a in node.names
        ):
            return Verdict.PRESENT
        if isinstance(node, ast.ImportFrom):
            at = resolve(module, is_package, node.level, node.module)
            if at == target or at.startswith(target + "."):
                return Verdict.PRESENT
            if at == parent and any(a.name == leaf for a in node.names):
                return Verdict.PRESENT
    return Verdict.ABSENT


def uses_attribute(source: str, owner_module: str, name: str) -> Verdict:
    """PRESENT where the module reads ``owner_module.name`` (through ``import owner`` or
    ``import owner as alias``) outside a guard; ABSENT where it does not."""
    tree = parse(source)
    if tree is None:
        return Verdict.UNKNOWN
    aliases = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name == owner_module:
                    aliases.add(a.asname or a.name)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            for a in node.names:
                if f"{node.module}.{a.name}" == owner_module:
                    aliases.add(a.asname or a.name)
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and node.attr == name
            and ast.unparse(node.value) in aliases
        ):
            return Verdict.PRESENT
    return Verdict.ABSENT


def passes(
    source: str,
    func: str,
    callee: str | None,
    *,
    keyword: str | None = None,
    given: int | None = None,
) -> Verdict:
    """PRESENT where a function named ``func`` in the module calls ``callee`` (a name or an
    attribute of that name) passing ``keyword``, or ``given`` or more positional arguments
    (counting ``self`` for a method call, as the message counts); ABSENT where it calls it
    without; UNKNOWN where no function of that name calls it."""
    tree = parse(source)
    if tree is None:
        return Verdict.UNKNOWN
    calls = []
    for fn in ast.walk(tree):
        if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef) and fn.name == func:
            for node in ast.walk(fn):
                if isinstance(node, ast.Call):
                    f = node.func
                    named = (
                        f.id
                        if isinstance(f, ast.Name)
                        else (f.attr if isinstance(f, ast.Attribute) else None)
                    )
                    if named == callee or (callee is None and named is not None):
                        calls.append(node)
    if not calls:
        return Verdict.UNKNOWN
    for call in calls:
        if keyword is not None and any(k.arg == keyword for k in call.keywords):
            return Verdict.PRESENT
        if given is not None:
            bound = 1 if isinstance(call.func, ast.Attribute) else 0
            if any(isinstance(a, ast.Starred) for a in call.args):
                continue
            if len(call.args) + bound >= given:
                return Verdict.PRESENT
    return Verdict.ABSENT
