"""What a function accepts, read from its module's source: its parameters, a method a class
inherits (the bases to look in), a dataclass's generated ``__init__`` (its fields and its
bases'), and where a class a module names is defined (``imported_at``, ``lazy_keys``). Pure:
source text in, parameters out; the caller reads the modules the bases lie in
(modes/staticprobes.py)."""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import dataclass

from envbisect.core.evidence.apisource import parse, resolve, strings, top_level


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
    for stmt in top_level(tree.body):
        if isinstance(stmt, ast.ImportFrom):
            for a in stmt.names:
                if (a.asname or a.name) == name and a.name != "*":
                    return resolve(module, is_package, stmt.level, stmt.module)
    return None


def _base_refs(
    tree: ast.Module, cls: ast.ClassDef, module: str, is_package: bool
) -> tuple[tuple[str, str], ...]:
    local = {s.name for s in top_level(tree.body) if isinstance(s, ast.ClassDef)}
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
                    and name in set(strings(v))
                ):
                    out.append(k.value)
    return out


def defines(tree: ast.Module, name: str) -> bool:
    """Whether the module defines a class or a function ``name`` at its top."""
    return any(
        isinstance(s, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and s.name == name
        for s in top_level(tree.body)
    )


def find_class(tree: ast.Module, name: str) -> ast.ClassDef | None:
    for stmt in top_level(tree.body):
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
        for stmt in top_level(tree.body):
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


def parameters_of(source: str) -> dict[str, list[str]]:
    """Every public function's and public class's methods' parameter names, by qualified name
    (``f``, ``Cls.__init__``, ``Cls.method``; a dataclass without its own ``__init__``: its
    own fields, as ``Cls.__init__``), ``*args`` and ``**kwargs`` written as such. For the
    shipped history of what each release changed (bench/make_api_history.py)."""
    tree = parse(source)
    return parameters_in(tree) if tree is not None else {}


def parameters_in(tree: ast.Module) -> dict[str, list[str]]:
    """``parameters_of`` a module already parsed."""
    out: dict[str, list[str]] = {}

    def names(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
        p = _params(fn)
        return [
            *p.positional,
            *(["*args"] if p.varargs else []),
            *p.keyword_only,
            *(["**kwargs"] if p.varkw else []),
        ]

    for stmt in top_level(tree.body):
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef) and not stmt.name.startswith(
            "_"
        ):
            out[stmt.name] = names(stmt)
        elif isinstance(stmt, ast.ClassDef) and not stmt.name.startswith("_"):
            own_init = False
            for item in stmt.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) and (
                    item.name == "__init__" or not item.name.startswith("_")
                ):
                    out[f"{stmt.name}.{item.name}"] = names(item)
                    own_init = own_init or item.name == "__init__"
            if not own_init and _is_dataclass(stmt):
                out[f"{stmt.name}.__init__"] = ["self", *(n for n, _ in _fields(stmt))]
    return out
