"""``envbisect probe``'s answer: what one environment did, typed, with its ``--json`` and text.

Pure: modes/probe.py fills it from the probe's record. The ``--json`` keys, in order:
``outcome``, ``reused``, ``installed``, ``build_seconds``, ``probe_seconds``, ``reports`` (the
``ENVBISECT-REPORT:`` lines of the built-in probes), ``env_id``, ``env`` (what ``--env`` set,
credentials masked), then with ``--repeat`` above 1 ``runs``, ``fails`` and ``run_outcomes``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from envbisect.model import InstalledDist, Outcome, OutcomeKind, ProbeRecord
from envbisect.redact import mask_env_map

# envbisect probe: the environment was built and probed, and it does not pass (1 is kept
# for "the question has no answer" in every mode).
EXIT_PROBE_FAILED = 4
_REPORT = "ENVBISECT-REPORT: "


def probe_reports(stdout: str) -> tuple[dict[str, Any], ...]:
    """The ``ENVBISECT-REPORT: {json}`` lines the built-in probes print (others skipped)."""
    out = []
    for line in stdout.splitlines():
        if line.startswith(_REPORT):
            try:
                out.append(json.loads(line.split(": ", 1)[1]))
            except ValueError:
                continue
    return tuple(out)


@dataclass(frozen=True, slots=True, kw_only=True)
class ProbeResult:
    """The typed answer of ``envbisect probe``: exit 0 when it passes, 4 when it does not."""

    repro: str  # the repro, described
    outcome: Outcome
    reused: bool  # from the store: nothing was built
    installed: tuple[InstalledDist, ...]
    build_seconds: float
    probe_seconds: float
    reports: tuple[dict[str, Any], ...]
    env_id: str
    env: tuple[tuple[str, str], ...] = ()  # --env, unmasked (masked in to_dict)
    runs: tuple[Outcome, ...] = ()  # every run, oldest first (one or more)
    fails: int = 0

    @classmethod
    def of(
        cls, rec: ProbeRecord, *, reused: bool, repro: str, env: tuple[tuple[str, str], ...]
    ) -> ProbeResult:
        return cls(
            repro=repro,
            outcome=rec.outcome,
            reused=reused,
            installed=rec.installed,
            build_seconds=rec.build_seconds,
            probe_seconds=rec.probe_seconds,
            reports=probe_reports(rec.stdout_tail),
            env_id=rec.env_id,
            env=env,
            runs=rec.all_runs,
            fails=rec.fails,
        )

    @property
    def passed(self) -> bool:
        return self.outcome.kind is OutcomeKind.PASS

    @property
    def exit_code(self) -> int:
        return 0 if self.passed else EXIT_PROBE_FAILED

    def how(self) -> str:
        """Where the outcome came from, and with ``--repeat`` how many runs failed."""
        how = (
            "from the store"
            if self.reused
            else f"built in {self.build_seconds:.1f} s, probed in {self.probe_seconds:.1f} s"
        )
        rate = f"; {self.fails} of {len(self.runs)} runs failed" if len(self.runs) > 1 else ""
        return how + rate

    @property
    def detail(self) -> str:
        """What the failure printed (its traceback, the signal), "" when it passed."""
        return "" if self.passed else self.outcome.detail

    def report_lines(self) -> list[str]:
        """The built-in probes' reports, one JSON object a line (keys sorted)."""
        return [json.dumps(rep, sort_keys=True) for rep in self.reports]

    def to_dict(self) -> dict[str, Any]:
        runs = self.runs
        return {
            "outcome": self.outcome.to_dict(),
            "reused": self.reused,
            "installed": [d.to_dict() for d in self.installed],
            "build_seconds": round(self.build_seconds, 3),
            "probe_seconds": round(self.probe_seconds, 3),
            "reports": list(self.reports),
            "env_id": self.env_id,
            "env": mask_env_map(self.env),
            **(
                {
                    "runs": len(runs),
                    "fails": self.fails,
                    "run_outcomes": [r.to_dict() for r in runs],
                }
                if len(runs) > 1
                else {}
            ),
        }
