"""Frozen value objects shared by the core and the edges.

Everything here is data: no IO, no subprocess. Identities (``EnvSpec.env_id``) are content
hashes over a canonical form, so the same set of pins always has the same id and the store can
reuse an outcome across runs.
"""

from __future__ import annotations

import enum
import hashlib
import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from packaging.utils import canonicalize_name
from packaging.version import Version

from envbisect.redact import strip_credentials


@dataclass(frozen=True, slots=True, kw_only=True)
class DistFile:
    """One file of one project on an index (a row of the Simple API)."""

    filename: str
    url: str
    hashes: tuple[tuple[str, str], ...] = ()
    requires_python: str | None = None
    upload_time: datetime | None = None
    yanked: bool = False
    yanked_reason: str | None = None
    size: int | None = None
    index: str = ""
    # Hashes of the PEP 658/714 metadata file: () when the index has one without a hash,
    # None when it has none.
    core_metadata: tuple[tuple[str, str], ...] | None = None

    @property
    def is_wheel(self) -> bool:
        return self.filename.endswith(".whl")

    def hash(self, algo: str = "sha256") -> str | None:
        for name, value in self.hashes:
            if name == algo:
                return value
        return None


@dataclass(frozen=True, slots=True, kw_only=True)
class Candidate:
    """One version of the package under test, with the reason it cannot be tested, if any."""

    version: Version
    files: tuple[DistFile, ...]
    upload_time: datetime | None
    yanked: bool
    installable: bool
    reason: str | None = None

    @property
    def prerelease(self) -> bool:
        return self.version.is_prerelease


class OutcomeKind(enum.Enum):
    """What one probe of one environment did. Exactly one function decides (outcome.classify)."""

    PASS = "pass"
    FAIL = "fail"
    CRASH = "crash"
    TIMEOUT = "timeout"
    UNTESTABLE = "untestable"


@dataclass(frozen=True, slots=True, kw_only=True)
class Outcome:
    """The classified result of a probe.

    ``signature`` is what tells "the same failure" from "a different one": for a crash the
    signal (and innermost Python frame when faulthandler printed one; with gdb, the faulting
    library and function as gdb saw them), for a failure the exception type (and message
    line); ``outcome.same_failure`` decides from the fields (``library``, ``function``...),
    not from its text. ``detail`` is free text for people: the traceback tail, the
    faulthandler stack, the reason an environment was untestable.
    """

    kind: OutcomeKind
    signal: str | None = None
    exit_code: int | None = None
    signature: str = ""
    exception: str | None = None
    detail: str = ""
    library: str | None = None  # the shared library a crash faulted in (from gdb)
    # The innermost named function of that library (from gdb), as gdb printed it; None when
    # gdb named none (a stripped "??", no gdb, a record stored before it was kept).
    function: str | None = None
    native_frames: tuple[str, ...] = ()
    step: str = ""  # the probe step that decided this outcome

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind.value,
            "signal": self.signal,
            "exit_code": self.exit_code,
            "signature": self.signature,
            "library": self.library,
            "function": self.function,
            "step": self.step,
        }

    def describe(self) -> str:
        if self.kind is OutcomeKind.PASS:
            return "pass"
        if self.kind is OutcomeKind.CRASH:
            return f"crash ({self.signature})" if self.signature else "crash"
        if self.kind is OutcomeKind.FAIL:
            return f"fail ({self.signature})" if self.signature else f"fail (exit {self.exit_code})"
        if self.kind is OutcomeKind.TIMEOUT:
            return "timeout"
        return f"untestable ({self.signature})" if self.signature else "untestable"


@dataclass(frozen=True, slots=True, kw_only=True)
class RawProbe:
    """What the probe runner saw, before any interpretation."""

    returncode: int | None
    timed_out: bool
    seconds: float
    stdout_tail: str = ""
    stderr_tail: str = ""
    step: str = ""  # which probe step this is (a repro can chain several)


@dataclass(frozen=True, slots=True, kw_only=True, order=True)
class InstalledDist:
    name: str
    version: str

    def to_dict(self) -> dict[str, str]:
        return {"name": self.name, "version": self.version}


class IndexStrategy(enum.Enum):
    """Which index a project's files come from when several are named: uv's
    ``--index-strategy`` values (written to uv and to the stored config as they are)."""

    FIRST_INDEX = "first-index"  # uv's rule: a project's files from the first index that has it
    UNSAFE_BEST_MATCH = "unsafe-best-match"  # pip's: the best version from any index


@dataclass(frozen=True, slots=True, kw_only=True)
class IndexConfig:
    """Where packages come from. The same config drives envbisect's reads and uv's installs."""

    index_url: str = "https://pypi.org/simple"
    extra_index_urls: tuple[str, ...] = ()
    find_links: tuple[str, ...] = ()
    # A PyTorch variant folder (.../whl/cu121): torch packages come from there only.
    torch_index: str | None = None
    # The rule of the tool whose settings named the extra indexes (index/settings.py).
    index_strategy: IndexStrategy = IndexStrategy.FIRST_INDEX

    def to_dict(self) -> dict[str, Any]:
        """The stored and hashed form: URLs without their credentials, so that no password
        reaches the store, a report or an id, and a new password keeps every id."""
        out: dict[str, Any] = {
            "index_url": strip_credentials(self.index_url),
            "extra_index_urls": [strip_credentials(u) for u in self.extra_index_urls],
            "find_links": [strip_credentials(u) for u in self.find_links],
        }
        if self.torch_index:
            out["torch_index"] = strip_credentials(self.torch_index)
        if self.index_strategy is not IndexStrategy.FIRST_INDEX:  # ids of those unchanged
            out["index_strategy"] = self.index_strategy.value
        return out


@dataclass(frozen=True, slots=True, kw_only=True)
class SourceBuild:
    """One package built from one commit of its repository, into an environment whose rest
    comes from the indexes. The commit's id names the tree: where the repository lives (a URL,
    a mirror folder) is not part of what was built, so it is not part of the id."""

    package: str  # canonical project name
    commit: str  # the full commit id (hex)

    def to_dict(self) -> dict[str, str]:
        return {"package": self.package, "commit": self.commit}


@dataclass(frozen=True, slots=True, kw_only=True)
class EnvSpec:
    """What one candidate environment is asked to contain: canonical and hashable.

    ``source``: one package built from a commit (``envbisect commits``); the requirements are
    then the rest of the environment. Only a spec with a source has the key in its id's form,
    so every id made before it existed is unchanged."""

    requirements: tuple[str, ...]
    python: str
    indexes: IndexConfig = field(default_factory=IndexConfig)
    only_binary: bool = True
    exclude_newer: str | None = None
    prerelease: bool = False
    source: SourceBuild | None = None
    overrides: tuple[str, ...] = ()  # uv's --overrides ("name<spec>" each, sorted)
    # --inherit: the interpreter's site-packages folders the environment sees (a .pth file)
    # and what of theirs it uses ("name==version" each, sorted: never installed).
    inherit_paths: tuple[str, ...] = ()
    inherited: tuple[str, ...] = ()

    @classmethod
    def build(
        cls,
        requirements: list[str] | tuple[str, ...],
        *,
        python: str,
        indexes: IndexConfig,
        only_binary: bool = True,
        exclude_newer: str | None = None,
        prerelease: bool = False,
        source: SourceBuild | None = None,
        overrides: tuple[str, ...] = (),
        inherit_paths: tuple[str, ...] = (),
        inherited: tuple[str, ...] = (),
    ) -> EnvSpec:
        # Sorted by canonical name so that argument order never changes the id.
        reqs = tuple(sorted({r.strip() for r in requirements}, key=_req_sort_key))
        return cls(
            requirements=reqs,
            python=python,
            indexes=indexes,
            only_binary=only_binary,
            exclude_newer=exclude_newer,
            prerelease=prerelease,
            source=source,
            overrides=tuple(sorted(set(overrides))),
            inherit_paths=tuple(inherit_paths),
            inherited=tuple(sorted(set(inherited))),
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "requirements": list(self.requirements),
            "python": self.python,
            "indexes": self.indexes.to_dict(),
            "only_binary": self.only_binary,
            "exclude_newer": self.exclude_newer,
            "prerelease": self.prerelease,
        }
        if self.source is not None:  # ids of specs without a source unchanged
            out["source"] = self.source.to_dict()
        if self.overrides:  # likewise: ids of specs without overrides unchanged
            out["overrides"] = list(self.overrides)
        if self.inherit_paths:
            out["inherit"] = {"paths": list(self.inherit_paths), "used": list(self.inherited)}
        return out

    @property
    def env_id(self) -> str:
        blob = json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


@dataclass(frozen=True, slots=True, kw_only=True)
class ProbeRecord:
    """What one environment did under one repro: the unit the store keeps and a worker returns."""

    env_id: str
    repro_id: str
    spec: dict[str, Any]
    installed: tuple[InstalledDist, ...]
    installed_hash: str
    outcome: Outcome
    stdout_tail: str
    stderr_tail: str
    build_seconds: float
    probe_seconds: float
    timeout: float | None
    started_at: str
    envbisect_version: str
    env_report: dict[str, Any] | None = None
    runs: tuple[Outcome, ...] = ()  # every run, oldest first; () for a single-run probe
    host: str = ""  # the node it ran on (hostname; "hostname/node" on a Ray cluster)

    @property
    def all_runs(self) -> tuple[Outcome, ...]:
        return self.runs or (self.outcome,)

    @property
    def fails(self) -> int:
        """Runs that did not pass (untestable runs included: they are not passes)."""
        return sum(1 for o in self.all_runs if o.kind is not OutcomeKind.PASS)


def _req_sort_key(req: str) -> tuple[str, str]:
    head = req
    for sep in "=<>!~;[ @":
        head = head.split(sep, 1)[0]
    return (canonicalize_name(head), req)


def installed_hash(dists: list[InstalledDist] | tuple[InstalledDist, ...]) -> str:
    """A stable hash over what an environment actually holds (names canonical, order free)."""
    rows = sorted(f"{canonicalize_name(d.name)}=={d.version}" for d in dists)
    return hashlib.sha256("\n".join(rows).encode()).hexdigest()[:16]
