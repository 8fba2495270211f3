"""Building candidate environments with uv.

Who does what: ``find_uv`` locates the binary (the ``uv`` package's own API first, then PATH);
the interpreter the user named, and its facts, are env/interp.py's; ``Materializer.build``
creates one fresh venv and installs one ``EnvSpec`` into it, then reads back what was actually
installed from the venv's metadata (no subprocess). A build of a session first lets uv answer
from its cache where the session revalidated every page it needs (env/uvfresh.py).

All environments share uv's cache (``UV_CACHE_DIR`` when set), so a warm environment is hard
links, not copies. uv runs with ``--no-config`` and without the index environment variables:
the indexes come from the ``EnvSpec`` only, so uv installs from exactly the indexes envbisect
read its candidates from.

``Uv`` is the binary and how every call of it runs; its ``env`` is the one place uv's
environment is made (``--offline`` becomes ``UV_OFFLINE=1`` there), so no call can forget it:
the functions here, ``Materializer`` and the planner's ``UvFallback`` take a ``Uv``, never a
bare path. Offline, a package missing from uv's cache is an ``offline-miss``, not untestable.
What a failed call's output means (infrastructure, or the candidate's own) is uvfailure.py's.
"""

from __future__ import annotations

import errno
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from packaging.utils import canonicalize_name

from envbisect.core.outcome import untestable
from envbisect.env import guard, uvfresh
from envbisect.env.distinfo import read_installed, site_packages
from envbisect.env.runner import interrupted, run_captured
from envbisect.env.scrub import scrub
from envbisect.env.uvfailure import first_error_line, uv_failure
from envbisect.errors import (
    DiskFull,
    UsageError,
    UvMissing,
)
from envbisect.index.pytorch import is_official
from envbisect.model import EnvSpec, IndexConfig, IndexStrategy, InstalledDist, Outcome
from envbisect.redact import mask_text

# Variables that would make uv read other indexes or policies than the EnvSpec says.
UV_ENV_DROP = (
    "UV_INDEX_URL",
    "UV_EXTRA_INDEX_URL",
    "UV_DEFAULT_INDEX",
    "UV_INDEX",
    "UV_FIND_LINKS",
    "UV_NO_INDEX",
    "UV_INDEX_STRATEGY",
    "UV_EXCLUDE_NEWER",
    "UV_PRERELEASE",
    "UV_NO_BINARY",
    "UV_ONLY_BINARY",
    "UV_NO_BUILD",
    "UV_CONSTRAINT",
    "UV_OVERRIDE",
    "UV_BUILD_CONSTRAINT",
    "UV_TORCH_BACKEND",
    "UV_RESOLUTION",
    "UV_PYTHON",
    "UV_SYSTEM_PYTHON",
    "VIRTUAL_ENV",
    "CONDA_PREFIX",
    "UV_OFFLINE",  # uv is offline exactly when envbisect is (Uv.offline), like its index client
)


def index_args(indexes: IndexConfig, *, only_binary: bool) -> list[str]:
    """uv's flags for the indexes envbisect reads (install and compile alike), without the
    index URLs themselves: those may carry a password, and argv is public (``ps``). They go
    to uv through its environment, see ``index_env``."""
    args: list[str] = []
    for link in indexes.find_links:
        args += ["--find-links", link]
    torch = indexes.torch_index
    if torch and is_official(torch):
        # uv knows PyTorch's layout: torch packages from that folder, the rest elsewhere.
        args += ["--torch-backend", torch.rstrip("/").rsplit("/", 1)[1]]
    if indexes.index_strategy is not IndexStrategy.FIRST_INDEX:
        args += ["--index-strategy", indexes.index_strategy.value]
    if only_binary:
        args += ["--only-binary", ":all:"]
    return args


def index_env(indexes: IndexConfig) -> dict[str, str]:
    """The index URLs, credentials included, as uv's environment variables.

    ``/proc/<pid>/environ`` is readable by the same user only, unlike the command line.
    ``UV_EXTRA_INDEX_URL`` is space-separated, earlier ones first, as the flags would be; a
    PyTorch mirror comes last among them (uv's first-index rule, as envbisect reads it)."""
    extra = list(indexes.extra_index_urls)
    torch = indexes.torch_index
    if torch and not is_official(torch):
        extra.append(torch)
    env = {"UV_INDEX_URL": indexes.index_url}
    if extra:
        env["UV_EXTRA_INDEX_URL"] = " ".join(extra)
    return env


def find_uv() -> str:
    """The uv binary: ``$ENVBISECT_UV`` when it is set (a uv of one's own choosing), else
    the installed ``uv`` package's, else from PATH."""
    chosen = os.environ.get("ENVBISECT_UV")
    if chosen:
        if os.path.isfile(chosen) and os.access(chosen, os.X_OK):
            return chosen
        raise UvMissing(
            "ENVBISECT_UV names no executable file",
            hint="point ENVBISECT_UV at a uv binary, or unset it to use the installed uv",
        )
    try:
        import uv

        path = str(uv.find_uv_bin())
        if os.path.isfile(path):
            return path
    except (ImportError, AttributeError, FileNotFoundError):
        pass
    found = shutil.which("uv")
    if found:
        return found
    raise UvMissing(
        "uv is not installed",
        hint="pip install uv (envbisect depends on it; reinstalling envbisect brings it back)",
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class Uv:
    """The uv binary and how every call of it runs: the only maker of uv's environment.

    ``offline``: uv touches no network (``UV_OFFLINE=1``; envbisect's ``--offline``), it
    answers from its cache alone, as the index client answers from its own. ``cache_dir``:
    uv's cache (``UV_CACHE_DIR``), else uv's default. Frozen and picklable, like a task."""

    binary: str
    offline: bool
    cache_dir: str | None = None
    # --refresh / --refresh-package: uv revalidates those cached index pages on each install
    refresh: bool = False
    refresh_packages: tuple[str, ...] = ()

    def refresh_args(self) -> list[str]:
        if self.refresh:
            return ["--refresh"]
        return [a for name in self.refresh_packages for a in ("--refresh-package", name)]

    def env(self, indexes: IndexConfig | None = None) -> dict[str, str]:
        """The environment of a uv call: this process's, less what would change uv's indexes
        or policies, plus ``indexes`` (credentials included: never on argv)."""
        # Scrubbed as a probe's (env/scrub.py): an sdist's build backend is code run for the
        # candidate environment, and PYTHONPATH or PYTHONOPTIMIZE would change what it builds.
        env = {k: v for k, v in scrub(os.environ).items() if k not in UV_ENV_DROP}
        env["UV_NO_PROGRESS"] = "1"
        env.setdefault("NO_COLOR", "1")
        # uv wraps its messages at COLUMNS: a failure's first line, which names it, would
        # then depend on the terminal (or the test runner) of the run that saw it.
        env["COLUMNS"] = "100000"
        if self.cache_dir:
            env["UV_CACHE_DIR"] = self.cache_dir
        if self.offline:
            env["UV_OFFLINE"] = "1"
        if indexes is not None:
            env.update(index_env(indexes))
        return env


@dataclass(frozen=True, slots=True, kw_only=True)
class BuiltEnv:
    path: Path
    python: Path
    bin_dir: Path
    installed: tuple[InstalledDist, ...]
    seconds: float
    log: str = ""  # what uv printed (with verbose; --quiet otherwise)


@dataclass(frozen=True, slots=True, kw_only=True)
class BuildFailed:
    outcome: Outcome  # always UNTESTABLE
    seconds: float
    log: str = ""  # what uv printed


class Materializer:
    """Creates fresh uv virtualenvs under ``envs_dir``, one per ``build`` call."""

    def __init__(self, uv: Uv, envs_dir: Path, *, verbose: bool = False, session: str = "") -> None:
        self.uv = uv
        self.envs_dir = envs_dir
        self.verbose = verbose  # uv says what it resolved and installed (-v); same install
        # The session's token: pages uv revalidated in it are not asked for again within
        # env/uvfresh.py's window ("": every install asks uv online, as it would itself).
        self.session = session

    def build(
        self,
        spec: EnvSpec,
        python: str,
        on_phase: Callable[[str], None] | None = None,
        *,
        source_repo: str | None = None,
        build_timeout: float | None = None,
    ) -> BuiltEnv | BuildFailed:
        """Create a venv for ``python`` and install ``spec`` into it.

        An environment that cannot be resolved or installed is a ``BuildFailed`` (untestable);
        a network failure raises ``IndexUnreachable`` and a full disk ``DiskFull``, because
        those say nothing about the candidate. A spec with a ``source`` builds that package
        from its commit, checked out of the mirror at ``source_repo`` (env/srcbuild.py); the
        install is then cut at ``build_timeout`` seconds (untestable).
        """
        start = time.monotonic()
        try:
            self.envs_dir.mkdir(parents=True, exist_ok=True)
            _reap_once(self.envs_dir)
            path = Path(tempfile.mkdtemp(prefix=f"{spec.env_id}-", dir=self.envs_dir))
            guard.own_env_dir(path)  # removed by the watchdog, or the next start, if we die
        except OSError as e:
            raise _os_error(e, self.envs_dir) from e
        try:
            return self._build(
                spec, python, path, start, on_phase or _quiet, source_repo, build_timeout
            )
        except BaseException:
            # Ctrl-C or an infrastructure error mid-build: no half-built environment stays.
            self.remove(path)
            raise

    def _build(
        self,
        spec: EnvSpec,
        python: str,
        path: Path,
        start: float,
        on_phase: Callable[[str], None],
        source_repo: str | None = None,
        build_timeout: float | None = None,
    ) -> BuiltEnv | BuildFailed:
        env = self.uv.env(spec.indexes)
        venv = self._venv(spec, python, path, env)
        if venv is not None:
            self.remove(path)
            return self._failed(venv, start, spec, what="creating the virtualenv")
        vpython = _venv_python(path)
        on_phase("resolving & installing")  # one uv command: it resolves, then installs
        args = self._install_args(spec, vpython)
        tree: list[str] = []
        if spec.source is not None:
            from envbisect.env import srcbuild

            on_phase("checking out")
            tree = [str(srcbuild.checkout(spec.source, source_repo, path / srcbuild.FOLDER))]
            args += srcbuild.install_args(spec)
            on_phase("building from source & installing")
        args += ["--", *spec.requirements, *tree]
        install: subprocess.CompletedProcess[str] | BuildFailed | None = None
        installed: tuple[InstalledDist, ...] | None = None
        began: float | None = None  # an install online: when it started
        if not spec.requirements and not tree:  # everything inherited: nothing to install
            install = subprocess.CompletedProcess(args, 0, "", "")
        elif not tree and self._may_use_cache(spec):
            cached = self._from_cache(spec, path, args, env)
            if cached is not None:
                install, installed = cached
            else:  # a miss (a file never downloaded) or a page older than the window
                try:  # online, in a venv made afresh: uv would keep what is there
                    shutil.rmtree(path)
                    path.mkdir(mode=0o700)  # as tempfile.mkdtemp made it
                except OSError as e:
                    raise _os_error(e, self.envs_dir) from e
                venv = self._venv(spec, python, path, env)
                if venv is not None:
                    self.remove(path)
                    return self._failed(venv, start, spec, what="creating the virtualenv")
                # its files (--overrides, --excludes) lived in the folder: written again
                args = [*self._install_args(spec, vpython), "--", *spec.requirements]
        if install is None:
            began = uvfresh.REVALIDATED.now()
            install = self._install(
                args, env=env, path=path, start=start, tree=tree, build_timeout=build_timeout
            )
        if isinstance(install, BuildFailed):
            return install
        if install.returncode != 0:
            self.remove(path)
            # uv names the checkout's folder: its temporary path says nothing, and differs.
            text = install.stderr.replace(str(path), "<env>")
            return self._failed(text, start, spec, what="building" if tree else "installing")
        if installed is None:
            installed = read_installed(path)
        if began is not None and not tree:
            self._mark(spec, installed, began)
        why_not = _unreadable(spec, installed)
        if why_not:
            self.remove(path)
            return BuildFailed(outcome=untestable(why_not), seconds=time.monotonic() - start)
        return BuiltEnv(
            path=path,
            python=vpython,
            bin_dir=vpython.parent,
            installed=installed,
            seconds=time.monotonic() - start,
            log=mask_text(install.stderr) if self.verbose else "",
        )

    def _venv(self, spec: EnvSpec, python: str, path: Path, env: dict[str, str]) -> str | None:
        """A fresh venv at ``path`` (what uv said where it could not make one)."""
        flags = ["--no-project", "--no-config", "--quiet", "--allow-existing"]
        venv = self._run([self.uv.binary, "venv", str(path), "--python", python, *flags], env)
        if venv.returncode != 0:
            return venv.stderr
        if spec.inherit_paths:  # --inherit: the interpreter's own packages, after the env's
            for site in site_packages(path):
                (site / "envbisect-inherit.pth").write_text(
                    "".join(f"{p}\n" for p in spec.inherit_paths), encoding="utf-8"
                )
        return None

    def _scope(self, spec: EnvSpec) -> tuple[object, ...]:
        return (self.session, self.uv.cache_dir, spec.indexes)

    def _may_use_cache(self, spec: EnvSpec) -> bool:
        """Whether this session has revalidated any page for ``spec``'s indexes lately (an
        answer from uv's cache could count)."""
        if not self.session or self.uv.offline:
            return False
        return uvfresh.REVALIDATED.any_fresh(self._scope(spec))

    def _from_cache(
        self, spec: EnvSpec, path: Path, args: list[str], env: dict[str, str]
    ) -> tuple[subprocess.CompletedProcess[str], tuple[InstalledDist, ...]] | None:
        """The install answered from uv's cache, and what it installed, where this session
        revalidated the page of each of those within the window (env/uvfresh.py); else None
        (the venv then holds whatever uv got to install)."""
        proc = self._run(args, {**env, "UV_OFFLINE": "1"})
        if proc.returncode != 0:
            return None
        installed = read_installed(path)
        names = {canonicalize_name(d.name) for d in installed}
        if not uvfresh.REVALIDATED.fresh(self._scope(spec), names):
            return None
        note = "envbisect: from uv's cache (this run revalidated those pages)\n"
        return subprocess.CompletedProcess(proc.args, 0, proc.stdout, note + proc.stderr), installed

    def _mark(self, spec: EnvSpec, installed: tuple[InstalledDist, ...], began: float) -> None:
        """What an install online put in the venv: uv revalidated those pages after
        ``began``."""
        if self.session and not self.uv.offline:
            names = {canonicalize_name(d.name) for d in installed}
            uvfresh.REVALIDATED.mark(self._scope(spec), names, began)

    def _install_args(self, spec: EnvSpec, vpython: Path) -> list[str]:
        """``uv pip install`` into the venv, from the spec's indexes and with its flags."""
        args = [self.uv.binary, "pip", "install", "--python", str(vpython), "--no-config"]
        args += [] if self.verbose else ["--quiet"]
        args += self.uv.refresh_args()
        args += index_args(spec.indexes, only_binary=spec.only_binary)
        if spec.exclude_newer:
            args += ["--exclude-newer", spec.exclude_newer]
        if spec.prerelease:
            args += ["--prerelease", "allow"]
        if spec.inherited:  # --inherit: the interpreter's packages are never installed here
            excluded = vpython.parent.parent / "envbisect-inherited.txt"
            excluded.write_text(
                "".join(f"{i.split('==')[0]}\n" for i in spec.inherited), encoding="utf-8"
            )
            args += ["--excludes", str(excluded)]
        if spec.overrides:  # uv reads them from a file; it lives in the environment's folder
            listed = vpython.parent.parent / "envbisect-overrides.txt"
            listed.write_text("".join(f"{o}\n" for o in spec.overrides), encoding="utf-8")
            args += ["--overrides", str(listed)]
        return args

    def _install(
        self,
        args: list[str],
        *,
        env: dict[str, str],
        path: Path,
        start: float,
        tree: list[str],
        build_timeout: float | None,
    ) -> subprocess.CompletedProcess[str] | BuildFailed:
        """Run the install; a build from source (``tree``: its checkout) is cut at
        ``build_timeout`` (untestable), and its checkout removed either way."""
        try:
            return self._run(args, env, timeout=build_timeout if tree else None)
        except subprocess.TimeoutExpired:
            from envbisect.env import srcbuild

            self.remove(path)
            assert build_timeout is not None
            outcome = srcbuild.timed_out(build_timeout)
            return BuildFailed(outcome=outcome, seconds=time.monotonic() - start)
        finally:
            if tree:  # built and installed (or not): the checkout is not part of the env
                shutil.rmtree(tree[0], ignore_errors=True)

    def remove(self, path: Path) -> None:
        shutil.rmtree(path, ignore_errors=True)
        guard.released(path)

    def _run(
        self, args: list[str], env: dict[str, str], timeout: float | None = None
    ) -> subprocess.CompletedProcess[str]:
        try:
            proc = run_captured(args, env=env, timeout=timeout)
        except FileNotFoundError as e:
            where = self.uv.binary
            raise UvMissing(f"uv is not installed at {where}", hint="pip install uv") from e
        if proc.returncode in (-signal.SIGINT, 128 + signal.SIGINT) or interrupted():
            # uv shares our process group: Ctrl-C reached it too (in a --jobs worker thread,
            # before the main thread could say so). Not a failed build: an interruption.
            raise KeyboardInterrupt
        return proc

    def _failed(self, stderr: str, start: float, spec: EnvSpec, *, what: str) -> BuildFailed:
        text = mask_text(stderr.strip())
        if "No space left on device" in text or "os error 28" in text:
            raise DiskFull(
                f"the disk is full while {what} an environment in {self.envs_dir}",
                hint="free some space or pass --results on another disk; finished probes are kept",
            )
        refused = uv_failure(
            text,
            offline=self.uv.offline,
            indexes=spec.indexes,
            requirements=spec.requirements,
            what=what,
        )
        if refused is not None:
            raise refused
        return BuildFailed(
            outcome=untestable(f"uv failed {what}: {first_error_line(text)}", detail=text),
            seconds=time.monotonic() - start,
            log=text,
        )


def _unreadable(spec: EnvSpec, installed: tuple[InstalledDist, ...]) -> str:
    """Why a package built from a commit did not install itself readably ("": it did, or
    nothing was built from a commit)."""
    if spec.source is None:
        return ""
    from envbisect.env import srcbuild

    return srcbuild.unreadable(spec.source, installed)


def _quiet(phase: str) -> None:
    return None


_reaped: set[Path] = set()


def _reap_once(envs_dir: Path) -> None:
    """Environments left by an envbisect that died (SIGKILL, power cut), once per process."""
    if envs_dir not in _reaped:
        _reaped.add(envs_dir)
        guard.reap_envs(envs_dir)


def _os_error(e: OSError, where: Path) -> Exception:
    if e.errno == errno.ENOSPC:
        return DiskFull(
            f"the disk holding {where} is full",
            hint="free some space or pass --results on another disk; finished probes are kept",
        )
    return UsageError(
        f"cannot create environments in {where}: {e.strerror}",
        hint="pass a writable --results directory",
        ref="results-not-writable",
    )


def _venv_python(path: Path) -> Path:
    if os.name == "nt":
        return path / "Scripts" / "python.exe"
    return path / "bin" / "python"
