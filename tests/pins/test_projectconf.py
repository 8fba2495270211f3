"""A repository's ``[tool.envbisect]`` defaults: read from the nearest pyproject.toml, under
the command line's flags, each value's source said (the index line always, the rest with
-v); a bad table is a clear error; ``--no-config`` sets it aside. The real CLI against the
tests' index, and the table's reading in-process."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import pytest

from envbisect.cli import projectconf
from envbisect.cli.optionset import Draft, Origin, Source
from envbisect.errors import UsageError
from support.cli import assert_clean_error, envbisect
from support.index_server import LocalIndex


def project(root: Path, table: str) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text(f'[project]\nname = "mine"\n\n[tool.envbisect]\n{table}')
    (root / "src").mkdir(exist_ok=True)
    return root / "src"


def clean_env() -> dict[str, str]:
    drop = ("UV_INDEX", "PIP_", "UV_PYTHON", "VIRTUAL_ENV")
    return {k: v for k, v in os.environ.items() if not k.startswith(drop)}


def test_the_table_sets_what_the_command_line_does_not(
    index: LocalIndex, python: str, tmp_path: Path
) -> None:
    work = project(tmp_path / "proj", f'index-url = "{index.url}"\npython = "{python}"\n')
    proc = envbisect("versions", "crashy", "-v", "--json", cwd=work, env=clean_env())
    assert proc.returncode == 0, proc.stderr
    origin = f"[tool.envbisect] in {tmp_path / 'proj' / 'pyproject.toml'}"
    assert f"envbisect: index: {index.url} ({origin})" in proc.stderr
    assert f"envbisect: from {origin}: python = {python!r}" in proc.stderr
    # A flag wins over the table, and then the table's value is not said as taken.
    other = f"{index.base}/html"
    proc = envbisect("versions", "crashy", "-v", "--index-url", other, "--python", python,
                     cwd=work, env=clean_env())  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert f"index: {other} (--index-url)" in proc.stderr and "python = " not in proc.stderr
    # --no-config: the table is set aside with the other settings (PyPI, the default).
    proc = envbisect("versions", "crashy", "--no-config", "--offline", "--python", python,
                     cwd=work, env=clean_env())  # fmt: skip
    assert "index: https://pypi.org/simple (default)" in proc.stderr


def test_a_bad_table_is_a_clear_error(tmp_path: Path) -> None:
    work = project(tmp_path / "a", 'index_url = "https://x"\n')
    proc = envbisect("versions", "crashy", cwd=work, env=clean_env())
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "unknown key 'index_url'" in proc.stderr and "[bad-config]" in proc.stderr
    assert "hint: did you mean index-url?" in proc.stderr  # a typo: the key it may mean
    work = project(tmp_path / "c", 'zzz = "https://x"\n')
    proc = envbisect("versions", "crashy", cwd=work, env=clean_env())
    assert_clean_error(proc, 2, "unknown key 'zzz'")
    assert "hint: the keys it may set: index-url, extra-index-url" in proc.stderr
    work = project(tmp_path / "b", "jobs = 0\n")
    with pytest.raises(UsageError, match="jobs must be a whole number from 1 to 256, not 0"):
        projectconf.find(work)
    # The table's value is checked by the flag's own type: --jobs 300 is refused, so is this.
    work = project(tmp_path / "d", "jobs = 300\n")
    with pytest.raises(UsageError, match="jobs must be a whole number from 1 to 256, not 300"):
        projectconf.find(work)
    proc = envbisect("run", "--package", "x", "--jobs", "300", cwd=work)
    assert proc.returncode == 2 and "must be at most 256" in proc.stderr


def test_paths_are_the_projects_and_values_are_typed(tmp_path: Path) -> None:
    work = project(tmp_path / "p", 'results = "out"\nfind-links = ["wheels", "https://w/x"]\n'
                   'probe = ["import:mine"]\njobs = 2\ntimeout = 30\n')  # fmt: skip
    (work / "deeper").mkdir()
    conf = projectconf.find(work / "deeper")  # the nearest pyproject.toml above
    assert conf is not None
    assert conf.values["results"] == tmp_path / "p" / "out"
    assert conf.values["find-links"] == [str(tmp_path / "p" / "wheels"), "https://w/x"]
    parsed = argparse.Namespace(results=Path("results"), probes=[], jobs=1, timeout=600.0,
                                python=None)  # fmt: skip
    draft = Draft(parsed, typed={"jobs"})  # envbisect run --jobs 4 ...
    taken = projectconf.apply(draft, conf)
    opts = draft.freeze(conf)
    assert opts.results == tmp_path / "p" / "out" and opts.probes == ["import:mine"]
    assert opts.jobs == 1 and opts.timeout == 30.0  # --jobs on the command line wins
    assert opts.origin("timeout") == Origin(Source.PROJECT, conf.origin)
    assert opts.origin("jobs").source is Source.FLAG
    assert [t.split(" = ")[0] for t in taken] == ["results", "probe", "timeout"]
    assert parsed.timeout == 600.0 and parsed.probes == []  # what argparse read: never written
    assert projectconf.find(tmp_path) is None  # no pyproject.toml at or above
