"""The commit search's pure parts and git's input checks: tags, hosts and links, the
repository a package's metadata names, how a tree builds, refs and URLs refused before git
sees them, environment ids with a commit, the answer's text and Markdown.

Fast: no build. The few git calls run real git on a repository made here.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from packaging.version import Version

from envbisect.core.commits import (
    Commit,
    build_info,
    commit_link,
    match_tag,
    repo_from_metadata,
    tag_candidates,
    tag_version,
    web_base,
)
from envbisect.core.results.commits import CommitAnswer, ProbedCommit
from envbisect.core.results.parts import Direction, RowVerdict, Status
from envbisect.env import git as g
from envbisect.env.srcbuild import stale_build, timed_out, unreadable
from envbisect.errors import UsageError
from envbisect.model import EnvSpec, IndexConfig, InstalledDist, Outcome, OutcomeKind, SourceBuild
from envbisect.textsafe import for_terminal


def test_tags_are_tried_in_the_documented_order() -> None:
    assert tag_candidates("Flask-Login", "1.2.0") == [
        "v1.2.0", "1.2.0", "Flask-Login-1.2.0", "Flask-Login-v1.2.0", "flask-login-1.2.0",
        "flask-login-v1.2.0", "flask_login-1.2.0", "flask_login-v1.2.0",
    ]  # fmt: skip
    tags = ["0.9", "v1.0.0", "gitpkg-2.0.0", "gitpkg-v3.0", "v4.0.0rc1", "unrelated-5.0.0"]
    assert match_tag(tags, "gitpkg", "1.0.0") == "v1.0.0"
    assert match_tag(tags, "gitpkg", "2.0.0") == "gitpkg-2.0.0"
    assert match_tag(tags, "gitpkg", "3.0.0") == "gitpkg-v3.0"  # the same version, spelled short
    assert match_tag(tags, "gitpkg", "4.0.0rc1") == "v4.0.0rc1"
    assert match_tag(tags, "gitpkg", "5.0.0") is None  # another project's tag
    assert match_tag(tags, "gitpkg", "0.9.0") == "0.9"
    assert tag_version("release-1", "gitpkg") is None and tag_version("main", "gitpkg") is None


@given(
    st.tuples(st.integers(0, 40), st.integers(0, 40), st.integers(0, 40)),
    st.sampled_from(["gitpkg", "Flask-Login", "ruamel.yaml"]),
)
def test_every_tag_form_names_its_version(parts: tuple[int, int, int], name: str) -> None:
    version = ".".join(map(str, parts))
    for tag in tag_candidates(name, version):
        assert tag_version(tag, name) == Version(version)
        assert match_tag([tag, "v99.0.0"], name, version) == tag


def test_known_hosts_and_their_links() -> None:
    gh = "https://github.com/pallets/werkzeug"
    for url in (
        "https://github.com/pallets/werkzeug",
        "https://github.com/pallets/werkzeug.git",
        "https://www.github.com/pallets/werkzeug/tree/main/src",
        "git@github.com:pallets/werkzeug.git",
        "ssh://git@github.com/pallets/werkzeug",
    ):
        assert web_base(url) == gh, url  # fmt: skip
    assert commit_link(gh, "ab" * 20) == f"{gh}/commit/{'ab' * 20}"
    lab = web_base("https://gitlab.com/group/sub/project/-/tree/main")
    assert lab == "https://gitlab.com/group/sub/project"
    assert commit_link(lab, "cd" * 20) == f"{lab}/-/commit/{'cd' * 20}"
    assert commit_link(web_base("https://bitbucket.org/o/r"), "ef" * 20) == (
        f"https://bitbucket.org/o/r/commits/{'ef' * 20}"
    )
    for url in (
        "https://example.com/o/r",
        "https://github.com/only-owner",
        "file:///srv/r.git",
        'https://github.com/o/r"><script>',
        "https://github.com/o/r%0a",
        "/local/path",
        "https://github.com/-o/r",
        "ftp://github.com/o/r",
    ):
        assert web_base(url) is None, url  # fmt: skip
    assert commit_link(None, "ab" * 20) is None


def test_the_repository_a_package_names() -> None:
    meta = (
        "Metadata-Version: 2.1\nName: werkzeug\nVersion: 3.0.0\n"
        "Home-page: https://palletsprojects.com/p/werkzeug/\n"
        "Project-URL: Documentation, https://werkzeug.palletsprojects.com/\n"
        "Project-URL: Issue Tracker, https://github.com/pallets/werkzeug/issues/\n"
        "Project-URL: Source Code, https://github.com/pallets/werkzeug/\n\n"
    )
    assert repo_from_metadata(meta) == "https://github.com/pallets/werkzeug"
    home = "Name: x\nVersion: 1\nHome-page: https://gitlab.com/o/x\n\n"
    assert repo_from_metadata(home) == "https://gitlab.com/o/x"
    none = "Name: x\nVersion: 1\nProject-URL: Source, https://hg.example.org/x\n\n"
    assert repo_from_metadata(none) is None
    # A hostile value is no URL on a known host: never followed.
    hostile = "Name: x\nVersion: 1\nProject-URL: Source, --upload-pack=touch github.com/a/b\n\n"
    assert repo_from_metadata(hostile) is None


def test_how_a_tree_builds() -> None:
    flit = '[build-system]\nrequires = ["flit_core<4"]\nbuild-backend = "flit_core.buildapi"\n'
    info = build_info(flit, None, ["src/werkzeug/__init__.py", "tests/conftest.py"])
    assert (info.backend, info.requires, info.compiles) == (
        "flit_core.buildapi",
        ("flit_core<4",),
        False,
    )
    assert "pure Python" in info.describe("werkzeug")
    ext = "from setuptools import Extension, setup\nsetup(ext_modules=[Extension('m', ['m.c'])])"
    legacy = build_info(None, ext, ["setup.py", "src/m.c"])
    assert legacy.backend == "setuptools.build_meta:__legacy__" and legacy.compiles
    assert "extension module" in legacy.why and "toolchain" in legacy.describe("m")
    maturin = '[build-system]\nrequires = ["maturin>=1"]\nbuild-backend = "maturin"\n'
    assert build_info(maturin, None, []).compiles
    speedups = '[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"'
    c = build_info(speedups, None, ["src/markupsafe/_speedups.c", "src/markupsafe/__init__.py"])
    assert c.compiles and c.why == "src/markupsafe/_speedups.c"
    assert build_info("not [valid toml", None, []).backend == "setuptools.build_meta:__legacy__"


@pytest.mark.parametrize(
    "ref", ["-x", "--upload-pack=touch", "a..b", "HEAD@{1}", "v1 2", "x\x1b[2J", "", "a/", "x.lock"]
)
def test_a_ref_that_could_be_an_option_or_a_range_is_refused(ref: str) -> None:
    with pytest.raises(UsageError) as e:
        g.check_ref(ref, "--good")
    assert e.value.ref == "bad-ref" and "\x1b" not in e.value.message


def test_refs_and_repositories_that_pass(tmp_path: Path) -> None:
    for ref in ("v1.2.0", "gitpkg-2.0.0", "release/1.x", "ab12cd34", "HEAD", "1.0.0+local"):
        assert g.check_ref(ref, "--good") == ref
    assert g.check_repo("https://github.com/pallets/werkzeug", origin=tmp_path).web == (
        "https://github.com/pallets/werkzeug"
    )
    assert not g.check_repo("git@github.com:pallets/werkzeug.git", origin=tmp_path).local
    (tmp_path / "clone").mkdir()
    local = g.check_repo("clone", origin=tmp_path)
    assert local.local and local.url == str((tmp_path / "clone").resolve())
    a = g.check_repo("https://github.com/pallets/werkzeug", origin=tmp_path)
    b = g.check_repo("https://github.com/pallets/flask", origin=tmp_path)
    assert a.key.startswith("werkzeug-") and a.key.endswith(".git") and a.key != b.key


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("-uhttps://x", "is not a repository"),
        ("ext::sh -c touch% /tmp/pwned", "is not a repository"),
        ("fd::17", "no such repository folder"),
        ("https://u:secret@github.com/o/r", "carries a password"),
        ("gopher://github.com/o/r", "is not allowed"),
        ("https://", "is not allowed"),
    ],
)
def test_repository_urls_git_must_not_see(url: str, says: str, tmp_path: Path) -> None:
    with pytest.raises(UsageError) as e:
        g.check_repo(url, origin=tmp_path)
    assert says in e.value.message and "secret" not in e.value.message


def test_environment_ids_name_the_commit() -> None:
    common = dict(python="cpython-3.11.7-x86_64-linux-gnu", indexes=IndexConfig())
    plain = EnvSpec.build(["werkzeug==2.3.7", "flask==2.2.2"], **common)  # type: ignore[arg-type]
    assert plain.env_id == "9d832408aca6bdd1"  # as before sources existed: stored ids hold
    assert "source" not in plain.to_dict()
    one = EnvSpec.build(["flask==2.2.2"], source=SourceBuild(package="werkzeug", commit="a" * 40),
                        **common)  # type: ignore[arg-type]  # fmt: skip
    two = EnvSpec.build(["flask==2.2.2"], source=SourceBuild(package="werkzeug", commit="b" * 40),
                        **common)  # type: ignore[arg-type]  # fmt: skip
    assert len({plain.env_id, one.env_id, two.env_id}) == 3
    assert one.to_dict()["source"] == {"package": "werkzeug", "commit": "a" * 40}


def test_a_build_cut_short_is_built_again_under_a_longer_cap() -> None:
    cut = timed_out(30)
    assert cut.kind is OutcomeKind.UNTESTABLE and "30 s" in cut.signature
    assert stale_build(cut, 60) and stale_build(cut, None)
    assert not stale_build(cut, 30) and not stale_build(cut, 10)
    assert not stale_build(Outcome(kind=OutcomeKind.UNTESTABLE, signature="uv failed"), None)
    src = SourceBuild(package="gitpkg", commit="c" * 40)
    assert unreadable(src, (InstalledDist(name="GitPkg", version="1.0"),)) == ""
    assert "installed no gitpkg" in unreadable(src, (InstalledDist(name="other", version="1"),))


def _answer(subject: str) -> CommitAnswer:
    good = Commit(sha="1" * 40, subject="start", author_date="2024-01-01T00:00:00+00:00")
    bad = Commit(sha="2" * 40, subject=subject, author_date="2024-01-02T00:00:00+00:00",
                 parents=2)  # fmt: skip
    fail = Outcome(kind=OutcomeKind.FAIL, signature="ImportError: cannot import name 'x'")
    tested = tuple(
        ProbedCommit(commit=c, outcome=o, verdict=v, version="1.0.dev0", env_id="e", reused=False)
        for c, o, v in (
            (good, Outcome(kind=OutcomeKind.PASS), RowVerdict.END),
            (bad, fail, RowVerdict.END),
        )
    )
    return CommitAnswer(package="pkg", repo="https://github.com/o/pkg",
                        web="https://github.com/o/pkg", good_ref="v1.0", bad_ref="v2.0",
                        status=Status.FOUND, direction=Direction.REGRESSION, first_new=bad,
                        last_old=good, commits=2, tested=tested)  # fmt: skip


def test_the_answer_keeps_a_subject_as_text() -> None:
    ans = _answer("drop x | <script>alert(1)</script> \x1b]0;title\x07")
    md = ans.markdown()
    assert "<script>" not in md and "\x1b" not in md and "\\|" in md
    assert f"[`{'2' * 12}`](https://github.com/o/pkg/commit/{'2' * 40})" in md
    text = "\n".join(for_terminal(line) for line in ans.lines())
    assert "\x1b" not in text and "[merge]" in text
    assert ans.verdict().startswith(f"first bad commit of pkg: {'2' * 12}: fail (ImportError")
    data = ans.to_dict()
    assert data["first_bad"]["sha"] == "2" * 40 and data["last_good"]["sha"] == "1" * 40
    assert data["probes"] == 2 and data["commits_in_range"] == 2
    first = ans.first_bad()
    assert first is not None and first["merge"] and first["outcome"]["kind"] == "fail"


def _git(repo: Path, *args: str) -> str:
    env = {"GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1", "PATH": "/usr/bin:/bin",
           "GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@x", "GIT_COMMITTER_NAME": "a",
           "GIT_COMMITTER_EMAIL": "a@x"}  # fmt: skip
    return subprocess.run(["git", "-C", str(repo), *args], env=env, capture_output=True,
                          text=True, check=True).stdout.strip()  # fmt: skip


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_git_reads_what_a_repository_says(tmp_path: Path) -> None:
    """Real git: a subject with a separator git would use is kept whole, a local clone's
    origin gives the links, the mirror resolves tags, refs and nothing else."""
    repo = tmp_path / "r"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "commit", "-q", "--allow-empty", "-m", "one")
    _git(repo, "tag", "v1.0")
    _git(repo, "commit", "-q", "--allow-empty", "-m", "two\x1fwith a unit separator")
    _git(repo, "remote", "add", "origin", "git@github.com:o/r.git")
    git = g.Git(binary=g.find_git())
    assert g.origin_url(git, repo) == "git@github.com:o/r.git"
    mirror, done = g.mirror(git, g.check_repo(str(repo), origin=tmp_path), tmp_path / "c")
    assert done == "cloned" and (mirror / "HEAD").is_file()
    assert g.tags(git, mirror) == ["v1.0"]
    sha = g.resolve(git, mirror, "v1.0")
    assert sha is not None and g.resolve(git, mirror, "nope") is None
    head = g.resolve(git, mirror, "main")
    assert head is not None
    (after,) = g.first_parent(git, mirror, sha, head)
    assert after.sha == head and "unit separator" in after.subject
    again, done = g.mirror(g.Git(binary=git.binary, offline=True),
                              g.check_repo(str(repo), origin=tmp_path), tmp_path / "c")  # fmt: skip
    assert again == mirror and done == "offline"
    assert g.mirror(git, g.check_repo(str(repo), origin=tmp_path), tmp_path / "c")[1] == "fetched"
