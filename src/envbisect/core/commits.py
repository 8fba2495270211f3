"""Commits between two releases, as data: tags for a version, the code host of a repository
URL and its commit links, the repository a package's metadata names, how a source tree builds.

Pure: strings in, values out (git and the index are read by env/git.py and the index client).
What comes from a repository or an index (tag names, commit subjects, Project-URL values) is
untrusted: a URL is accepted only on a known code host with plain path segments, so that
nothing it says becomes an option, a path or markup.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

# Known code hosts: where a commit's page is, given https://HOST/OWNER/REPO.
COMMIT_PAGE = {
    "github.com": "{base}/commit/{sha}",
    "gitlab.com": "{base}/-/commit/{sha}",
    "codeberg.org": "{base}/commit/{sha}",
    "bitbucket.org": "{base}/commits/{sha}",
    "git.sr.ht": "{base}/commit/{sha}",
}
# Project-URL labels that name the repository, best first (PEP 753 normalised: lower case,
# no punctuation or spaces); the Home-page field counts as "homepage".
REPO_LABELS = ("source", "sourcecode", "repository", "code", "github", "homepage", "home")
_SEGMENT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
SHA = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?")  # SHA-1 or SHA-256 object ids


@dataclass(frozen=True, slots=True, kw_only=True)
class Commit:
    """One commit as git describes it (``subject`` is the author's text: untrusted)."""

    sha: str
    subject: str
    author_date: str  # ISO 8601, as the author's clock said
    parents: int = 1

    @property
    def short(self) -> str:
        return self.sha[:12]

    @property
    def merge(self) -> bool:
        return self.parents > 1

    def to_dict(self, web: str | None = None) -> dict[str, Any]:
        return {
            "sha": self.sha,
            "subject": self.subject,
            "author_date": self.author_date,
            "merge": self.merge,
            "link": commit_link(web, self.sha),
        }

    def describe(self, web: str | None = None) -> str:
        """``<short sha> <subject> (<date>)`` and the link when the host is known."""
        link = commit_link(web, self.sha)
        merge = " [merge]" if self.merge else ""
        return f"{self.short} {self.subject}{merge} ({self.author_date[:10]})" + (
            f" {link}" if link else ""
        )


def name_forms(package: str) -> list[str]:
    """The spellings of a project name a tag may use: as given, canonical, with underscores."""
    canon = canonicalize_name(package)
    return list(dict.fromkeys([package, canon, canon.replace("-", "_")]))


def tag_candidates(package: str, version: str) -> list[str]:
    """The tags a release may have, in the order tried: v1.2.0, 1.2.0, NAME-1.2.0,
    NAME-v1.2.0 (NAME as given, canonical, with underscores)."""
    out = [f"v{version}", version]
    for name in name_forms(package):
        out += [f"{name}-{version}", f"{name}-v{version}"]
    return list(dict.fromkeys(out))


def tag_version(tag: str, package: str) -> Version | None:
    """The version a tag names in one of the forms ``tag_candidates`` knows, else None."""
    rest = tag
    for name in name_forms(package):
        for sep in ("-", "_"):
            if rest.lower().startswith(f"{name.lower()}{sep}"):
                rest = rest[len(name) + 1 :]
                break
    rest = rest[1:] if rest[:1] in ("v", "V") else rest
    if not rest[:1].isdigit():
        return None
    try:
        return Version(rest)
    except InvalidVersion:
        return None


def match_tag(tags: Iterable[str], package: str, version: str) -> str | None:
    """The tag of ``version``: one of ``tag_candidates`` exactly, else one of those forms
    whose version equals it (``v1.2`` for 1.2.0), else None."""
    have = set(tags)
    for t in tag_candidates(package, version):
        if t in have:
            return t
    try:
        want = Version(version)
    except InvalidVersion:
        return None
    equal = sorted(t for t in have if tag_version(t, package) == want)
    return equal[0] if equal else None


def web_base(url: str) -> str | None:
    """``https://HOST/OWNER/REPO`` for a repository URL on a known host (https, ssh or
    ``git@host:owner/repo`` forms), else None. GitLab groups keep their depth."""
    m = re.fullmatch(r"[A-Za-z0-9._-]+@([A-Za-z0-9.-]+):(.+)", url)
    if m:
        host, path = m.group(1).lower(), m.group(2)
    else:
        try:
            parts = urlsplit(url)
        except ValueError:
            return None
        if parts.scheme not in ("https", "http", "ssh", "git") or not parts.hostname:
            return None
        host, path = parts.hostname.lower(), parts.path
    host = host.removeprefix("www.")
    if host not in COMMIT_PAGE:
        return None
    segments = [s for s in path.strip("/").split("/") if s]
    if host == "gitlab.com":
        segments = segments[: segments.index("-")] if "-" in segments else segments
    else:
        segments = segments[:2]
    if segments:
        segments[-1] = segments[-1].removesuffix(".git")
    if len(segments) < 2 or not all(_SEGMENT.fullmatch(s) for s in segments):
        return None
    if host == "git.sr.ht" and not segments[0].startswith("~"):
        return None
    return f"https://{host}/" + "/".join(segments)


def commit_link(web: str | None, sha: str) -> str | None:
    if web is None:
        return None
    host = urlsplit(web).hostname or ""
    return COMMIT_PAGE[host].format(base=web, sha=sha) if host in COMMIT_PAGE else None


def repo_from_metadata(text: str) -> str | None:
    """The repository a METADATA text names: the first Project-URL (or Home-page) on a known
    code host, best label first, as ``https://HOST/OWNER/REPO``; None when none does."""
    import email.parser  # only for a commit search: every other command is spared it

    headers = email.parser.HeaderParser().parsestr(text, headersonly=True)
    found: list[tuple[int, str]] = []
    for value in headers.get_all("Project-URL") or []:
        label, _, url = str(value).partition(",")
        key = re.sub(r"[^a-z0-9]", "", label.lower())
        if key in REPO_LABELS:
            found.append((REPO_LABELS.index(key), url.strip()))
    home = headers.get("Home-page")
    if home:
        found.append((REPO_LABELS.index("homepage"), str(home).strip()))
    for _, url in sorted(found, key=lambda x: x[0]):
        base = web_base(url)
        if base is not None:
            return base
    return None


# -- how a source tree builds ---------------------------------------------------------------

# Build backends (or requirements) that compile: the build needs a toolchain.
_COMPILING_BACKENDS = ("scikit_build_core", "mesonpy", "maturin", "pymsbuild", "enscons")
_COMPILING_REQUIRES = (
    "cython",
    "scikit-build",
    "meson-python",
    "maturin",
    "setuptools-rust",
    "pybind11",
    "nanobind",
    "cmake",
    "ninja",
    "cffi",
)
_SOURCE_SUFFIXES = (".c", ".cc", ".cpp", ".cxx", ".pyx", ".rs", ".f90", ".cu")
_BUILD_FILES = ("Cargo.toml", "CMakeLists.txt", "meson.build")


@dataclass(frozen=True, slots=True, kw_only=True)
class BuildInfo:
    """How a source tree says it builds: its PEP 517 backend and whether it compiles."""

    backend: str  # "setuptools.build_meta:__legacy__" when there is no pyproject backend
    requires: tuple[str, ...]
    compiles: bool
    why: str  # what says it compiles, or ""

    def describe(self, package: str) -> str:
        needs = f" ({', '.join(self.requires)})" if self.requires else ""
        how = (
            f"compiles ({self.why}): a build may be slow or need a toolchain; "
            "--build-timeout caps each"
            if self.compiles
            else "pure Python: no compiled code"
        )
        return f"{package} builds from source with {self.backend}{needs}; {how}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "backend": self.backend,
            "requires": list(self.requires),
            "compiles": self.compiles,
            "why": self.why,
        }


def build_info(pyproject: str | None, setup_py: str | None, files: Sequence[str]) -> BuildInfo:
    """The build backend from ``[build-system]`` (setuptools' legacy one without it), and
    whether the tree compiles: a compiling backend or build requirement, an extension in
    setup.py, or C/C++/Cython/Rust sources and their build files in the tree."""
    backend, requires = "setuptools.build_meta:__legacy__", ("setuptools",)
    if pyproject:
        try:
            data = tomllib.loads(pyproject)
        except tomllib.TOMLDecodeError:
            data = {}
        system = data.get("build-system") if isinstance(data.get("build-system"), dict) else {}
        assert isinstance(system, dict)
        if isinstance(system.get("build-backend"), str):
            backend = system["build-backend"]
        reqs = system.get("requires")
        if isinstance(reqs, list) and all(isinstance(r, str) for r in reqs):
            requires = tuple(reqs)
    why = ""
    names = {_req_name(r) for r in requires}
    if backend.split(".")[0].split(":")[0] in _COMPILING_BACKENDS:
        why = f"the {backend} backend"
    elif hit := sorted(names & set(_COMPILING_REQUIRES)):
        why = f"it builds with {hit[0]}"
    elif setup_py and re.search(r"\bExtension\s*\(|ext_modules\s*=", setup_py):
        why = "setup.py declares an extension module"
    else:
        sources = sorted(f for f in files if f.lower().endswith(_SOURCE_SUFFIXES))
        builds = sorted(f for f in files if f.rsplit("/", 1)[-1] in _BUILD_FILES)
        if builds:
            why = builds[0]
        elif sources:
            why = sources[0] + (f" and {len(sources) - 1} more" if len(sources) > 1 else "")
    return BuildInfo(backend=backend, requires=requires, compiles=bool(why), why=why)


def _req_name(req: str) -> str:
    m = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", req)
    return canonicalize_name(m.group(1)) if m else ""
