"""The edges a session opens on first use: uv, interpreters, index clients, store, executor.

Who does what: ``Edges`` finds uv and the interpreter (``target_for``, once per request;
interp.py keeps the answers on disk between invocations), opens the index clients, the store
and the executor when first asked, makes ``--torch-backend auto``'s choice, and closes what it
opened. A ``Session`` (session.py) holds one and hands it to its other parts (the ledger, the
builder, the probe runner). Nothing else opens a store or inspects an interpreter.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import TYPE_CHECKING

from packaging.utils import canonicalize_name

from envbisect.core.target import Target, for_version, version_request
from envbisect.diskcache import default_cache_dir
from envbisect.env import guard
from envbisect.env.interp import install_python, locate, python_downloads_refused
from envbisect.env.repro import Repro
from envbisect.env.uv import Uv, find_uv
from envbisect.errors import UsageError
from envbisect.exec.executor import Executor
from envbisect.exec.kinds import make_executor
from envbisect.model import IndexConfig
from envbisect.options import CommonOptions
from envbisect.progress import Progress
from envbisect.store import Store, refuse_foreign

if TYPE_CHECKING:  # a probe without pins never reads an index: no httpx at startup
    import httpx

    from envbisect.core.plan import Question
    from envbisect.env.uvplan import UvFallback
    from envbisect.index.client import IndexClient


class Edges:
    """What a ``Session`` opens on first use, and closes when it ends (``stop_executor``,
    then ``close``)."""

    def __init__(
        self,
        opts: CommonOptions,
        progress: Progress | None = None,
        *,
        transport: httpx.BaseTransport | None = None,
        executor: Executor | None = None,
        plan_only: bool = False,
    ) -> None:
        self.plan_only = plan_only  # nothing is built: a missing interpreter is planned for
        self.opts = opts  # as given: --torch-backend auto's variant is indexes()'s to choose
        self._indexes: IndexConfig | None = None
        self._indexes_lock = threading.Lock()
        if not (plan_only or opts.dry_run):  # someone else's folder: refused before any work
            refuse_foreign(opts.results)
        self.progress = progress or Progress()
        self.watcher = ProgressWatcher(self.progress)  # hears the probes run in this process
        self._transport = transport
        self._executor = executor
        self._own_executor = executor is None  # one handed in is its owner's to close
        self._uv: Uv | None = None
        self._targets: dict[str | None, tuple[str, Target]] = {}
        self._client: IndexClient | None = None
        self._others: dict[IndexConfig, IndexClient] = {}  # index_client's, by config
        self._store: Store | None = None
        self._uv_planned = False  # the uv fallback was said (once a run)
        self._inherited: tuple[tuple[str, ...], dict[str, str]] | None = None
        self._inherit_lock = threading.Lock()  # builds ahead ask from their own thread

    # -- lifetime -------------------------------------------------------------------------------

    def stop_executor(self, exc: BaseException | None) -> None:
        """The executor this session made: its tasks cancelled after an error, else closed."""
        if self._executor is not None and self._own_executor:
            if exc is not None:
                self._executor.cancel_all()
            else:
                self._executor.close()

    def close(self) -> None:
        """The index clients and the store, closed (the executor is stopped first)."""
        if self._client is not None:
            self._client.close()
        for other in self._others.values():
            other.close()
        if self._store is not None:
            self._store.close()

    # -- the edges, opened on first use ------------------------------------------------------

    def indexes(self) -> IndexConfig:
        """The indexes of this session's environments: the options', with the choice they
        leave to this machine made at the first call: ``--torch-backend auto``'s variant
        (nvidia-smi, once, said through the reporter)."""
        with self._indexes_lock:
            if self._indexes is None:
                auto = self.opts.planning.torch_auto is not None
                self._indexes = (
                    _choose_torch(self.opts, self.progress) if auto else self.opts.planning.indexes
                )
            return self._indexes

    @property
    def uv(self) -> Uv:
        """uv, as every call of it runs in this session (offline with ``--offline``)."""
        if self._uv is None:
            self._uv = Uv(
                binary=find_uv(),
                offline=self.opts.planning.offline,
                refresh=self.opts.planning.refresh,
                refresh_packages=self.opts.planning.refresh_packages,
            )
        return self._uv

    @property
    def inherited(self) -> tuple[tuple[str, ...], dict[str, str]]:
        """``--inherit``: the --python interpreter's site-packages folders and what they
        hold (canonical name -> version); empty without --inherit. Read once."""
        if not self.opts.planning.inherit:
            return (), {}
        with self._inherit_lock:
            return self._read_inherited()

    def _read_inherited(self) -> tuple[tuple[str, ...], dict[str, str]]:
        if self._inherited is None:
            from envbisect.env.interp import inherited

            self._inherited = inherited(self.interpreter)
            dists = self._inherited[1]
            shown = ", ".join(f"{n} {v}" for n, v in sorted(dists.items())[:6])
            more = f" and {len(dists) - 6} more" if len(dists) > 6 else ""
            self.progress.message(
                f"envbisect: --inherit: each environment sees {self.interpreter}'s own "
                f"{len(dists)} package(s) ({shown}{more}), never installs them"
            )
        return self._inherited

    def provided(self, moving: Iterable[str] = ()) -> dict[str, str]:
        """What the planner takes as it is installed in the interpreter (--inherit), but
        the packages the search moves (the candidate's, a matrix's axes)."""
        skip = {canonicalize_name(n) for n in moving}
        return {n: v for n, v in self.inherited[1].items() if n not in skip}

    def uv_planner(self, python: str | None = None, *, only_binary: bool = True) -> UvFallback:
        """uv, for every plan resolvelib gives up on in this session (run, lock, matrix,
        diff, by date): the same pins, constraints and cut-off, answered by ``uv pip
        compile``. Said once a run, on stderr."""
        from envbisect.env.uvplan import UvFallback  # a plan's: not a probe's

        def notice(q: Question) -> None:
            if self._uv_planned:
                return
            self._uv_planned = True
            asked = ", ".join(str(r) for r in list(q.requirements)[:3])
            more = f" and {len(q.requirements) - 3} more" if len(q.requirements) > 3 else ""
            self.progress.message(
                f"envbisect: the resolver gave up on a plan ({asked}{more}); uv planned it, "
                "as it plans any other the resolver gives up on in this run"
            )

        return UvFallback(
            uv=self.uv,
            python=python or self.interpreter,
            indexes=self.indexes(),
            only_binary=only_binary,
            notice=notice,
            overrides=self.opts.planning.overrides.texts,
        )

    def target_for(self, request: str | None) -> tuple[str, Target]:
        """The interpreter uv finds for ``request`` and its facts (once per request).

        A session that only plans (``plan_only``, ``--dry-run``) and is asked for a CPython
        version this machine lacks plans for that version on this platform (said); a build
        then needs the interpreter, and uv's error says how to get one."""
        if request not in self._targets:
            cache = self.opts.planning.cache_dir or default_cache_dir()
            try:
                self._targets[request] = locate(
                    self.uv, request, cache, install=self._python_install()
                )
            except UsageError as e:
                wanted = version_request(request)
                if e.ref != "python-not-found" or wanted is None:
                    raise
                if not (self.plan_only or self.opts.dry_run):
                    raise
                host = locate(self.uv, sys.executable, cache)[1]
                self.progress.message(
                    f"envbisect: no Python {wanted[0]}.{wanted[1]} here: planning for CPython "
                    f"{wanted[0]}.{wanted[1]} on this platform ({host.short.split('-', 1)[-1]});"
                    f" building needs the interpreter (uv python install "
                    f"{wanted[0]}.{wanted[1]})"
                )
                self._targets[request] = (str(request), for_version(host, *wanted))
        return self._targets[request]

    def _python_install(self) -> Callable[[str], None] | None:
        """How a missing --python version is installed: uv's command, said; none when only
        planning, offline, or refused (--no-python-downloads, uv's UV_PYTHON_DOWNLOADS)."""
        if self.plan_only or self.opts.dry_run or self.opts.planning.offline:
            return None
        if not self.opts.planning.python_downloads or python_downloads_refused():
            return None
        return lambda request: install_python(self.uv, request, self.progress.message)

    # One name per meaning: ``opts.python`` is the request (--python, as typed or resolved:
    # cli/optionset.py), ``interpreter`` the interpreter uv found for it (its path), and
    # ``target`` what that interpreter is (the platform and Python a plan is made for).
    @property
    def interpreter(self) -> str:
        """The path of the interpreter uv finds for the --python request."""
        return self.target_for(self.opts.planning.python)[0]

    @property
    def target(self) -> Target:
        """What the interpreter is: the platform and the Python version plans are made for."""
        return self.target_for(self.opts.planning.python)[1]

    @property
    def client(self) -> IndexClient:
        if self._client is None:
            self._client = self._new_client(self.indexes())
        return self._client

    def _new_client(self, config: IndexConfig) -> IndexClient:
        from envbisect.index.client import IndexClient

        return IndexClient(
            config,
            transport=self._transport,
            cache_dir=self.opts.planning.cache_dir or default_cache_dir(),
            offline=self.opts.planning.offline,
            refresh=self.opts.planning.refresh or self.opts.planning.refresh_packages,
        )

    def index_client(self, config: IndexConfig) -> IndexClient:
        """A client of other indexes than the session's (the public ones a lockfile names),
        read the way the session's are: the same transport, cache and --offline."""
        if config == self.indexes():
            return self.client
        if config not in self._others:
            self._others[config] = self._new_client(config)
        return self._others[config]

    @property
    def store(self) -> Store:
        if self._store is None:
            self._store = Store(self.opts.results)
        return self._store

    @property
    def has_executor(self) -> bool:
        """Whether an executor was handed in or made (``executor`` makes one)."""
        return self._executor is not None

    @property
    def executor(self) -> Executor:
        if self._executor is None:
            guard.token()  # worker processes inherit the owner's tag: they die with it
            self._executor = make_executor(
                self.opts.execution,
                self.opts.parallel.workers,
                results=self.opts.results,
                watcher=self.watcher,
            )
        return self._executor

    @property
    def repro(self) -> Repro:
        assert self.opts.probing.repro is not None, "this mode runs no repro"
        return self.opts.probing.repro


class ProgressWatcher:
    """The worker's watcher (env/worker.py): the phases of the probes run in this process,
    told to the reporter under the label each environment's probe was reported as."""

    def __init__(self, progress: Progress) -> None:
        self.progress = progress
        self.labels: dict[str, str] = {}  # env id -> the label its probe was reported as

    @property
    def verbose(self) -> bool:
        return self.progress.verbose

    def phase(self, env_id: str, phase: str) -> None:
        self.progress.phase(self.labels.get(env_id, env_id), phase)

    def output(self, env_id: str, stream: str, text: str) -> None:
        self.progress.output(self.labels.get(env_id, env_id), stream, text)


def _choose_torch(opts: CommonOptions, progress: Progress) -> IndexConfig:
    """``opts``'s indexes with ``--torch-backend auto`` made a variant: the newest CUDA build
    the driver supports, else the CPU build."""
    from envbisect.env import envreport  # nvidia-smi; a module attribute, for tests
    from envbisect.index import pytorch

    assert opts.planning.torch_auto is not None
    smi = envreport.read_nvidia_smi()
    backend = pytorch.resolve_backend("auto", smi.get("cuda") if smi else None)
    progress.message(f"envbisect: --torch-backend auto chose {backend}")
    url = pytorch.variant_url(backend, opts.planning.torch_auto.mirror)
    return replace(opts.planning.indexes, torch_index=url)
