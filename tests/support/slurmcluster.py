"""A real Slurm cluster on 127.0.0.1 for the tests: Debian's slurm-wlm (slurmctld, and one
slurmd per node started with ``-N NAME``) authenticated by its own munged, everything in one
folder: configuration, state, spool, logs, the munge key and socket. Nothing of the machine's
own Slurm or munge configuration is read or changed; clients find this cluster through
``SLURM_CONF`` (``env``).

Nodes are ``node1``, ``node2``...: each its own slurmd on its own loopback port, 2 CPUs each
(the machine's cores are shared: ``SlurmdParameters=config_overrides``). A node may declare
``gpus``: a GRES count with no device file (there is no GPU here, so what is tested is that a
job asking ``--gres=gpu:1`` is placed on it and not elsewhere).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from support.raycluster import free_port

DAEMONS = ("munged", "slurmctld", "slurmd", "sbatch", "squeue", "scancel", "scontrol")


def missing() -> str | None:
    """Why a Slurm cluster cannot be started here (None: it can)."""
    lacking = [d for d in DAEMONS if shutil.which(d) is None and not Path("/usr/sbin", d).exists()]
    if lacking:
        return f"Slurm is not installed ({', '.join(lacking)} missing; apt-get install slurm-wlm)"
    if os.geteuid() != 0:
        return "the test Slurm cluster runs its daemons as root (slurmd starts jobs as any user)"
    return None


def _bin(name: str) -> str:
    return shutil.which(name) or str(Path("/usr/sbin", name))


@dataclass
class SlurmCluster:
    root: Path
    nodes: dict[str, int] = field(default_factory=dict)  # name -> GPUs
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def conf(self) -> Path:
        return self.root / "slurm.conf"

    @property
    def env(self) -> dict[str, str]:
        return {"SLURM_CONF": str(self.conf)}

    def start(self, nodes: dict[str, int]) -> None:
        self.nodes = dict(nodes)
        for sub in ("state", "spool", "log", "munge"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        self._munge()
        self._write_conf()
        env = {**os.environ, **self.env}
        self._spawn([_bin("slurmctld"), "-D", "-i", "-f", str(self.conf)], "slurmctld", env)
        self._wait(lambda: self._ok("scontrol", "ping"), "slurmctld to answer")
        for name in self.nodes:
            self._spawn([_bin("slurmd"), "-D", "-N", name, "-f", str(self.conf)], name, env)
        self._wait(self._idle, "every node to be idle")

    def _munge(self) -> None:
        key = self.root / "munge" / "munge.key"
        if not key.exists():
            key.write_bytes(os.urandom(1024))
            key.chmod(0o600)
        self._spawn(
            [
                _bin("munged"), "--foreground", "--force",
                f"--key-file={key}",
                f"--socket={self.root / 'munge' / 'munge.socket'}",
                f"--pid-file={self.root / 'munge' / 'munged.pid'}",
                f"--log-file={self.root / 'munge' / 'munged.log'}",
                f"--seed-file={self.root / 'munge' / 'munged.seed'}",
            ],
            "munged",
            dict(os.environ),
        )  # fmt: skip
        self._wait(lambda: (self.root / "munge" / "munge.socket").exists(), "munged's socket")

    def _write_conf(self) -> None:
        r = self.root
        ports: set[int] = set()
        while len(ports) < 1 + len(self.nodes):  # each its own: two may not follow each other
            ports.add(free_port())
        ctl, *node_ports = sorted(ports)
        lines = [
            "ClusterName=envbisect-test",
            "SlurmctldHost=localhost(127.0.0.1)",
            f"SlurmctldPort={ctl}",
            "SlurmUser=root",
            "SlurmdUser=root",
            "AuthType=auth/munge",
            "CredType=cred/munge",
            f"AuthInfo=socket={r / 'munge' / 'munge.socket'}",
            f"StateSaveLocation={r / 'state'}",
            f"SlurmdSpoolDir={r / 'spool'}/%n",
            f"SlurmctldPidFile={r / 'slurmctld.pid'}",
            f"SlurmdPidFile={r / 'spool'}/slurmd-%n.pid",
            f"SlurmctldLogFile={r / 'log' / 'slurmctld.log'}",
            f"SlurmdLogFile={r / 'log'}/slurmd-%n.log",
            f"PlugStackConfig={r / 'plugstack.conf'}",
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "SchedulerType=sched/builtin",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_CPU",
            "SlurmdParameters=config_overrides",
            "MpiDefault=none",
            "ReturnToService=2",
            "JobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType=accounting_storage/none",
            "JobCompType=jobcomp/none",
            "MinJobAge=300",
            "KillWait=5",
            "SlurmctldTimeout=30",
            "SlurmdTimeout=30",
            "InactiveLimit=0",
            "GresTypes=gpu",
        ]
        for i, (name, gpus) in enumerate(self.nodes.items()):
            gres = f" Gres=gpu:{gpus}" if gpus else ""
            lines.append(
                f"NodeName={name} NodeHostname=localhost NodeAddr=127.0.0.1 "
                f"Port={node_ports[i]} CPUs=2 RealMemory=1000{gres} State=UNKNOWN"
            )
        lines.append("PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP")
        self.conf.write_text("\n".join(lines) + "\n")
        (r / "plugstack.conf").write_text("")
        devices = [
            f"NodeName={n} Name=gpu File=/dev/null Count={g}" for n, g in self.nodes.items() if g
        ]
        (r / "gres.conf").write_text("\n".join(devices) + "\n")

    def _spawn(self, argv: list[str], name: str, env: dict[str, str]) -> None:
        log = open(self.root / "log" / f"{name}.out", "ab")  # noqa: SIM115 (the daemon's)
        self.procs.append(
            subprocess.Popen(
                argv, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
            )
        )
        log.close()

    def run(self, *argv: str, check: bool = True) -> str:
        out = subprocess.run(
            [_bin(argv[0]), *argv[1:]], capture_output=True, text=True, timeout=60,
            env={**os.environ, **self.env}, check=False,
        )  # fmt: skip
        if check and out.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)}: {out.stderr.strip() or out.stdout.strip()}")
        return out.stdout

    def _ok(self, *argv: str) -> bool:
        try:
            self.run(*argv)
            return True
        except (RuntimeError, subprocess.TimeoutExpired):
            return False

    def node_states(self) -> dict[str, str]:
        out = self.run("sinfo", "-h", "-N", "-o", "%N %t", check=False)
        return dict(line.split() for line in out.splitlines() if len(line.split()) == 2)

    def _idle(self) -> bool:
        states = self.node_states()
        return len(states) == len(self.nodes) and all(s == "idle" for s in states.values())

    def queue(self) -> list[str]:
        """The jobs pending or running: 'ID STATE NAME' lines."""
        out = self.run("squeue", "-h", "-o", "%i %T %j", check=False)
        return [line for line in out.splitlines() if line.strip()]

    def drain(self, node: str, reason: str = "test") -> None:
        self.run("scontrol", "update", f"nodename={node}", "state=drain", f"reason={reason}")

    def resume(self, node: str) -> None:
        self.run("scontrol", "update", f"nodename={node}", "state=resume")

    def _wait(self, ok: object, what: str, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if ok():  # type: ignore[operator]
                return
            dead = [p.args[0] for p in self.procs if p.poll() is not None]  # type: ignore[index]
            if dead:
                raise RuntimeError(f"{dead} exited while waiting for {what}: {self.logs()}")
            time.sleep(0.3)
        raise RuntimeError(f"timed out waiting for {what}: {self.logs()}")

    def logs(self) -> str:
        tails = []
        for log in sorted((self.root / "log").glob("*")):
            text = log.read_text(errors="replace").strip().splitlines()[-8:]
            tails.append(f"--- {log.name}\n" + "\n".join(text))
        return "\n".join(tails)

    def stop(self) -> None:
        for p in reversed(self.procs):
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        for p in reversed(self.procs):
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        self.procs.clear()
