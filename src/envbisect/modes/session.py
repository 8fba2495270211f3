"""One session per invocation: the one place that wires the core to the edges.

Who does what: a session is made of parts, each in its own module, built once here and
handed to each other: the edges (edges.py: uv, the interpreters, the index clients, the
store, the executor, opened on first use and closed on exit), the ledger (ledger.py: the
store's side: stored records, this run's claims, records written), the builder (builder.py:
environments built in this thread and ahead of the next round) and the probe runner
(prober.py: the store first, then this thread or the executor). The session itself makes
environment specs for its target (``env_spec``: the id says what the interpreter *is*, never
where it lives), the run id and the result header, and closes the parts in order. Every mode
opens one; a mode reaches the edges through the session's properties and probes through
``probe``, ``probe_all`` and ``rows``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from envbisect.core.names import project_name
from envbisect.core.overrides import for_environment
from envbisect.core.target import Target
from envbisect.errors import Interrupted
from envbisect.model import EnvSpec, IndexConfig, ProbeRecord, SourceBuild
from envbisect.modes.builder import Builder
from envbisect.modes.edges import Edges
from envbisect.modes.ledger import Ledger
from envbisect.modes.prober import Prober
from envbisect.modes.want import Want
from envbisect.options import CommonOptions
from envbisect.progress import Progress
from envbisect.redact import mask_env_map, mask_text

if TYPE_CHECKING:
    import httpx

    from envbisect.core.results.parts import ProbeRow
    from envbisect.core.results.search import SearchResult
    from envbisect.env.repro import Repro
    from envbisect.env.uv import Uv
    from envbisect.env.uvplan import UvFallback
    from envbisect.exec.executor import Executor
    from envbisect.index.client import IndexClient
    from envbisect.store import Store

__all__ = ["Session", "Want"]

R = TypeVar("R", bound="SearchResult")


class Session:
    """Use as a context manager; everything it opened is closed on exit."""

    def __init__(
        self,
        opts: CommonOptions,
        progress: Progress | None = None,
        *,
        transport: httpx.BaseTransport | None = None,
        executor: Executor | None = None,
        plan_only: bool = False,
    ) -> None:
        """The parts, each handed the ones it asks (nothing is opened here)."""
        self.edges = Edges(
            opts, progress, transport=transport, executor=executor, plan_only=plan_only
        )
        self.ledger = Ledger(self.edges)
        self.builder = Builder(self.edges, self.ledger)
        self.prober = Prober(self.edges, self.ledger, self.builder)
        self.opts = opts  # as given: --torch-backend auto's variant is indexes()'s to choose
        self.progress = self.edges.progress

    def __enter__(self) -> Session:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.edges.stop_executor(exc)
        self.builder.end()
        self.ledger.close()
        self.edges.close()

    # -- the edges (edges.py), as the modes reach them ---------------------------------------

    def indexes(self) -> IndexConfig:
        """The indexes of this session's environments (``Edges.indexes``)."""
        return self.edges.indexes()

    @property
    def uv(self) -> Uv:
        return self.edges.uv

    @property
    def client(self) -> IndexClient:
        return self.edges.client

    def index_client(self, config: IndexConfig) -> IndexClient:
        return self.edges.index_client(config)

    @property
    def store(self) -> Store:
        return self.edges.store

    @property
    def repro(self) -> Repro:
        return self.edges.repro

    def target_for(self, request: str | None) -> tuple[str, Target]:
        """The interpreter uv finds for ``request`` and its facts (``Edges.target_for``)."""
        return self.edges.target_for(request)

    @property
    def interpreter(self) -> str:
        """The path of the interpreter uv finds for the --python request."""
        return self.edges.interpreter

    @property
    def target(self) -> Target:
        """What the interpreter is: the platform and the Python version plans are made for."""
        return self.edges.target

    def provided(self, moving: Iterable[str] = ()) -> dict[str, str]:
        """What the planner takes as installed in the interpreter (``Edges.provided``)."""
        return self.edges.provided(moving)

    def uv_planner(self, python: str | None = None, *, only_binary: bool = True) -> UvFallback:
        """uv, for every plan resolvelib gives up on (``Edges.uv_planner``)."""
        return self.edges.uv_planner(python, only_binary=only_binary)

    # -- what the session names -------------------------------------------------------------------

    def env_spec(
        self,
        requirements: Sequence[str],
        *,
        only_binary: bool = True,
        exclude_newer: str | None = None,
        prerelease: bool = False,
        target: Target | None = None,
        indexes: IndexConfig | None = None,
        source: SourceBuild | None = None,
        overrides: Sequence[str] = (),
    ) -> EnvSpec:
        inherit = self._inherit(requirements)
        return EnvSpec.build(
            inherit.pop("requirements"),
            python=(target or self.target).identity,
            indexes=indexes or self.indexes(),
            only_binary=only_binary,
            exclude_newer=exclude_newer,
            prerelease=prerelease,
            source=source,
            overrides=for_environment((*self.opts.planning.overrides, *overrides), requirements),
            **inherit,
        )

    def _inherit(self, requirements: Sequence[str]) -> dict[str, Any]:
        """--inherit: the requirements the interpreter's own packages meet are left to them
        (and every other package of theirs is excluded from the install: never downloaded);
        the rest are installed into the environment, in front of them."""
        paths, dists = self.edges.inherited
        if not paths:
            return {"requirements": list(requirements)}
        keep, named = [], set()
        for text in requirements:
            req = Requirement(text)
            name = canonicalize_name(req.name)
            have = dists.get(name)
            if have is not None and not req.url and req.specifier.contains(have, prereleases=True):
                continue
            keep.append(text)
            named.add(name)
        used = [f"{n}=={v}" for n, v in dists.items() if n not in named]
        return {"requirements": keep, "inherit_paths": paths, "inherited": used}

    def run_id(self, name: str, fields: dict[str, Any]) -> str:
        """The folder of a run's report: the same question asked again gets the same one.

        What changes the question: the mode's own fields, the repro, what the interpreter is,
        the indexes, and the flags that change what counts as the answer (not --jobs)."""
        blob = json.dumps(
            {
                **fields,
                "repro": self.repro.repro_id,
                "python": self.target.identity,
                "indexes": self.indexes().to_dict(),
                "any_failure": self.opts.probing.any_failure,
                **({"repeat": self.opts.probing.repeat} if self.opts.probing.repeat != 1 else {}),
                **(
                    {"overrides": list(self.opts.planning.overrides)}
                    if self.opts.planning.overrides
                    else {}
                ),
            },
            sort_keys=True,
        )
        slug = project_name(name, what="--package")  # a folder under --results: never a path
        return f"{slug}-{hashlib.sha256(blob.encode()).hexdigest()[:8]}"

    def result(self, cls: type[R], *, package: str, run_id: str, **kw: Any) -> R:
        """A result of type ``cls`` with its header (where the question was asked): no answer
        until a mode finds one."""
        return cls(
            package=package,
            target=f"{self.target.short} ({self.interpreter}, Python {self.target.python_version})",
            command=mask_text(self.opts.command),
            repro=self.repro.describe(),
            env=mask_env_map(self.repro.user_env),
            overrides=self.opts.planning.overrides.texts,
            run_id=run_id,
            **kw,
        )

    def interrupted(self, e: KeyboardInterrupt) -> Interrupted:
        return Interrupted(
            f"interrupted; finished probes are kept in {self.opts.results / 'envbisect.db'}",
            hint="run the same command again to resume: finished probes are reused",
        )

    # -- probing (prober.py) ---------------------------------------------------------------------

    @property
    def in_thread(self) -> bool:
        """Whether probes run one at a time in this thread (``--jobs 1``, this machine)."""
        return self.prober.in_thread

    def stored(self, spec: EnvSpec, runs: int) -> ProbeRecord | None:
        """The stored record that answers for ``spec`` with ``runs`` runs, if there is one."""
        return self.ledger.stored(spec, runs)

    def probe(self, spec: EnvSpec, runs: int | None = None) -> tuple[ProbeRecord, bool]:
        """One environment's record, and whether it came from the store."""
        (row,) = self.prober.probe_all(
            [Want(label="", spec=spec, runs=runs or self.opts.probing.repeat)]
        )
        return row

    def probe_all(
        self,
        wants: Sequence[Want],
        *,
        again: bool = False,
        ahead: Callable[[], Sequence[Want]] | None = None,
    ) -> list[tuple[ProbeRecord, bool]]:
        """Every wanted environment's record and whether the store had it (``Prober``)."""
        return self.prober.probe_all(wants, again=again, ahead=ahead)

    def rows(
        self,
        wants: Sequence[Want],
        ahead: Callable[[], Sequence[Want]] | None = None,
        *,
        again: bool = False,
    ) -> list[ProbeRow]:
        """The report row of each wanted environment (untestable ones without a build)."""
        return self.prober.rows(wants, ahead, again=again)
