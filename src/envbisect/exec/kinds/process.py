"""``--executor process``: a pool of worker processes (exec/pool.py)."""

from __future__ import annotations

from envbisect.exec.kinds import ExecutorKind

KIND = ExecutorKind(
    name="process",
    rank=1,
    says="process (a pool of worker processes; every task crosses a pickle, as to another machine)",
    implementation=("envbisect.exec.pool", "launch_processes"),
    gpus=False,
)
