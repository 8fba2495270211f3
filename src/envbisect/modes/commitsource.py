"""The repository side of a commit search: the mirror, the refs it names, the commits between.

Who does what: ``open_source`` finds the repository (``--repo``, else the one the package's
metadata names) and brings its mirror up to date (env/git.py); ``find_ref`` maps a release
version to its tag (core/commits.py's tag forms) or a ref to its commit; ``commit_range`` lists
the good end and the first-parent commits up to the bad end, with how the package builds.
modes/commits.py searches that range.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from packaging.version import InvalidVersion, Version

from envbisect.core.commits import (
    BuildInfo,
    Commit,
    build_info,
    match_tag,
    repo_from_metadata,
    tag_candidates,
    tag_version,
    web_base,
)
from envbisect.diskcache import default_cache_dir
from envbisect.env import git as g
from envbisect.errors import EnvbisectError, UsageError
from envbisect.modes.session import Session
from envbisect.progress import Progress

# -- the repository ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Source:
    """A repository, its mirror on this machine and how git runs for it."""

    git: g.Git
    repo: g.Repo
    mirror: Path
    web: str | None  # where links point (the repository's host, or the metadata's)


@dataclass(frozen=True, slots=True, kw_only=True)
class Ref:
    flag: str
    asked: str  # what the user (or the release search) named
    name: str  # the ref or tag it resolved to
    sha: str
    version: str | None  # the release a tag names, if it names one


def open_source(
    session: Session, package: str, repo: str | None, versions: Sequence[str]
) -> Source:
    """The repository (``--repo``, else the one the package's metadata names) and its mirror,
    cloned or brought up to date now (as it is, with --offline)."""
    progress = session.progress
    origin = (
        session.opts.probing.repro.origin if session.opts.probing.repro is not None else Path.cwd()
    )
    if repo is None:
        found = _metadata_repo(session, package, versions)
        if found is None:
            raise UsageError(
                f"no repository known for {package}: its metadata names no source on a "
                "known code host (Project-URL Source, Repository or Homepage)",
                hint="pass --repo URL (a git URL, or the path of a local clone)",
                ref="no-repo",
            )
        progress.message(f"envbisect: {package}'s repository, from its metadata: {found}")
        repo = found
    where = g.check_repo(repo, origin=origin)
    git = g.Git(binary=g.find_git(), offline=session.opts.planning.offline)
    cache = session.opts.planning.cache_dir or default_cache_dir()
    mirror, done = g.mirror(git, where, cache)
    said = {
        "cloned": f"cloned into {mirror}",
        "fetched": "fetched (up to date)",
        "offline": "used as it is (--offline)",
    }
    progress.message(f"envbisect: mirror of {where.shown}: {said[done]}")
    web = where.web
    if web is None and where.local:  # a local clone: its origin's host, else the metadata's
        origin_url = g.origin_url(git, Path(where.url))
        web = web_base(origin_url) if origin_url else None
        if web is None:
            web = _metadata_repo(session, package, versions, quiet=True)
    return Source(git=git, repo=where, mirror=mirror, web=web)


def _metadata_repo(
    session: Session, package: str, versions: Sequence[str], *, quiet: bool = False
) -> str | None:
    """The repository the metadata of the first of ``versions`` the index has names (none
    given: of the newest version)."""
    for v in versions or _newest(session, package):
        try:
            text = session.client.metadata_for(package, v)
        except EnvbisectError:
            if quiet:
                continue
            raise
        return repo_from_metadata(text)
    return None


def _newest(session: Session, package: str) -> list[str]:
    try:
        known = sorted(session.client.project_files(package).versions(), reverse=True)
    except EnvbisectError:
        return []
    return [str(v) for v in known[:1]]


def find_ref(src: Source, package: str, text: str, flag: str) -> Ref:
    """The commit a release version or a ref names: a version's tag (v1.2.0, 1.2.0,
    NAME-1.2.0, NAME-v1.2.0) first, so that a version is never read as an abbreviated commit
    id; else the ref itself (a tag, a branch, a commit id)."""
    g.check_ref(text, flag)
    tags = g.tags(src.git, src.mirror)
    if is_version(text):
        tag = match_tag(tags, package, text)
        sha = g.resolve(src.git, src.mirror, tag) if tag is not None else None
        if tag is not None and sha is not None:
            return Ref(flag=flag, asked=text, name=tag, sha=sha, version=text)
    sha = g.resolve(src.git, src.mirror, text)
    if sha is not None:
        named = tag_version(text, package) if text in tags else None
        return Ref(
            flag=flag,
            asked=text,
            name=text,
            sha=sha,
            version=str(named) if named is not None else None,
        )
    if is_version(text):
        tried = ", ".join(tag_candidates(package, text))
        raise UsageError(
            f"no tag for {package} {text} in {src.repo.shown} (tried {tried}, and any tag "
            "of those forms naming the same version)",
            hint=f"name its commit: {flag} TAG-OR-COMMIT",
            ref="no-tag",
        )
    raise UsageError(
        f"{flag} {text}: no such tag, branch or commit in {src.repo.shown}",
        hint=f"git ls-remote --tags {src.repo.shown} lists its tags; or name a commit id",
        ref="unknown-ref",
    )


def is_version(text: str) -> bool:
    try:
        Version(text)
    except InvalidVersion:
        return False
    return text[:1].isdigit()


# -- the range --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Range:
    points: tuple[Commit, ...]  # the good end first, the bad end last
    start: str  # why the good end is not the good ref itself, or ""
    build: BuildInfo


def commit_range(src: Source, package: str, good: Ref, bad: Ref, progress: Progress) -> Range:
    """The good end and the first-parent commits after it up to the bad end, oldest first.
    A good ref that is not an ancestor of the bad one (a maintenance branch) starts the range
    at their merge base, as ``git bisect`` tests the merge base first."""
    git, mirror = src.git, src.mirror
    start = ""
    old = good.sha
    if good.sha == bad.sha:
        raise UsageError(
            f"{good.name} and {bad.name} are the same commit ({good.sha[:12]})",
            hint="name two different refs",
            ref="same-ends",
        )
    if not g.is_ancestor(git, mirror, good.sha, bad.sha):
        base = g.merge_base(git, mirror, good.sha, bad.sha)
        if base is None or g.is_ancestor(git, mirror, bad.sha, good.sha):
            raise UsageError(
                f"{good.name} does not come before {bad.name}: nothing lies between them",
                hint="were the ends swapped? --good names the older ref",
                ref="bad-range",
            )
        start = (
            f"{good.name} is not an ancestor of {bad.name}: the range starts at their "
            f"merge base {base[:12]}"
        )
        progress.message(f"envbisect: {start}")
        old = base
    points = (g.commit(git, mirror, old), *g.first_parent(git, mirror, old, bad.sha))
    info = build_info(
        g.show(git, mirror, bad.sha, "pyproject.toml"),
        g.show(git, mirror, bad.sha, "setup.py"),
        g.files(git, mirror, bad.sha),
    )
    progress.message(f"envbisect: {info.describe(package)}")
    progress.message(
        f"envbisect: {len(points) - 1} first-parent commit(s) after {good.name} "
        f"up to {bad.name}; each built from source"
    )
    return Range(points=points, start=start, build=info)
