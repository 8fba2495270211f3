"""``--executor local`` (the default): threads of this process (exec/pool.py)."""

from __future__ import annotations

from envbisect.exec.kinds import ExecutorKind

KIND = ExecutorKind(
    name="local",
    rank=0,
    says="local (threads, the default)",
    implementation=("envbisect.exec.pool", "launch_threads"),
)
