"""Probes on a real Ray cluster on 127.0.0.1: a head and a second node started with
``ray start --address`` (the second declares ``--num-gpus 1``: there is no GPU here, so GPU
*placement* is what is tested, Ray pinning CUDA_VISIBLE_DEVICES as it would on a real one).

Every mode gives the same answers as the local executor; a GPU probe lands on the GPU node;
Ray listens on loopback only; a node killed mid-matrix costs only its probes; Ctrl-C leaves no
probe behind; a node without envbisect, or with another version, is one clear error.
"""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from support.options import flat_options

pytest.importorskip(
    "ray", reason="Ray is not installed (pip install 'envbisect-ml[ray]'; .ci/run installs it)"
)

from conftest import RecordingProgress, restore_environ, write_repro
from envbisect.env.repro import Repro
from envbisect.env.worker import ProbeTask
from envbisect.errors import InfrastructureError, UsageError
from envbisect.exec.ray import RayExecutor
from envbisect.modes.bydate import run_by_date
from envbisect.modes.diff.mode import DiffOptions, run_diff
from envbisect.modes.living.matrix import load_matrix, run_matrix
from envbisect.modes.run import RunOptions, run_bisect
from envbisect.modes.session import Session
from envbisect.store import Store
from support.cli import on_index, probes_alive, start, wait_for_probes
from support.index_server import LocalIndex
from support.options import bump_matrix, common, dateapp_by_date, devices_repro
from support.raycluster import RayCluster, ray_listeners, refresh_auth, use_token

pytestmark = pytest.mark.slow
LOOPBACK = {"127.0.0.1", "::ffff:127.0.0.1", "::1"}


@pytest.fixture(scope="module", autouse=True)
def _one_worker_at_a_time(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """This file's tests run on one xdist worker at a time: a second one waits here until the
    first has done them. ``ray stop --force`` (a cluster's clean start and its end) stops every
    Ray process on the machine, so two workers' clusters would stop each other's."""
    shared = tmp_path_factory.getbasetemp().parent  # every worker's, as xdist lays them out
    with open(shared / "ray-tests.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


@pytest.fixture(scope="module", autouse=True)
def _token(_one_worker_at_a_time: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Every cluster here uses Ray's token authentication, as a real one should."""
    saved = {k: os.environ.get(k) for k in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN_PATH")}
    use_token(tmp_path_factory.mktemp("ray-token"))
    yield
    restore_environ(saved)
    refresh_auth()


@pytest.fixture(scope="module")
def cluster(_token: None) -> Iterator[RayCluster]:
    c = RayCluster()
    c.stop()  # nothing of an earlier run left behind
    try:
        c.start_head(cpus=2, gpus=0)
        c.add_node(cpus=2, gpus=1)
        yield c
    finally:
        c.stop()


def on(cluster: RayCluster) -> dict[str, Any]:
    return {"executor": "ray", "ray_address": cluster.address}


def test_ray_listens_on_loopback_only(cluster: RayCluster) -> None:
    listeners = ray_listeners()
    assert listeners, "the cluster's processes should be listening"
    outward = [(a, p, n) for a, p, n in listeners if a not in LOOPBACK]
    assert outward == [], f"Ray listens beyond loopback: {outward}"


def test_run_on_ray_is_the_same_as_local(
    index: LocalIndex, python: str, tmp_path: Path, cluster: RayCluster
) -> None:
    repro = Repro.from_file(str(write_repro(tmp_path, "crashy")), tmp_path)
    seen = {}
    runs: list[tuple[str, dict[str, Any]]] = [("local", {}), ("ray", on(cluster))]
    for name, extra in runs:
        rec = RecordingProgress()
        opts = RunOptions(
            package="crashy", common=common(index, python, tmp_path / name, repro, jobs=2, **extra)
        )
        res = run_bisect(opts, rec)
        seen[name] = (res.first_new, res.last_old, rec.started, [r.outcome.kind for r in res.rows])
        if name == "ray":  # each probe says the node it ran on: hostname/node
            probes = res.to_dict()["probes"]
            assert probes and all("/" in p["host"] for p in probes)
    assert seen["ray"] == seen["local"]
    assert seen["local"][:2] == ("1.7.0", "1.6.0")


def test_by_date_diff_and_matrix_on_ray_are_the_same_as_local(
    index: LocalIndex, python: str, tmp_path: Path, cluster: RayCluster
) -> None:
    (tmp_path / "date.py").write_text("import dateapp\ndateapp.run()\n")
    date_repro = Repro.build(origin=tmp_path, repro_file=str(tmp_path / "date.py"))
    (tmp_path / "good.txt").write_text("dateapp==1.0.0\ndatelib==1.1.0\nnoiselib==0.0.0\n")
    (tmp_path / "bad.txt").write_text("dateapp==1.0.0\ndatelib==1.4.0\nnoiselib==0.4.0\n")
    matrix = bump_matrix(index, python, tmp_path)
    seen: dict[str, list[Any]] = {}
    runs: list[tuple[str, dict[str, Any]]] = [("local", {}), ("ray", on(cluster))]
    for name, extra in runs:
        where = tmp_path / name
        by_date = run_by_date(
            dateapp_by_date(common(index, python, where / "date", date_repro, **extra))
        )
        diff = run_diff(
            DiffOptions(
                good=str(tmp_path / "good.txt"),
                bad=str(tmp_path / "bad.txt"),
                common=common(index, python, where / "diff", date_repro, jobs=2, **extra),
            )
        )
        res = run_matrix(
            load_matrix(matrix),
            flat_options(results=where / "m", cache_dir=where / "c", jobs=2, **extra),
        )
        cells = [(c.key, c.state, c.outcome.kind.value if c.outcome else None) for c in res.cells]
        seen[name] = [
            by_date.first_new,
            by_date.to_dict()["culprits"],
            [r.version for r in by_date.rows],
            diff.to_dict()["culprits"],
            [r.version for r in diff.rows],
            cells,
            res.counts(),
        ]
    assert seen["ray"] == seen["local"]


def test_a_gpu_probe_lands_on_the_gpu_node_and_sees_its_gpu(
    index: LocalIndex, python: str, tmp_path: Path, cluster: RayCluster
) -> None:
    import ray

    repro = devices_repro(tmp_path)
    opts = common(index, python, tmp_path, repro, gpus_per_probe=1, **on(cluster))
    with Session(opts) as session:
        rec, reused = session.probe(session.env_spec(["crashy==1.0.0"]))
        gpu_nodes = [
            n["NodeID"]
            for n in ray.nodes()  # type: ignore[no-untyped-call]
            if n.get("Alive") and n["Resources"].get("GPU", 0) >= 1
        ]
    assert not reused and rec.outcome.kind.value == "pass", rec.stderr_tail
    assert "devices=0" in rec.stdout_tail
    assert len(gpu_nodes) == 1 and rec.host.endswith("/" + gpu_nodes[0][:8])


def test_a_gpu_request_no_node_can_meet_is_a_clear_error_at_once(
    index: LocalIndex, python: str, tmp_path: Path, cluster: RayCluster
) -> None:
    repro = Repro.from_file(str(write_repro(tmp_path, "crashy")), tmp_path)
    start = time.monotonic()
    with pytest.raises(UsageError, match="no node of the Ray cluster has that many GPUs") as err:
        run_bisect(
            RunOptions(
                package="crashy",
                common=common(index, python, tmp_path, repro, gpus_per_probe=2, **on(cluster)),
            )
        )
    assert err.value.ref == "ray-no-gpus" and err.value.hint
    assert time.monotonic() - start < 120  # Ray alone would leave the task pending for ever


def test_ctrl_c_leaves_no_probe_on_any_node(
    index: LocalIndex, python: str, tmp_path: Path, cluster: RayCluster
) -> None:
    repro = write_repro(tmp_path, "hangy")
    args = [
        "run",
        "--package",
        "hangy",
        "--jobs",
        "2",
        "--executor",
        "ray",
        "--ray-address",
        cluster.address,
        *on_index(index.url, python, tmp_path),
        "--timeout",
        "120",
        "--repro",
        str(repro),
    ]
    # -v and the fault handler: if the probe never shows up, the failure below says where
    # envbisect's threads were (a SIGABRT dumps them) and what the run had said.
    proc = start("-v", *args, env={**os.environ, "PYTHONFAULTHANDLER": "1"})
    assert proc.stderr is not None
    seen = ""
    while "probing 1.5.0" not in seen:
        line = proc.stderr.readline()
        assert line, f"envbisect ended before probing 1.5.0 ({proc.wait()}): {seen}"
        seen += line
    # "probing" is printed when the task is submitted; the node still builds the environment
    # and starts a Ray worker for it: under a loaded parallel suite on two cores that took more
    # than a minute once (CI), and once in a CI run on another machine no probe had started
    # after three: this waits five, then shows where the run was (and what envbisect said
    # after, for the message).
    if not wait_for_probes(str(repro), proc.pid, alive=True, within=300):
        ray = subprocess.run(["pgrep", "-af", "ray::|raylet"], capture_output=True, text=True)
        proc.send_signal(signal.SIGABRT)  # the fault handler prints every thread's stack
        _, err = proc.communicate(timeout=60)
        pytest.fail(f"the hanging probe should be running: {seen}{err}\nRay: {ray.stdout}")
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, seen + err
    assert "Traceback" not in err
    assert wait_for_probes(str(repro), proc.pid, alive=False, within=30), (
        "a probe outlived Ctrl-C on its node"
    )


def test_cancelling_stops_a_probe_through_the_stop_signal_not_rays_cancel(
    index: LocalIndex, python: str, tmp_path: Path, cluster: RayCluster
) -> None:
    """A cancelled task ends on its own: its runner kills the probe's group, the task returns.
    Ray's force-cancel (which can abort the controller when it races a result on its way:
    "Tried to complete task that was not pending") is left for a task that does not end."""
    path = write_repro(tmp_path, "hangy")
    repro = Repro.from_file(str(path), tmp_path)
    with Session(common(index, python, tmp_path, repro)) as session:
        spec = session.env_spec(["hangy==1.5.0"])  # hangs
    task = ProbeTask(
        spec=spec, repro=repro, python=python, python_version="3.11", timeout=120, offline=False
    )
    ex = RayExecutor(1, address=cluster.address)
    try:
        fut = ex.submit(task)
        assert wait_for_probes(str(path), os.getpid(), alive=True, within=180), (
            "the hanging probe should be running"
        )
        ex.cancel_all()
    finally:
        ex.close()
    assert ex.forced == 0, "the task should have ended on the stop signal"
    assert fut.done()
    assert not probes_alive(str(path), os.getpid()), "the probe outlived the cancel"


# The tests that kill a node come after those that need the cluster whole: Ray counts a killed
# node alive for a while (on a loaded machine, minutes), and a task leased to it meanwhile waits
# (CI once saw the Ctrl-C test's two probes wait there for more than three minutes).
def test_a_node_killed_mid_matrix_costs_only_its_probes(
    index: LocalIndex, python: str, tmp_path: Path, cluster: RayCluster
) -> None:
    """A third node joins, takes probes and dies (its raylet SIGKILLed) while they run: Ray
    runs them again elsewhere; every cell ends right and is recorded once."""
    matrix = bump_matrix(index, python, tmp_path, "slow.py", sleep=3)
    doomed = cluster.add_node(cpus=4, gpus=0)
    killer = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"import os, signal, time; time.sleep(9); os.kill({doomed}, signal.SIGKILL)",
        ]
    )
    rec = RecordingProgress()
    try:
        opts = flat_options(
            results=tmp_path / "r",
            cache_dir=tmp_path / "c",
            jobs=4,
            executor="ray",
            ray_address=cluster.address,
        )
        res = run_matrix(load_matrix(matrix), opts, full=True, progress=rec)
    finally:
        assert killer.wait() == 0  # the node's raylet was alive until then, and was killed
    cluster.nodes.remove(doomed)
    kinds = {dict(c.versions)["bumplib"]: c.outcome.kind.value for c in res.cells if c.outcome}
    assert kinds == {f"1.{i}.0": ("crash" if 3 <= i <= 5 else "pass") for i in range(9)}
    finished = [label for label, _, _ in rec.finished]
    assert len(finished) == len(set(finished)) == 9  # each cell recorded once
    with Store(tmp_path / "r") as store:
        assert len(list(store.all())) == 9


def test_a_node_that_died_just_before_the_run_is_left_out(cluster: RayCluster) -> None:
    """Ray lists a killed node as alive for some seconds more: the node check's task for it
    cannot be scheduled (Ray's TaskUnschedulableError), and the run goes on without it."""
    doomed = cluster.add_node(cpus=1, gpus=0)
    cluster.kill_node(doomed)
    ex = RayExecutor(1, address=cluster.address)
    try:
        assert len(ex.nodes) == len(cluster.nodes)  # the head and the GPU node
        # The tests after this one start once Ray itself counts the node dead: a task Ray
        # still sent it would wait there for Ray's health check, slowly on a loaded machine.
        import ray

        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and alive_nodes(ray) > len(cluster.nodes):
            time.sleep(0.5)
    finally:
        ex.close()


def alive_nodes(ray: Any) -> int:
    return sum(1 for n in ray.nodes() if n.get("Alive"))


@pytest.fixture(scope="module")
def bare_python(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A Python with Ray (the same version) and without envbisect: another machine's."""
    import ray

    venv = tmp_path_factory.mktemp("bare") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    py = str(venv / "bin" / "python")
    got = subprocess.run(
        [py, "-m", "pip", "install", "-q", f"ray=={ray.__version__}"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if got.returncode != 0:
        pytest.skip(f"cannot install ray into a second venv: {got.stderr[-300:]}")
    return py


def test_a_node_without_envbisect_or_with_another_version_is_named(
    index: LocalIndex, python: str, tmp_path: Path, bare_python: str
) -> None:
    repro = Repro.from_file(str(write_repro(tmp_path, "crashy")), tmp_path)
    c = RayCluster()
    try:
        c.start_head(cpus=1)
        # The bare node has no envbisect: start it with the same loopback fix, inline.
        wrapper = tmp_path / "start_node.py"
        wrapper.write_text(
            "import sys, ray._private.services as s\n"
            "s.resolve_ip_for_localhost = lambda h: h\n"
            "from ray.scripts.scripts import main\nsys.argv = ['ray'] + sys.argv[1:]\nmain()\n"
        )
        c.python = bare_python
        _start_raw(c, wrapper, bare_python)
        opts = common(index, python, tmp_path, repro, executor="ray", ray_address=c.address)
        with pytest.raises(InfrastructureError, match="has no envbisect") as err:
            run_bisect(RunOptions(package="crashy", common=opts))
        assert err.value.ref == "ray-node-no-envbisect" and "127.0.0.1" in err.value.message
        assert "pip install" in (err.value.hint or "")
        # The same node with another envbisect version.
        site = subprocess.run(
            [bare_python, "-c", "import site; print(site.getsitepackages()[0])"],
            capture_output=True,
            text=True,
        ).stdout.strip()
        dist = Path(site) / "envbisect_ml-0.0.1.dist-info"
        dist.mkdir()
        (dist / "METADATA").write_text(
            "Metadata-Version: 2.1\nName: envbisect-ml\nVersion: 0.0.1\n"
        )
        with pytest.raises(InfrastructureError, match=r"has envbisect 0\.0\.1") as err:
            run_bisect(RunOptions(package="crashy", common=opts))
        assert err.value.ref == "ray-node-version"
    finally:
        c.python = sys.executable
        c.stop()


def _start_raw(c: RayCluster, wrapper: Path, python: str) -> None:
    from support.raycluster import ray_env

    cmd = [
        python,
        str(wrapper),
        "start",
        "--address",
        c.address,
        "--node-ip-address",
        "127.0.0.1",
        "--num-cpus",
        "1",
        "--disable-usage-stats",
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=ray_env(), timeout=180)
    assert proc.returncode == 0, proc.stderr[-2000:]


def test_an_address_where_nothing_listens_is_a_clear_error_at_once(
    index: LocalIndex, python: str, tmp_path: Path
) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    repro = Repro.from_file(str(write_repro(tmp_path, "crashy")), tmp_path)
    start = time.monotonic()
    opts = common(index, python, tmp_path, repro, executor="ray", ray_address=f"127.0.0.1:{port}")
    with pytest.raises(InfrastructureError, match="cannot reach the Ray cluster") as err:
        run_bisect(RunOptions(package="crashy", common=opts))
    assert err.value.ref == "ray-unreachable" and err.value.hint
    assert time.monotonic() - start < 30  # Ray alone retries for minutes
