"""What ``envbisect check`` ships of the published tables, kept current by ``publish``.

``check`` reads src/envbisect/data/checkdb.json (cli/commands/check.py) and, at check time,
any results/ folder at hand. In envbisect's own checkout a publish also rewrites the tables'
part of that file from results/, so the database the package ships never lags the tables it
publishes; bench/make_check_data.py writes the rest (PyPI's pins, bitsandbytes' binaries).
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from envbisect.core.checks.published import table_of

SHIPPED = Path(__file__).resolve().parents[2] / "data" / "checkdb.json"


def refresh(results: Path, shipped: Path = SHIPPED) -> list[Path]:
    """After a publish into ``results``: the shipped file, rewritten, when ``results`` is the
    results/ of the checkout it lies in and its tables changed; else nothing."""
    if own_results(results, shipped) and write_published(shipped, results):
        return [shipped]
    return []


def own_results(results: Path, shipped: Path = SHIPPED) -> bool:
    """Whether ``results`` is the results/ of the checkout ``shipped`` lies in (src/envbisect/
    data/checkdb.json under a root holding pyproject.toml): an installed envbisect, or a
    results/ elsewhere, leaves the package's data alone."""
    if not shipped.is_file():
        return False
    root = shipped.parents[3]
    return (root / "pyproject.toml").is_file() and (root / "results").resolve() == (
        results.resolve()
    )


def write_published(shipped: Path, results: Path) -> bool:
    """The published tables' part of check's data (``published``) made again from every
    ``results/*/results.json``; False when it was already the same (nothing written)."""
    db: dict[str, Any] = json.loads(shipped.read_text(encoding="utf-8"))
    tables = [
        table_of(json.loads(p.read_text(encoding="utf-8")), p.parent.name)
        for p in sorted(results.glob("*/results.json"))
    ]
    if db.get("published") == tables:
        return False
    db["published"] = tables
    db["written"] = datetime.now(timezone.utc).strftime("%Y-%m-%d")
    text = json.dumps(db, indent=None, separators=(",", ":"), sort_keys=True) + "\n"
    tmp = shipped.with_suffix(".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(shipped)
    return True
