"""The benchmarks' last runs, as the docs cite them: bench/last.json.

A bench run with ``--record`` keeps its figures there, each under a name with the value as the
docs show it, the command that reproduces it, when and on what it was measured. The README and
the docs cite a figure with a marker right after it, ``0.62 s<!-- figure: check.median -->``;
tests/test_figures.py checks that every marked figure is the one recorded, and that a figure
in prose names where it comes from. ``python bench/lastrun.py`` writes the recorded values
into every marked figure of the pages.
"""

from __future__ import annotations

import json
import os
import platform
import re
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
LAST = ROOT / "bench" / "last.json"


def machine() -> str:
    """The machine, as a figure's reader needs it: OS, cores, Python, the load at the time."""
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return (
        f"{platform.system()} {platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}, load average {load:.1f}"
    )


def record(figures: dict[str, str], command: str) -> None:
    """Keep ``figures`` (name -> the value as shown, e.g. "0.62 s") as measured now by
    ``command``; the other benches' figures stay."""
    data: dict[str, Any] = json.loads(LAST.read_text(encoding="utf-8")) if LAST.is_file() else {}
    when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    for name, shown in figures.items():
        data[name] = {"shown": shown, "command": command, "measured": when, "on": machine()}
    LAST.write_text(json.dumps(dict(sorted(data.items())), indent=2) + "\n", encoding="utf-8")


# A figure as the docs write it, right before its marker: a number and its unit.
_MARKED = re.compile(
    r"\d+(?:[.,]\d+)?(?:\s?(?:ms|s|min|h|KiB|MiB|GiB|kB|MB|GB))?<!-- figure: ([\w.-]+) -->"
)
PAGES = ("README.md", "CHANGELOG.md", "matrices/README.md", "docs")


def sync() -> list[Path]:
    """Write each marked figure of the README, the changelog and the docs as its bench's last
    run recorded it; the pages changed."""
    data = json.loads(LAST.read_text(encoding="utf-8"))
    changed = []
    for where in PAGES:
        path = ROOT / where
        for page in sorted(path.rglob("*.md")) if path.is_dir() else [path]:
            text = page.read_text(encoding="utf-8")
            new = _MARKED.sub(
                lambda m: f"{data[m.group(1)]['shown']}<!-- figure: {m.group(1)} -->", text
            )
            if new != text:
                page.write_text(new, encoding="utf-8")
                changed.append(page)
    return changed


if __name__ == "__main__":
    # python bench/lastrun.py: the docs' marked figures set to the benches' last runs
    for page in sync():
        print(page.relative_to(ROOT))
