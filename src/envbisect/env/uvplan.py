"""uv as the planner's second opinion: the same question, answered by ``uv pip compile``.

resolvelib backtracks one pin at a time; on a large pin set with a conflict deep down it can
run for minutes where uv's PubGrub answers in seconds. ``plan()`` hands such a question here
(``Fallback``) after ``MAX_ROUNDS``. The inputs are the same: requirements, constraints, the
target interpreter, the indexes, wheels only; the policy is translated: ``contemporary`` is
``--exclude-newer``, ``baseline`` seeds the output file, whose versions uv prefers. uv runs
as the session's ``Uv`` says (offline when envbisect is); a failure that is not the question's
(offline and not in uv's cache, credentials refused) is raised, never an unresolvable plan.
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from packaging.utils import NormalizedName, canonicalize_name
from packaging.version import InvalidVersion, Version

from envbisect.core.overrides import for_environment
from envbisect.core.plan import Plan, Policy, Question, Unresolvable, moved
from envbisect.env.uv import Uv, index_args
from envbisect.env.uvfailure import uv_failure
from envbisect.errors import IndexUnreachable
from envbisect.model import IndexConfig
from envbisect.redact import mask_text

_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?==([^\s;\\]+)")
# What a plan by uv visited, as the planner names its steps (uv reads no candidate of ours).
_VISITED = (("uv", "pip compile"),)


@dataclass(frozen=True, slots=True, kw_only=True)
class UvFallback:
    uv: Uv
    python: str
    indexes: IndexConfig
    only_binary: bool = True
    # Called before uv is asked (the session says once per run that uv planned something).
    notice: Callable[[Question], None] | None = None
    overrides: tuple[str, ...] = ()  # --override: uv's --overrides

    def __call__(self, q: Question) -> Plan | Unresolvable:
        if self.notice is not None:
            self.notice(q)
        with tempfile.TemporaryDirectory(prefix="envbisect-uvplan-") as tmp:
            folder = Path(tmp)
            reqs = folder / "requirements.in"
            reqs.write_text("".join(f"{r}\n" for r in q.requirements))
            cons = folder / "constraints.txt"
            cons.write_text("".join(f"{n}{s}\n" for n, s in q.constraints.items() if str(s)))
            out = folder / "requirements.txt"
            over = folder / "overrides.txt"
            # An exact pin of the question (the candidate) keeps its version (core/overrides.py).
            overrides = for_environment(self.overrides, [str(r) for r in q.requirements])
            over.write_text("".join(f"{o}\n" for o in overrides))
            if q.policy is Policy.BASELINE:
                out.write_text("".join(f"{n}=={v}\n" for n, v in q.baseline.items()))
            args = [
                self.uv.binary,
                "pip",
                "compile",
                "--no-config",
                "-q",
                "--python",
                self.python,
                "--no-header",
                "--no-annotate",
                "-c",
                str(cons),
                *(["--overrides", str(over)] if self.overrides else []),
                "-o",
                str(out),
            ]
            args += index_args(self.indexes, only_binary=self.only_binary)
            if q.policy is Policy.CONTEMPORARY and q.cutoff is not None:
                args += ["--exclude-newer", q.cutoff.isoformat()]
                for name in q.user_names:  # what the user pinned exactly, whatever its date
                    args += ["--exclude-newer-package", f"{name}=2999-01-01T00:00:00Z"]
            if q.pre:
                args += ["--prerelease", "allow"]
            proc = subprocess.run(
                [*args, str(reqs)], capture_output=True, text=True, env=self.uv.env(self.indexes)
            )
            if proc.returncode != 0:
                text = mask_text(proc.stderr.strip())
                names = [r.name for r in q.requirements]
                refused = uv_failure(
                    text,
                    offline=self.uv.offline,
                    indexes=self.indexes,
                    requirements=names,
                    what="planning",
                )
                if refused is not None:
                    raise refused
                if "No solution found" not in text and "unsatisfiable" not in text:
                    last = text.splitlines()[-1] if text else "no output"
                    raise IndexUnreachable(
                        f"uv could not plan the environment: {last}",
                        hint="check the network and the indexes; finished probes are kept",
                    )
                return Unresolvable(
                    reason="uv: " + _explanation(text), visited=_VISITED, by_uv=True
                )
            pins = parse_pins(out.read_text())
        return Plan(
            pins=pins,
            moved=moved(q.baseline, pins, q.user_names),
            visited=_VISITED,
            by_uv=True,
        )


def parse_pins(text: str) -> dict[NormalizedName, Version]:
    pins: dict[NormalizedName, Version] = {}
    for line in text.splitlines():
        m = _PIN.match(line.strip())
        if m:
            try:
                pins[canonicalize_name(m.group(1))] = Version(m.group(2))
            except InvalidVersion:
                continue
    return pins


def _explanation(stderr: str) -> str:
    """uv's PubGrub explanation on one line."""
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    body = [ln.removeprefix("╰─▶").strip() for ln in lines if not ln.startswith(("×", "error"))]
    return " ".join(body) or (lines[-1] if lines else "no solution")
