"""A real Ray cluster on 127.0.0.1 for the tests: a head and worker nodes started with
``ray start`` (through ``python -m envbisect.exec.ray``, which keeps their addresses on
loopback), each node its own raylet; stopped with ``ray stop``.

Nodes declare resources as ``ray start`` takes them: a node with ``--num-gpus 1`` is a GPU
node to Ray's scheduler (there is no GPU here; Ray pins CUDA_VISIBLE_DEVICES all the same).
"""

from __future__ import annotations

import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def ray_env() -> dict[str, str]:
    return {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "RAY_DEDUP_LOGS": "0"}


def use_token(folder: Path) -> dict[str, str]:
    """Token authentication for the cluster and every client in this process (Ray's own
    mechanism: RAY_AUTH_MODE=token and a token file); returns the variables it set."""
    token = folder / "auth_token"
    token.write_text(secrets.token_hex(32))
    token.chmod(0o600)
    values = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(token)}
    os.environ.update(values)
    refresh_auth()
    return values


def refresh_auth() -> None:
    """Ray reads RAY_AUTH_MODE when it is imported: a process that imported it before the
    variables changed (this test process) must have it read them again, as Ray itself does
    when it turns token authentication on."""
    from ray._raylet import AuthenticationTokenLoader, Config  # type: ignore[attr-defined]

    Config.initialize("")
    AuthenticationTokenLoader.instance().reset_cache()


def raylet_pids(gcs: str | None = None) -> set[int]:
    """The raylets running here; with ``gcs`` (HOST:PORT), only those of that cluster."""
    pattern = "core/src/ray/raylet/raylet"
    if gcs is not None:
        pattern += f".*--gcs-address={re.escape(gcs)}( |$)"
    out = subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True).stdout
    return {int(p) for p in out.split()}


@dataclass(slots=True)
class RayCluster:
    python: str = sys.executable
    port: int = field(default_factory=free_port)
    nodes: list[int] = field(default_factory=list)  # the raylet pid of each node

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def _start(self, args: list[str], python: str | None = None) -> int:
        before = raylet_pids(self.address)
        cmd = [
            python or self.python,
            "-m",
            "envbisect.exec.ray",
            "start",
            "--node-ip-address",
            "127.0.0.1",
            "--disable-usage-stats",
            *args,
        ]
        proc = subprocess.run(cmd, capture_output=True, text=True, env=ray_env(), timeout=180)
        if proc.returncode != 0:
            raise RuntimeError(f"ray start failed: {proc.stdout[-2000:]}{proc.stderr[-2000:]}")
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            new = raylet_pids(self.address) - before
            if new:
                pid = max(new)
                self.nodes.append(pid)
                return pid
            time.sleep(0.2)
        raise RuntimeError("ray start reported success but no raylet appeared")

    def start_head(self, *, cpus: int = 2, gpus: int = 0) -> int:
        return self._start(
            [
                "--head",
                "--port",
                str(self.port),
                "--include-dashboard",
                "false",
                "--num-cpus",
                str(cpus),
                "--num-gpus",
                str(gpus),
            ]
        )

    def add_node(self, *, cpus: int = 2, gpus: int = 0, python: str | None = None) -> int:
        return self._start(
            ["--address", self.address, "--num-cpus", str(cpus), "--num-gpus", str(gpus)],
            python=python,
        )

    def kill_node(self, raylet: int) -> None:
        """The node dies as a machine would: its raylet killed, its workers with it. Returns
        once the raylet is gone (a signal is delivered when the process next runs: on a busy
        machine a task could still be leased to it otherwise)."""
        os.kill(raylet, signal.SIGKILL)
        self.nodes.remove(raylet)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and _running(raylet):
            time.sleep(0.05)

    def stop(self) -> None:
        subprocess.run(
            [self.python, "-m", "envbisect.exec.ray", "stop", "--force"],
            capture_output=True,
            env=ray_env(),
            timeout=120,
        )


def _running(pid: int) -> bool:
    """Whether ``pid`` still runs (a zombie does not)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


_LISTEN = re.compile(r"^LISTEN\s+\d+\s+\d+\s+(\S+):(\d+)\s+\S+\s+users:\(\(\"([^\"]+)\",pid=(\d+)")


def ray_listeners() -> list[tuple[str, int, str]]:
    """(address, port, process) of every listening TCP socket of a Ray process here."""
    out = subprocess.run(["ss", "-ltnpH"], capture_output=True, text=True).stdout
    found = []
    for line in out.splitlines():
        m = _LISTEN.match(line.strip())
        if not m:
            continue
        addr, port, name, pid = m.group(1), int(m.group(2)), m.group(3), int(m.group(4))
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        if "ray" in name or "/ray/" in cmdline or "ray::" in cmdline:
            found.append((addr.strip("[]"), port, name))
    return found
