"""A Slurm job's side of ``--executor slurm`` (exec/slurm.py submits it): on its node, run the
task its folder holds and write the record (or the error) back into that folder, atomically;
SIGTERM (scancel, preemption, a time limit) kills the probe's process group and nothing
half-seen is written."""

from __future__ import annotations

import json
import os
import pickle
import signal
import socket
from dataclasses import replace
from pathlib import Path
from types import FrameType

from envbisect import __version__
from envbisect.env import runner
from envbisect.errors import EnvbisectError, UsageError

CANNOT_START = 90  # a job's exit code when envbisect cannot run on its node
CANNOT_START_SAID = "envbisect-slurm: cannot start:"


def job_main(folder: Path) -> int:
    """Run the task in ``folder``; its record (or error) written there by rename."""
    host = os.environ.get("SLURMD_NODENAME") or socket.gethostname()
    try:
        meta = json.loads((folder / "meta.json").read_text())
    except (OSError, ValueError) as e:
        print(f"{CANNOT_START_SAID} no task in {folder} on {host}: {e}", flush=True)
        return CANNOT_START
    if meta.get("envbisect") != __version__:
        said = {
            "kind": "infra",
            "host": host,
            "ref": "slurm-node-version",
            "message": f"the node has envbisect {__version__}, the controller "
            f"{meta.get('envbisect')}",
            "hint": f"install envbisect {meta.get('envbisect')} where the nodes run it",
        }
        _write(folder, "error.json", json.dumps(said).encode())
        return 0
    from envbisect.env.worker import run_task

    signal.signal(signal.SIGTERM, _stop)  # scancel, preemption, a time limit: kill the probe
    task = pickle.loads((folder / "task.pkl").read_bytes())
    devices = os.environ.get("CUDA_VISIBLE_DEVICES")
    if devices is not None:
        task = replace(task, devices=(("CUDA_VISIBLE_DEVICES", devices),))
    try:
        rec = run_task(task)
    except KeyboardInterrupt:
        return 128 + signal.SIGTERM  # stopped: nothing half-seen is written
    except EnvbisectError as e:
        kind = "usage" if isinstance(e, UsageError) else "infra"
        said = {
            "kind": kind,
            "host": host,
            "message": e.message,
            "hint": e.hint or "",
            "ref": e.ref,
        }
        _write(folder, "error.json", json.dumps(said).encode())
        return 0
    if rec is not task.earlier:
        rec = replace(rec, host=f"{socket.gethostname()}/{host}")
    _write(folder, "record.pkl", pickle.dumps(rec))
    return 0


def _write(folder: Path, name: str, data: bytes) -> None:
    tmp = folder / f".{name}.{os.getpid()}"
    with open(tmp, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, folder / name)


def _stop(signum: int, frame: FrameType | None) -> None:
    runner.interrupt_all()
