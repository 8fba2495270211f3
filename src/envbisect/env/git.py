"""git, as envbisect runs it: one bare mirror per repository, refs, first-parent commits, a
commit's tree for a build.

Policy here, mechanism in ``runner.run_captured`` (own process group, killed on Ctrl-C and at
a deadline). git never runs through a shell; what the user or a repository says (a URL, a
ref, a tag) is checked before it reaches argv and always follows ``--end-of-options`` or
``--``: a ref starting with ``-`` is refused, so that no text becomes an option. git runs with
``GIT_TERMINAL_PROMPT=0`` (a private or missing repository fails at once, it never waits for
a password), ``protocol.ext.allow=never``, without the variables that would point it at
another repository (``GIT_DIR``...), and in the C locale (its messages are read here).

The mirror of a repository is ``<cache>/git-v1/<name>-<hash of its URL>.git``, made by
``git clone --mirror`` the first time and brought up to date by ``git fetch --prune`` every
later run; ``--offline`` uses it as it is. A URL with a password is refused: git would keep it
in the mirror's config, and envbisect stores no credential (a credential helper or an SSH URL
brings them).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from envbisect.core.commits import SHA, Commit, web_base
from envbisect.core.names import split_url
from envbisect.env.runner import run_captured
from envbisect.errors import InfrastructureError, UsageError
from envbisect.redact import mask_text
from envbisect.textsafe import for_terminal

MIRRORS = "git-v1"  # the layout's version, as the metadata cache's folders carry one
_DROP = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_NAMESPACE",
    "GIT_COMMON_DIR",
    "GIT_CEILING_DIRECTORIES",
    "GIT_DISCOVERY_ACROSS_FILESYSTEM",
    "GIT_QUARANTINE_PATH",
    "GIT_CONFIG_PARAMETERS",
    "GIT_CONFIG_COUNT",
    "GIT_EXEC_PATH",
)
_SCHEMES = ("https", "http", "ssh", "git", "file")
_SCP = re.compile(r"[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:[A-Za-z0-9._~/-]+")
# A ref as a user types one: a tag, a branch, a commit id; never an option, a range or a path.
_REF = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._/+-]{0,199}")
LOCAL_TIMEOUT = 120.0
NETWORK_TIMEOUT = 1800.0
_NOT_FOUND = (
    "not found",
    "does not exist",
    "does not appear to be a git repository",
    "not a git repository",
    "Authentication failed",
    "terminal prompts disabled",
    "could not read Username",
    "Permission denied",
    "dubious ownership",
    "No such file or directory",
)
_REPO_HINT = (
    "pass --repo with a git URL (https://github.com/OWNER/REPO) or the path of a local "
    "repository; a private one needs a credential helper or an SSH URL"
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Repo:
    """A repository as the user named it: ``url`` for git (a URL, or a local folder made
    absolute), ``shown`` for people (never a password), ``web`` the code host's page of it
    when the host is known (for links)."""

    url: str
    shown: str
    web: str | None
    local: bool

    @property
    def key(self) -> str:
        """The mirror's folder name: the repository's name and a hash of its URL."""
        tail = re.sub(r"[^A-Za-z0-9._-]", "_", self.url.rstrip("/").rsplit("/", 1)[-1])
        tail = tail.removesuffix(".git").lstrip(".-_")[:60] or "repo"
        return f"{tail}-{hashlib.sha256(self.url.encode()).hexdigest()[:12]}.git"


def check_repo(text: str, *, origin: Path) -> Repo:
    """``--repo`` as git may take it, or a ``UsageError``: an http(s), ssh, git or file URL
    without a password, ``user@host:path``, or an existing local folder (relative to
    ``origin``)."""
    if not text or text.startswith("-") or any(c.isspace() or ord(c) < 32 for c in text):
        raise UsageError(f"--repo {text!r} is not a repository", hint=_REPO_HINT, ref="bad-repo")
    if "://" in text:
        parts = split_url(text, what="--repo", hint=_REPO_HINT, ref="bad-repo")
        if parts.scheme not in _SCHEMES or (parts.scheme != "file" and not parts.hostname):
            raise UsageError(
                f"--repo {mask_text(text)!r}: git over {parts.scheme or 'that'} is not allowed",
                hint="use an https, ssh, git or file URL, or a local path",
                ref="bad-repo",
            )
        if parts.password:
            raise UsageError(
                "--repo carries a password: git would store it in the mirror's config",
                hint="let a git credential helper supply it, or use an SSH URL",
                ref="bad-repo",
            )
        return Repo(url=text, shown=text, web=web_base(text), local=parts.scheme == "file")
    if _SCP.fullmatch(text) and not os.path.exists(origin / text):
        return Repo(url=text, shown=text, web=web_base(text), local=False)
    path = (origin / text).resolve()
    if not path.is_dir():
        raise UsageError(
            f"--repo {text}: no such repository folder", hint=_REPO_HINT, ref="repo-not-found"
        )
    return Repo(url=str(path), shown=str(path), web=None, local=True)


def check_ref(text: str, flag: str) -> str:
    """A ref the user named (tag, branch, commit id), or a ``UsageError``: never an option
    (``-``), a range (``..``), a reflog (``@{``) or anything with spaces or controls."""
    if not _REF.fullmatch(text) or ".." in text or text.endswith((".", "/", ".lock")):
        shown = for_terminal(text)[:80]
        raise UsageError(
            f"{flag} {shown!r} is not a git ref",
            hint="name a tag, a branch or a commit id (letters, digits and . _ / + -, "
            "not starting with -)",
            ref="bad-ref",
        )
    return text


def find_git() -> str:
    found = shutil.which("git")
    if found is None:
        raise InfrastructureError(
            "git is not installed", hint="install git (apt install git)", ref="git-missing"
        )
    return found


@dataclass(frozen=True, slots=True, kw_only=True)
class Git:
    """The git binary and how every call of it runs; ``offline``: the mirror is not fetched."""

    binary: str
    offline: bool = False

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in _DROP}
        env.update(GIT_TERMINAL_PROMPT="0", LC_ALL="C", LANG="C", GIT_ASKPASS="true")
        env.pop("SSH_ASKPASS", None)
        return env

    def run(
        self, args: Sequence[str], *, timeout: float = LOCAL_TIMEOUT
    ) -> subprocess.CompletedProcess[str]:
        argv = [self.binary, "-c", "protocol.ext.allow=never", "-c", "core.askPass=true", *args]
        try:
            return run_captured(argv, env=self.env(), timeout=timeout)
        except FileNotFoundError as e:
            raise InfrastructureError(
                f"git is not installed at {self.binary}", hint="install git", ref="git-missing"
            ) from e
        except subprocess.TimeoutExpired as e:
            raise InfrastructureError(
                f"git {args[0]} took longer than {timeout:g} s",
                hint="check the network and the repository URL; a rerun resumes",
                ref="git-timeout",
            ) from e

    def read(self, mirror: Path, *args: str) -> subprocess.CompletedProcess[str]:
        return self.run(["--git-dir", str(mirror), *args])


def mirror(git: Git, repo: Repo, cache_dir: Path) -> tuple[Path, str]:
    """The bare mirror of ``repo`` under ``cache_dir``, cloned or fetched now unless offline;
    and what was done ("cloned", "fetched", "offline": as it is). Offline with no mirror:
    ``offline-miss``."""
    folder = cache_dir / MIRRORS
    path = folder / repo.key
    if path.is_dir():
        if git.offline:
            return path, "offline"
        proc = git.run(
            ["--git-dir", str(path), "fetch", "--quiet", "--prune", "--tags", "origin"],
            timeout=NETWORK_TIMEOUT,
        )
        if proc.returncode != 0:
            raise _clone_error(repo, proc.stderr, doing="fetching")
        return path, "fetched"
    if git.offline:
        raise InfrastructureError(
            f"offline, and the cache holds no mirror of {repo.shown}",
            hint="run once without --offline to clone it (into the same --cache-dir)",
            ref="offline-miss",
        )
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UsageError(
            f"cannot create {folder}: {e.strerror}",
            hint="pass a writable --cache-dir",
            ref="cache-not-writable",
        ) from e
    partial = folder / f".{repo.key}.{os.getpid()}.partial"
    shutil.rmtree(partial, ignore_errors=True)
    try:
        proc = git.run(
            ["clone", "--quiet", "--mirror", "--", repo.url, str(partial)], timeout=NETWORK_TIMEOUT
        )
        if proc.returncode != 0:
            raise _clone_error(repo, proc.stderr, doing="cloning")
        try:
            partial.rename(path)
        except OSError:
            if not path.is_dir():  # another envbisect made it first: use theirs
                raise
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    return path, "cloned"


def _clone_error(repo: Repo, stderr: str, *, doing: str) -> UsageError | InfrastructureError:
    line = _last_line(stderr)
    if any(p in stderr for p in _NOT_FOUND):
        return UsageError(
            f"no git repository at {repo.shown} ({line})", hint=_REPO_HINT, ref="repo-not-found"
        )
    return InfrastructureError(
        f"git failed {doing} {repo.shown}: {line}",
        hint="check the network and the repository URL; a rerun resumes",
        ref="repo-unreachable",
    )


def _last_line(text: str) -> str:
    lines = [for_terminal(ln).strip() for ln in mask_text(text).splitlines() if ln.strip()]
    return (lines[-1] if lines else "no output").removeprefix("fatal: ")[:300]


def resolve(git: Git, mirror_path: Path, ref: str) -> str | None:
    """The commit ``ref`` names in the mirror (a full id), or None."""
    proc = git.read(
        mirror_path, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}"
    )
    sha = proc.stdout.strip()
    return sha if proc.returncode == 0 and SHA.fullmatch(sha) else None


def origin_url(git: Git, repo: Path) -> str | None:
    """The URL a local clone's ``origin`` remote names (for links), or None."""
    proc = git.run(["-C", str(repo), "config", "--get", "remote.origin.url"])
    url = proc.stdout.strip()
    return url if proc.returncode == 0 and url and not url.startswith("-") else None


def tags(git: Git, mirror_path: Path) -> list[str]:
    proc = git.read(mirror_path, "for-each-ref", "--format=%(refname:strip=2)", "refs/tags")
    return [t for t in proc.stdout.splitlines() if t]


def is_ancestor(git: Git, mirror_path: Path, old: str, new: str) -> bool:
    proc = git.read(mirror_path, "merge-base", "--is-ancestor", _sha(old), _sha(new))
    return proc.returncode == 0


def merge_base(git: Git, mirror_path: Path, a: str, b: str) -> str | None:
    proc = git.read(mirror_path, "merge-base", _sha(a), _sha(b))
    sha = proc.stdout.strip()
    return sha if proc.returncode == 0 and SHA.fullmatch(sha) else None


# One commit per NUL-separated record (-z: a subject cannot hold a NUL), its subject last so
# that a separator inside a subject stays in it.
_FORMAT = "%H%x1f%P%x1f%aI%x1f%s"


def commit(git: Git, mirror_path: Path, sha: str) -> Commit:
    proc = git.read(mirror_path, "log", "-z", "-1", f"--format={_FORMAT}", _sha(sha), "--")
    (one,) = _commits(proc.stdout)
    return one


def first_parent(git: Git, mirror_path: Path, good: str, bad: str) -> list[Commit]:
    """The first-parent commits after ``good`` up to ``bad`` (included), oldest first."""
    proc = git.read(
        mirror_path,
        "log",
        "-z",
        "--first-parent",
        "--reverse",
        f"--format={_FORMAT}",
        f"{_sha(good)}..{_sha(bad)}",
        "--",
    )
    if proc.returncode != 0:
        raise InfrastructureError(
            f"git log failed: {_last_line(proc.stderr)}",
            hint="the mirror may be damaged: remove it and rerun",
            ref="git-failed",
        )
    return _commits(proc.stdout)


def _commits(out: str) -> list[Commit]:
    found = []
    for record in out.split("\0"):
        fields = record.split("\x1f", 3)
        if len(fields) != 4 or not SHA.fullmatch(fields[0]):
            continue
        sha, parents, date, subject = fields
        found.append(
            Commit(sha=sha, subject=subject, author_date=date, parents=len(parents.split()))
        )
    return found


def show(git: Git, mirror_path: Path, sha: str, path: str) -> str | None:
    """The text of ``path`` at ``sha``, or None when it has no such file."""
    proc = git.read(mirror_path, "cat-file", "blob", f"{_sha(sha)}:{path}")
    return proc.stdout if proc.returncode == 0 else None


def files(git: Git, mirror_path: Path, sha: str) -> list[str]:
    proc = git.read(mirror_path, "ls-tree", "-r", "--name-only", _sha(sha))
    return proc.stdout.splitlines() if proc.returncode == 0 else []


def export(git: Git, mirror_path: Path, sha: str, dest: Path) -> None:
    """A checkout of ``sha`` in ``dest``: a clone sharing the mirror's objects (its history
    and tags there too, for backends that read the version from git), detached at ``sha``."""
    if not (mirror_path / "HEAD").is_file():
        raise InfrastructureError(
            f"the mirror {mirror_path} is not on this machine",
            hint="commit probes run where the mirror is: use --executor local or process",
            ref="mirror-missing",
        )
    steps = (
        ["clone", "--quiet", "--shared", "--no-checkout", "--", str(mirror_path), str(dest)],
        [
            "-C",
            str(dest),
            "-c",
            "advice.detachedHead=false",
            "checkout",
            "--quiet",
            "--detach",
            _sha(sha),
            "--",
        ],
    )
    for args in steps:
        proc = git.run(args)
        if proc.returncode != 0:
            raise InfrastructureError(
                f"git could not check out {sha[:12]}: {_last_line(proc.stderr)}",
                hint="the mirror may be damaged: remove it and rerun",
                ref="git-failed",
            )


def _sha(sha: str) -> str:
    if not SHA.fullmatch(sha):
        raise ValueError(f"not a commit id: {sha!r}")
    return sha
