"""Counts of how the house is built, read from the code (issue 54's before and after).

    python bench/house.py [--root DIR] [--json]

- options: the command-line options (long flags of ``build_parser()``'s subcommands, read by
  importing the tree at DIR) and, for each, the places in the options' machinery (cli/ but
  its commands, exec/, and every module named option*) that declare or read it by name: a
  string literal of its flag (``"--jobs"``) or of its destination (``"jobs"``), or a dataclass
  field of that name. The median and the most.
- getattr/hasattr on the parsed or resolved options (``getattr(args, ...)`` and the like).
- the modules that import the options' records (``envbisect.options``).
- functions longer than 80 lines, and the five longest.
- ``# fmt: skip`` lines, and modules of 495 lines or more.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import statistics
import subprocess
import sys
from pathlib import Path

_OPTS_NAMES = r"(?:args|a|opts|options|ns|parsed|ctx\.args|self\.args|draft)"
_GETATTR = re.compile(rf"\b(?:getattr|hasattr)\(\s*{_OPTS_NAMES}\s*,")

_FLAGS_SCRIPT = """
import json, argparse
from envbisect.cli.parser import build_parser
p = build_parser()
out = {}
for a in p._actions:
    if isinstance(a, argparse._SubParsersAction):
        for sub in a.choices.values():
            for b in sub._actions:
                longs = [f for f in b.option_strings if f.startswith('--')]
                if longs and longs[0] not in ('--help',):
                    out.setdefault(longs[0], b.dest)
print(json.dumps(out))
"""


def _py_files(src: Path) -> list[Path]:
    return sorted(p for p in src.rglob("*.py") if "__pycache__" not in p.parts)


def _machinery(path: Path, src: Path) -> bool:
    rel = path.relative_to(src).parts
    return (
        (rel[0] == "cli" and "commands" not in rel)
        or rel[0] == "exec"
        or any(part.startswith("option") for part in rel)
    )


def _functions(files: list[Path], root: Path) -> list[tuple[int, str]]:
    out = []
    for path in files:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                n = (node.end_lineno or node.lineno) - node.lineno + 1
                out.append((n, f"{path.relative_to(root)}:{node.name}"))
    return sorted(out, reverse=True)


def measure(root: Path) -> dict[str, object]:
    src = root / "src" / "envbisect"
    files = _py_files(src)
    texts = {p: p.read_text(encoding="utf-8") for p in files}
    flags = json.loads(
        subprocess.run(
            [sys.executable, "-c", _FLAGS_SCRIPT],
            cwd=root,
            env={"PYTHONPATH": str(root / "src"), "PATH": "/usr/bin:/bin"},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    per_option = {}
    for flag, dest in flags.items():
        pats = [re.escape(f'"{flag}"'), re.escape(f'"{dest}"'), rf"^\s+{re.escape(dest)}:\s"]
        if flag[2:].replace("-", "_") != dest:
            pats.append(re.escape(f'"{flag[2:]}"'))
        rx = re.compile("|".join(pats), re.M)
        per_option[flag] = sum(len(rx.findall(t)) for p, t in texts.items() if _machinery(p, src))
    counts = sorted(per_option.values())
    getattrs = sum(len(_GETATTR.findall(t)) for t in texts.values())
    importers = sorted(
        str(p.relative_to(root))
        for p, t in texts.items()
        if re.search(r"^\s*from envbisect\.options import|^\s*import envbisect\.options", t, re.M)
    )
    funcs = _functions(files, root)
    fmt_skips = sum(t.count("# fmt: skip") for t in texts.values())
    full = sorted(
        (len(t.splitlines()), str(p.relative_to(root)))
        for p, t in texts.items()
        if len(t.splitlines()) >= 495
    )
    return {
        "options": len(flags),
        "mentions_per_option_median": statistics.median(counts),
        "mentions_per_option_max": max(counts),
        "most_mentioned": sorted(per_option.items(), key=lambda kv: -kv[1])[:5],
        "getattr_on_options": getattrs,
        "modules_importing_options": len(importers),
        "functions_over_80_lines": sum(1 for n, _ in funcs if n > 80),
        "longest_functions": funcs[:5],
        "fmt_skip": fmt_skips,
        "modules_at_495_or_more": full,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    got = measure(a.root.resolve())
    if a.json:
        print(json.dumps(got, indent=2))
        return 0
    for key, value in got.items():
        print(f"{key}: {value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
