"""Flags the inputs imply: what an environment report or a PEP 723 script says, as if typed.

Who does what: while the options are resolved (cli/optionset.py ranks where each value comes
from, and offers the values of uv's variables each option names), ``apply`` looks at the pin
sources the
command names (``--pins``, ``--baseline``, ``envbisect repro REPORT``, ``envbisect pins
SOURCE``) and at ``--repro FILE``. The first environment report among them sets ``--python``
to its Python (major.minor: uv finds or installs one, as for a typed flag) and
``--torch-backend`` to its torch build as this machine can run it (core/pins/from_report.py decides;
nvidia-smi says whether there is a GPU); a flag the user typed always wins. A ``--repro`` file
with a ``# /// script`` block adds its dependencies to ``--with`` (the package under test's
aside: the search sets it) and sets ``--python`` to its ``requires-python``. Everything it
sets, a report from another OS or architecture, and each version a report had mapped, is
said on stderr. Sources that are not reports, or that cannot be read, are left to the mode,
which reads them again and reports their errors. Nothing here writes the parsed namespace:
each value is an offer to the ``Draft``, taken where nothing of a higher rank gave one.
"""

from __future__ import annotations

import platform
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from envbisect.cli import readflags
from envbisect.cli.optionset import Draft, Origin, Source
from envbisect.errors import EnvbisectError
from envbisect.model import IndexConfig

if TYPE_CHECKING:  # the report's modules load when a source is a report (most are not)
    from envbisect.core.envreport.facts import ReportFacts
    from envbisect.core.envreport.report import EnvReport

Say = Callable[[str], None]


def apply(draft: Draft, say: Say, *, cwd: Path | None = None) -> None:
    """Offer the values the command's inputs give (module doc), saying each taken."""
    here = cwd or Path.cwd()
    _script(draft, say, here)
    for facts in _reports(draft, here):
        _report(draft, facts, say)
        break  # the first report decides; the others' pins are still read by the mode
    _cutoffs(draft, say)


def _cutoffs(draft: Draft, say: Say) -> None:
    """A cut-off written as a span back from now (``7 days``, ``P7D``: uv's forms) becomes
    the moment it names, once, here: what an environment was built with must not mean
    another day tomorrow (said). A date that is not one is the mode's error to give."""
    from datetime import datetime, timezone

    from envbisect.core.cutoff import is_span, parse_cutoff, stamp

    now = datetime.now(timezone.utc)
    for dest in ("exclude_newer", "good_date", "bad_date"):
        value = draft.get(dest)
        if isinstance(value, str) and is_span(value):
            flag = "--" + dest.replace("_", "-")
            when = stamp(parse_cutoff(value, now, what=flag))
            draft.rewrite(dest, when)
            say(f"envbisect: {flag} {value}: {when}")


def _sources(draft: Draft) -> list[str]:
    found = list(draft.get("pins") or ())
    for attr in ("baseline", "report", "source"):
        value = draft.get(attr)
        if isinstance(value, str):
            found.append(value)
    return found


def _reports(draft: Draft, cwd: Path) -> list[ReportFacts]:
    sources = _sources(draft)
    if not sources:
        return []
    from envbisect.modes.inputs import report_facts

    def index() -> IndexConfig | None:
        """The indexes, read only for a report whose versions need the releases."""
        if not draft.has("index_url"):
            return None
        try:
            found = readflags.index_settings(draft.freeze(None))
        except EnvbisectError:
            return None  # the mode says what is wrong with the indexes
        return IndexConfig(
            index_url=found.main.url, extra_index_urls=tuple(f.url for f in found.extra)
        )

    return report_facts(
        sources,
        cwd,
        index=index,
        cache_dir=draft.get("cache_dir"),
        offline=bool(draft.get("offline", False)),
    )


def _cpu_build_at_hand(draft: Draft, report: EnvReport) -> str | None:
    """A local --find-links folder of the user's settings that holds a ``+cpu`` wheel of
    the report's torch version (modes/inputs.py)."""
    from envbisect.modes.inputs import cpu_build_at_hand

    if not draft.has("find_links"):
        return None
    links = readflags.index_settings(draft.freeze(None)).links
    return cpu_build_at_hand(report, [link.url for link in links])


def _report(draft: Draft, facts: ReportFacts, say: Say) -> None:
    from envbisect.core.pins.from_report import platform_note, python_request, torch_backend

    r = facts.report
    pins = len(r.rows)
    said = ", ".join(x for x in (f"Python {r.python}" if r.python else "", r.platform or "") if x)
    say(
        f"envbisect: {facts.origin}: {' + '.join(r.formats)}: {pins} package(s)"
        + (f"; {said}" if said else "")
    )
    wanted = python_request(facts) if draft.has("python") else None
    if wanted and draft.offer("python", wanted, Origin(Source.INPUTS, facts.origin)):
        say(f"envbisect: Python {wanted}, the report's ({r.python}); --python chooses another")
    elif wanted and draft.get("python") != wanted:
        used = f"--python {draft.get('python')}{_from(draft, 'python')}"
        say(f"envbisect: the report's Python is {r.python}; {used} is used")
    note = platform_note(facts, system=platform.system(), machine=platform.machine())
    if note:
        say(f"envbisect: {note}")
    if draft.has("torch_backend") and facts.variant and draft.get("torch_backend") is None:
        from envbisect.env import envreport  # nvidia-smi; a module attribute, for tests

        smi = envreport.read_nvidia_smi()
        driver = smi.get("cuda") if smi and smi.get("gpus") else None
        backend, why = torch_backend(facts.variant, driver_cuda=driver)
        folder = _cpu_build_at_hand(draft, r) if backend == "cpu" else None
        if folder is not None:
            # The CPU build of the same torch in a folder of the user's settings: taken from
            # there (the planner takes the labelled build), not from PyTorch's index.
            say(
                f"envbisect: {why.split(': the CPU build', 1)[0]}: the CPU build of the same "
                f"version, from {folder} (find-links); --torch-backend chooses another"
            )
        elif backend is not None and draft.offer(
            "torch_backend", backend, Origin(Source.INPUTS, facts.origin)
        ):
            say(f"envbisect: {why}; --torch-backend chooses another")
    for m in facts.mapped:
        say(
            f"{'warning' if m.warning else 'envbisect'}: {facts.origin}:{m.line}: {m.name} "
            f"{m.reported}: {m.why}"
        )
    for c in facts.commits:
        where = f" of {c.repository}" if c.repository else ""
        say(
            f"envbisect: {facts.origin}: {c.package} is commit {c.commit[:12]}{where}: "
            "recorded; building from a commit is not used yet"
        )
    if r.left_out:
        shown = "; ".join(r.left_out[:3]) + (
            f"; and {len(r.left_out) - 3} more" if len(r.left_out) > 3 else ""
        )
        say(f"envbisect: {facts.origin}: {len(r.left_out)} row(s) left out: {shown}")


def _script(draft: Draft, say: Say, cwd: Path) -> None:
    """A ``--repro`` file's PEP 723 block, as ``--with`` and ``--python``."""
    from envbisect.modes.inputs import script_metadata

    name = draft.get("repro")
    meta = script_metadata(name, cwd) if isinstance(name, str) else None
    if meta is None:
        return
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    package = draft.get("package")
    under_test = canonicalize_name(package) if package else None
    added, aside = [], []
    if draft.has("with_reqs"):
        typed = list(draft.get("with_reqs") or ())
        for dep in meta.dependencies:
            if under_test and canonicalize_name(Requirement(dep).name) == under_test:
                aside.append(dep)
            elif dep not in typed:
                added.append(dep)
        draft.rewrite("with_reqs", [*typed, *added])  # joined to what was typed
    if added:
        say(f"envbisect: {name}: its script metadata adds --with {' --with '.join(added)}")
    if aside:
        say(f"envbisect: {name}: {', '.join(aside)} left to the search (--package {package})")
    origin = Origin(Source.INPUTS, name)
    if meta.requires_python and draft.offer("python", meta.requires_python, origin):
        say(f"envbisect: {name}: Python {meta.requires_python}, its requires-python")
    if meta.exclude_newer and draft.offer("exclude_newer", meta.exclude_newer, origin):
        say(f"envbisect: {name}: --exclude-newer {meta.exclude_newer}, its [tool.uv]")


def _from(draft: Draft, dest: str) -> str:
    """`` (from UV_PYTHON)`` when the value was not typed, else ""."""
    origin = draft.origin(dest)
    return "" if origin.source is Source.FLAG else f" (from {origin.describe()})"
