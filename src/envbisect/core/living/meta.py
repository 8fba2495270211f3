"""A published matrix's ``matrix`` block (``results.json``): what it is and how it was run.

Pure and typed: what the matrix file says (name, description, axes, probes) and, after them
in their order, what ``run.json`` said of the last run, kept as it was written (the pages
read only the few fields named here). ``to_dict`` writes the block as the publisher always
has; ``from_dict`` checks it (a ``UsageError``, ref ``results-malformed``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from envbisect.core.living.cell import HINT
from envbisect.errors import ResultsMalformed

_OWN = ("name", "description", "axes", "probes", "deep_probes")


@dataclass(frozen=True, slots=True, kw_only=True)
class MatrixMeta:
    """A published matrix's ``matrix`` block."""

    name: str
    axes: tuple[str, ...]
    description: str = ""
    probes: tuple[str, ...] = ()
    deep_probes: tuple[str, ...] = ()  # run on the rows' edges (modes/living/deep.py)
    run: Mapping[str, Any] = field(default_factory=dict)  # run.json's, as it was written

    @property
    def command(self) -> str:
        return str(self.run.get("command", ""))

    @property
    def measured(self) -> str | None:
        """When the cells were last measured (None: not said)."""
        return _text(self.run.get("measured"))

    @property
    def checked(self) -> str | None:
        """When ``matrix --update`` last read the index for it (None: never)."""
        return _text(self.run.get("checked"))

    @property
    def machine(self) -> str | None:
        return _text(self.run.get("machine"))

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "axes": list(self.axes),
            "probes": list(self.probes),
            **({"deep_probes": list(self.deep_probes)} if self.deep_probes else {}),
            **self.run,
        }

    @classmethod
    def from_dict(cls, d: object) -> MatrixMeta:
        if not isinstance(d, Mapping):
            raise malformed(f"'matrix' is {type(d).__name__}, not an object")
        name, axes, probes = d.get("name"), d.get("axes"), d.get("probes", [])
        deep = d.get("deep_probes", [])
        if not isinstance(name, str):
            raise malformed(f"the matrix's 'name' is {name!r}, not a string")
        for what, value in (("axes", axes), ("probes", probes), ("deep_probes", deep)):
            if not isinstance(value, list) or not all(isinstance(a, str) for a in value):
                raise malformed(f"the matrix's '{what}' is {value!r}, not a list of names")
        assert isinstance(axes, list) and isinstance(probes, list) and isinstance(deep, list)
        if not axes:
            raise malformed("the matrix names no axis")
        description = d.get("description") or ""
        return cls(
            name=name,
            description=str(description),
            axes=tuple(axes),
            probes=tuple(probes),
            deep_probes=tuple(deep),
            run={k: v for k, v in d.items() if k not in _OWN},
        )


def _text(value: object) -> str | None:
    return None if value is None else str(value)


def malformed(message: str) -> ResultsMalformed:
    return ResultsMalformed(f"malformed results.json: {message}", hint=HINT)
