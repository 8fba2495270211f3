"""Shared fixtures: a real package index on 127.0.0.1 and a private uv cache.

Everything here is hermetic: no test reaches the internet. The index is built from wheels the
tests make (support/corpus.py holds their known truth) and served over real HTTP.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from envbisect.env.repro import Repro
from envbisect.model import IndexConfig, Outcome
from envbisect.modes.run import RunOptions
from envbisect.progress import Progress
from support.corpus import build_index
from support.index_server import LocalIndex
from support.listener import Listener
from support.options import FLAT_NAMES, flat_options

INDEX_VARIABLES = (
    "UV_INDEX_URL",
    "UV_DEFAULT_INDEX",
    "UV_INDEX",
    "UV_EXTRA_INDEX_URL",
    "UV_CONFIG_FILE",
    "UV_NO_CONFIG",
    "PIP_INDEX_URL",
    "PIP_EXTRA_INDEX_URL",
    "UV_FIND_LINKS",
    "PIP_FIND_LINKS",
)


def pytest_configure(config: pytest.Config) -> None:
    """envbisect's own bytecode written once, before any test starts the CLI in a subprocess.

    An editable install has no .pyc files until a first import writes them, and none is ever
    written where PYTHONDONTWRITEBYTECODE is set (as on CI machines): every ``envbisect``
    subprocess of the suite would compile some 80 modules from source (a quarter of a second
    each time), where a user's installed copy reads bytecode. The controller writes them (an
    xdist worker finds them written); py_compile replaces each file atomically."""
    if hasattr(config, "workerinput"):
        return
    import compileall

    import envbisect

    compileall.compile_dir(Path(envbisect.__file__).parent, quiet=2, workers=1)


def split_common(kw: dict[str, object]) -> tuple[dict[str, object], dict[str, object]]:
    """Keyword arguments split into CommonOptions' and the mode's own."""
    names = FLAT_NAMES
    return {k: v for k, v in kw.items() if k in names}, {
        k: v for k, v in kw.items() if k not in names
    }


def restore_environ(saved: dict[str, str | None]) -> None:
    """Each variable of ``saved`` back to its value there (None: unset)."""
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


@pytest.fixture(scope="session", autouse=True)
def _hermetic_uv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """One uv cache for the whole session (warm environments are hard links), no downloads,
    and none of this machine's own index settings (pip.conf, uv.toml, PIP_*/UV_* variables:
    envbisect honours them, index/settings.py); the tests that read them set their own."""
    names: tuple[str, ...] = ("UV_CACHE_DIR", "UV_PYTHON_DOWNLOADS", "NO_COLOR")
    names += ("PIP_CONFIG_FILE", "XDG_CONFIG_HOME", "XDG_CONFIG_DIRS", *INDEX_VARIABLES)
    saved = {k: os.environ.get(k) for k in names}
    os.environ["UV_CACHE_DIR"] = str(tmp_path_factory.mktemp("uv-cache"))
    os.environ["UV_PYTHON_DOWNLOADS"] = "never"
    os.environ["NO_COLOR"] = "1"
    os.environ["PIP_CONFIG_FILE"] = os.devnull  # pip: read no configuration file
    empty = tmp_path_factory.mktemp("no-config")
    os.environ["XDG_CONFIG_HOME"] = str(empty)
    os.environ["XDG_CONFIG_DIRS"] = str(empty)
    for k in INDEX_VARIABLES:
        os.environ.pop(k, None)
    yield
    restore_environ(saved)


@pytest.fixture(scope="session")
def index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalIndex]:
    idx = build_index(tmp_path_factory.mktemp("index-files"))
    yield idx
    idx.stop()


@pytest.fixture
def listener() -> Iterator[Listener]:
    """A socket on 127.0.0.1 recording every connection made to it (support/listener.py)."""
    lst = Listener()
    yield lst
    lst.close()


@pytest.fixture(scope="session")
def stacks(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalIndex]:
    """An index of its own for the shapes of real stacks (tests/support/stacks.py)."""
    from support.stacks import build_stacks

    idx = build_stacks(tmp_path_factory.mktemp("stacks"))
    yield idx
    idx.stop()


@pytest.fixture(scope="session")
def python() -> str:
    """The interpreter of the candidate environments: the one running the tests."""
    return sys.executable


@pytest.fixture
def results(tmp_path: Path) -> Path:
    return tmp_path / "results"


class RecordingProgress(Progress):
    """Records what the engine reported, so tests check the path as well as the answer."""

    def __init__(self) -> None:
        self.started: list[str] = []
        self.finished: list[tuple[str, str, bool]] = []
        self.messages: list[str] = []
        self.phases: list[tuple[str, str]] = []

    def phase(self, version: str, phase: str) -> None:
        self.phases.append((version, phase))

    def message(self, text: str) -> None:
        self.messages.append(text)

    def probe_started(self, version: str, left: int, steps_left: int) -> None:
        self.started.append(version)

    def probe_finished(
        self, version: str, outcome: Outcome, seconds: float, reused: bool, drawing: str
    ) -> None:
        self.finished.append((version, outcome.kind.value, reused))


@pytest.fixture
def recorder() -> RecordingProgress:
    return RecordingProgress()


def write_repro(folder: Path, package: str) -> Path:
    """A repro that imports ``package`` and calls its ``run()``."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"repro_{package}.py"
    path.write_text(f"import {package}\n{package}.run()\nprint('{package} ok')\n")
    return path


def run_options(
    index: LocalIndex, python: str, results: Path, package: str, tmp_path: Path, **kw: object
) -> RunOptions:
    """RunOptions for ``package`` on ``index``, its repro (``write_repro``) in
    ``tmp_path/repro``; ``kw``: CommonOptions' fields and run's own (``split_common``)."""
    repro = Repro.from_file(str(write_repro(tmp_path / "repro", package)), tmp_path)
    common, own = split_common(kw)
    return RunOptions(
        package=package,
        common=flat_options(
            repro=repro,
            indexes=IndexConfig(index_url=index.url),
            python=python,
            results=results,
            **common,
        ),
        **own,  # type: ignore[arg-type]
    )
