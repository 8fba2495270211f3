"""Environment reports as people paste them into bug reports, read into rows and facts.

Who does what: ``read_report`` takes the text of a report (or of a Markdown file that holds
one) and returns an ``EnvReport``: every package row it names, as written, with its line, and
what it says of the machine (the Python version, the platform, the GPU, the CUDA torch was
built for, a git commit). It decides nothing: turning rows into pins (a dev version, a local
version, a torch variant) is core/pins/from_report.py's job. Pure: text in, rows out.

The formats, their readers and what else is known of each: core/envreport/registry.py.

In Markdown, each fenced block and each stretch of prose between them is read on its own
(Python blocks never: they are code; a YAML block only for conda's environment), and what
the pieces say is merged, the first row of a name winning. What the readers read into is
core/envreport/report.py's.
"""

from __future__ import annotations

from collections.abc import Sequence

from envbisect.core.envreport.formats import freeze_row
from envbisect.core.envreport.registry import READERS, YAML_READERS
from envbisect.core.envreport.report import CODE_LANGS, EnvReport, Row, Segment, segments

__all__ = ["is_freeze", "read_report"]


def read_report(text: str) -> EnvReport | None:
    """Every environment report in ``text`` (plain, or in Markdown), merged; None if none."""
    found: list[EnvReport] = []
    for seg in segments(text):
        if seg.lang in ("yaml", "yml"):  # a training config, or conda's environment
            found += [p for read in YAML_READERS if (p := read(seg)) is not None]
            continue
        if seg.lang in CODE_LANGS:
            continue
        got = _read_segment(seg)
        if got is not None:
            found.append(got)
    return _merge(found) if found else None


def is_freeze(text: str) -> bool:
    """Whether pip freeze (or uv pip freeze) could have written ``text``: rows and pip's own
    comments only, at least one row; a requirements file with options, ranges, markers or
    comments after a requirement is not."""
    rows = 0
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if freeze_row(stripped, 0) is None:
            return False
        rows += 1
    return rows > 0


def _read_segment(seg: Segment) -> EnvReport | None:
    parts = [p for read in READERS if (p := read(seg)) is not None]
    return _merge(parts) if parts else None


def _merge(parts: Sequence[EnvReport]) -> EnvReport:
    """One report from several: formats and left-out rows kept, the first row of each name
    and the first of each fact."""
    rows: dict[str, Row] = {}
    unnamed: list[Row] = []
    # In the text's order, whichever format read them: the first row of a name wins.
    for row in sorted((r for p in parts for r in p.rows), key=lambda r: r.line):
        if not row.key:
            unnamed.append(row)
        elif row.key not in rows:
            rows[row.key] = row

    def first(attr: str) -> str | None:
        return next((v for p in parts if (v := getattr(p, attr)) is not None), None)

    return EnvReport(
        formats=tuple(dict.fromkeys(f for p in parts for f in p.formats)),
        rows=(*rows.values(), *unnamed),
        python=first("python"),
        platform=first("platform"),
        system=first("system"),
        machine=first("machine"),
        torch_cuda=first("torch_cuda"),
        gpu=first("gpu"),
        commit=first("commit"),
        subject=first("subject"),
        left_out=tuple(x for p in parts for x in p.left_out),
    )
