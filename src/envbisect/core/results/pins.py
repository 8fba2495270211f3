"""``envbisect pins``'s answer: what a pin source asks for, and what applies to the target.

Pure: modes/listing.py reads the source. ``--json`` is the pin set's own ``to_dict`` for the
target's markers and the selected extras; the text names each requirement and marks those that
do not apply. Each line is one a requirements file takes as it is (``name[extras]spec;
marker``, as pip and uv write them), the source's line and what does not apply as comments,
so the output can be pasted or redirected into a requirements file.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from envbisect.core.pins.pinset import Pin, PinSet


@dataclass(frozen=True, slots=True, kw_only=True)
class PinsResult:
    """The typed answer of ``envbisect pins``."""

    pins: PinSet
    markers: tuple[tuple[str, str], ...]  # the target's marker environment
    extras: tuple[str, ...]  # --extras
    target: str  # the target's short label
    python: str  # the target's Python version

    def _line(self, pin: Pin, chosen: frozenset[str]) -> str:
        req = pin.requirement
        applies = "" if pin.applies(dict(self.markers), chosen) else "  # does not apply here"
        extras = f"[{','.join(sorted(req.extras))}]" if req.extras else ""
        spec = f" @ {req.url}" if req.url else pin.specifier_text
        # a space before ";" where a URL ends: the URL would take the ";" otherwise (PEP 508)
        marker = f"{' ' if req.url else ''}; {req.marker}" if req.marker is not None else ""
        return f"{req.name}{extras}{spec}{marker}{applies}"

    def lines(self) -> list[str]:
        chosen = self.pins.selected_extras(dict(self.markers), self.extras)
        head = f"# {self.pins.source}  (for {self.target}, Python {self.python})"
        return [head, *(self._line(pin, chosen) for pin in self.pins.requirements)]

    def to_dict(self) -> dict[str, Any]:
        return self.pins.to_dict(dict(self.markers), self.extras)
