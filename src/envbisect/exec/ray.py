"""Probes on a Ray cluster: one Ray task per ``ProbeTask``, the same worker function as locally.

Who does what: Ray places each task (one CPU, ``--gpus-per-probe`` GPUs, which Ray pins
through ``CUDA_VISIBLE_DEVICES``) and retries it on another node when the node running it dies
(a probe is recorded once, by the controller, when its future resolves); the task builds its
environment on that node, with that node's uv and cache, and runs the probe through our own
runner (own process group, our timeout: SIGABRT first, then SIGKILL). Planning and the store
stay in the controller. Cancelling (Ctrl-C, SIGTERM, an error elsewhere) fires one stop
signal (a zero-CPU actor every task watches from a thread): the task's runner kills the
probe's process group on its node, and the task returns ``None``. Ray's own ``ray.cancel``
is kept for a task that has not ended ``CANCEL_GRACE`` seconds later: cancelling a task
while its result is on the way can abort the controller inside Ray ("Tried to complete task
that was not pending"), so it is not how every task is stopped.

Before the first task every node is asked, by a small function shipped by value (it runs even
where envbisect is not installed), for its envbisect version and uv: a node without either,
or with another envbisect version, is one clear error naming the node.

Loopback: Ray turns the node address 127.0.0.1 into the machine's outward address; for a
cluster reached on a loopback address (and for the local instance started without
``--ray-address``) envbisect keeps it on loopback, so nothing listens beyond the machine.
``python -m envbisect.exec.ray start ...`` is ``ray start ...`` with the same fix, for
starting the nodes of such a cluster.

Ray is an optional extra (envbisect's ``ray`` extra); nothing imports this module
unless ``--executor ray`` is asked for.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import sys
import threading
from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import replace
from typing import Any

from envbisect import __version__, install_requirement
from envbisect.env import runner
from envbisect.env.worker import ProbeTask, run_task
from envbisect.errors import EnvbisectError, InfrastructureError, UsageError
from envbisect.exec.executor import Launch
from envbisect.exec.kinds.ray import RaySettings
from envbisect.model import ProbeRecord

LOOPBACK = ("127.0.0.1", "localhost", "::1")
CHECK_TIMEOUT = 120.0  # seconds for every node to answer the preflight check
CANCEL_GRACE = 15.0  # seconds for cancelled tasks to kill their probes before Ray forces them
WATCH_EVERY = 0.5  # seconds between a task's looks at the stop signal

_CHECK_SOURCE = """
def envbisect_node_check():
    import importlib.metadata, shutil, socket, sys
    try:  # this project's distribution (PyPI's "envbisect" is another tool)
        version = importlib.metadata.version("envbisect-ml")
    except importlib.metadata.PackageNotFoundError:
        version = None
    uv = shutil.which("uv")
    if uv is None:
        try:
            import uv as uv_module
            uv = uv_module.find_uv_bin()
        except Exception:
            uv = None
    return {"host": socket.gethostname(), "envbisect": version, "uv": uv,
            "python": sys.version.split()[0]}
"""


def keep_loopback() -> None:
    """Stop Ray from replacing a loopback node address by the machine's outward one."""
    from ray._private import services

    services.resolve_ip_for_localhost = _same


def _same(host: str) -> str:
    return host


def is_loopback(address: str | None) -> bool:
    if address is None:
        return True
    host = address.split("://", 1)[-1].rsplit(":", 1)[0].strip("[]")
    return host in LOOPBACK


class RayExecutor:
    name = "ray"

    def __init__(self, jobs: int, *, address: str | None = None, gpus_per_probe: int = 0) -> None:
        try:
            import ray
        except ImportError:
            raise UsageError(
                "--executor ray needs Ray, and Ray is not installed",
                hint=f"pip install '{install_requirement('ray')}'",
                ref="ray-missing",
            ) from None
        self._ray = ray
        self.address = address
        self.gpus = gpus_per_probe
        self._inflight: dict[Any, Future[ProbeRecord]] = {}
        self.forced = 0  # tasks the last cancel_all had to leave to Ray's force-cancel
        if address is not None:
            _reachable(address)
        loopback = is_loopback(address)
        if loopback:
            keep_loopback()
        init: dict[str, Any] = {"logging_level": "ERROR", "log_to_driver": False}
        if loopback:
            init["_node_ip_address"] = "127.0.0.1"
        try:
            if address is None:
                ray.init(include_dashboard=False, **init)
            else:
                ray.init(address=address, **init)
        except (ConnectionError, RuntimeError, ValueError) as e:
            raise _unreachable(address, _first_line(e)) from e
        try:
            self.nodes = self._check_nodes()
            self._check_gpus()
        except BaseException:
            ray.shutdown()
            raise
        # Restarted elsewhere when its node dies, and the tasks' waits on it retried.
        self._stop: Any = ray.remote(num_cpus=0, max_restarts=-1, max_task_retries=-1)(
            StopSignal
        ).remote()
        self._remote = ray.remote(_on_node).options(
            num_cpus=1, num_gpus=gpus_per_probe, max_retries=3, retry_exceptions=False
        )

    # -- the Executor interface --------------------------------------------------------------

    def submit(self, task: ProbeTask) -> Future[ProbeRecord]:
        # The node's own temporary folder, not the controller's results path.
        ref = self._remote.remote(replace(task, envs_dir=None), self._stop)
        out: Future[ProbeRecord] = Future()
        self._inflight[ref] = out
        ref.future().add_done_callback(lambda f: self._settle(ref, f))
        return out

    def cancel_all(self) -> None:
        ray = self._ray
        refs = list(self._inflight)
        stuck = refs
        if refs:
            with contextlib.suppress(Exception):
                self._stop.fire.remote()  # every task's runner kills its probe; it returns None
            with contextlib.suppress(Exception):
                _, stuck = ray.wait(refs, num_returns=len(refs), timeout=CANCEL_GRACE)
        self.forced = len(stuck)
        for ref in stuck:
            with contextlib.suppress(Exception):
                ray.cancel(ref, force=True)
        for fut in self._inflight.values():
            fut.cancel()
        self._inflight.clear()
        self.close()

    def close(self) -> None:
        self._ray.shutdown()

    # -- inside -------------------------------------------------------------------------------

    def _settle(self, ref: Any, done: Future[Any]) -> None:
        out = self._inflight.pop(ref, None)
        if out is None or out.done():
            return
        try:
            rec = done.result()
        except BaseException as e:
            out.set_exception(self._translate(e))
            return
        if rec is None:  # the task was stopped (see _on_node)
            out.set_exception(KeyboardInterrupt())
        else:
            out.set_result(rec)

    def _translate(self, e: BaseException) -> BaseException:
        exc = self._ray.exceptions
        if isinstance(e, exc.TaskCancelledError):
            return KeyboardInterrupt()
        if isinstance(e, exc.RayTaskError):
            cause = getattr(e, "cause", None)
            if isinstance(cause, (EnvbisectError, KeyboardInterrupt)):
                return cause
            return InfrastructureError(
                f"a probe task failed on the Ray cluster: {_first_line(cause or e)}",
                hint="check that every node has envbisect and uv installed "
                f"(envbisect {__version__})",
                ref="ray-task-failed",
            )
        if isinstance(e, (exc.WorkerCrashedError, exc.NodeDiedError, exc.RayError)):
            return InfrastructureError(
                f"a probe's Ray worker died four times: {_first_line(e)}",
                hint="check the nodes' memory and logs (ray status); finished probes are kept",
                ref="ray-worker-died",
            )
        return e

    def _check_nodes(self) -> list[dict[str, Any]]:
        ray = self._ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        namespace: dict[str, Any] = {}
        exec(_CHECK_SOURCE, namespace)  # defined here, so Ray ships it by value
        check = namespace["envbisect_node_check"]
        check.__module__ = "__envbisect_node_check__"
        alive = [n for n in ray.nodes() if n.get("Alive")]
        refs = {
            n["NodeID"]: ray.remote(check)
            .options(
                num_cpus=0,
                scheduling_strategy=NodeAffinitySchedulingStrategy(n["NodeID"], soft=False),
            )
            .remote()
            for n in alive
        }
        ready, _ = ray.wait(list(refs.values()), num_returns=len(refs), timeout=CHECK_TIMEOUT)
        found = []
        for node in alive:
            ref = refs[node["NodeID"]]
            where = f"{node.get('NodeManagerAddress', '?')} (node {node['NodeID'][:8]})"
            if ref not in ready:
                raise InfrastructureError(
                    f"the Ray node {where} did not answer within {CHECK_TIMEOUT:.0f} s",
                    hint="check it with ray status; a busy node still runs zero-CPU tasks",
                    ref="ray-node-silent",
                )
            try:
                facts = ray.get(ref)
            except (ray.exceptions.TaskUnschedulableError, ray.exceptions.NodeDiedError):
                continue  # it died after ray.nodes() listed it (Ray marks a node dead late)
            where = f"{facts['host']} {where}"
            if facts["envbisect"] is None:
                raise InfrastructureError(
                    f"the Ray node {where} has no envbisect",
                    hint=f"pip install '{install_requirement('ray')}' on every node "
                    f"(its Python {facts['python']})",
                    ref="ray-node-no-envbisect",
                )
            if facts["envbisect"] != __version__:
                raise InfrastructureError(
                    f"the Ray node {where} has envbisect {facts['envbisect']}, this is "
                    f"{__version__}",
                    hint=f"install envbisect {__version__} on every node",
                    ref="ray-node-version",
                )
            if facts["uv"] is None:
                raise InfrastructureError(
                    f"the Ray node {where} has no uv",
                    hint="pip install uv on that node (envbisect builds environments with it)",
                    ref="ray-node-no-uv",
                )
            found.append({**facts, "node": node["NodeID"], "gpus": _gpus(node)})
        return found

    def _check_gpus(self) -> None:
        most = max((n["gpus"] for n in self.nodes), default=0)
        if self.gpus > most:
            raise UsageError(
                f"--gpus-per-probe {self.gpus}: no node of the Ray cluster has that many GPUs "
                f"(the most is {most:g})",
                hint="ask for fewer, or add a node with GPUs (ray start --num-gpus N)",
                ref="ray-no-gpus",
            )


def _reachable(address: str) -> None:
    """Fail at once when nothing listens at HOST:PORT (Ray itself retries for minutes)."""
    if "://" in address or ":" not in address:
        return  # "auto", ray:// client addresses: Ray's own lookup
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=5):
            pass
    except (OSError, ValueError) as e:
        raise _unreachable(address, str(e)) from e


def _unreachable(address: str | None, why: str) -> InfrastructureError:
    return InfrastructureError(
        f"cannot reach the Ray cluster at {address}: {why}",
        hint="start it (ray start --head) or pass its address: --ray-address HOST:PORT",
        ref="ray-unreachable",
    )


def _gpus(node: dict[str, Any]) -> float:
    return float(node.get("Resources", {}).get("GPU", 0))


class StopSignal:
    """One per executor, fired once when the controller cancels: every task waits on it."""

    def __init__(self) -> None:
        self._fired = asyncio.Event()

    async def wait(self) -> bool:
        await self._fired.wait()
        return True

    async def fire(self) -> None:
        self._fired.set()


def _on_node(task: ProbeTask, stop: Any) -> ProbeRecord | None:
    """The task as Ray runs it: the worker function, and which node ran it; ``None`` when the
    stop signal fired first (its probe's process group is gone then)."""
    import ray

    runner.clear_interrupt()  # a worker process runs one task after another
    ended = threading.Event()
    watcher = threading.Thread(target=_watch, args=(stop, ended), daemon=True)
    watcher.start()
    try:
        rec = run_task(task)
    except KeyboardInterrupt:
        return None
    finally:
        # Not joined (it looks every WATCH_EVERY seconds): a task's result is not held back. A
        # late look finds the task ended and stops; the next task here clears the flag anyway.
        ended.set()
        runner.clear_interrupt()
    if rec is task.earlier:
        return rec
    node = ray.get_runtime_context().get_node_id()
    return replace(rec, host=f"{socket.gethostname()}/{node[:8]}")


def _watch(stop: Any, ended: threading.Event) -> None:
    """In a task's thread: when ``stop`` fires, kill the task's live process groups."""
    import ray

    fired = stop.wait.remote()
    while not ended.is_set():
        ready, _ = ray.wait([fired], timeout=WATCH_EVERY)
        if not ready:
            continue
        try:
            ray.get(fired)
        except Exception:
            return  # the signal's actor is gone (its node died): nothing was asked to stop
        if not ended.is_set():
            runner.interrupt_all()
        return


def _first_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return text[0][:300] if text else type(e).__name__


def main(argv: Sequence[str] | None = None) -> int:
    """``ray ...`` with loopback node addresses kept as they are (see the module docstring)."""
    keep_loopback()
    from ray.scripts.scripts import main as ray_main

    sys.argv = ["ray", *(sys.argv[1:] if argv is None else argv)]
    ray_main()  # type: ignore[no-untyped-call]
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


def launch(launch: Launch) -> RayExecutor:
    """``--executor ray`` (exec/kinds/ray.py)."""
    settings = launch.settings if isinstance(launch.settings, RaySettings) else RaySettings()
    return RayExecutor(
        launch.workers, address=settings.address, gpus_per_probe=launch.gpus_per_probe
    )
