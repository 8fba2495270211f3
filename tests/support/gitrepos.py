"""Git repositories made by the tests, a real PEP 517 backend to build them, and an index.

``tinybuild`` is a build backend of about sixty lines: it builds a wheel of a src layout from
``[project]`` in pyproject.toml. It is served as a wheel from the tests' local index, so uv
gets it as it gets any build backend (isolated build, from the index): nothing here depends on
this machine's caches or on the network.

``gitpkg``'s repository (``make_gitpkg``): release 1.0.0 (tag ``v1.0.0``), twenty first-parent
commits, release 2.0.0 (tag ``gitpkg-2.0.0``: another naming style), then 2.1.0 (tag
``gitpkg-2.1.0``). Point i of the range is ``main[i]`` (``main[0]`` is 1.0.0, ``main[20]`` is
2.0.0). Known truth:
    main[8]   a merge (--no-ff) of a side branch of two commits; the side branch broke
              ``gitpkg.other()`` (RuntimeError): the first bad commit for that repro
    main[10]  does not build (the module left src/: tinybuild raises)
    main[11]  its version is not a version: its metadata cannot be read
    main[13]  its subject carries a terminal escape (untrusted text)
    main[14]  ``gitpkg.run()`` raises ValueError: the first bad commit for that repro
Release 1.0.1 (tag ``v1.0.1``) is on a maintenance branch from main[0], never merged, and not
on the index; release 2.2.0 is on the index but has no tag. Every release's metadata names
its repository on GitHub (Project-URL), as a real package's does; gitdep 2.0 removed
``helper``, which every gitpkg imports: an environment not held at gitdep 1.0 fails another
way.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

from .index_server import IndexFile, LocalIndex
from .wheels import build_wheel

BACKEND = r'''"""tinybuild: a PEP 517 backend, a wheel of a src layout (envbisect's tests)."""
import base64, hashlib, os, tarfile, time, zipfile

try:
    import tomllib
except ImportError:  # Python < 3.11
    import tomli as tomllib


def _project():
    with open("pyproject.toml", "rb") as fh:
        data = tomllib.load(fh)
    project = data["project"]
    if "version" not in project:
        raise RuntimeError("tinybuild: [project] has no version")
    sleep = data.get("tool", {}).get("tinybuild", {}).get("sleep", 0)
    if sleep:
        time.sleep(sleep)  # a build as slow as a compiled one
    return project["name"], project["version"], project.get("dependencies", [])


def _metadata(name, version, deps):
    lines = ["Metadata-Version: 2.1", "Name: " + name, "Version: " + version]
    return "\n".join(lines + ["Requires-Dist: " + d for d in deps]) + "\n\n"


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    name, version, deps = _project()
    dist = name.replace("-", "_")
    info = dist + "-" + version + ".dist-info"
    files = {}
    for root, _, names in os.walk("src"):
        for n in sorted(names):
            if n.endswith(".py"):
                path = os.path.join(root, n)
                with open(path, "rb") as fh:
                    files[os.path.relpath(path, "src").replace(os.sep, "/")] = fh.read()
    if not files:
        raise RuntimeError("tinybuild: nothing to build under src/")
    files[info + "/METADATA"] = _metadata(name, version, deps).encode()
    files[info + "/WHEEL"] = (
        b"Wheel-Version: 1.0\nGenerator: tinybuild\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    )
    record = []
    for path, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append("%s,sha256=%s,%d" % (path, digest, len(data)))
    files[info + "/RECORD"] = ("\n".join(record + [info + "/RECORD,,"]) + "\n").encode()
    wheel = dist + "-" + version + "-py3-none-any.whl"
    with zipfile.ZipFile(os.path.join(wheel_directory, wheel), "w") as zf:
        for path, data in files.items():
            zf.writestr(zipfile.ZipInfo(path, (1980, 1, 1, 0, 0, 0)), data)
    return wheel


def build_sdist(sdist_directory, config_settings=None):
    name, version, _ = _project()
    base = name.replace("-", "_") + "-" + version
    with tarfile.open(os.path.join(sdist_directory, base + ".tar.gz"), "w:gz") as tf:
        tf.add(".", arcname=base)
    return base + ".tar.gz"
'''

EPOCH = datetime(2024, 3, 1, tzinfo=timezone.utc)
SOURCE = "https://github.com/example/gitpkg"
PASS_RUN = "def run():\n    return helper()\n"
BAD_RUN = "def run():\n    raise ValueError('gitpkg broke')\n"
PASS_OTHER = "def other():\n    return 'ok'\n"
BAD_OTHER = "def other():\n    raise RuntimeError('side broke')\n"
ESCAPE_SUBJECT = "tidy \x1b[2J\x1b]0;owned\x07the notes"


def pyproject(name: str, version: str | None, *, backend: str = "tinybuild", sleep: int = 0) -> str:
    lines = [
        "[build-system]",
        f'requires = ["{backend}"]',
        f'build-backend = "{backend}"',
        "",
        "[project]",
        f'name = "{name}"',
    ]
    lines += [f'version = "{version}"'] if version else []
    lines += ['dependencies = ["gitdep"]']
    lines += ["", "[tool.tinybuild]", f"sleep = {sleep}"] if sleep else []
    return "\n".join(lines) + "\n"


def module(run: str, other: str, note: int) -> str:
    return f"from gitdep import helper\n\nNOTE = {note}\n\n{run}\n{other}"


class Git:
    """git with a fixed identity and clock (the same commits, the same ids, every time) and
    none of this machine's configuration."""

    def __init__(self, repo: Path) -> None:
        self.repo = repo
        self.tick = 0

    def env(self) -> dict[str, str]:
        when = (EPOCH + timedelta(hours=self.tick)).strftime("%Y-%m-%dT%H:%M:%S+00:00")
        return {
            "PATH": os.environ["PATH"],
            "HOME": str(self.repo),
            "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_AUTHOR_NAME": "Test Author",
            "GIT_AUTHOR_EMAIL": "author@example.invalid",
            "GIT_COMMITTER_NAME": "Test Author",
            "GIT_COMMITTER_EMAIL": "author@example.invalid",
            "GIT_AUTHOR_DATE": when,
            "GIT_COMMITTER_DATE": when,
        }

    def __call__(self, *args: str) -> str:
        proc = subprocess.run(
            ["git", "-C", str(self.repo), *args],
            env=self.env(),
            capture_output=True,
            text=True,
            check=True,
        )
        return proc.stdout.strip()

    def write(self, files: dict[str, str]) -> None:
        for rel, text in files.items():
            path = self.repo / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")

    def commit(self, subject: str, files: dict[str, str], remove: tuple[str, ...] = ()) -> str:
        self.tick += 1
        for rel in remove:
            (self.repo / rel).unlink()
        self.write(files)
        self("add", "-A")
        self("commit", "-q", "--allow-empty", "-m", subject)
        return self("rev-parse", "HEAD")


@dataclass
class GitPkg:
    path: Path
    main: list[str] = field(default_factory=list)  # main[i]: point i of 1.0.0..2.0.0
    side: list[str] = field(default_factory=list)  # the merged side branch's commits
    after: list[str] = field(default_factory=list)  # after 2.0.0, up to 2.1.0
    maintenance: str = ""  # v1.0.1, on the 1.0.x branch


def _tree(
    version: str | None, run: str, other: str, note: int, name: str = "gitpkg"
) -> dict[str, str]:
    return {
        "pyproject.toml": pyproject(name, version),
        "src/gitpkg/__init__.py": module(run, other, note),
    }


def make_gitpkg(path: Path) -> GitPkg:
    """gitpkg's repository (the module docstring has its truth)."""
    path.mkdir(parents=True)
    git = Git(path)
    git("init", "-q", "-b", "main")
    facts = GitPkg(path=path)
    dev = "1.1.0.dev0"
    facts.main.append(git.commit("release 1.0.0", _tree("1.0.0", PASS_RUN, PASS_OTHER, 0)))
    git("tag", "v1.0.0")
    other = PASS_OTHER
    for i in range(1, 20):
        run = BAD_RUN if i >= 14 else PASS_RUN
        if i == 8:  # a side branch from main[7], merged without fast-forward
            git("checkout", "-q", "-b", "side", facts.main[7])
            facts.side.append(
                git.commit("side: change other()", _tree(dev, PASS_RUN, BAD_OTHER, 7))
            )
            facts.side.append(git.commit("side: more notes", _tree(dev, PASS_RUN, BAD_OTHER, 70)))
            git("checkout", "-q", "main")
            git.tick += 1
            git("merge", "-q", "--no-ff", "-m", "Merge branch 'side'", "side")
            facts.main.append(git("rev-parse", "HEAD"))
            other = BAD_OTHER
            continue
        tree = _tree(dev, run, other, i)
        subject = f"notes {i}"
        remove: tuple[str, ...] = ()
        if i == 10:  # the module moved out of src/: tinybuild finds nothing to build
            tree = {"pyproject.toml": pyproject("gitpkg", dev), "gitpkg.txt": module(run, other, i)}
            remove = ("src/gitpkg/__init__.py",)
            subject = "move the module out of src/ (oops)"
        elif i == 11:  # a version no tool can read
            tree = _tree("1.1.0.dev0 oops", run, other, i)
            subject = "version: a typo (oops)"
        elif i == 13:
            subject = ESCAPE_SUBJECT
        elif i == 14:
            subject = "run: raise on purpose"
        facts.main.append(git.commit(subject, tree, remove))
    facts.main.append(git.commit("release 2.0.0", _tree("2.0.0", BAD_RUN, BAD_OTHER, 20)))
    git("tag", "gitpkg-2.0.0")
    facts.after.append(git.commit("notes 21", _tree("2.1.0.dev0", BAD_RUN, BAD_OTHER, 21)))
    facts.after.append(git.commit("release 2.1.0", _tree("2.1.0", BAD_RUN, BAD_OTHER, 22)))
    git("tag", "gitpkg-2.1.0")
    # A maintenance release on a branch of its own, never merged: v1.0.1 is no ancestor of
    # gitpkg-2.0.0 (their merge base is main[0]).
    git("checkout", "-q", "-b", "1.0.x", facts.main[0])
    facts.maintenance = git.commit("release 1.0.1", _tree("1.0.1", PASS_RUN, PASS_OTHER, 1))
    git("tag", "v1.0.1")
    git("checkout", "-q", "main")
    return facts


def make_plain(
    path: Path, *, backend: str = "tinybuild", slow_middle: int = 0, rename_middle: bool = False
) -> list[str]:
    """A repository of three commits (v1.0.0, a middle one, v2.0.0 where run() breaks);
    ``backend``: a build backend the index may not have; ``slow_middle``: the middle one's
    build sleeps that long; ``rename_middle``: the middle one is a project of another name."""
    path.mkdir(parents=True)
    git = Git(path)
    git("init", "-q", "-b", "main")
    shas = []
    for i, (version, run) in enumerate(
        (("1.0.0", PASS_RUN), ("1.1.0.dev0", PASS_RUN), ("2.0.0", BAD_RUN))
    ):
        files = {
            "pyproject.toml": pyproject(
                "gitpkg-renamed" if rename_middle and i == 1 else "gitpkg",
                version,
                backend=backend,
                sleep=slow_middle if i == 1 else 0,
            ),
            "src/gitpkg/__init__.py": module(run, PASS_OTHER, i),
        }
        shas.append(git.commit(f"step {i}", files))
        if i != 1:
            git("tag", f"v{version}")
    return shas


def build_index(root: Path) -> LocalIndex:
    """tinybuild, gitdep 1.0 and 2.0, and gitpkg's releases (1.0.0, 2.0.0, 2.1.0 tagged,
    2.2.0 not), each release's wheel holding what its tag holds."""
    root.mkdir(parents=True, exist_ok=True)
    index = LocalIndex()
    when = EPOCH - timedelta(days=30)
    wheels = [
        ("tinybuild", build_wheel(root, "tinybuild", "1.0", {"tinybuild/__init__.py": BACKEND})),
        (
            "gitdep",
            build_wheel(
                root, "gitdep", "1.0", {"gitdep/__init__.py": "def helper():\n    return 'ok'\n"}
            ),
        ),
        ("gitdep", build_wheel(root, "gitdep", "2.0", {"gitdep/__init__.py": "# no helper\n"})),
    ]
    releases = (
        ("1.0.0", PASS_RUN, PASS_OTHER),
        ("2.0.0", BAD_RUN, BAD_OTHER),
        ("2.1.0", BAD_RUN, BAD_OTHER),
        ("2.2.0", BAD_RUN, BAD_OTHER),
    )
    for version, run, other in releases:
        w = build_wheel(
            root,
            "gitpkg",
            version,
            {"gitpkg/__init__.py": module(run, other, 0)},
            requires=("gitdep",),
            headers=(f"Project-URL: Source, {SOURCE}",),
        )
        wheels.append(("gitpkg", w))
    for i, (project, w) in enumerate(wheels):
        index.add(IndexFile(project=project, path=w, upload_time=when + timedelta(days=i)))
    return index.start()
