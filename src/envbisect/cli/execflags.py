"""The options that say where probes run: the executor and what it is given (cli/flags.py's
habit: each declared once, attached through ``EXECUTION``)."""

from __future__ import annotations

from envbisect.cli.argtypes import count0
from envbisect.cli.flags import many, opt
from envbisect.exec.executor import EXECUTORS

EXECUTOR = opt(
    "--executor",
    choices=tuple(EXECUTORS),
    help="where probes run: local (threads, the default), process (a pool of worker "
    "processes; every task crosses a pickle, as to another machine), ray (a Ray cluster: "
    "--ray-address, or a local instance on 127.0.0.1; the ray extra) or slurm (one batch job "
    "per probe, from a login node; --results on a filesystem the nodes share)",
)
RAY_ADDRESS = opt(
    "--ray-address",
    metavar="ADDR",
    help="--executor ray: join this cluster (HOST:PORT, or auto); default: start a local "
    "instance bound to 127.0.0.1",
)
GPUS_PER_PROBE = opt(
    "--gpus-per-probe",
    type=count0,
    metavar="N",
    help="give each probe N GPUs and only those (CUDA_VISIBLE_DEVICES): Ray's num_gpus, "
    "Slurm's --gres=gpu:N, or this machine's GPUs shared out by the local executor "
    "(default 0)",
)
SLURM_PARTITION = opt(
    "--slurm-partition",
    metavar="NAME",
    help="--executor slurm: the partition the jobs go to (default: the cluster's)",
)
SLURM_ACCOUNT = opt(
    "--slurm-account",
    metavar="NAME",
    help="--executor slurm: the account the jobs are charged to",
)
SLURM_TIME = opt(
    "--slurm-time",
    metavar="LIMIT",
    help="--executor slurm: each job's time limit, as sbatch --time takes it (e.g. 30, 1:00:00)"
    "; it must cover the build and the probe",
)
SLURM_OPTION = many(
    "--slurm-option",
    dest="slurm_options",
    metavar="OPT",
    help="--executor slurm: another sbatch option for every job, e.g. --slurm-option=--qos=high "
    "or --slurm-option constraint=a100 (repeatable)",
)
EXECUTION = (
    EXECUTOR, RAY_ADDRESS, GPUS_PER_PROBE, SLURM_PARTITION, SLURM_ACCOUNT, SLURM_TIME,
    SLURM_OPTION,
)  # fmt: skip
