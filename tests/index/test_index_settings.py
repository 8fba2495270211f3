"""The user's own index settings: each source (flags, UV_* and PIP_* variables, uv.toml,
pyproject.toml's [tool.uv], pip.conf) and its precedence, as uv and pip read them; pure
(index/settings.resolve over an environ and files in tmp) and through the real CLI against the
tests' local index on 127.0.0.1 (support/cli.py).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import write_repro
from envbisect.index.settings import PYPI, resolve
from support.cli import envbisect
from support.index_server import LocalIndex

CLOSED = "http://127.0.0.1:9/simple"  # nothing listens on the discard port


def clean_env(**extra: str) -> dict[str, str]:
    """The test session's environment (no index settings of this machine) plus ``extra``."""
    return {**os.environ, **extra}


# -- index settings: each source, and its precedence (pure: an environ and files in tmp) --------


def _resolve(tmp_path: Path, env: dict[str, str], **flags: object) -> list[tuple[str, str]]:
    base = {
        "PIP_CONFIG_FILE": os.devnull,
        "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
        "XDG_CONFIG_DIRS": str(tmp_path / "xdg-dirs"),
        "HOME": str(tmp_path / "home"),
    }
    found = resolve(
        index_url=flags.get("index_url"),  # type: ignore[arg-type]
        extra_index_urls=tuple(flags.get("extra", ())),  # type: ignore[arg-type]
        environ={**base, **env},
        cwd=Path(str(flags.get("cwd", tmp_path))),
        no_config=bool(flags.get("no_config", False)),
    )
    return [(found.main.url, found.main.origin), *((f.url, f.origin) for f in found.extra)]


def test_nothing_set_is_pypi(tmp_path: Path) -> None:
    assert _resolve(tmp_path, {}) == [(PYPI, "default")]


def test_each_main_index_source_in_uvs_order(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    (project / "sub").mkdir(parents=True)
    (project / "pyproject.toml").write_text(
        '[project]\nname = "p"\n[tool.uv]\nindex-url = "http://127.0.0.1:1/pyproject"\n'
    )
    user = tmp_path / "xdg" / "uv"
    user.mkdir(parents=True)
    (user / "uv.toml").write_text(
        '[[index]]\nurl = "http://127.0.0.1:1/user"\ndefault = true\n'
        '[[index]]\nurl = "http://127.0.0.1:1/user-extra"\n'
        '[[index]]\nurl = "http://127.0.0.1:1/explicit"\nexplicit = true\n'
    )
    pipconf = tmp_path / "pip.conf"
    pipconf.write_text("[global]\nindex-url = http://127.0.0.1:1/pipconf\n")
    env = {
        "UV_DEFAULT_INDEX": "http://127.0.0.1:1/uv-default",
        "UV_INDEX_URL": "http://127.0.0.1:1/uv-index-url",
        "PIP_INDEX_URL": "http://127.0.0.1:1/pip-env",
        "PIP_CONFIG_FILE": str(pipconf),
    }
    cwd = project / "sub"  # the nearest parent with a [tool.uv] table is the project's
    flag = _resolve(tmp_path, env, index_url="http://127.0.0.1:1/flag", cwd=cwd)
    assert flag[0] == ("http://127.0.0.1:1/flag", "--index-url")
    assert _resolve(tmp_path, env, cwd=cwd)[0] == (
        "http://127.0.0.1:1/uv-default",
        "UV_DEFAULT_INDEX",
    )
    env.pop("UV_DEFAULT_INDEX")
    assert _resolve(tmp_path, env, cwd=cwd)[0][1] == "UV_INDEX_URL"
    env.pop("UV_INDEX_URL")
    url, origin = _resolve(tmp_path, env, cwd=cwd)[0]
    assert url.endswith("/pyproject") and origin.endswith("pyproject.toml tool.uv.index-url")
    # uv.toml beats pyproject.toml in the same folder
    (project / "uv.toml").write_text('index-url = "http://127.0.0.1:1/uvtoml"\n')
    assert _resolve(tmp_path, env, cwd=cwd)[0][0].endswith("/uvtoml")
    (project / "uv.toml").unlink()
    (project / "pyproject.toml").write_text('[project]\nname = "p"\n')  # no [tool.uv]: skipped
    url, origin = _resolve(tmp_path, env, cwd=cwd)[0]
    assert url.endswith("/user") and "uv.toml index (default)" in origin
    (user / "uv.toml").unlink()
    assert _resolve(tmp_path, env, cwd=cwd)[0] == ("http://127.0.0.1:1/pip-env", "PIP_INDEX_URL")
    env.pop("PIP_INDEX_URL")
    url, origin = _resolve(tmp_path, env, cwd=cwd)[0]
    assert url.endswith("/pipconf") and origin == f"{pipconf} [global] index-url"
    assert _resolve(tmp_path, env, cwd=cwd, no_config=True) == [(PYPI, "default")]


def test_extra_indexes_flags_replace_variables_files_add_pip_only_alone(tmp_path: Path) -> None:
    (tmp_path / "uv.toml").write_text(
        'extra-index-url = ["http://127.0.0.1:1/file-extra"]\n'
        '[pip]\nindex-url = "http://127.0.0.1:1/pip-section"\n'
    )
    env = {
        "UV_INDEX": "named=http://127.0.0.1:1/uv-index http://127.0.0.1:1/uv-index-2",
        "UV_EXTRA_INDEX_URL": "http://127.0.0.1:1/uv-extra",
        "PIP_EXTRA_INDEX_URL": "http://127.0.0.1:1/pip-extra",
    }
    got = _resolve(tmp_path, env)
    assert got[0] == ("http://127.0.0.1:1/pip-section", f"{tmp_path / 'uv.toml'} pip.index-url")
    assert [u for u, _ in got[1:]] == [
        "http://127.0.0.1:1/uv-index",  # the name before = is dropped, as uv reads it
        "http://127.0.0.1:1/uv-index-2",
        "http://127.0.0.1:1/uv-extra",
        "http://127.0.0.1:1/file-extra",  # the configuration file's after the variables'
    ]
    flags = _resolve(tmp_path, env, extra=["http://127.0.0.1:1/flag-extra"])
    assert [u for u, _ in flags[1:]] == [
        "http://127.0.0.1:1/flag-extra",
        "http://127.0.0.1:1/file-extra",
    ]
    (tmp_path / "uv.toml").unlink()
    only_pip = _resolve(tmp_path, {"PIP_EXTRA_INDEX_URL": env["PIP_EXTRA_INDEX_URL"]})
    assert only_pip == [(PYPI, "default"), ("http://127.0.0.1:1/pip-extra", "PIP_EXTRA_INDEX_URL")]
    assert _resolve(tmp_path, {"UV_NO_CONFIG": "1", **env}) == [(PYPI, "default")]


def _versions(
    index: LocalIndex,
    python: str,
    tmp_path: Path,
    env: dict[str, str],
    *flags: str,
    cwd: Path | None = None,
) -> subprocess.CompletedProcess[str]:
    return envbisect(
        "versions",
        "raisy",
        "--python",
        python,
        "--cache-dir",
        str(tmp_path / "cache"),
        "--json",
        *flags,
        env=clean_env(**env),
        cwd=cwd,
    )


def _seen(proc: subprocess.CompletedProcess[str]) -> list[str]:
    assert proc.returncode == 0, proc.stderr
    return [c["version"] for c in json.loads(proc.stdout)["candidates"]]


RAISY = [f"1.{i}.0" for i in range(8)]


@pytest.mark.slow
@pytest.mark.parametrize(
    "var",
    [
        "PIP_INDEX_URL",
        "UV_INDEX_URL",
        "UV_DEFAULT_INDEX",
        "UV_INDEX",
        "UV_EXTRA_INDEX_URL",
        "PIP_EXTRA_INDEX_URL",
    ],
)
def test_a_local_index_named_only_in_a_variable_is_used(
    var: str, index: LocalIndex, python: str, tmp_path: Path
) -> None:
    # The other indexes' variables come on top of a main one: an empty file:// index here, so
    # that nothing reaches PyPI and raisy can only come from the variable's index.
    empty = tmp_path / "empty-index"
    empty.mkdir()
    main = (
        []
        if var.endswith(("INDEX_URL", "DEFAULT_INDEX")) and "EXTRA" not in var
        else ["--index-url", empty.as_uri()]
    )
    proc = _versions(index, python, tmp_path, {var: index.url}, *main)
    assert _seen(proc) == RAISY
    line = next(ln for ln in proc.stderr.splitlines() if ln.startswith("envbisect: index"))
    assert f"{index.url} ({var})" in line
    # --no-config: the variable is ignored, PyPI is asked (and has no raisy like this one)
    ignored = _versions(
        index, python, tmp_path, {var: CLOSED}, "--index-url", index.url, "--no-config"
    )
    assert _seen(ignored) == RAISY and CLOSED not in ignored.stderr


@pytest.mark.slow
def test_pips_extra_indexes_follow_pips_rule_and_uvs_follow_uvs(
    index: LocalIndex, python: str, tmp_path: Path
) -> None:
    """A mirror with one old file of raisy (as this machine's pip.conf names a folder of a
    few wheels). Named in pip's settings it is merged as pip merges indexes (the best version
    from any), and uv is told so; named in uv's, uv's rule holds: the first index that has
    the project gives all of its files."""
    (old,) = [f for f in index.project("raisy") if f.path.name.startswith("raisy-1.0.0-")]
    mirror = tmp_path / "mirror"
    (mirror / "raisy").mkdir(parents=True)
    shutil.copy(old.path, mirror / "raisy" / old.path.name)
    (mirror / "raisy" / "index.html").write_text(
        f'<a href="{old.path.name}#sha256={old.sha256}">{old.path.name}</a>\n'
    )
    flags = ("--index-url", index.url)
    pip = _versions(index, python, tmp_path, {"PIP_EXTRA_INDEX_URL": mirror.as_uri()}, *flags)
    assert _seen(pip) == RAISY
    assert "pip's rule" in pip.stderr
    uv = _versions(index, python, tmp_path, {"UV_EXTRA_INDEX_URL": mirror.as_uri()}, *flags)
    assert _seen(uv) == ["1.0.0"]
    assert "pip's rule" not in uv.stderr
    # and uv installs by pip's rule too: the newest raisy, from the main index
    rep = write_repro(tmp_path, "raisy")
    env = clean_env(PIP_EXTRA_INDEX_URL=mirror.as_uri())
    out = envbisect("probe", "--with", "raisy", "--python", python, "--repro", str(rep),
                    "--results", str(tmp_path / "r"), "--cache-dir", str(tmp_path / "cache"),
                    "--json", *flags, env=env)  # fmt: skip
    installed = {d["name"]: d["version"] for d in json.loads(out.stdout)["installed"]}
    assert installed["raisy"] == "1.7.0", out.stderr


def test_find_links_folders_from_each_source_in_uvs_order(tmp_path: Path) -> None:
    def links(env: dict[str, str], **kw: object) -> list[tuple[str, str]]:
        got = resolve(index_url=None, extra_index_urls=(), environ={"HOME": str(tmp_path),
                      "PIP_CONFIG_FILE": os.devnull, **env}, cwd=tmp_path, **kw)  # type: ignore[arg-type]  # fmt: skip
        return [(f.url, f.origin) for f in got.links]

    assert links({}) == []
    assert links({"PIP_FIND_LINKS": "/a /b"}) == [
        ("/a", "PIP_FIND_LINKS"),
        ("/b", "PIP_FIND_LINKS"),
    ]
    (tmp_path / "uv.toml").write_text('find-links = ["/from-file"]\n')
    # uv's file names one: pip's are not read; the variable comes before the file
    assert links({"PIP_FIND_LINKS": "/a"}) == [("/from-file", f"{tmp_path / 'uv.toml'} find-links")]
    assert [u for u, _ in links({"UV_FIND_LINKS": "/u1,/u2"})] == ["/u1", "/u2", "/from-file"]
    # the flag replaces the variable; --no-config keeps the flag alone
    flag = links({"UV_FIND_LINKS": "/u1"}, find_links=("/flag",))
    assert [u for u, _ in flag] == ["/flag", "/from-file"]
    assert links({"UV_FIND_LINKS": "/u1"}, find_links=("/flag",), no_config=True) == [
        ("/flag", "--find-links")
    ]


def test_a_folder_named_only_in_pip_find_links_is_used(
    index: LocalIndex, python: str, tmp_path: Path
) -> None:
    from support.wheels import build_wheel

    folder = tmp_path / "wheels"
    folder.mkdir()
    build_wheel(folder, "onlyhere", "1.0.0", {"onlyhere/__init__.py": ""})
    proc = envbisect("versions", "onlyhere", "--python", python, "--index-url", index.url,
                     "--cache-dir", str(tmp_path / "cache"), "--json",
                     env=clean_env(PIP_FIND_LINKS=str(folder)))  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert [c["version"] for c in json.loads(proc.stdout)["candidates"]] == ["1.0.0"]
    assert f"find-links: {folder} (PIP_FIND_LINKS)" in proc.stderr
    gone = envbisect("versions", "onlyhere", "--python", python, "--index-url", index.url,
                     env=clean_env(PIP_FIND_LINKS=str(tmp_path / "nowhere")))  # fmt: skip
    assert gone.returncode == 2 and "(from PIP_FIND_LINKS): no such folder" in gone.stderr
    assert "--no-config" in gone.stderr and "Traceback" not in gone.stderr


@pytest.mark.slow
def test_the_flag_beats_the_variable_which_beats_the_file_which_beats_pip(
    index: LocalIndex, python: str, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "uv.toml").write_text(f'index-url = "{index.url}"\n')
    pipconf = tmp_path / "pip.conf"
    pipconf.write_text(f"[global]\nindex-url = {CLOSED}\n")
    # uv.toml over pip.conf and PIP_INDEX_URL (uv's own settings first)
    proc = _versions(
        index,
        python,
        tmp_path,
        {"PIP_INDEX_URL": CLOSED, "PIP_CONFIG_FILE": str(pipconf)},
        cwd=project,
    )
    assert _seen(proc) == RAISY and f"({project / 'uv.toml'} index-url)" in proc.stderr
    # UV_INDEX_URL over uv.toml: the closed port is asked, and says so
    (project / "uv.toml").write_text(f'index-url = "{CLOSED}"\n')
    proc = _versions(index, python, tmp_path, {"UV_INDEX_URL": index.url}, cwd=project)
    assert _seen(proc) == RAISY
    # --index-url over everything
    proc = _versions(
        index, python, tmp_path, {"UV_INDEX_URL": CLOSED}, "--index-url", index.url, cwd=project
    )
    assert _seen(proc) == RAISY and f"{index.url} (--index-url)" in proc.stderr
    # a pip.conf alone is read too
    (project / "uv.toml").unlink()
    pipconf.write_text(f"[install]\nindex-url = {index.url}\n")
    proc = _versions(index, python, tmp_path, {"PIP_CONFIG_FILE": str(pipconf)}, cwd=project)
    assert _seen(proc) == RAISY and f"({pipconf} [install] index-url)" in proc.stderr


def test_credentials_in_the_index_line_are_masked(
    index: LocalIndex, python: str, tmp_path: Path
) -> None:
    url = index.url.replace("http://", "http://alice:s3cret-pw@")
    proc = _versions(index, python, tmp_path, {"PIP_INDEX_URL": url})
    assert "s3cret-pw" not in proc.stderr + proc.stdout
    assert "http://***@127.0.0.1" in proc.stderr


def test_uv_installs_from_the_index_named_in_pip_index_url(
    index: LocalIndex, python: str, tmp_path: Path
) -> None:
    proc = envbisect(
        "probe",
        "--with",
        "raisy==1.6.0",
        "--python",
        python,
        "--results",
        str(tmp_path / "r"),
        "--cache-dir",
        str(tmp_path / "c"),
        "--json",
        "--probe",
        "import:raisy",
        env=clean_env(PIP_INDEX_URL=index.url),
    )
    assert proc.returncode == 0, proc.stderr
    installed = {d["name"]: d["version"] for d in json.loads(proc.stdout)["installed"]}
    assert installed == {"raisy": "1.6.0"}
