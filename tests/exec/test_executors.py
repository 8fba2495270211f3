"""The executor seam: a pool of worker processes (every task and record crosses a pickle, as to
another machine) gives every mode the same answers, paths and probe counts as local threads;
an environment's id says what the interpreter is, not where it lives; diff gains --jobs; and
"no answer" is one behaviour in every mode (exit 1, a report).

Real uv environments from the local index on 127.0.0.1, real worker processes.
"""

from __future__ import annotations

import json
import os
import pickle
import re
import subprocess
from datetime import timedelta
from pathlib import Path

import pytest

from conftest import RecordingProgress, write_repro
from envbisect.env.repro import Repro
from envbisect.env.worker import ProbeTask
from envbisect.errors import UsageError
from envbisect.exec.pool import GpuPool, ThreadExecutor, local_gpus
from envbisect.modes.bydate import run_by_date
from envbisect.modes.diff.mode import DiffOptions, run_diff
from envbisect.modes.living.matrix import load_matrix, run_matrix
from envbisect.modes.run import RunOptions, run_bisect
from envbisect.modes.session import Session
from support.cli import envbisect
from support.corpus import EPOCH
from support.index_server import LocalIndex
from support.options import bump_matrix, common, dateapp_by_date, flat_options

EXECUTORS = ("local", "process")


@pytest.mark.slow
def test_a_task_and_its_record_survive_a_pickle(
    index: LocalIndex, python: str, tmp_path: Path
) -> None:
    repro = Repro.from_file(str(write_repro(tmp_path, "crashy")), tmp_path)
    with Session(common(index, python, tmp_path, repro)) as session:
        spec = session.env_spec(["crashy==1.7.0"])
        rec, _ = session.probe(spec)
        task = ProbeTask(spec=spec, repro=repro, python=python, python_version="3.11",
                         envs_dir=tmp_path / "envs", runs=2, earlier=rec, offline=True)  # fmt: skip
    assert pickle.loads(pickle.dumps(task)) == task
    assert pickle.loads(pickle.dumps(rec)) == rec


@pytest.mark.slow
@pytest.mark.parametrize("jobs", [1, 2])
def test_run_is_the_same_on_worker_processes(
    index: LocalIndex, python: str, tmp_path: Path, jobs: int
) -> None:
    repro = Repro.from_file(str(write_repro(tmp_path, "crashy")), tmp_path)
    seen = {}
    for ex in EXECUTORS:
        rec = RecordingProgress()
        opts = RunOptions(
            package="crashy",
            common=common(index, python, tmp_path / ex, repro, executor=ex, jobs=jobs),
        )
        res = run_bisect(opts, rec)
        built = sum(not r.reused for r in res.rows)
        rounds = res.to_dict()["search"]["rounds"]
        seen[ex] = (res.first_new, res.last_old, rec.started, built, rounds)
    assert seen["process"] == seen["local"]
    assert seen["local"][:2] == ("1.7.0", "1.6.0")


@pytest.mark.slow
def test_by_date_is_the_same_on_worker_processes(
    index: LocalIndex, python: str, tmp_path: Path
) -> None:
    (tmp_path / "repro.py").write_text("import dateapp\ndateapp.run()\n")
    repro = Repro.build(origin=tmp_path, repro_file=str(tmp_path / "repro.py"))
    seen = {}
    for ex in EXECUTORS:
        rec = RecordingProgress()
        opts = dateapp_by_date(common(index, python, tmp_path / ex, repro, executor=ex))
        res = run_by_date(opts, rec)
        seen[ex] = (res.first_new, res.to_dict()["culprits"], rec.started, len(res.rows))
    assert seen["process"] == seen["local"]
    assert [c["package"] for c in seen["local"][1]] == ["datelib"]


def diff_options(
    index: LocalIndex, python: str, tmp_path: Path, good: str, bad: str, **kw: object
) -> DiffOptions:
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "good.txt").write_text(good)
    (tmp_path / "bad.txt").write_text(bad)
    (tmp_path / "repro.py").write_text("import dateapp\ndateapp.run()\n")
    repro = Repro.build(origin=tmp_path, repro_file=str(tmp_path / "repro.py"))
    return DiffOptions(good=str(tmp_path / "good.txt"), bad=str(tmp_path / "bad.txt"),
                       common=common(index, python, tmp_path, repro, **kw))  # fmt: skip


GOOD = "dateapp==1.0.0\ndatelib==1.1.0\nnoiselib==0.0.0\n"
BAD = "dateapp==1.0.0\ndatelib==1.4.0\nnoiselib==0.4.0\n"


@pytest.mark.slow
def test_diff_is_the_same_on_worker_processes(
    index: LocalIndex, python: str, tmp_path: Path
) -> None:
    seen = {}
    for ex in EXECUTORS:
        rec = RecordingProgress()
        res = run_diff(diff_options(index, python, tmp_path / ex, GOOD, BAD, executor=ex), rec)
        seen[ex] = (res.to_dict()["culprits"], rec.started, len(res.rows))
    assert seen["process"] == seen["local"]
    assert seen["local"][0] == [
        {"package": "datelib", "good_version": "1.2.0", "bad_version": "1.3.0"}
    ]


@pytest.mark.slow
def test_diff_with_jobs_2_same_culprits_in_fewer_rounds(
    index: LocalIndex, python: str, tmp_path: Path
) -> None:
    one = run_diff(diff_options(index, python, tmp_path / "one", GOOD, BAD))
    two = run_diff(diff_options(index, python, tmp_path / "two", GOOD, BAD, jobs=2))
    assert two.to_dict()["culprits"] == one.to_dict()["culprits"]
    assert two.to_dict()["interaction"] is one.to_dict()["interaction"] is False
    assert two.to_dict()["search"]["rounds"] < one.to_dict()["search"]["rounds"]
    assert two.to_dict()["search"]["jobs"] == 2


@pytest.mark.slow
def test_a_matrix_is_the_same_on_worker_processes(
    index: LocalIndex, python: str, tmp_path: Path
) -> None:
    path = bump_matrix(index, python, tmp_path)
    seen = {}
    for ex in EXECUTORS:
        rec = RecordingProgress()
        opts = flat_options(results=tmp_path / ex, cache_dir=tmp_path / "c", executor=ex)
        res = run_matrix(load_matrix(path), opts, progress=rec)
        cells = [(c.key, c.state, c.outcome.kind.value if c.outcome else None) for c in res.cells]
        seen[ex] = (cells, rec.started, res.counts())
    assert seen["process"] == seen["local"]


@pytest.mark.slow
def test_one_interpreter_through_two_paths_is_one_environment(
    index: LocalIndex, python: str, tmp_path: Path
) -> None:
    """A symlink to the interpreter is another path to the same interpreter: the rerun
    through it builds nothing (the ids hash what the interpreter is, not where it lives)."""
    link = tmp_path / "bin" / "python-elsewhere"
    link.parent.mkdir()
    os.symlink(python, link)
    repro = Repro.from_file(str(write_repro(tmp_path, "crashy")), tmp_path)
    first = run_bisect(RunOptions(package="crashy", common=common(index, python, tmp_path, repro)))
    rec = RecordingProgress()
    again = run_bisect(
        RunOptions(package="crashy", common=common(index, str(link), tmp_path, repro)), rec
    )
    assert (again.first_new, again.last_old) == (first.first_new, first.last_old)
    assert rec.started and all(reused for _, _, reused in rec.finished)
    assert [r.env_id for r in again.rows] == [r.env_id for r in first.rows]
    assert str(link) in again.target and str(link) not in first.target


# -- no answer: exit 1 and a report, in every mode ---------------------------------------------


def _report_of(proc: subprocess.CompletedProcess[str]) -> Path:
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("report: "))
    return Path(line.removeprefix("report: "))


@pytest.mark.slow
def test_no_answer_is_exit_1_with_a_report_in_every_mode(
    index: LocalIndex, python: str, tmp_path: Path
) -> None:
    where = ["--index-url", index.url, "--python", python, "--results", str(tmp_path / "r"),
             "--cache-dir", str(tmp_path / "c")]  # fmt: skip
    run = envbisect("run", "--package", "crashy", "--good", "1.8.0", "--bad", "1.10.0", *where,
                    "--repro", str(write_repro(tmp_path, "crashy")))  # fmt: skip
    (tmp_path / "date.py").write_text("import dateapp\ndateapp.run()\n")
    by_date = envbisect("run", "--by-date", "--with", "dateapp==1.0.0", *where,
                        "--good", (EPOCH + timedelta(days=2)).isoformat(),
                        "--bad", (EPOCH + timedelta(days=22)).isoformat(),
                        "--repro", str(tmp_path / "date.py"))  # fmt: skip
    (tmp_path / "good.txt").write_text("dateapp==1.0.0\ndatelib==1.4.0\n")
    (tmp_path / "bad.txt").write_text("dateapp==1.0.0\ndatelib==1.3.0\n")
    diff = envbisect("diff", str(tmp_path / "good.txt"), str(tmp_path / "bad.txt"), *where,
                     "--repro", str(tmp_path / "date.py"))  # fmt: skip
    for proc in (run, by_date, diff):
        assert proc.returncode == 1, proc.stderr
        assert "Traceback" not in proc.stderr
        report = _report_of(proc)
        assert report.is_file() and report.parent.parent == tmp_path / "r"
    # Each no-answer report is its own (by-date's run id now counts --any-failure too).
    assert len({_report_of(p) for p in (run, by_date, diff)}) == 3
    assert "[no-answer]" in by_date.stderr and "[no-answer]" in diff.stderr
    # --json: the result, with an error object that says why.
    data = json.loads(
        envbisect(
            "diff",
            str(tmp_path / "good.txt"),
            str(tmp_path / "bad.txt"),
            *where,
            "--repro",
            str(tmp_path / "date.py"),
            "--json",
        ).stdout
    )
    assert data["status"] == "no-answer"
    assert data["error"]["ref"] == "no-answer" and data["error"]["exit_code"] == 1
    assert "GOOD environment does not pass" in data["error"]["message"]


@pytest.mark.slow
def test_every_error_line_names_its_reference_and_json_gets_an_error_object(
    tmp_path: Path,
) -> None:
    proc = envbisect("run", "--package", "x", "--exclude-newer", "yesterday", "--json", "--",
                     "true")  # fmt: skip
    assert proc.returncode == 2
    (line,) = [ln for ln in proc.stderr.splitlines() if ln.startswith("error: ")]
    assert line.endswith("[bad-date]")
    data = json.loads(proc.stdout)
    assert data["status"] == "error"
    assert data["error"]["ref"] == "bad-date" and data["error"]["exit_code"] == 2
    assert data["error"]["hint"]


@pytest.mark.slow
def test_the_local_executor_gives_each_probe_its_own_gpus(
    index: LocalIndex, python: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two GPUs (as CUDA_VISIBLE_DEVICES names them; there is none here), one per probe, four
    jobs: two probes at a time, each seeing only its own GPU."""
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    log = tmp_path / "gpus.log"
    script = tmp_path / "gpu.py"
    script.write_text(
        "import os, time, crashy\n"
        "start = time.time(); time.sleep(1.0)\n"
        f"open({str(log)!r}, 'a').write(f\"{{os.environ['CUDA_VISIBLE_DEVICES']}} {{start}} "
        '{time.time()}\\n")\n'
        "crashy.run()\n"
    )
    repro = Repro.from_file(str(script), tmp_path)
    opts = RunOptions(
        package="crashy", common=common(index, python, tmp_path, repro, jobs=4, gpus_per_probe=1)
    )
    res = run_bisect(opts)
    assert (res.first_new, res.last_old) == ("1.7.0", "1.6.0")
    spans = [
        (d, float(a), float(b)) for d, a, b in (ln.split() for ln in log.read_text().splitlines())
    ]
    assert len(spans) >= 4 and {d for d, _, _ in spans} == {"0", "1"}
    # At each moment a probe starts, the probes running then (a span that merely overlaps
    # two others end to end is not three at once).
    for _, a, _ in spans:
        running = [e for e, c, f in spans if c <= a < f]
        assert len(running) <= 2, "more probes at once than GPUs"
        assert len(set(running)) == len(running), "two probes on one GPU at once"


@pytest.mark.slow
def test_more_gpus_per_probe_than_the_machine_has_is_a_clear_error(
    index: LocalIndex, python: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    repro = Repro.from_file(str(write_repro(tmp_path, "crashy")), tmp_path)
    opts = RunOptions(
        package="crashy", common=common(index, python, tmp_path, repro, gpus_per_probe=2)
    )
    with pytest.raises(UsageError, match="this machine has 1 GPU") as err:
        run_bisect(opts)
    assert err.value.ref == "no-gpus"


def test_the_gpus_a_probe_may_use_come_from_cuda_visible_devices(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Quick (no environment): the GPUs are CUDA_VISIBLE_DEVICES's as CUDA reads it (-1 and
    blanks: none); asking each probe for more than there are is one usage error, up front."""
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1, 0,,-1")
    assert local_gpus() == ["1", "0"]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "-1")
    assert local_gpus() == []
    with pytest.raises(UsageError, match="this machine has 1 GPU") as err:
        GpuPool(["0"], 2)
    assert err.value.ref == "no-gpus" and "--executor ray" in (err.value.hint or "")
    assert GpuPool(["1", "0"], 2).per == 2
    pool = ThreadExecutor(2)
    assert pool.name == "local"
    pool.close()


def test_a_matrix_file_may_name_every_executor_and_no_other(tmp_path: Path) -> None:
    """The names a matrix file's executor may take are exec/kinds/'s, read from the table."""
    from envbisect.exec.kinds import kinds
    from envbisect.modes.living.matrix import load_matrix

    path = tmp_path / "m.toml"
    for name in [*kinds(), "k8s"]:
        matrix = f'[matrix]\nexecutor = "{name}"\nprobes = ["import:a"]\n'
        path.write_text(matrix + '[[axis]]\npackage = "a"\n')
        if name == "k8s":
            with pytest.raises(UsageError, match=re.escape("expected local | process | ray")):
                load_matrix(path)
        else:
            assert load_matrix(path).executor == name
