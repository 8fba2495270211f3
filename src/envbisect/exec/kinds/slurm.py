"""``--executor slurm``: one batch job per probe (exec/slurm.py), and what every job asks
sbatch for besides what envbisect sets."""

from __future__ import annotations

from dataclasses import dataclass

from envbisect.errors import UsageError
from envbisect.exec.kinds import ExecutorKind
from envbisect.optionspec import Group, Kind, Option, Values


@dataclass(frozen=True, slots=True, kw_only=True)
class SlurmSettings:
    """Each None or empty leaves it to the cluster's defaults."""

    partition: str | None = None
    account: str | None = None
    time: str | None = None  # as sbatch --time takes it
    options: tuple[str, ...] = ()  # other sbatch options, each "--name=value" or "--flag"


PARTITION: Option[str | None] = Option(
    dest="slurm_partition",
    flags=("--slurm-partition",),
    group=Group.SEARCH,
    metavar="NAME",
    help="--executor slurm: the partition the jobs go to (default: the cluster's)",
    key="slurm-partition",
    key_what="a partition",
)
ACCOUNT: Option[str | None] = Option(
    dest="slurm_account",
    flags=("--slurm-account",),
    group=Group.SEARCH,
    metavar="NAME",
    help="--executor slurm: the account the jobs are charged to",
    key="slurm-account",
    key_what="an account",
)
TIME: Option[str | None] = Option(
    dest="slurm_time",
    flags=("--slurm-time",),
    group=Group.SEARCH,
    metavar="LIMIT",
    help="--executor slurm: each job's time limit, as sbatch --time takes it (e.g. 30, 1:00:00)"
    "; it must cover the build and the probe",
    key="slurm-time",
    key_what="a time limit, as sbatch's",
)
OPTION: Option[list[str]] = Option(
    dest="slurm_options",
    flags=("--slurm-option",),
    group=Group.SEARCH,
    kind=Kind.MANY,
    default=[],
    metavar="OPT",
    help="--executor slurm: another sbatch option for every job, e.g. --slurm-option=--qos=high "
    "or --slurm-option constraint=a100 (repeatable)",
    key="slurm-options",
    key_what="a list of sbatch options",
)


def _settings(values: Values) -> SlurmSettings:
    """Each extra option as sbatch takes it (``qos=high`` is ``--qos=high``)."""
    options = []
    for raw in values[OPTION]:
        text = raw.strip()
        if not text or any(c in text for c in "\r\n\0"):
            raise UsageError(
                f"--slurm-option {raw!r} is not one sbatch option",
                hint="one option each, e.g. --slurm-option=--qos=high",
                ref="bad-slurm-option",
            )
        options.append(text if text.startswith("-") else f"--{text}")
    return SlurmSettings(
        partition=values[PARTITION],
        account=values[ACCOUNT],
        time=values[TIME],
        options=tuple(options),
    )


KIND = ExecutorKind(
    name="slurm",
    rank=3,
    says="slurm (one batch job per probe, from a login node; --results on a filesystem the "
    "nodes share)",
    implementation=("envbisect.exec.slurm", "launch"),
    options=(PARTITION, ACCOUNT, TIME, OPTION),
    settings=_settings,
)
