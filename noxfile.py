"""nox sessions for envbisect itself (uv backend). Matrices get their own sessions later."""

from __future__ import annotations

import nox

nox.options.default_venv_backend = "uv"
nox.options.sessions = ["tests", "lint", "typecheck"]


@nox.session
def tests(session: nox.Session) -> None:
    """The test suite: hermetic (local index on 127.0.0.1), real uv environments."""
    session.install("-e", ".[test]")
    session.run("pytest", *session.posargs)


@nox.session
def lint(session: nox.Session) -> None:
    session.install("ruff>=0.5")
    session.run("ruff", "check", "src", "tests", "bench", "noxfile.py")
    session.run("ruff", "format", "--check", "src", "tests", "bench", "noxfile.py")


@nox.session
def typecheck(session: nox.Session) -> None:
    session.install("-e", ".[test]", "mypy>=1.10")
    session.run("mypy")
