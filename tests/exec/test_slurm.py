"""Probes on a real Slurm cluster on 127.0.0.1: Debian's slurm-wlm (slurmctld, two slurmd
nodes, munged) started by the tests in a folder of their own (support/slurmcluster.py); node2
declares one GPU as a GRES (there is no GPU here, so GPU *placement* is what is tested, Slurm
setting CUDA_VISIBLE_DEVICES as it would on a real one).

Every mode gives the same answers as the local executor; a GPU probe lands on the GPU node; a
job cancelled mid-probe by someone else is run again, never a verdict; a drained node gets no
job; Ctrl-C leaves no job in the queue and no probe running; bad job options and a node
without envbisect are each one clear error.
"""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from conftest import RecordingProgress, write_repro
from envbisect.env.repro import Repro
from envbisect.errors import InfrastructureError, UsageError
from envbisect.exec.kinds.slurm import SlurmSettings
from envbisect.modes.bydate import run_by_date
from envbisect.modes.living.matrix import load_matrix, run_matrix
from envbisect.modes.lock.solve import run_lock
from envbisect.modes.run import RunOptions, run_bisect
from envbisect.modes.session import Session
from envbisect.store import Store
from support.cli import on_index, probes_alive, start, wait_for_probes
from support.index_server import LocalIndex
from support.locks import options
from support.options import (
    bump_matrix,
    common,
    dateapp_by_date,
    devices_repro,
    flat_options,
    flat_with,
)
from support.slurmcluster import SlurmCluster, missing

pytestmark = pytest.mark.slow
if missing():
    pytest.skip(f"{missing()}; .ci/run installs it", allow_module_level=True)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlurmCluster]:
    """One cluster for this file, on one xdist worker at a time, and never beside the Ray
    tests' cluster (test_ray.py takes the same lock): two clusters' probes on two cores
    starve each other's timing assertions of waits (a Ray probe once took over 3 min)."""
    shared = tmp_path_factory.getbasetemp().parent
    with open(shared / "ray-tests.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        c = SlurmCluster(tmp_path_factory.mktemp("slurm"))
        saved = os.environ.get("SLURM_CONF")
        try:
            c.start({"node1": 0, "node2": 1})
            os.environ.update(c.env)  # sbatch, squeue and scancel find this cluster
            yield c
        finally:
            c.stop()
            if saved is None:
                os.environ.pop("SLURM_CONF", None)
            else:
                os.environ["SLURM_CONF"] = saved
            fcntl.flock(lock, fcntl.LOCK_UN)


def test_run_lock_and_matrix_on_slurm_are_the_same_as_local(
    index: LocalIndex, python: str, tmp_path: Path, cluster: SlurmCluster
) -> None:
    repro = Repro.from_file(str(write_repro(tmp_path, "crashy")), tmp_path)
    matrix = bump_matrix(index, python, tmp_path)
    (tmp_path / "date.py").write_text("import dateapp\ndateapp.run()\n")
    date_repro = Repro.build(origin=tmp_path, repro_file=str(tmp_path / "date.py"))
    seen: dict[str, list[Any]] = {}
    hosts: list[str] = []
    for name, extra in (
        ("local", {"jobs": 2}),
        ("slurm", {"jobs": 4, "executor": "slurm"}),
    ):
        where = tmp_path / name
        rec = RecordingProgress()
        res = run_bisect(
            RunOptions(package="crashy", common=common(index, python, where, repro, **extra)), rec
        )
        by_date = run_by_date(
            dateapp_by_date(common(index, python, where / "date", date_repro, **extra))
        )
        lock_opts = options(index, python, where / "lock", "lockone", with_reqs=("lockone==1.0.0",))
        lock = run_lock(replace(lock_opts, common=flat_with(lock_opts.common, **extra)))
        cells = run_matrix(
            load_matrix(matrix), flat_options(results=where / "m", cache_dir=where / "c", **extra)
        )
        seen[name] = [
            res.first_new,
            res.last_old,
            rec.started,
            [r.outcome.kind for r in res.rows],
            by_date.first_new,
            by_date.to_dict()["culprits"],
            lock.held_back,
            [
                (c["specifier"], c["first_bad"], c["last_good"], c["found_by"])
                for c in lock.to_dict()["constraints"]
            ],
            [(c.key, c.state, c.outcome.kind.value if c.outcome else None) for c in cells.cells],
        ]
        if name == "slurm":
            hosts = [p["host"] for p in res.to_dict()["probes"]]
            assert not list((where / "r" / ".slurm").glob("*")), "the jobs' folder is left"
    assert seen["slurm"] == seen["local"]
    assert seen["local"][:2] == ["1.7.0", "1.6.0"]
    assert seen["local"][6], "the lock should hold a package back"
    # Each probe says the node that ran it (host/node), and both nodes took jobs.
    assert hosts and all(h.split("/")[-1] in ("node1", "node2") for h in hosts)
    assert cluster.queue() == []


def test_a_gpu_probe_lands_on_the_gpu_node_and_sees_its_gpu(
    index: LocalIndex, python: str, tmp_path: Path, cluster: SlurmCluster
) -> None:
    repro = devices_repro(tmp_path)
    opts = common(index, python, tmp_path, repro, gpus_per_probe=1, executor="slurm")
    with Session(opts) as session:
        rec, reused = session.probe(session.env_spec(["crashy==1.0.0"]))
    assert not reused and rec.outcome.kind.value == "pass", rec.stderr_tail
    assert "devices=0" in rec.stdout_tail
    assert rec.host.endswith("/node2")


def test_job_options_sbatch_refuses_are_one_clear_error_at_once(
    index: LocalIndex, python: str, tmp_path: Path, cluster: SlurmCluster
) -> None:
    repro = Repro.from_file(str(write_repro(tmp_path, "crashy")), tmp_path)
    for extra, said in (
        ({"slurm": SlurmSettings(partition="nosuch")}, "partition"),
        ({"gpus_per_probe": 2}, "node configuration"),
    ):
        opts = common(index, python, tmp_path, repro, executor="slurm", **extra)
        with pytest.raises(UsageError, match="sbatch refuses") as err:
            run_bisect(RunOptions(package="crashy", common=opts))
        assert err.value.ref == "slurm-refused" and said in err.value.message.lower()
        assert "--slurm-partition" in (err.value.hint or "")
    assert cluster.queue() == []


def test_a_job_cancelled_mid_probe_is_run_again_never_a_verdict(
    index: LocalIndex, python: str, tmp_path: Path, cluster: SlurmCluster
) -> None:
    """Someone else's scancel (or a preemption) ends two running jobs: their probes run
    again in new jobs; every cell ends right and is recorded once."""
    matrix = bump_matrix(index, python, tmp_path, "slow.py", sleep=4)
    cancelled: list[str] = []

    def cancel_two_running() -> None:
        deadline = time.monotonic() + 120
        while len(cancelled) < 2 and time.monotonic() < deadline:
            for line in cluster.queue():
                job, state, _ = line.split(maxsplit=2)
                if state == "RUNNING" and job not in cancelled and len(cancelled) < 2:
                    time.sleep(2)  # into the build or the probe
                    cluster.run("scancel", job)
                    cancelled.append(job)
            time.sleep(0.3)

    killer = threading.Thread(target=cancel_two_running)
    killer.start()
    rec = RecordingProgress()
    opts = flat_options(results=tmp_path / "r", cache_dir=tmp_path / "c", jobs=4, executor="slurm")
    res = run_matrix(load_matrix(matrix), opts, full=True, progress=rec)
    killer.join()
    assert len(cancelled) == 2, "two running jobs should have been cancelled"
    kinds = {dict(c.versions)["bumplib"]: c.outcome.kind.value for c in res.cells if c.outcome}
    assert kinds == {f"1.{i}.0": ("crash" if 3 <= i <= 5 else "pass") for i in range(9)}
    finished = [label for label, _, _ in rec.finished]
    assert len(finished) == len(set(finished)) == 9  # each cell recorded once
    with Store(tmp_path / "r") as store:
        assert len(list(store.all())) == 9
    assert cluster.queue() == []


def test_a_drained_node_gets_no_job(
    index: LocalIndex, python: str, tmp_path: Path, cluster: SlurmCluster
) -> None:
    repro = Repro.from_file(str(write_repro(tmp_path, "crashy")), tmp_path)
    cluster.drain("node1", "envbisect test")
    try:
        res = run_bisect(
            RunOptions(
                package="crashy",
                common=common(index, python, tmp_path, repro, jobs=2, executor="slurm"),
            )
        )
    finally:
        cluster.resume("node1")
    assert (res.first_new, res.last_old) == ("1.7.0", "1.6.0")
    hosts = {p["host"].split("/")[-1] for p in res.to_dict()["probes"]}
    assert hosts == {"node2"}


def test_ctrl_c_cancels_every_job_and_leaves_no_probe(
    index: LocalIndex, python: str, tmp_path: Path, cluster: SlurmCluster
) -> None:
    repro = write_repro(tmp_path, "hangy")
    args = ["run", "--package", "hangy", "--jobs", "4", "--executor", "slurm"]
    args += [*on_index(index.url, python, tmp_path), "--timeout", "120", "--repro", str(repro)]
    proc = start(*args, env={**os.environ})
    assert proc.stderr is not None
    deadline = time.monotonic() + 180
    while not probes_alive(str(repro), proc.pid) and time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"envbisect ended first ({proc.returncode}): {proc.stderr.read()}")
        time.sleep(0.3)
    assert probes_alive(str(repro), proc.pid), "the hanging probe should be running"
    assert cluster.queue(), "its jobs should be in the queue"
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    assert cluster.queue() == [], "a job outlived Ctrl-C in the queue"
    assert wait_for_probes(str(repro), proc.pid, alive=False, within=30), (
        "a probe outlived Ctrl-C on its node"
    )


def test_a_node_without_envbisect_is_named(
    index: LocalIndex, python: str, tmp_path: Path, cluster: SlurmCluster
) -> None:
    """The job runs the controller's interpreter: one that has no envbisect (another
    machine's) is one clear error naming the node, at the first job, not four retries."""
    from envbisect.exec.slurm import SlurmExecutor

    bare = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True)
    repro = Repro.from_file(str(write_repro(tmp_path, "crashy")), tmp_path)
    with Session(common(index, python, tmp_path, repro)) as session:
        spec = session.env_spec(["crashy==1.0.0"])
        task = session.prober.task(_want(spec))
    ex = SlurmExecutor(1, folder=tmp_path / "jobs", python=str(bare / "bin" / "python"))
    try:
        with pytest.raises(InfrastructureError, match="could not start envbisect") as err:
            ex.submit(task).result(timeout=120)
    finally:
        ex.close()
    assert err.value.ref == "slurm-node-no-envbisect"
    assert "has no envbisect" in err.value.message and "node" in err.value.message
    assert cluster.queue() == []


def _want(spec: Any) -> Any:
    from envbisect.modes.session import Want

    return Want(label="1.0.0", spec=spec, runs=1)
