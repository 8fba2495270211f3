"""``--json`` of every mode, byte for byte against golden files (tests/data/golden/).

The real CLI, in this process, on the local index: run (found, no answer, dry run), run
--by-date, diff, lock, matrix, probe, repro and commits. Only what differs from one run or
machine to the next is normalised (timings, temporary paths, the index's port, environment
and run ids that hash them, the host, the interpreter's description); everything else,
key order included, must match. A refactor of the results keeps these passing; a change on
purpose is written with ``ENVBISECT_UPDATE_GOLDEN=1`` and listed in docs/reference/json.md.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from envbisect.cli.main import main
from support import gitrepos
from support.corpus import EPOCH
from support.index_server import LocalIndex

pytestmark = pytest.mark.slow

GOLDEN = Path(__file__).parent / "data" / "golden"
UPDATE = os.environ.get("ENVBISECT_UPDATE_GOLDEN") == "1"
# Values that differ per run or per machine: each becomes "<key>".
VARYING = frozenset(
    {"build_seconds", "probe_seconds", "env_id", "host", "target", "machine", "measured",
     "targets", "output", "date", "run", "checked"}
)  # fmt: skip
_RUN_ID = re.compile(r"^(?P<name>[a-z0-9._-]+)-[0-9a-f]{8}$")
_RUN_DIR = re.compile(r"(?P<name>[a-z0-9._()-]+)-[0-9a-f]{8}\b")


def normalise(data: Any, subs: list[tuple[str, str]]) -> Any:
    """``data`` with what varies replaced: VARYING keys, then every string's ``subs``."""
    run_ids: list[str] = []
    _collect(data, "run_id", run_ids)
    subs = [*subs, *((r, "<run_id>") for r in run_ids if _RUN_ID.match(r))]
    return _walk(data, "", subs)


def _collect(data: Any, key: str, out: list[str]) -> None:
    if isinstance(data, dict):
        for k, v in data.items():
            if k == key and isinstance(v, str):
                out.append(v)
            _collect(v, key, out)
    elif isinstance(data, list):
        for v in data:
            _collect(v, key, out)


def _walk(data: Any, key: str, subs: list[tuple[str, str]]) -> Any:
    if isinstance(data, dict):
        return {k: _walk(v, k, subs) for k, v in data.items()}
    if isinstance(data, list):
        return [_walk(v, key, subs) for v in data]
    if key in VARYING and data is not None:
        return f"<{key}>"
    if isinstance(data, str):
        for old, new in subs:
            data = data.replace(old, new)
    return data


@pytest.fixture(scope="module")
def gindex(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalIndex]:
    idx = gitrepos.build_index(tmp_path_factory.mktemp("git-index"))
    yield idx
    idx.stop()


class Golden:
    """Runs the CLI with ``--json`` and checks its stdout against one golden file."""

    def __init__(
        self,
        capsys: pytest.CaptureFixture[str],
        tmp: Path,
        indexes: list[LocalIndex],
        python: str,
    ) -> None:
        self.capsys, self.tmp, self.python = capsys, tmp, python
        self.subs = [(ix.url, "<index>") for ix in indexes]
        self.subs += [(str(tmp), "<tmp>"), (python, "<python>")]

    def check(self, name: str, *args: str, code: int = 0) -> dict[str, Any]:
        self.capsys.readouterr()
        got = main([*args, "--json"] if "--" not in args else _json_before_tail(args))
        out, err = self.capsys.readouterr()
        assert got == code, err
        data = json.loads(out)
        text = json.dumps(normalise(data, self.subs), indent=2) + "\n"
        path = GOLDEN / f"{name}.json"
        if UPDATE:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        assert text == path.read_text(encoding="utf-8"), f"{name}: --json changed"
        return dict(data)

    def check_text(self, name: str, *args: str, code: int = 0) -> None:
        """The same command without ``--json``: its text on stdout (the store answers)."""
        self.capsys.readouterr()
        got = main(list(args))
        out, err = self.capsys.readouterr()
        assert got == code, err
        for old, new in self.subs:
            out = out.replace(old, new)
        out = _RUN_DIR.sub(r"\g<name>-<hash>", out)
        path = GOLDEN / f"{name}.txt"
        if UPDATE:
            path.write_text(out, encoding="utf-8")
        assert out == path.read_text(encoding="utf-8"), f"{name}: the text changed"


def _json_before_tail(args: tuple[str, ...]) -> list[str]:
    cut = args.index("--")
    return [*args[:cut], "--json", *args[cut:]]


@pytest.fixture
def golden(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, index: LocalIndex, python: str
) -> Golden:
    return Golden(capsys, tmp_path, [index], python)


def common(index: LocalIndex, python: str, tmp: Path) -> list[str]:
    return ["--index-url", index.url, "--python", python, "--results", str(tmp / "r"),
            "--cache-dir", str(tmp / "c")]  # fmt: skip


def repro(tmp: Path, body: str, name: str = "repro.py") -> str:
    path = tmp / name
    path.write_text(body, encoding="utf-8")
    return str(path)


RAISY = "import raisy\nraisy.run()\n"
DATEAPP = "import dateapp\ndateapp.run()\n"


def test_run(golden: Golden, index: LocalIndex, python: str, tmp_path: Path) -> None:
    args = ["run", "--package", "raisy", *common(index, python, tmp_path),
            "--repro", repro(tmp_path, RAISY)]  # fmt: skip
    data = golden.check("run", *args)
    assert (data["status"], data["first_bad"], data["last_good"]) == ("found", "1.5.0", "1.4.0")
    # Asked again, every answer comes from the store: the same object but for probes/reused.
    again = golden.check("run-again", *args)
    assert again["probes"] == [] and len(again["reused"]) == len(data["probes"])
    golden.check_text("run", *args)
    golden.check("run-no-answer", *args, "--good", "1.0.0", "--bad", "1.2.0", code=1)
    golden.check_text("run-no-answer", *args, "--good", "1.0.0", "--bad", "1.2.0", code=1)
    golden.check("run-dry-run", *args, "--dry-run")


def test_run_fix_search(golden: Golden, index: LocalIndex, python: str, tmp_path: Path) -> None:
    """fixy raises until 1.3.0: the fix search's keys."""
    args = ["run", "--package", "fixy", *common(index, python, tmp_path),
            "--repro", repro(tmp_path, "import fixy\nfixy.run()\n")]  # fmt: skip
    data = golden.check("run-fix", *args)
    golden.check_text("run-fix", *args)
    assert (data["direction"], data["first_fixed"]) == ("fix", "1.3.0")


def test_run_by_date(golden: Golden, index: LocalIndex, python: str, tmp_path: Path) -> None:
    good, bad = ((EPOCH + timedelta(days=d)).isoformat() for d in (2, 45))
    args = ["run", "--by-date", "--good", good, "--bad", bad, "--with", "dateapp==1.0.0",
            *common(index, python, tmp_path), "--repro", repro(tmp_path, DATEAPP)]  # fmt: skip
    data = golden.check("by-date", *args)
    golden.check_text("by-date", *args)
    assert data["culprits"][0]["package"] == "datelib"


def test_diff(golden: Golden, index: LocalIndex, python: str, tmp_path: Path) -> None:
    (tmp_path / "good.txt").write_text("dateapp==1.0.0\ndatelib==1.1.0\nnoiselib==0.0.0\n")
    (tmp_path / "bad.txt").write_text("dateapp==1.0.0\ndatelib==1.4.0\nnoiselib==0.4.0\n")
    args = ["diff", str(tmp_path / "good.txt"), str(tmp_path / "bad.txt"),
            *common(index, python, tmp_path), "--repro", repro(tmp_path, DATEAPP)]  # fmt: skip
    data = golden.check("diff", *args)
    golden.check_text("diff", *args)
    assert data["culprits"] == [
        {"package": "datelib", "good_version": "1.2.0", "bad_version": "1.3.0"}
    ]
    # GOOD does not pass: no answer, the result and the error.
    swapped = ["diff", str(tmp_path / "bad.txt"), str(tmp_path / "good.txt"),
               *common(index, python, tmp_path), "--repro", repro(tmp_path, DATEAPP)]  # fmt: skip
    golden.check("diff-no-answer", *swapped, code=1)
    golden.check_text("diff-no-answer", *swapped, code=1)


def test_lock(golden: Golden, index: LocalIndex, python: str, tmp_path: Path) -> None:
    body = "import lockone\nlockone.run()\n"
    args = ["lock", "--with", "lockone==1.0.0", *common(index, python, tmp_path),
            "--repro", repro(tmp_path, body)]  # fmt: skip
    data = golden.check("lock", *args)
    golden.check_text("lock", *args)
    assert [c["package"] for c in data["constraints"]] == ["lk-alpha"]
    golden.check("lock-dry-run", *args, "--dry-run")


def test_lock_upgrade_mode(golden: Golden, index: LocalIndex, python: str, tmp_path: Path) -> None:
    """--from an old lock: delta debugging against it (lock's use of diff's engine), an
    interaction (lockpair fails with lk-tie-a 2 and lk-tie-b 2 together)."""
    old = tmp_path / "old.txt"
    old.write_text("lockpair==1.0.0\nlk-tie-a==1.0.0\nlk-tie-b==1.0.0\n")
    body = "import lockpair\nlockpair.run()\n"
    args = ["lock", "--from", str(old), *common(index, python, tmp_path),
            "--repro", repro(tmp_path, body)]  # fmt: skip
    data = golden.check("lock-from", *args)
    golden.check_text("lock-from", *args)
    assert [c["interaction"] for c in data["constraints"]] == [["lk-tie-a"]]
    # A starting point that fails too (lk-alpha 1.3.0 dropped what lockone uses): lock says
    # so and follows the failure down from the newest environment (the descent). With
    # --strategy history: auto would hold lk-alpha back first, the failure naming it.
    (tmp_path / "broken.txt").write_text("lockone==1.0.0\nlk-alpha==1.3.0\n")
    broken = ["lock", "--from", str(tmp_path / "broken.txt"), "--strategy", "history",
              *common(index, python, tmp_path),
              "--repro", repro(tmp_path, "import lockone\nlockone.run()\n")]  # fmt: skip
    data = golden.check("lock-from-descent", *broken)
    golden.check_text("lock-from-descent", *broken)
    assert [(c["package"], c["found_by"]) for c in data["constraints"]] == [("lk-alpha", "descent")]


def test_probe(golden: Golden, index: LocalIndex, python: str, tmp_path: Path) -> None:
    args = [*common(index, python, tmp_path), "--repro", repro(tmp_path, RAISY)]
    golden.check("probe-fails", "probe", "--with", "raisy==1.5.0", *args, code=4)
    golden.check("probe-repeat", "probe", "--with", "raisy==1.2.0", "--repeat", "2", *args)


def test_repro(golden: Golden, index: LocalIndex, python: str, tmp_path: Path) -> None:
    py = f"{sys.version_info.major}.{sys.version_info.minor}"
    error = ("```\nTraceback (most recent call last):\n  File \"/home/me/repro.py\", line 2, in "
             f"<module>\n    raisy.run()\n  File \"/home/me/.venv/lib/python{py}/site-packages/"
             "raisy/__init__.py\", line 3, in run\n    raise ValueError('raisy broke')\n"
             "ValueError: raisy broke\n```\n")  # fmt: skip
    text = (f"### System Info\n\n```text\n$ pip freeze\nraisy==1.5.0\nhelperlib==1.0.0\n```\n\n"
            f"### Reproduction\n\n```python\n{RAISY}```\n\nIt fails:\n\n{error}")  # fmt: skip
    issue = tmp_path / "issue.md"
    issue.write_text(text, encoding="utf-8")
    golden.check("repro", "repro", str(issue), *common(index, python, tmp_path))


MATRIX = """
[matrix]
name = "grid"
python = ["{python}"]
index_url = "{index}"
repro = "repro.py"
timeout = 60

[[axis]]
package = "gridapp"
versions = ["1.3.0", "1.4.0"]

[[axis]]
package = "gridlib"
versions = ["1.2.0", "1.3.0"]
"""


def test_matrix(golden: Golden, index: LocalIndex, python: str, tmp_path: Path) -> None:
    (tmp_path / "repro.py").write_text("import gridapp\ngridapp.run()\n")
    path = tmp_path / "grid.toml"
    path.write_text(MATRIX.format(python=python, index=index.url))
    data = golden.check("matrix", "matrix", str(path), "--results", str(tmp_path / "r"),
                        "--cache-dir", str(tmp_path / "c"))  # fmt: skip
    assert data["counts"]["cells"] == 4


@pytest.mark.skipif(shutil.which("git") is None, reason="the commit search needs git")
def test_commits(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    gindex: LocalIndex,
    python: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    repo = gitrepos.make_gitpkg(tmp_path / "repos" / "example" / "gitpkg")
    golden = Golden(capsys, tmp_path, [gindex], python)
    body = "import gitpkg\ngitpkg.run()\n"
    args = ["--with", "gitdep<2", *common(gindex, python, tmp_path), "--repro",
            repro(tmp_path, body), "--repo", str(repo.path)]  # fmt: skip
    ends = ["commits", "--package", "gitpkg", "--good", "1.0.0", "--bad", "2.0.0", *args]
    data = golden.check("commits", *ends)
    golden.check_text("commits", *ends)
    assert data["first_bad_commit"]["sha"] == repo.main[14]
    run = golden.check("run-commits", "run", "--package", "gitpkg", "--commits", *args)
    golden.check_text("run-commits", "run", "--package", "gitpkg", "--commits", *args)
    assert run["first_bad_commit"]["sha"] == repo.main[14]
