"""One finding of ``envbisect check``: what is wrong, the lines it rests on, how to fix it.

Plain data, made by the rules (core/checks/releasepins.py, cudarules.py, extensions.py,
published.py) and gathered by core/checks/diagnosis.py. ``fix`` is always one command line
(an install line or an envbisect command), the first to try (the one that moves forward, where
there is one); ``also`` the others, in order; ``verify`` the envbisect command that proves the
fix in fresh environments, where one can (lock, probe, run, repro).
"""

from __future__ import annotations

import enum
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from envbisect.core.checks.observed import Said


class Kind(enum.Enum):
    """What a finding is about; ``--json`` names it by value."""

    OFF_PINS = "off-pins"  # a version the release's pins (or its own checks) do not allow
    CUDA_DRIVER = "cuda-driver"  # torch's CUDA build needs a newer driver
    CPU_TORCH = "cpu-torch"  # a CPU-only torch where a GPU is named or expected
    GPU_ARCH = "gpu-arch"  # torch's build has no kernels for the GPU's architecture
    BITSANDBYTES = "bitsandbytes"  # no bitsandbytes binary for this CUDA and platform
    FLASH_ATTN = "flash-attn"  # flash-attn built for another torch, or an older GPU
    PUBLISHED = "published-failure"  # a combination the published tables measured failing
    RELEASE = "release-change"  # read from the wheels: a release removed what a traceback names


# The order findings are listed in: what stops everything first (the GPU cannot be used),
# then what the release refuses, then what is known to fail.
ORDER = (
    Kind.CPU_TORCH,
    Kind.CUDA_DRIVER,
    Kind.GPU_ARCH,
    Kind.OFF_PINS,
    Kind.RELEASE,
    Kind.BITSANDBYTES,
    Kind.FLASH_ATTN,
    Kind.PUBLISHED,
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Finding:
    """``severity``: ``error`` (fails as reported: the release's own check raises, the GPU
    cannot run this build) or ``warning`` (off what was declared or tested: may fail).
    ``source``: where the rule's facts come from (a release's file, a documented table)."""

    kind: Kind
    severity: str
    package: str | None
    message: str
    evidence: tuple[Said, ...]
    fix: str
    verify: str | None = None
    source: str = ""
    also: tuple[str, ...] = ()  # other fixes, each one command line (the way back, after forward)

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind.value,
            "severity": self.severity,
            "package": self.package,
            "message": self.message,
            "evidence": [e.to_dict() for e in self.evidence],
            "fix": self.fix,
            "fixes": [self.fix, *self.also],
            "verify": self.verify,
            "source": self.source,
        }


def command(*words: str) -> str:
    """A command line, each word quoted for a POSIX shell where it needs to be."""
    return shlex.join(words)


def evidence(*said: Said | None) -> tuple[Said, ...]:
    """The lines a finding rests on, in the report's order, each once."""
    seen: dict[tuple[int, str], Said] = {}
    for s in said:
        if s is not None:
            seen.setdefault((s.line, s.text), s)
    return tuple(sorted(seen.values(), key=lambda s: s.line))


def python_flag(minor: str | None) -> Sequence[str]:
    return ("--python", minor) if minor else ()
