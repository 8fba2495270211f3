"""One module's source judged: is a name there, what does a function take, does a caller still
make the import or the call a traceback shows.

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


def parse(source: str) -> ast.Module | None:
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
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


def _top(body: Sequence[ast.stmt]) -> Iterator[ast.stmt]:
    """The module's top-level statements, into ``if``, ``try`` and ``with`` blocks (where
    optional names are defined), not into functions or classes."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, ast.If):
            yield from _top(stmt.body)
            yield from _top(stmt.orelse)
        elif isinstance(stmt, _TRY):
            yield from _top(stmt.body)
            for h in stmt.handlers:
                yield from _top(h.body)
            yield from _top(stmt.orelse)
            yield from _top(stmt.finalbody)
        elif isinstance(stmt, ast.With):
            yield from _top(stmt.body)


def _targets(node: ast.expr) -> Iterator[str]:
    if isinstance(node, ast.Name):
        yield node.id
    elif isinstance(node, ast.Tuple | ast.List):
        for elt in node.elts:
            yield from _targets(elt)
    elif isinstance(node, ast.Starred):
        yield from _targets(node.value)


def defined_names(tree: ast.Module) -> set[str]:
    """Every name bound at the top of the module (see ``_top``)."""
    out: set[str] = set()
    for stmt in _top(tree.body):
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            out.add(stmt.name)
        elif isinstance(stmt, ast.Assign):
            for t in stmt.targets:
                out.update(_targets(t))
        elif isinstance(stmt, ast.AnnAssign | ast.AugAssign):
            out.update(_targets(stmt.target))
        elif isinstance(stmt, ast.Import):
            out.update((a.asname or a.name).split(".")[0] for a in stmt.names)
        elif isinstance(stmt, ast.ImportFrom):
            out.update(a.asname or a.name for a in stmt.names if a.name != "*")
    return out


def _strings(node: ast.AST) -> Iterator[str]:
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
                        out.update(_strings(v))
                elif item:
                    out.update(_strings(node.value))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("append", "extend")
            and isinstance(node.func.value, ast.Subscript)
            and isinstance(node.func.value.value, ast.Name)
            and node.func.value.value.id == table
        ):
            for a in node.args:
                out.update(_strings(a))
    return out


def all_names(tree: ast.Module) -> list[str] | None:
    """``__all__`` as a literal list or tuple (with ``+=`` additions), None where it is not
    written as one."""
    found: list[str] | None = None
    for stmt in _top(tree.body):
        if isinstance(stmt, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in stmt.targets
        ):
            if isinstance(stmt.value, ast.List | ast.Tuple):
                found = list(_strings(stmt.value))
        elif (
            isinstance(stmt, ast.AugAssign)
            and isinstance(stmt.target, ast.Name)
            and stmt.target.id == "__all__"
            and isinstance(stmt.value, ast.List | ast.Tuple)
        ):
            found = [*(found or []), *_strings(stmt.value)]
    return found


def star_sources(tree: ast.Module, module: str, is_package: bool) -> tuple[str, ...]:
    """The modules ``from X import *`` brings names from, as absolute import paths."""
    out = []
    for stmt in _top(tree.body):
        if isinstance(stmt, ast.ImportFrom) and any(a.name == "*" for a in stmt.names):
            out.append(resolve(module, is_package, stmt.level, stmt.module))
    return tuple(dict.fromkeys(out))


def _module_getattr(tree: ast.Module) -> ast.FunctionDef | None:
    for stmt in _top(tree.body):
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
        return name in set(_strings(value)) or any(
            isinstance(n, ast.Name) and n.id in tables for n in ast.walk(value)
        )

    for stmt in [*_top(tree.body), *ast.walk(fn)]:
        if isinstance(stmt, ast.Assign):
            for target in _targets(stmt.targets[0]):
                if names_it(stmt.value):
                    tables.add(target)
                else:
                    tables.discard(target)
        elif isinstance(stmt, ast.Delete):
            for t in stmt.targets:
                tables.difference_update(_targets(t))
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
            names_it = name in set(_strings(tested)) or any(
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
    if name in set(_strings(fn)):
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


# -- signatures -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Params:
    """What a function accepts. ``positional``: the names that can be passed by position, in
    order (``self`` included for a method); ``required``: those without a default."""

    positional: tuple[str, ...] = ()
    keyword_only: tuple[str, ...] = ()
    positional_only: tuple[str, ...] = ()
    required: tuple[str, ...] = ()
    varargs: bool = False
    varkw: bool = False

    def accepts_keyword(self, name: str) -> bool:
        if self.varkw:
            return True
        named = set(self.positional) | set(self.keyword_only)
        return name in named and name not in self.positional_only

    def accepts_positional(self, count: int) -> bool:
        return self.varargs or count <= len(self.positional)

    def requires(self, names: Sequence[str]) -> bool:
        return any(n in self.required for n in names)


@dataclass(frozen=True, slots=True, kw_only=True)
class Bases:
    """The function is not in the class: look in these bases, each ``(module, class name)``
    (absolute import paths; the module itself for a class defined beside)."""

    bases: tuple[tuple[str, str], ...]
    fields: tuple[tuple[str, bool], ...] | None = None  # a dataclass's own: its __init__'s


def _params(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> Params:
    a = fn.args
    posonly = [x.arg for x in a.posonlyargs]
    pos = [*posonly, *(x.arg for x in a.args)]
    with_default = set(pos[len(pos) - len(a.defaults) :]) if a.defaults else set()
    kwonly = [x.arg for x in a.kwonlyargs]
    kw_required = [x.arg for x, d in zip(a.kwonlyargs, a.kw_defaults, strict=True) if d is None]
    return Params(
        positional=tuple(pos),
        keyword_only=tuple(kwonly),
        positional_only=tuple(posonly),
        required=tuple([p for p in pos if p not in with_default] + kw_required),
        varargs=a.vararg is not None,
        varkw=a.kwarg is not None,
    )


def _is_dataclass(cls: ast.ClassDef) -> bool:
    for d in cls.decorator_list:
        target = d.func if isinstance(d, ast.Call) else d
        if isinstance(target, ast.Name) and target.id == "dataclass":
            return True
        if isinstance(target, ast.Attribute) and target.attr == "dataclass":
            return True
    return False


def _fields(cls: ast.ClassDef) -> list[tuple[str, bool]]:
    """A dataclass's own fields in order, each with whether it has a default; those with
    ``field(init=False)`` and ``ClassVar`` left out."""
    out = []
    for stmt in cls.body:
        if not isinstance(stmt, ast.AnnAssign) or not isinstance(stmt.target, ast.Name):
            continue
        if "ClassVar" in ast.unparse(stmt.annotation):
            continue
        v = stmt.value
        if isinstance(v, ast.Call) and any(
            k.arg == "init" and isinstance(k.value, ast.Constant) and k.value.value is False
            for k in v.keywords
        ):
            continue
        out.append((stmt.target.id, v is not None))
    return out


def imported_at(tree: ast.Module, module: str, is_package: bool, name: str) -> str | None:
    for stmt in _top(tree.body):
        if isinstance(stmt, ast.ImportFrom):
            for a in stmt.names:
                if (a.asname or a.name) == name and a.name != "*":
                    return resolve(module, is_package, stmt.level, stmt.module)
    return None


def _base_refs(
    tree: ast.Module, cls: ast.ClassDef, module: str, is_package: bool
) -> tuple[tuple[str, str], ...]:
    local = {s.name for s in _top(tree.body) if isinstance(s, ast.ClassDef)}
    out = []
    for b in cls.bases:
        if isinstance(b, ast.Name):
            where = module if b.id in local else imported_at(tree, module, is_package, b.id)
            if where:
                out.append((where, b.id))
        elif isinstance(b, ast.Attribute) and isinstance(b.value, ast.Name):
            out.append((b.value.id, b.attr))  # mod.Base: the caller maps the alias
    return tuple(out)


def lazy_keys(tree: ast.Module, name: str) -> list[str]:
    """The submodules (keys of ``_import_structure``) whose lists name ``name``."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict):
            if not any(
                isinstance(t, ast.Name) and t.id == "_import_structure" for t in node.targets
            ):
                continue
            for k, v in zip(node.value.keys, node.value.values, strict=True):
                if (
                    isinstance(k, ast.Constant)
                    and isinstance(k.value, str)
                    and name in set(_strings(v))
                ):
                    out.append(k.value)
    return out


def defines(tree: ast.Module, name: str) -> bool:
    """Whether the module defines a class or a function ``name`` at its top."""
    return any(
        isinstance(s, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and s.name == name
        for s in _top(tree.body)
    )


def find_class(tree: ast.Module, name: str) -> ast.ClassDef | None:
    for stmt in _top(tree.body):
        if isinstance(stmt, ast.ClassDef) and stmt.name == name:
            return stmt
    return None


def signature(
    source: str, module: str, qualname: str, *, is_package: bool
) -> Params | Bases | None:
    """What ``qualname`` (``func``, ``Class.method``, ``Class.__init__``) in ``module``
    accepts; ``Bases`` to look in where a class does not define the method; None where the
    module has no such class or function (or does not parse)."""
    tree = parse(source)
    if tree is None:
        return None
    parts = [p for p in qualname.split(".") if p != "<locals>"]
    if len(parts) == 1:
        for stmt in _top(tree.body):
            if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef) and stmt.name == parts[0]:
                return _params(stmt)
        cls = find_class(tree, parts[0])  # Class() called: its __init__
        parts = [parts[0], "__init__"] if cls is not None else parts
        if cls is None:
            return None
    cls = find_class(tree, parts[-2])
    if cls is None:
        return None
    for stmt in cls.body:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef) and stmt.name == parts[-1]:
            return _params(stmt)
    if parts[-1] == "__init__" and _is_dataclass(cls):
        # the generated __init__ takes the dataclass bases' fields first: the caller merges
        own = tuple(_fields(cls))
        return Bases(bases=_base_refs(tree, cls, module, is_package), fields=own)
    bases = _base_refs(tree, cls, module, is_package)
    return Bases(bases=bases) if bases else None


def dataclass_fields(
    source: str, module: str, cls_name: str, *, is_package: bool
) -> tuple[list[tuple[str, bool]], tuple[tuple[str, str], ...]] | None:
    """A dataclass's own fields and its bases (for merging along them); None where the
    class is not a dataclass here (a mixin: it adds no field)."""
    tree = parse(source)
    cls = find_class(tree, cls_name) if tree is not None else None
    if cls is None or tree is None or not _is_dataclass(cls):
        return None
    return _fields(cls), _base_refs(tree, cls, module, is_package)


def merge_fields(
    inherited: list[tuple[str, bool]], own: Sequence[tuple[str, bool]]
) -> list[tuple[str, bool]]:
    """Fields in the order a dataclass's ``__init__`` takes them: the bases' first, a field
    declared again keeps its place and takes the new default."""
    out = dict(inherited)
    for name, default in own:
        out[name] = default
    return list(out.items())


def dataclass_params(fields: Sequence[tuple[str, bool]]) -> Params:
    return Params(
        positional=("self", *(n for n, _ in fields)),
        required=("self", *(n for n, d in fields if not d)),
    )


# -- the caller's side ------------------------------------------------------------------------


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
