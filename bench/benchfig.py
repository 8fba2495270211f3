"""What a bench measured, in the form bench/figures.py reads: one figure per line of the page.

Every bench that feeds the figures page takes ``--json`` and prints one object on stdout:
``{"bench": NAME, "figures": [Figure.to_dict(), ...]}``. A figure is two sides measured in
one run (A: envbisect, B: the way without it), each with the command that measured it, and
their ratio; ``settings`` says what both sides read (the user's index settings are set aside
on both: envbisect ``--no-config``, uv ``--no-config``, pip ``--isolated``).
"""

from __future__ import annotations

import json
import shlex
from dataclasses import asdict, dataclass, field
from typing import Any

# What every bench passes to both sides, said once on the page.
SETTINGS = (
    "the user's index settings are set aside on both sides (envbisect --no-config, uv "
    "--no-config, pip --isolated, no UV_INDEX*/PIP_* variables): both read the same index, "
    "PyPI or the tests' one on 127.0.0.1"
)


def compile_bytecode() -> None:
    """Write the installed envbisect's bytecode before anything is timed.

    A user's first run writes it and every later one reads it; a machine that sets
    PYTHONDONTWRITEBYTECODE (as CI images often do) would otherwise compile every module in
    each timed CLI call (~0.3 s of ~80 modules), a cost no user pays twice.
    """
    import compileall
    import importlib.util

    spec = importlib.util.find_spec("envbisect")
    if spec and spec.submodule_search_locations:
        for folder in spec.submodule_search_locations:
            compileall.compile_dir(folder, quiet=1)


@dataclass(frozen=True, slots=True, kw_only=True)
class Side:
    """One side of a figure: what ran (a command line, shortened), and what it measured."""

    label: str
    value: float
    unit: str = "s"  # "s" (median wall seconds), or a count: "environments", "probes"
    command: str = ""

    def text(self) -> str:
        if self.unit == "s":
            return f"{self.value:.3f} s" if self.value < 1 else f"{self.value:.2f} s"
        return f"{self.value:g} {self.unit}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Figure:
    what: str
    a: Side
    b: Side
    # "ratio": A / B; "difference": A - B (a fixed cost, as for one probe)
    compare: str = "ratio"
    note: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def ratio(self) -> float:
        return self.a.value / self.b.value if self.b.value else float("inf")

    def comparison(self) -> str:
        if self.compare == "difference":
            return f"{self.a.value - self.b.value:+.2f} {self.a.unit}"
        r = self.ratio
        return f"{r:.2f}x" if r < 10 else f"{r:.0f}x"

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["comparison"] = self.comparison()
        return out


def emit(bench: str, figures: list[Figure], **facts: Any) -> None:
    """The bench's figures as one JSON object on stdout."""
    print(json.dumps({"bench": bench, "settings": SETTINGS, **facts,
                      "figures": [f.to_dict() for f in figures]}, indent=2))  # fmt: skip


def shown(argv: list[str], names: dict[str, str]) -> str:
    """A command line as the page shows it: this machine's paths (temporary folders, the
    interpreter, a local index's URL) replaced by short names (``names``: text -> name), so
    that the committed page names no path of one machine."""
    out = []
    for word in argv:
        for text, name in sorted(names.items(), key=lambda kv: -len(kv[0])):
            word = word.replace(text, name)
        out.append(word)
    return shlex.join(out)
