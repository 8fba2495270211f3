"""Past the release: the first bad commit, end to end, on git repositories the tests make.

Real git (a bare mirror cloned from the test's repository), real builds (uv builds each commit
with tinybuild, a PEP 517 backend served as a wheel from the local index on 127.0.0.1), real
environments and repros. ``support/gitrepos.py`` holds the repositories' truth.
"""

from __future__ import annotations

import json
import math
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import RecordingProgress, split_common
from envbisect.cli.main import main
from envbisect.core.results.parts import Direction, RowVerdict, Status
from envbisect.env.repro import Repro
from envbisect.errors import InfrastructureError, UsageError
from envbisect.model import IndexConfig
from envbisect.modes.commits import CommitOptions, run_commits
from envbisect.modes.run import RunOptions, run_bisect
from envbisect.modes.searchoptions import CommitRefs
from envbisect.options import CommonOptions
from envbisect.store import Store
from support.cli import on_index
from support.gitrepos import ESCAPE_SUBJECT, SOURCE, GitPkg, build_index, make_gitpkg, make_plain
from support.index_server import LocalIndex
from support.options import flat_options

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("git") is None, reason="the commit search needs git"),
]

RUN = "import gitpkg\ngitpkg.run()\n"
OTHER = "import gitpkg\ngitpkg.other()\n"


@pytest.fixture(scope="module")
def gindex(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalIndex]:
    idx = build_index(tmp_path_factory.mktemp("git-index"))
    yield idx
    idx.stop()


@pytest.fixture(scope="module")
def gitpkg(tmp_path_factory: pytest.TempPathFactory) -> GitPkg:
    # Under OWNER/REPO, as https://github.com/example/gitpkg would be (url.insteadOf).
    return make_gitpkg(tmp_path_factory.mktemp("repos") / "example" / "gitpkg")


def _repro(tmp_path: Path, body: str) -> Repro:
    path = tmp_path / "repro" / "repro.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(body)
    return Repro.from_file(str(path), tmp_path)


def _common(index: LocalIndex, python: str, tmp_path: Path, body: str, **kw: Any) -> CommonOptions:
    return flat_options(
        repro=_repro(tmp_path, body),
        indexes=IndexConfig(index_url=index.url),
        python=python,
        results=kw.pop("results", tmp_path / "results"),
        cache_dir=kw.pop("cache_dir", tmp_path / "cache"),
        **kw,
    )


def commits(
    index: LocalIndex,
    python: str,
    tmp_path: Path,
    repo: Path | str | None,
    *,
    body: str = RUN,
    good: str = "1.0.0",
    bad: str = "2.0.0",
    **kw: Any,
) -> CommitOptions:
    common, own = split_common(kw)
    return CommitOptions(
        package="gitpkg",
        common=_common(index, python, tmp_path, body, **common),
        good=good,
        bad=bad,
        repo=str(repo) if repo is not None else None,
        with_reqs=("gitdep<2",),
        **own,  # type: ignore[arg-type]
    )


def bound(n: int) -> int:
    """The probes a commit range of n points may take: ends, then a halving per probe."""
    return math.ceil(math.log2(n)) + 2


def test_first_bad_commit_between_two_releases(
    gindex: LocalIndex, python: str, tmp_path: Path, gitpkg: GitPkg, recorder: RecordingProgress
) -> None:
    res = run_commits(commits(gindex, python, tmp_path, gitpkg.path), recorder)
    main = gitpkg.main
    ans = res.commits
    assert ans is not None and ans.status is Status.FOUND
    assert ans.first_new is not None and ans.first_new.sha == main[14]
    assert ans.last_old is not None and ans.last_old.sha == main[13]
    # Tags in two styles: 1.0.0 is v1.0.0, 2.0.0 is gitpkg-2.0.0.
    assert (ans.good_ref, ans.bad_ref) == ("v1.0.0", "gitpkg-2.0.0")
    # The path: the ends, the middle (does not build), its neighbour, ... (support/gitrepos).
    path = [0, 20, 10, 9, 14, 11, 12, 13]
    # First release 1.0.0's environment (the rest of every commit's), then the commits.
    assert recorder.started == ["1.0.0", *(main[i][:12] for i in path)]
    assert [t.commit.sha for t in ans.tested] == [main[i] for i in path]
    assert ans.commits == 21 and ans.probes == len(path)
    # Two untestable points cost a probe each; the rest is a bisection's.
    assert ans.probes <= bound(21) + len(ans.untestable)
    # Untestable: skipped, never bad, listed with why.
    why = {c.sha: reason for c, reason in ans.untestable}
    assert set(why) == {main[10], main[11]}
    assert (
        "uv failed building" in why[main[10]] and "nothing to build" in ans.tested[2].outcome.detail
    )
    assert "Failed to parse metadata from built wheel" in why[main[11]]
    assert {t.verdict for t in ans.tested if t.commit.sha in why} == {RowVerdict.SKIP}
    # The rest held exactly as in release 1.0.0's environment (gitdep 1.0, never 2.0); the
    # package from source, its version as each build said.
    assert "gitpkg 1.0.0's environment" in ans.rest
    built = [r for r in res.rows if r.outcome.kind.value != "untestable"]
    assert all(("gitdep", "1.0") in {(d.name, d.version) for d in r.installed} for r in built)
    versions = {t.commit.sha: t.version for t in ans.tested}
    assert versions[main[0]] == "1.0.0" and versions[main[20]] == "2.0.0"
    assert versions[main[13]] == "1.1.0.dev0"
    assert ans.build is not None and ans.build.backend == "tinybuild" and not ans.build.compiles
    # The answer in --json, and in report.md.
    data = res.to_dict()
    first = data["first_bad_commit"]
    assert first["sha"] == main[14] and first["subject"] == "run: raise on purpose"
    assert first["author_date"].startswith("2024-03-01T")
    # A local repository with no origin: the links go where the package's metadata says.
    assert first["link"] == f"{SOURCE}/commit/{main[14]}"
    assert first["outcome"]["signature"] == "ValueError: gitpkg broke"
    assert data["commits"]["last_good"]["sha"] == main[13]
    assert [u["sha"] for u in data["commits"]["untestable"]] == [main[10], main[11]]
    assert len(data["commits"]["tested"]) == len(path)
    report = Path(data["report"]).read_text()
    assert "## First bad commit" in report and main[14][:12] in report
    assert "\x1b" not in report  # the escape in main[13]'s subject is not passed on
    # Every commit environment is in the store, its id naming the commit.
    with Store(tmp_path / "results") as store:
        stored = {r.spec["source"]["commit"] for r in store.all() if "source" in r.spec}
    assert stored == {main[i] for i in path if i not in (10, 11)} | {main[10], main[11]}


def test_a_merge_on_the_path_is_one_point(
    gindex: LocalIndex, python: str, tmp_path: Path, gitpkg: GitPkg, recorder: RecordingProgress
) -> None:
    """The side branch broke other(); first-parent, the merge is the first bad commit and the
    side branch's own commits are never built."""
    res = run_commits(commits(gindex, python, tmp_path, gitpkg.path, body=OTHER), recorder)
    ans = res.commits
    assert ans is not None and ans.first_new is not None and ans.last_old is not None
    assert ans.first_new.sha == gitpkg.main[8] and ans.first_new.merge
    assert ans.last_old.sha == gitpkg.main[7]
    assert not set(gitpkg.side) & {t.commit.sha for t in ans.tested}
    assert recorder.started[1:] == [gitpkg.main[i][:12] for i in (0, 20, 10, 9, 4, 6, 7, 8)]
    assert res.to_dict()["first_bad_commit"]["merge"] is True


def test_jobs_2_probes_two_commits_a_round(
    gindex: LocalIndex, python: str, tmp_path: Path, gitpkg: GitPkg, recorder: RecordingProgress
) -> None:
    """Two at a time, in worker processes (each task crosses a pickle, as to another machine:
    the mirror's folder goes with it, the checkout is made where the build runs)."""
    opts = commits(gindex, python, tmp_path, gitpkg.path, jobs=2, executor="process")
    res = run_commits(opts, recorder)
    ans = res.commits
    assert ans is not None and ans.first_new is not None and ans.first_new.sha == gitpkg.main[14]
    rounds: dict[int, list[str]] = {}
    for r in res.rows:
        rounds.setdefault(r.round, []).append(r.version)
    short = [s[:12] for s in gitpkg.main]
    assert rounds == {
        1: [short[0], short[20]],
        2: [short[7], short[13]],
        3: [short[15], short[18]],
        4: [short[14]],
    }
    assert ans.probes <= bound(21)


def test_run_commits_after_the_first_bad_release(
    gindex: LocalIndex, python: str, tmp_path: Path, gitpkg: GitPkg, recorder: RecordingProgress
) -> None:
    common = _common(gindex, python, tmp_path, RUN)
    opts = RunOptions(
        package="gitpkg",
        common=common,
        good="1.0.0",
        bad="2.1.0",
        with_reqs=("gitdep<2",),
        commits=CommitRefs(repo=str(gitpkg.path)),
    )
    res = run_bisect(opts, recorder)
    assert (res.first_new, res.last_old) == ("2.0.0", "1.0.0")
    assert recorder.started[:3] == ["1.0.0", "2.1.0", "2.0.0"]  # the releases, then commits
    ans = res.commits
    assert ans is not None and ans.first_new is not None and ans.first_new.sha == gitpkg.main[14]
    assert (ans.good_ref, ans.bad_ref) == ("v1.0.0", "gitpkg-2.0.0")
    assert "the last good release's environment" in ans.rest
    # The last good release's environment, held: what release 1.0.0's probe installed.
    good_row = res.row("1.0.0")
    assert good_row is not None
    held = {(d.name, d.version) for d in good_row.installed if d.name != "gitpkg"}
    assert held == {("gitdep", "1.0")}
    data = res.to_dict()
    assert data["first_bad"] == "2.0.0"
    assert data["first_bad_commit"]["sha"] == gitpkg.main[14]
    assert data["commits"]["commits_in_range"] == 21
    report = Path(data["report"]).read_text()
    assert "first bad version of gitpkg: 2.0.0" in report and "## First bad commit" in report


def test_run_commits_on_the_command_line(
    gindex: LocalIndex, python: str, tmp_path: Path, gitpkg: GitPkg,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    args = ["run", "--package", "gitpkg", "--good", "1.0.0", "--bad", "2.1.0", "--with",
            "gitdep<2", "--commits", "--repo", str(gitpkg.path),
            *where(gindex, python, tmp_path), "--jobs", "2"]  # fmt: skip
    got, out, err = cli(capsys, *args)
    assert got == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("first bad version of gitpkg: 2.0.0")
    assert lines[1].startswith(f"first bad commit of gitpkg: {gitpkg.main[14][:12]}: fail")
    assert lines[2] == (f"  first bad: {gitpkg.main[14][:12]} run: raise on purpose "
                        f"(2024-03-01) {SOURCE}/commit/{gitpkg.main[14]}")  # fmt: skip
    assert lines[4].startswith("  commits tested: 7 of 21 between v1.0.0 and gitpkg-2.0.0")
    assert "first bad release of gitpkg: 2.0.0; now the commits since 1.0.0" in err
    assert f"mirror of {gitpkg.path}: cloned into" in err
    # The releases' commits named with --good-ref/--bad-ref (a tag, a commit id): the same
    # commits, so the store answers every probe; the mirror is fetched, not cloned again.
    got, out, err = cli(capsys, *args, "--good-ref", "v1.0.0", "--bad-ref", gitpkg.main[20],
                        "--json")  # fmt: skip
    data = json.loads(out)
    assert got == 0 and data["commits"]["bad_ref"] == gitpkg.main[20]
    assert data["first_bad_commit"]["sha"] == gitpkg.main[14]
    assert all(t["reused"] for t in data["commits"]["tested"])
    assert f"mirror of {gitpkg.path}: fetched (up to date)" in err
    # --repo without --commits is a mistake, said before anything is built.
    got, _, err = cli(capsys, *[a for a in args if a != "--commits"])
    assert got == 2 and "--repo is for the commit search" in one_error(err)[0]


def test_a_good_ref_on_a_maintenance_branch_starts_at_the_merge_base(
    gindex: LocalIndex, python: str, tmp_path: Path, gitpkg: GitPkg, recorder: RecordingProgress
) -> None:
    """v1.0.1 is no ancestor of gitpkg-2.0.0: the range starts at their merge base (main[0]),
    as git bisect tests it first. 1.0.1 is not on the index: the rest is what uv resolves for
    the merge base's own build, which is then the good end."""
    opts = commits(gindex, python, tmp_path, gitpkg.path, good="1.0.1")
    res = run_commits(opts, recorder)
    ans = res.commits
    assert ans is not None and ans.first_new is not None and ans.first_new.sha == gitpkg.main[14]
    assert ans.start.startswith("v1.0.1 is not an ancestor of gitpkg-2.0.0")
    assert gitpkg.main[0][:12] in ans.start
    assert ans.tested[0].commit.sha == gitpkg.main[0] and ans.tested[0].reused  # the base build
    assert gitpkg.maintenance not in {t.commit.sha for t in ans.tested}
    assert "as uv resolved it for" in ans.rest
    assert recorder.started[0] == gitpkg.main[0][:12]
    assert recorder.started.count(gitpkg.main[0][:12]) == 2  # built once, then from the store
    assert recorder.finished[1] == (gitpkg.main[0][:12], "pass", True)


def test_run_commits_after_a_fix_finds_the_first_fixed_commit(
    gindex: LocalIndex, python: str, tmp_path: Path, gitpkg: GitPkg
) -> None:
    """A repro that waits for run() to raise: releases 1.0.0 fail it, 2.0.0 passes (a fix
    search, --good newer than --bad); its commits: the first fixed one is main[14]."""
    waits = (
        "import gitpkg\ntry:\n    gitpkg.run()\nexcept ValueError:\n    pass\n"
        "else:\n    raise SystemExit('not yet')\n"
    )
    common = _common(gindex, python, tmp_path, waits)
    opts = RunOptions(
        package="gitpkg",
        common=common,
        good="2.1.0",
        bad="1.0.0",
        with_reqs=("gitdep<2",),
        commits=CommitRefs(repo=str(gitpkg.path)),
    )
    res = run_bisect(opts)
    assert (res.direction, res.first_new, res.last_old) == (Direction.FIX, "2.0.0", "1.0.0")
    ans = res.commits
    assert ans is not None and ans.fix and ans.status is Status.FOUND
    assert ans.first_new is not None and ans.first_new.sha == gitpkg.main[14]
    assert ans.last_old is not None and ans.last_old.sha == gitpkg.main[13]
    assert (ans.good_ref, ans.bad_ref) == ("gitpkg-2.0.0", "v1.0.0")
    data = res.to_dict()
    assert data["first_fixed_commit"]["sha"] == gitpkg.main[14]
    assert data["commits"]["last_broken"]["sha"] == gitpkg.main[13]
    assert "first fixed commit of gitpkg" in ans.verdict()


def test_offline_uses_the_mirror_as_it_is(
    gindex: LocalIndex, python: str, tmp_path: Path, gitpkg: GitPkg
) -> None:
    """Once mirrored, --offline builds and probes every commit from the mirror and the
    caches: a commit made upstream since is not seen, and nothing is fetched."""
    cache = tmp_path / "cache"
    online = run_commits(commits(gindex, python, tmp_path, gitpkg.path, results=tmp_path / "a"))
    mirrors = list((cache / "git-v1").iterdir())
    assert len(mirrors) == 1
    # Upstream moves on: a new tag the mirror does not have.
    from support.gitrepos import Git

    Git(gitpkg.path)("tag", "later", gitpkg.after[-1])
    before = Git(mirrors[0])("tag")
    rec = RecordingProgress()
    offline = run_commits(
        commits(gindex, python, tmp_path, gitpkg.path, results=tmp_path / "b", offline=True), rec
    )
    assert offline.commits is not None and online.commits is not None
    assert offline.commits.first_new == online.commits.first_new
    assert [r.reused for r in offline.rows].count(False) == len(offline.rows)  # built again
    assert any("used as it is (--offline)" in m for m in rec.messages)
    assert Git(mirrors[0])("tag") == before and "later" not in before
    with pytest.raises(UsageError) as e:  # the new tag is not in the mirror
        run_commits(commits(gindex, python, tmp_path, gitpkg.path, bad="later", offline=True))
    assert e.value.ref == "unknown-ref"
    Git(gitpkg.path)("tag", "-d", "later")
    # Offline with no mirror at all: one line naming what is missing.
    with pytest.raises(InfrastructureError) as miss:
        run_commits(
            commits(
                gindex,
                python,
                tmp_path,
                gitpkg.path,
                offline=True,
                cache_dir=tmp_path / "empty-cache",
            )
        )
    assert miss.value.ref == "offline-miss" and "no mirror" in miss.value.message


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def where(gindex: LocalIndex, python: str, tmp_path: Path, body: str = RUN) -> list[str]:
    """The options every command line here names: the git index, this interpreter, results
    and cache under ``tmp_path`` (``on_index``), and the repro ``body`` in tmp_path/repro.py."""
    repro = tmp_path / "repro.py"
    repro.write_text(body)
    return [*on_index(gindex.url, python, tmp_path, cache=True), "--repro", str(repro)]


def one_error(err: str) -> tuple[str, str]:
    """The error line and the hint line: nothing else on stderr but progress lines."""
    errors = [ln for ln in err.splitlines() if ln.startswith("error:")]
    hints = [ln for ln in err.splitlines() if ln.startswith("hint:")]
    assert len(errors) == 1 and len(hints) == 1, err
    assert "Traceback" not in err
    return errors[0], hints[0]


def test_bad_input_is_one_line_and_a_hint(
    gindex: LocalIndex,
    python: str,
    tmp_path: Path,
    gitpkg: GitPkg,
    capsys: pytest.CaptureFixture[str],
) -> None:
    base = ["commits", "--package", "gitpkg", *where(gindex, python, tmp_path)]
    cases = [
        # a repository that does not exist: no folder, and a git URL with nothing there
        (
            ["--repo", str(tmp_path / "nowhere"), "--good", "1.0.0", "--bad", "2.0.0"],
            2,
            "no such repository folder",
            "--repo",
        ),
        (
            ["--repo", (tmp_path / "nothing.git").as_uri(), "--good", "1.0.0", "--bad", "2.0.0"],
            2,
            "no git repository at",
            "--repo",
        ),
        # a ref that is not in it
        (
            ["--repo", str(gitpkg.path), "--good", "no-such-branch", "--bad", "2.0.0"],
            2,
            "no such tag, branch or commit",
            "ls-remote",
        ),
        # a release with no tag: each name tried is said
        (
            ["--repo", str(gitpkg.path), "--good", "2.1.0", "--bad", "2.2.0"],
            2,
            "no tag for gitpkg 2.2.0",
            "--bad",
        ),
        # a ref that would be an option
        (
            ["--repo", str(gitpkg.path), "--good=--upload-pack=touch", "--bad", "2.0.0"],
            2,
            "is not a git ref",
            "not starting with -",
        ),
        # a URL with a password (git would store it), and a transport that runs commands
        (
            [
                "--repo",
                "https://user:secret@example.invalid/r.git",
                "--good",
                "1.0.0",
                "--bad",
                "2.0.0",
            ],
            2,
            "carries a password",
            "credential helper",
        ),
        (
            ["--repo", "ext::sh -c touch% /tmp/x", "--good", "1", "--bad", "2"],
            2,
            "is not a repository",
            "--repo",
        ),
    ]
    for args, code, message, hint in cases:
        got, _, err = cli(capsys, *base, *args)
        line, hint_line = one_error(err)
        assert got == code, (args, err)
        assert message in line and hint in hint_line, (args, err)
        assert "secret" not in err
    _, _, err = cli(capsys, *base, "--repo", str(gitpkg.path), "--good", "2.1.0", "--bad", "2.2.0")
    assert "tried v2.2.0, 2.2.0, gitpkg-2.2.0, gitpkg-v2.2.0" in one_error(err)[0]


def test_no_repository_in_the_metadata(
    gindex: LocalIndex, python: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    got, _, err = cli(
        capsys, "commits", "--package", "gitdep", "--good", "1.0", "--bad", "2.0",
        *where(gindex, python, tmp_path, "import gitdep\n"),
    )  # fmt: skip
    line, hint = one_error(err)
    assert got == 2 and "no repository known for gitdep" in line and "--repo URL" in hint


def test_the_repository_from_the_metadata_and_its_links(
    gindex: LocalIndex,
    python: str,
    tmp_path: Path,
    gitpkg: GitPkg,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No --repo: gitpkg's metadata names https://github.com/example/gitpkg, which git takes
    from the test's folder (url.insteadOf: no network), and the links point to GitHub. The
    subjects' escapes never reach the terminal; --json carries the same answer."""
    config = tmp_path / "gitconfig"
    config.write_text(
        f'[url "{gitpkg.path.parent.parent.as_uri()}/"]\n\tinsteadOf = https://github.com/\n'
    )
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    args = ["commits", "--package", "gitpkg", "--good", "1.0.0", "--bad", "gitpkg-2.0.0",
            "--with", "gitdep<2", *where(gindex, python, tmp_path)]  # fmt: skip
    got, out, err = cli(capsys, *args)
    assert got == 0, err
    assert f"gitpkg's repository, from its metadata: {SOURCE}" in err
    assert f"first bad commit of gitpkg: {gitpkg.main[14][:12]}" in out
    assert f"{SOURCE}/commit/{gitpkg.main[14]}" in out
    assert "last good: " in out and "\x1b" not in out and "tidy" in out
    assert "commits tested: 8 of 21 between v1.0.0 and gitpkg-2.0.0; untestable: " in out
    assert "gitpkg builds from source with tinybuild (tinybuild); pure Python" in err
    got, out, _ = cli(capsys, *args, "--json")
    data = json.loads(out)
    assert got == 0 and data["first_bad_commit"]["link"] == f"{SOURCE}/commit/{gitpkg.main[14]}"
    assert all(t["reused"] for t in data["commits"]["tested"])  # the store answers a rerun
    assert ESCAPE_SUBJECT in [t["subject"] for t in data["commits"]["tested"]]  # JSON: as is


def test_a_package_that_cannot_be_built_here_stops(
    gindex: LocalIndex, python: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Its build backend is nowhere: the good end does not build, one line and a hint (never
    a first bad commit)."""
    shas = make_plain(tmp_path / "nobackend", backend="nosuchbackend")
    opts = commits(gindex, python, tmp_path, tmp_path / "nobackend", good=shas[0], bad=shas[2])
    with pytest.raises(InfrastructureError) as e:
        run_commits(opts)
    assert e.value.ref == "cannot-build"
    assert "gitpkg cannot be built from source here" in e.value.message
    assert e.value.hint and "build backend" in e.value.hint
    # On the command line: one line, a hint, exit 3 (the machine, not the question).
    got, out, err = cli(capsys, "commits", "--package", "gitpkg", "--good", "v1.0.0", "--bad",
                        "v2.0.0", "--repo", str(tmp_path / "nobackend"),
                        *where(gindex, python, tmp_path))  # fmt: skip
    line, hint = one_error(err)
    assert got == 3 and "cannot be built from source here" in line and "build backend" in hint
    assert "first bad commit" not in out


def test_build_timeout_makes_a_commit_untestable(
    gindex: LocalIndex, python: str, tmp_path: Path, recorder: RecordingProgress
) -> None:
    """The middle commit's build takes a minute: cut at --build-timeout, it is untestable,
    and the answer says it hides the boundary."""
    shas = make_plain(tmp_path / "slow", slow_middle=60)
    opts = commits(
        gindex, python, tmp_path, tmp_path / "slow", good="v1.0.0", bad="v2.0.0", build_timeout=3.0
    )
    res = run_commits(opts, recorder)
    ans = res.commits
    assert ans is not None and ans.status is Status.AMBIGUOUS
    assert [c.sha for c in ans.possible] == shas[1:]
    (why,) = [w for c, w in ans.untestable if c.sha == shas[1]]
    assert "longer than --build-timeout 3 s" in why
    assert recorder.started == ["1.0.0", *(s[:12] for s in shas[:1] + shas[2:] + shas[1:2])]


def test_a_build_of_another_project_is_untestable(
    gindex: LocalIndex, python: str, tmp_path: Path
) -> None:
    """With sdists allowed uv builds whatever the tree names: a build that installs no
    gitpkg has no version of it to read, and is untestable (never bad)."""
    shas = make_plain(tmp_path / "renamed", rename_middle=True)
    opts = commits(
        gindex,
        python,
        tmp_path,
        tmp_path / "renamed",
        good="v1.0.0",
        bad="v2.0.0",
        allow_sdist=True,
    )
    res = run_commits(opts)
    ans = res.commits
    assert ans is not None and ans.status is Status.AMBIGUOUS
    (why,) = [w for c, w in ans.untestable if c.sha == shas[1]]
    assert "installed no gitpkg distribution" in why


def test_ends_that_do_not_verify_are_no_answer(
    gindex: LocalIndex, python: str, tmp_path: Path, gitpkg: GitPkg,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    """Both ends fail: no first bad commit (exit 1), the report is written and says why."""
    got, out, err = cli(
        capsys, "commits", "--package", "gitpkg", "--good", "2.0.0", "--bad", "2.1.0",
        "--repo", str(gitpkg.path), "--with", "gitdep<2", *where(gindex, python, tmp_path),
    )  # fmt: skip
    line, hint = one_error(err)
    assert got == 1 and "the ends did not verify: both ends fail" in line
    assert "refs that pass and fail" in hint
    report = Path(out.splitlines()[-1].removeprefix("report: ")).read_text()
    assert "no first bad commit of gitpkg" in report
