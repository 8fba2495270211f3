"""Write the API history ``envbisect check`` ships (src/envbisect/data/apihistory.json.gz):
for the packages of the training stack, what each release added and removed, per module.

    python bench/make_api_history.py [--since 2022-06-01] [--only transformers] [--jobs 4]

For each package, every final release uploaded since ``--since`` that has a wheel for CPython
3.11 on Linux (or a pure one): the wheel's modules (every ``.py``, at any depth, and
extension modules), and for the public modules (no part starting with ``_``, no tests) what
they offer: the names defined at their top, in a lazy ``_import_structure`` table, or brought
by ``from .x import *`` (x's ``__all__``, else its public names), and the parameters of their
public functions and of their public classes' methods (core/evidence/signatures.py). Kept is
only what changed from one release to the next: modules added and removed, names added and
removed per module, parameters added and removed per function. A name that never changed in
the window is not in the file, nor needed: a failure names what changed.

A wheel up to ``WHOLE`` bytes is downloaded whole (a temporary file, never kept); a larger one
(vllm, bitsandbytes) is read by range requests, its modules at depth two or less only. Each
module is judged once per content (the central directory's CRC and size): consecutive
releases share most files. Requests go to PyPI through envbisect's own index client.
"""

from __future__ import annotations

import argparse
import ast
import gzip
import json
import sys
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from envbisect.core.evidence import apisource, signatures
from envbisect.index.client import IndexClient
from envbisect.index.wheelfiles import WheelFiles
from envbisect.model import DistFile, IndexConfig
from envbisect.modes.releasereads import Releases

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "src" / "envbisect" / "data" / "apihistory.json.gz"
STACK = (
    "transformers",
    "trl",
    "peft",
    "accelerate",
    "datasets",
    "huggingface-hub",
    "tokenizers",
    "pyarrow",
    "numpy",
    "vllm",
    "deepspeed",
    "bitsandbytes",
    "gradio",
    "diffusers",
    "fsspec",
    "tyro",
    "pydantic",
    "llamafactory",
    "torchvision",
    "scipy",
    "pillow",
    "sentence-transformers",
)
WHOLE = 80 * 1024 * 1024
DEPTH = 2  # module depth read from a wheel too large to download
MANY = 80  # past this many releases in the window, only each minor's first is read

Facts = dict[str, Any]  # {"modules": [...], "names": {module: [...]}, "params": {qual: [...]}}


def _module(member: str) -> str | None:
    """The import path of a wheel member that is a module (source or extension), else None."""
    path = member.removesuffix(".py")
    if not member.endswith(".py"):
        stem = member.rsplit("/", 1)[-1].split(".", 1)[0]
        if not member.endswith((".so", ".pyd")):
            return None
        path = member.rsplit("/", 1)[0] + "/" + stem if "/" in member else stem
    parts = [p for p in path.split("/") if p != "__init__"]
    if not parts or not all(p.isidentifier() for p in parts):
        return None
    return ".".join(parts)


def _kept(module: str) -> bool:
    """The public modules judged: to depth three (``pkg.sub.mod``), transformers' model
    modules (``transformers.models.llama.modeling_llama``, where its imports fail most), and
    configuration modules at any depth (``peft.tuners.lora.config``: a config a newer release
    saved meets an older one's constructor)."""
    parts = module.split(".")
    if len(parts) <= 3 or parts[-1] == "config" or parts[-1].endswith("_config"):
        return True
    return (
        parts[1] == "models"
        and len(parts) == 4
        and parts[3].startswith(("modeling_", "configuration_", "tokenization_"))
    )


def _public(module: str) -> bool:
    parts = module.split(".")
    return not any(p.startswith("_") or p in ("tests", "test", "testing") for p in parts)


def _own_names(tree: ast.Module) -> set[str]:
    """The names a module defines itself (functions, classes, assignments), not imports."""
    out: set[str] = set()
    for stmt in apisource.top_level(tree.body):
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            out.add(stmt.name)
        elif isinstance(stmt, ast.Assign):
            for t in stmt.targets:
                out.update(apisource.targets(t))
        elif isinstance(stmt, ast.AnnAssign):
            out.update(apisource.targets(stmt.target))
    return out


class Judge:
    """Each module source judged once per content, whatever release it is in."""

    def __init__(self) -> None:
        self.memo: dict[tuple[str, int, int], tuple[set[str], list[str], dict[str, list[str]]]] = {}

    def of(self, key: tuple[str, int, int], module: str, text: str, package: bool) -> Any:
        if key not in self.memo:
            tree = apisource.parse(text)
            if tree is None:
                self.memo[key] = (set(), [], {})
            else:
                # A package's __init__ offers what it imports (its API); a plain module only
                # what it defines and lists: what it imports for itself churns, unasked for.
                offered = apisource.defined_names(tree) if package else _own_names(tree)
                names = {n for n in offered | apisource.lazy_names(tree) if not n.startswith("_")}
                listed = apisource.all_names(tree)
                names |= {n for n in listed or () if not n.startswith("_")}
                stars = list(apisource.star_sources(tree, module, package))
                # a model's methods change with every release (forward's arguments): their
                # constructors are kept, the rest of the stack's every public function
                params = signatures.parameters_in(tree)
                if ".models." in module:
                    params = {q: p for q, p in params.items() if q.endswith("__init__")}
                self.memo[key] = (names, stars, params)
        return self.memo[key]


def facts(client: IndexClient, f: DistFile, judge: Judge) -> Facts:
    """One release's modules, the names each public module offers, and its parameters."""
    whole = f.size is not None and f.size <= WHOLE
    with client.wheel(f, whole=whole) as w:
        members = w.names()
        modules = sorted({m for x in members if (m := _module(x)) is not None})
        own: dict[str, tuple[set[str], list[str], dict[str, list[str]]]] = {}
        for member in members:
            module = _module(member)
            if module is None or not member.endswith(".py") or not _public(module):
                continue
            if not whole and module.count(".") >= DEPTH:
                continue
            if not _kept(module):
                continue
            crc = w.crc(member) if isinstance(w, WheelFiles) else None
            if crc is None:
                continue
            key = (member, *crc)
            if key in judge.memo:  # the same content as in another release: judged once
                own[module] = judge.memo[key]
                continue
            data = w.read(member)
            if data is None:
                continue
            own[module] = judge.of(
                key, module, data.decode("utf-8", "replace"), member.endswith("__init__.py")
            )
    names: dict[str, list[str]] = {}
    params: dict[str, list[str]] = {}

    def offered(module: str, seen: frozenset[str]) -> set[str]:
        if module not in own or module in seen:
            return set()
        got, stars, _ = own[module]
        out = set(got)
        for s in stars:
            out |= offered(s, seen | {module})
        return out

    for module in own:
        names[module] = sorted(offered(module, frozenset()))
        for qual, ps in own[module][2].items():
            params[f"{module}.{qual}"] = ps
    return {"modules": modules, "names": names, "params": params}


def _diff(old: list[str], new: list[str]) -> dict[str, list[str]]:
    a, b = set(old), set(new)
    out = {}
    if b - a:
        out["+"] = sorted(b - a)
    if a - b:
        out["-"] = sorted(a - b)
    return out


def changes(prev: Facts, now: Facts) -> dict[str, Any]:
    """What ``now`` changed from ``prev``: modules, names per module, parameters per function
    (a module or function that appears or leaves is a module or name change, not repeated)."""
    out: dict[str, Any] = {}
    mods = _diff(prev["modules"], now["modules"])
    if mods:
        out["modules"] = mods
    names = {}
    for module in sorted(set(prev["names"]) & set(now["names"])):
        d = _diff(prev["names"][module], now["names"][module])
        if d:
            names[module] = d
    for module in sorted(set(now["names"]) - set(prev["names"])):
        if module in prev["modules"]:  # a module made public, or read now: its names came
            names[module] = {"+": now["names"][module]}
    if names:
        out["names"] = names
    params = {}
    for qual in sorted(set(prev["params"]) & set(now["params"])):
        d = _diff(prev["params"][qual], now["params"][qual])
        if d:
            params[qual] = d
    if params:
        out["params"] = params
    return out


def history(client: IndexClient, package: str, since: datetime, jobs: int) -> dict[str, Any]:
    rels = Releases(client, (3, 11)).of(package) or []
    rels = [r for r in rels if r.file.is_wheel and (r.file.upload_time or since) >= since]
    if len(rels) > MANY:  # the first release of each minor, and the newest: names change there
        firsts: dict[tuple[int, ...], Any] = {}
        for r in rels:
            firsts.setdefault(r.version.release[:2], r)
        rels = sorted({*firsts.values(), rels[-1]}, key=lambda r: r.version)
    judge = Judge()
    with ThreadPoolExecutor(jobs) as pool:
        read = list(pool.map(lambda r: facts(client, r.file, judge), rels))
    out: dict[str, Any] = {"releases": [str(r.version) for r in rels], "changes": {}}
    for i in range(1, len(rels)):
        c = changes(read[i - 1], read[i])
        if c:
            out["changes"][str(rels[i].version)] = c
    return out


def _progress(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    ap.add_argument("--since", default="2022-06-01")
    ap.add_argument("--only", action="append", default=[])
    ap.add_argument("--jobs", type=int, default=4)
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    since = datetime.fromisoformat(args.since).replace(tzinfo=timezone.utc)
    data: dict[str, Any] = {"packages": {}}
    if args.only and args.out.exists():
        data = json.loads(gzip.decompress(args.out.read_bytes()))
    with IndexClient(IndexConfig()) as client:
        for package in args.only or STACK:
            started = datetime.now(timezone.utc)
            data["packages"][package] = history(client, package, since, args.jobs)
            took = (datetime.now(timezone.utc) - started).total_seconds()
            n = len(data["packages"][package]["releases"])
            _progress(f"{package}: {n} releases in {took:.0f} s")
    data["written"] = datetime.now(timezone.utc).strftime("%Y-%m-%d")
    data["since"] = args.since
    data["python"] = "3.11"
    raw = json.dumps(data, sort_keys=True, separators=(",", ":")).encode()
    # mtime=0: the same data gives the same bytes (a reviewer's diff shows only what changed)
    args.out.write_bytes(gzip.compress(raw, mtime=0))
    _progress(f"wrote {args.out}: {len(raw)} bytes of JSON, {args.out.stat().st_size} gzipped")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
