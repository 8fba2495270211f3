"""nox sessions (uv backend): the project's own checks, and the compatibility matrices.

nox -s tests lint typecheck
nox -s quick                                    # the quick tier: pytest -m "not slow"
nox -s docs                                     # the docs site, mkdocs build --strict: site/
nox -s bench [-- --full]                      # the benches: docs/explanation/figures.md
nox -s matrix -- matrices/datasets-pyarrow.toml [--jobs 2 --full ...]
nox -s "matrix_file(name='datasets-pyarrow')"  # one session per matrices/*.toml
"""

from __future__ import annotations

from pathlib import Path

import nox

nox.options.default_venv_backend = "uv"
nox.options.sessions = ["tests", "lint", "typecheck"]

MATRICES = sorted(p.stem for p in Path("matrices").glob("*.toml"))
PYPROJECT = nox.project.load_toml("pyproject.toml")


def group(name: str) -> list[str]:
    """A PEP 735 dependency group of pyproject.toml, as requirements to install."""
    return list(nox.project.dependency_groups(PYPROJECT, name))


@nox.session
def tests(session: nox.Session) -> None:
    """The test suite: hermetic (local index on 127.0.0.1), real uv environments."""
    session.install("-e", ".", *group("test"))
    session.run("pytest", "-n", "auto", *session.posargs)


@nox.session
def quick(session: nox.Session) -> None:
    """The quick tier while developing: every test not marked slow (pytest -m "not slow"), each
    module still exercised; CI runs them all (nox -s tests)."""
    session.install("-e", ".", *group("test"))
    session.run("pytest", "-m", "not slow", *session.posargs)


@nox.session
def fuzz(session: nox.Session) -> None:
    """Every parser of untrusted text fuzzed with the long budget (tests/test_fuzz.py, by the
    formats' grammars, and the wheel reader against zipfile; the quick tier runs a short one).
    Scheduled weekly by .github/workflows/fuzz.yml."""
    session.install("-e", ".", *group("test"))
    tests = ["tests/test_fuzz.py", "tests/index/test_wheelmeta.py"]
    session.run("pytest", *tests, *session.posargs, env={"ENVBISECT_FUZZ": "long"})


@nox.session
def lint(session: nox.Session) -> None:
    session.install("ruff>=0.5")
    session.run("ruff", "check", "src", "tests", "bench", "docs", "noxfile.py")
    session.run("ruff", "format", "--check", "src", "tests", "bench", "docs", "noxfile.py")


@nox.session
def typecheck(session: nox.Session) -> None:
    session.install("-e", ".[ray]", *group("dev"))  # with Ray: exec/ray.py is typed against it
    session.run("mypy")


@nox.session
def docs(session: nox.Session) -> None:
    """The docs site into site/, strict: a broken link or anchor, or a reference page the
    hook cannot generate (docs/hooks.py), fails the build. nox -s docs -- serve: mkdocs serve."""
    session.install("-e", ".", *group("docs"))
    if session.posargs[:1] == ["serve"]:
        session.run("mkdocs", "serve", *session.posargs[1:])
    else:
        session.run("mkdocs", "build", "--strict", *session.posargs)


@nox.session
def bench(session: nox.Session) -> None:
    """Run the benches side by side with uv and pip and write docs/explanation/figures.md
    (bench/figures.py: --quick by default, -- --full for every size; -- --only NAME,...)."""
    session.install("-e", ".", *group("test"))
    session.run("python", "bench/figures.py", *(session.posargs or ["--quick"]))


@nox.session
def matrix(session: nox.Session) -> None:
    """Run one matrix file and publish its tables: nox -s matrix -- matrices/NAME.toml."""
    if not session.posargs:
        session.error("name a matrix file: nox -s matrix -- matrices/NAME.toml")
    session.install("-e", ".")
    session.run("envbisect", "matrix", *session.posargs)


@nox.session
@nox.parametrize("name", MATRICES)
def matrix_file(session: nox.Session, name: str) -> None:
    """One session per matrices/*.toml; extra arguments go to envbisect matrix."""
    session.install("-e", ".")
    session.run("envbisect", "matrix", f"matrices/{name}.toml", *session.posargs)
