"""What a mode asks the session to probe: one environment, as the mode planned it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from envbisect.model import EnvSpec

if TYPE_CHECKING:
    from envbisect.core.results.parts import Moved


@dataclass(frozen=True, slots=True, kw_only=True)
class Want:
    """One environment a strategy asks for, as the mode planned it.

    No ``spec``: it cannot be built (``why_not`` says why: unresolvable, no installable
    file); it is untestable without a build. ``python``: an interpreter of its own (a
    matrix's other Pythons), else the session's."""

    label: str
    spec: EnvSpec | None = None
    runs: int = 1
    why_not: str = ""
    moved: tuple[Moved, ...] = ()
    python: str | None = None
    source_repo: str | None = None  # a spec with a source: the mirror its commit comes from
