"""The layout holds: the pure core and the strategies do no IO and reach no edge.

``core/`` and ``strategy/`` take data and return data (docs/explanation/architecture.md, "The
pure core"): they import no subprocess, network, sqlite or edge module, and call nothing that
reads or writes files. Read from the source with ``ast``, so an import hidden inside a function
counts too.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import envbisect

SRC = Path(envbisect.__file__).parent
PURE = sorted([*(SRC / "core").glob("*.py"), *(SRC / "strategy").glob("*.py")])
FORBIDDEN_MODULES = ("subprocess", "httpx", "sqlite3", "socket", "shutil", "tempfile")
FORBIDDEN_PACKAGES = ("envbisect.env", "envbisect.index", "envbisect.exec", "envbisect.modes",
                      "envbisect.cli", "envbisect.store")  # fmt: skip
FORBIDDEN_CALLS = ("open", "read_text", "write_text", "read_bytes", "write_bytes", "mkdir")


def _imports(tree: ast.AST) -> list[str]:
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            out.append(node.module)
    return out


@pytest.mark.parametrize("path", PURE, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_pure_modules_do_no_io(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for name in _imports(tree):
        assert name.split(".")[0] not in FORBIDDEN_MODULES, f"{path.name} imports {name}"
        assert not name.startswith(FORBIDDEN_PACKAGES), f"{path.name} imports {name}"
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            called = (
                f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
            )
            assert called not in FORBIDDEN_CALLS, f"{path.name}:{node.lineno} calls {called}()"


def test_modules_stay_under_about_600_lines() -> None:
    long = {p.relative_to(SRC).as_posix(): n for p in SRC.rglob("*.py")
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > 640}  # fmt: skip
    assert long == {}


PROBES = sorted((SRC / "env" / "probes").glob("*.py"))


@pytest.mark.parametrize("path", PROBES, ids=lambda p: p.name)
def test_builtin_probes_check_without_assert(path: Path) -> None:
    """``--env PYTHONOPTIMIZE=1`` strips ``assert``: a probe's check must raise explicitly,
    or it would vanish and the probe pass."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = [node.lineno for node in ast.walk(tree) if isinstance(node, ast.Assert)]
    assert found == [], f"{path.name}: assert statement(s) at line(s) {found}"


def test_the_probe_walk_sees_the_probes() -> None:
    assert {p.name for p in PROBES} >= {"_common.py", "datasets_json.py", "lora_step.py",
                                        "import_probe.py", "llamafactory_train.py"}  # fmt: skip
