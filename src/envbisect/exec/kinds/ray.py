"""``--executor ray``: a Ray cluster (exec/ray.py), joined at ``--ray-address`` or started on
127.0.0.1."""

from __future__ import annotations

from dataclasses import dataclass

from envbisect.exec.kinds import ExecutorKind
from envbisect.optionspec import Group, Option, Values


@dataclass(frozen=True, slots=True, kw_only=True)
class RaySettings:
    address: str | None = None  # join this cluster (None: start one)


RAY_ADDRESS: Option[str | None] = Option(
    dest="ray_address",
    flags=("--ray-address",),
    group=Group.SEARCH,
    metavar="ADDR",
    help="--executor ray: join this cluster (HOST:PORT, or auto); default: start a local "
    "instance bound to 127.0.0.1",
)


def _settings(values: Values) -> RaySettings:
    return RaySettings(address=values[RAY_ADDRESS])


KIND = ExecutorKind(
    name="ray",
    rank=2,
    says="ray (a Ray cluster: --ray-address, or a local instance on 127.0.0.1; the ray extra)",
    implementation=("envbisect.exec.ray", "launch"),
    options=(RAY_ADDRESS,),
    settings=_settings,
)
