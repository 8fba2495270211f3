"""Every line that tells someone how to install envbisect installs something that exists: a
checkout (``.``, ``-e .``, a folder, a wheel built from it) or this repository's git URL (the
``Source`` of pyproject.toml's ``[project.urls]``), at the tag of this version only once it is
released, never the bare PyPI name, which is not registered yet. The lines are read from the
README, the docs, the action, every ``--help``, the workflow ``ci-template`` writes and the
hints envbisect prints; the git URL is then installed for real, from this repository (git's
``insteadOf`` points the URL here). Every tag of envbisect named anywhere in the repository is
one ``git tag`` lists.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from packaging.requirements import InvalidRequirement, Requirement

from envbisect import DISTRIBUTION, RELEASED, __version__, install_requirement, source_url

ROOT = Path(__file__).resolve().parent.parent
INSTALLERS = re.compile(r"\b(?:uv tool install|uv pip install|pip install|pipx install|uv add)\b")
# A requirement on envbisect's distribution: its extras, then a URL or a version.
NAMED = re.compile(r"envbisect-ml(?:\[[^\]]*\])?(?:\s*@\s*[^\s']+|\s*[=<>!~]=?[^\s']*)?")


def _texts() -> dict[str, str]:
    from envbisect.cli.commands.ci_template import workflow
    from envbisect.cli.parser import build_parser, subparser

    texts = {str(p.relative_to(ROOT)): p.read_text() for p in [ROOT / "README.md",
             ROOT / "action.yml", *sorted((ROOT / "docs").rglob("*.md"))]}  # fmt: skip
    parser = build_parser()
    texts["--help"] = parser.format_help()
    for name in ("run", "commits", "probe", "repro", "lock", "matrix", "diff", "ci-template"):
        texts[f"{name} --help"] = subparser(parser, name).format_help()
    texts["ci-template"] = "uv tool install " + yaml.safe_load(workflow())["env"]["ENVBISECT"]
    for path in sorted((ROOT / "src" / "envbisect").rglob("*.py")):
        texts[str(path.relative_to(ROOT))] = path.read_text()
    return texts


def _installs(text: str) -> list[str]:
    """Each requirement on envbisect's distribution an install command on a line takes (up to
    the end of that command: a comment, ``&&``, ``;``, a closing quote or backtick)."""
    found = []
    flat = re.sub(r"\s*\n\s*", " ", text)  # a command may run on over a line break in prose
    for m in INSTALLERS.finditer(flat):
        rest = re.split(r"#|&&|;|`|\"|\)", flat[m.end() :])[0]
        found += [r.group(0) for r in NAMED.finditer(rest)]
    return found


def test_the_source_url_is_pyprojects() -> None:
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    urls = re.search(r"(?ms)^\[project\.urls\]\n(.*?)\n\n", text)
    assert urls is not None
    assert f'Source = "{source_url()}"' in urls.group(1).splitlines()


def test_every_install_line_names_a_checkout_or_this_repository_at_its_tag() -> None:
    url = f"git+{source_url()}" + (f"@v{__version__}" if RELEASED else "")
    seen = 0
    for where, text in _texts().items():
        for word in _installs(text):
            seen += 1
            try:
                req = Requirement(word)
            except InvalidRequirement:
                pytest.fail(f"{where}: {word!r} is not a requirement")
            assert req.name == DISTRIBUTION, f"{where}: {word!r} installs another project"
            assert req.url == url, f"{where}: {word!r} installs what is not there (PyPI, a tag)"
    assert seen >= 2, "the scan found too few install lines to be reading the right texts"
    # Until a release, the docs install from a clone or a local path.
    install_md = _texts()["docs/how-to/install.md"]
    assert "uv tool install ./envbisect" in install_md and "git clone " + source_url() in install_md
    assert Requirement(install_requirement("ray")).extras == {"ray"}
    assert "envbisect-ml[ray] @" in install_requirement("ray")


@pytest.mark.slow
def test_the_git_url_installs_this_version(tmp_path: Path) -> None:
    """The URL the lines give, installed with uv as a user would, from this repository's tag
    (git is told the URL is this folder): envbisect of this version, importable."""
    tag = f"v{__version__}"
    has = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "-q", "--verify", f"{tag}^{{}}"],
                         capture_output=True, text=True)  # fmt: skip
    if RELEASED and has.returncode != 0:
        pytest.skip(f"this clone has no tag {tag} (git fetch --tags)")
    from envbisect.env.uv import find_uv

    uv = find_uv()
    venv = tmp_path / "venv"
    subprocess.run([uv, "venv", "-q", "--python", sys.executable, str(venv)], check=True)
    env = {
        **os.environ,
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": f"url.{ROOT.as_uri()}.insteadOf",
        "GIT_CONFIG_VALUE_0": source_url(),
        "UV_CACHE_DIR": str(tmp_path / "cache"),
    }
    got = subprocess.run(
        [uv, "pip", "install", "-q", "--python", str(venv), "--no-deps",
         install_requirement()],
        capture_output=True, text=True, env=env, timeout=600,
    )  # fmt: skip
    assert got.returncode == 0, got.stderr
    version = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import envbisect; print(envbisect.__version__)"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    assert version == __version__


# A ref of envbisect's own repository: OWNER/envbisect@REF (an action's uses:), a git URL's
# @REF, git clone --branch REF. Other projects' tags (actions/checkout@v4) are theirs.
_OUR_REFS = (
    re.compile(r"\benvbisect(?:\.git)?@(v?\d[\w.+-]*)"),
    re.compile(r"\bgit clone\b[^\n]*?(?:--branch|-b)\s+(v?\d[\w.+-]*)[^\n]*envbisect"),
    re.compile(r"\btag (v\d+\.\d+[\w.+-]*)"),
)


def _tags() -> set[str]:
    out = subprocess.run(["git", "-C", str(ROOT), "tag"], capture_output=True, text=True)
    if out.returncode != 0:
        pytest.skip(f"not a git checkout: {out.stderr.strip()}")
    return set(out.stdout.split())


def test_every_tag_named_in_the_repository_exists() -> None:
    """A generated workflow installed envbisect at a tag the repository never had."""
    files = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "-co", "--exclude-standard"],
        capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    tags, named, read = _tags(), [], 0
    for name in files:
        path = ROOT / name
        if name.startswith("tests/") or path.suffix not in {
            ".md",
            ".yml",
            ".yaml",
            ".py",
            ".toml",
            ".txt",
            ".cfg",
            ".html",
        }:
            continue  # the tests name refs to test with (and this test its patterns)
        if not path.is_file():
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        read += 1
        named += [(name, m.group(1)) for p in _OUR_REFS for m in p.finditer(text)]
    texts = _texts()
    for where in ("--help", "ci-template"):
        named += [(where, m.group(1)) for p in _OUR_REFS for m in p.finditer(texts[where])]
    assert read > 50  # the walk read the repository
    missing = [(where, ref) for where, ref in named if ref not in tags]
    assert not missing, f"tags named that `git tag` does not list: {missing}"
    if RELEASED:
        assert f"v{__version__}" in tags, "RELEASED, but this version has no tag"
