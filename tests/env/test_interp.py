"""The interpreter lookup and its facts, kept on disk between invocations (env/interp.py).

Real subprocesses throughout: the "interpreter" that counts its runs is a shell script that
prints the facts the real interpreter printed, and uv is the real uv.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from envbisect.core.target import FACTS_SCRIPT, Target
from envbisect.env.interp import FIND_TTL, INTERPRETERS, locate, run_python_json
from envbisect.env.uv import Uv, find_uv


def read_facts(python: str) -> Target:
    """The facts of ``python`` read off it directly, with no cache: what ``locate`` must give."""
    return Target.from_facts(run_python_json(python, FACTS_SCRIPT))


def counting_interpreter(tmp_path: Path, python: str) -> tuple[Path, Path]:
    """A script that answers ``-I -c FACTS_SCRIPT`` as ``python`` does, one line per run."""
    facts = json.dumps(run_python_json(python, FACTS_SCRIPT))
    runs = tmp_path / "runs"
    script = tmp_path / "bin" / "python3"
    script.parent.mkdir()
    script.write_text(f"#!/bin/sh\necho run >> '{runs}'\ncat <<'EOF'\n{facts}\nEOF\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script, runs


def test_facts_are_read_once_until_the_interpreter_changes(python: str, tmp_path: Path) -> None:
    script, runs = counting_interpreter(tmp_path, python)
    uv, cache = Uv(binary=find_uv(), offline=False), tmp_path / "cache"
    first = locate(uv, str(script), cache)
    again = locate(uv, str(script), cache)
    assert first == again == (str(script), read_facts(python))
    assert runs.read_text().count("run") == 1  # the second answer came from the disk
    script.write_text(script.read_text() + "# replaced\n")  # another size: another file
    locate(uv, str(script), cache)
    assert runs.read_text().count("run") == 2


def test_without_a_cache_every_lookup_asks(python: str, tmp_path: Path) -> None:
    script, runs = counting_interpreter(tmp_path, python)
    locate(Uv(binary=find_uv(), offline=False), str(script), None)
    locate(Uv(binary=find_uv(), offline=False), str(script), None)
    assert runs.read_text().count("run") == 2


def test_a_version_request_is_kept_for_a_while(python: str, tmp_path: Path) -> None:
    uv, cache = Uv(binary=find_uv(), offline=False), tmp_path / "cache"
    request = ".".join(read_facts(python).python_version.base_version.split(".")[:2])
    path, target = locate(uv, request, cache, now=1000.0)
    entries = [json.loads(p.read_text()) for p in (cache / INTERPRETERS).rglob("*.json")]
    finds = [e for e in entries if "path" in e]
    assert finds == [{"path": path, "at": 1000.0}]
    # Within the window the kept answer is used (its time is not renewed); after it uv is
    # asked again and the entry rewritten.
    assert locate(uv, request, cache, now=1000.0 + FIND_TTL - 1) == (path, target)
    assert [json.loads(p.read_text()) for p in (cache / INTERPRETERS).rglob("*.json")
            if "path" in json.loads(p.read_text())] == finds  # fmt: skip
    locate(uv, request, cache, now=1000.0 + FIND_TTL + 1)
    renewed = [e for p in (cache / INTERPRETERS).rglob("*.json")
               if "path" in (e := json.loads(p.read_text()))]  # fmt: skip
    assert renewed == [{"path": path, "at": 1000.0 + FIND_TTL + 1}]


def test_a_damaged_entry_is_a_miss(python: str, tmp_path: Path) -> None:
    script, runs = counting_interpreter(tmp_path, python)
    uv, cache = Uv(binary=find_uv(), offline=False), tmp_path / "cache"
    locate(uv, str(script), cache)
    for entry in (cache / INTERPRETERS).rglob("*.json"):
        entry.write_text('{"key": 1, "facts": [')
    assert locate(uv, str(script), cache)[1] == read_facts(python)
    assert runs.read_text().count("run") == 2


@pytest.mark.skipif(not hasattr(os, "uname"), reason="POSIX only")
def test_a_missing_interpreter_is_still_a_clear_error(tmp_path: Path) -> None:
    from envbisect.errors import UsageError

    with pytest.raises(UsageError) as e:
        locate(Uv(binary=find_uv(), offline=False), "2.1", tmp_path / "cache")
    assert e.value.ref == "python-not-found"
