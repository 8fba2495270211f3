"""A published matrix as ``results/<matrix>/results.json`` holds it: its meta, cells, history.

Pure and typed: ``PublishedTable.from_dict`` reads the document and checks it (a malformed
one is a ``UsageError``, ref ``results-malformed``; a history entry that cannot be read is
left out, as ``core.history.read`` says); ``to_dict`` writes it back exactly as the
publisher always has. Its parts: ``core.living.meta`` (the ``matrix`` block),
``core.living.cell`` (each cell), ``core.living.history`` (each change).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from envbisect.core.living import history
from envbisect.core.living.cell import PublishedCell, read_cells
from envbisect.core.living.history import Change
from envbisect.core.living.meta import MatrixMeta, malformed
from envbisect.errors import ResultsMalformed, UsageError


@dataclass(frozen=True, slots=True, kw_only=True)
class PublishedTable:
    """The whole ``results.json``."""

    meta: MatrixMeta
    cells: tuple[PublishedCell, ...]
    history: tuple[Change, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "matrix": self.meta.to_dict(),
            "cells": [c.to_dict() for c in self.cells],
            "history": [h.to_dict() for h in self.history],
        }

    @classmethod
    def from_dict(cls, d: object, *, source: str = "results.json") -> PublishedTable:
        """The document (``source``: its file, for the message)."""
        if not isinstance(d, Mapping) or "matrix" not in d or "cells" not in d:
            raise malformed(f"{source} holds no matrix and cells")
        try:
            meta = MatrixMeta.from_dict(d["matrix"])
        except UsageError as e:
            raise ResultsMalformed(f"{source}: {e.message}", hint=e.hint) from e
        return cls(
            meta=meta,
            cells=read_cells(d["cells"], source=source),
            history=tuple(history.read(d.get("history", []))),
        )
