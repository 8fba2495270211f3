"""A hostile index on 127.0.0.1 (support/hostile.py) against the real CLI in a subprocess:
credentials, tampered downloads, names that are paths, a wheel that writes into the lockfile,
trickling and huge pages, and the bad inputs that once ended in a traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import cast

import pytest

from support.cli import assert_clean_error, envbisect, start
from support.hostile import HostileIndex
from support.index_server import IndexFile, LocalIndex
from support.wheels import build_wheel

SECRET = "s3cret-Pw0rd"
SECRET2 = "0ther-Pw0rd"
T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)
RAISE = "def run():\n    raise ValueError('broke')\n"
PASS = "def run():\n    return 'ok'\n"


def _add(src: LocalIndex, folder: Path, name: str, version: str, body: str, **kw: object) -> Path:
    path = build_wheel(folder, name, version, {f"{name}/__init__.py": body}, **kw)  # type: ignore[arg-type]
    src.add(IndexFile(project=name, path=path, upload_time=T0 + timedelta(days=len(src.files))))
    return path


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HostileIndex]:
    folder = tmp_path_factory.mktemp("hostile-files")
    src = LocalIndex()
    for v, body in (("1.0", PASS), ("1.1", PASS), ("2.0", RAISE)):
        _add(src, folder, "authpkg", v, body)
    tam = _add(src, folder, "tampy", "1.0", PASS)
    _add(src, folder, "tampy", "2.0", RAISE)
    _add(src, folder, "anyname", "1.0", PASS)
    # A wheel whose .data/purelib carries a fake .dist-info: a name that is markup and a
    # version that is a newline and a lockfile option.
    evil_meta = (
        "Metadata-Version: 2.1\nName: zz<script>alert(1)</script>\n"
        "Version: 1.0\n --index-url http://127.0.0.1:9/evil\n\n"
    )
    for v in ("1.0", "2.0"):
        path = build_wheel(
            folder,
            "evilpkg",
            v,
            {
                "evilpkg/__init__.py": PASS if v == "1.0" else RAISE,
                f"evilpkg-{v}.data/purelib/zz_fake-1.0.dist-info/METADATA": evil_meta,
                f"evilpkg-{v}.data/purelib/zz_fake-1.0.dist-info/RECORD": "",
            },
        )
        src.add(IndexFile(project="evilpkg", path=path, upload_time=T0 + timedelta(days=9)))
    idx = HostileIndex(source=src, any_project="anyname").start()
    other = tmp_path_factory.mktemp("tampered")
    idx.tampered[tam.name] = build_wheel(
        other, "tampy", "1.0", {"tampy/__init__.py": "import os; os.system('echo owned')\n"}
    ).read_bytes()
    yield idx
    idx.stop()


def _repro(folder: Path, package: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"repro_{package}.py"
    path.write_text(f"import {package}\n{package}.run()\n")
    return path


def _common(idx_url: str, python: str, tmp_path: Path) -> list[str]:
    return [
        "--index-url", idx_url, "--python", python, "--results", str(tmp_path / "r"),
        "--cache-dir", str(tmp_path / "cache"),
    ]  # fmt: skip


def _cmdlines() -> dict[int, bytes]:
    out = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as fh:
                    out[int(entry)] = fh.read()
            except OSError:
                continue
    return out


def _watch(proc: subprocess.Popen[str], seen: dict[int, bytes]) -> None:
    while proc.poll() is None:
        seen.update(_cmdlines())
        time.sleep(0.02)


def _files_under(root: Path) -> Iterator[Path]:
    for p in root.rglob("*"):
        if p.is_file() and ".envs" not in p.parts:
            yield p


@pytest.mark.slow
def test_credentials_stay_off_argv_store_and_reports(
    hostile: HostileIndex, python: str, tmp_path: Path
) -> None:
    hostile.auth = ("bob", (SECRET, SECRET2))
    hostile.file_delay = 1.0  # uv waits on the wheel: time to read its command line
    try:
        repro = _repro(tmp_path, "authpkg")
        args = ["run", "--package", "authpkg", "--repro", str(repro), "--json"]
        url = hostile.url(user="bob", password=SECRET)
        proc = start(*args, *_common(url, python, tmp_path))
        seen: dict[int, bytes] = {}
        watcher = threading.Thread(target=_watch, args=(proc, seen))
        watcher.start()
        out, err = proc.communicate(timeout=300)
        watcher.join()
        assert proc.returncode == 0, err
        assert json.loads(out)["first_bad"] == "2.0"
        uv_installs = [c for c in seen.values() if b"pip\0install" in c]
        assert uv_installs, "uv's install should have been seen running"
        # envbisect's own argv has it (the user put it there; UV_INDEX_URL avoids that):
        # nothing envbisect starts may. A child caught between fork and exec still shows its
        # parent's argv byte for byte (the same memory, nothing new on a command line): only
        # a command line other than envbisect's own counts.
        own = b"".join(os.fsencode(a) + b"\0" for a in cast("list[str]", proc.args))
        leaked = [c for c in seen.values() if SECRET.encode() in c and c != own]
        assert not leaked, f"the password is on a command line: {leaked}"
        assert SECRET not in out + err
        for f in [*_files_under(tmp_path / "r"), *_files_under(tmp_path / "cache")]:
            assert SECRET.encode() not in f.read_bytes(), f
        assert (tmp_path / "r" / "envbisect.db").is_file()

        # Another password, the same environments: every probe comes from the store.
        url2 = hostile.url(user="bob", password=SECRET2)
        again = envbisect(*args, *_common(url2, python, tmp_path))
        assert again.returncode == 0, again.stderr
        data = json.loads(again.stdout)
        assert data["probes"] == [] and len(data["reused"]) >= 2

        # A wrong password with a warm metadata cache: uv is refused, and that is an
        # authentication error, not every version untestable.
        (tmp_path / "repro2").mkdir()
        repro2 = _repro(tmp_path / "repro2", "authpkg")
        bad = hostile.url(user="bob", password="wrong")
        env = {**os.environ, "UV_CACHE_DIR": str(tmp_path / "uv-cold")}
        proc2 = envbisect(
            "run", "--package", "authpkg", "--repro", str(repro2),
            *_common(bad, python, tmp_path), env=env,
        )  # fmt: skip
        assert_clean_error(proc2, 3, "credentials")
        assert "[index-auth]" in proc2.stderr and "wrong" not in proc2.stderr
        assert "refused uv's credentials" in proc2.stderr  # the metadata came from the cache
    finally:
        hostile.auth = None
        hostile.file_delay = 0.0


@pytest.mark.slow
def test_a_wrong_password_under_pips_rule_is_index_auth_with_a_warm_cache(
    hostile: HostileIndex, index: LocalIndex, python: str, tmp_path: Path
) -> None:
    """pip's rule (pip.conf names an extra index: uv's unsafe-best-match) makes uv pass over an
    index that refuses it in silence: "not found", no 401 in its output. With envbisect's
    metadata cache warm nothing else asks that index; every version would be untestable."""
    hostile.auth = ("bob", (SECRET,))
    try:
        repro = _repro(tmp_path, "authpkg")
        pip_rule = {**os.environ, "PIP_EXTRA_INDEX_URL": index.url}  # no authpkg there: a 404
        good = hostile.url(user="bob", password=SECRET)
        args = ["run", "--package", "authpkg", "--repro", str(repro), "--json"]
        warm = envbisect(*args, *_common(good, python, tmp_path), env=pip_rule)
        assert warm.returncode == 0, warm.stderr
        assert "pip's rule" in warm.stderr and json.loads(warm.stdout)["first_bad"] == "2.0"
        asked, page = sum(hostile.hits.values()), hostile.hits["/simple/authpkg/"]

        # Another repro (nothing from the store), uv's cache empty: uv must ask the index.
        repro2 = _repro(tmp_path / "repro2", "authpkg")
        bad = hostile.url(user="bob", password="wrong")
        cold = {**pip_rule, "UV_CACHE_DIR": str(tmp_path / "uv-cold")}
        proc = envbisect("run", "--package", "authpkg", "--repro", str(repro2),
                         *_common(bad, python, tmp_path), env=cold)  # fmt: skip
        assert_clean_error(proc, 3, "refused uv's credentials", "answered HTTP 401")
        assert "[index-auth]" in proc.stderr and "wrong" not in proc.stdout + proc.stderr
        assert "untestable" not in proc.stderr
        assert "probing 1.0" in proc.stderr and "probing 2.0" not in proc.stderr  # the first
        # envbisect's pages came from its cache: the page was asked for twice, by uv (a 401
        # it kept to itself) and by envbisect's one check of the password; nothing else.
        delta = hostile.hits["/simple/authpkg/"] - page, sum(hostile.hits.values()) - asked
        assert delta == (2, 2)

        # The planner (uv pip compile for --dry-run) says so too, not "unresolvable".
        plan = envbisect("probe", "--with", "authpkg", "--dry-run",
                         *_common(bad, python, tmp_path), "--", "true", env=cold)  # fmt: skip
        assert_clean_error(plan, 3, "refused uv's credentials while planning")
    finally:
        hostile.auth = None


def test_env_id_ignores_credentials() -> None:
    from envbisect.model import EnvSpec, IndexConfig

    def spec(url: str) -> EnvSpec:
        cfg = IndexConfig(index_url=url, extra_index_urls=(url,))
        return EnvSpec.build(["a==1"], python="cp311", indexes=cfg)

    one, two = spec(f"http://u:{SECRET}@h/simple"), spec(f"http://u:{SECRET2}@h/simple")
    assert one.env_id == two.env_id
    assert SECRET not in json.dumps(one.to_dict())
    assert one.indexes.index_url.endswith("@h/simple")  # uv still gets the password


def test_a_tampered_wheel_stops_the_run(hostile: HostileIndex, python: str, tmp_path: Path) -> None:
    repro = _repro(tmp_path, "tampy")
    proc = envbisect(
        "run", "--package", "tampy", "--repro", str(repro),
        *_common(hostile.url(), python, tmp_path),
    )  # fmt: skip
    assert_clean_error(proc, 3, "tampered")
    assert "[download-tampered]" in proc.stderr


@pytest.mark.parametrize("name", ["/tmp/x/ESC", "../x", "a/../../x", "evil\nname", "x" * 300])
def test_a_package_name_that_is_a_path_is_refused(
    hostile: HostileIndex, python: str, tmp_path: Path, name: str
) -> None:
    # The /any/ route answers for any name at all: only envbisect's own check stops it.
    if name.startswith("/tmp/x"):
        name = str(tmp_path / "x" / "ESC")
    proc = envbisect(
        "run", "--package", name, *_common(hostile.url("any"), python, tmp_path), "--", "true"
    )
    assert_clean_error(proc, 2, "is not a project name")
    assert "[bad-name]" in proc.stderr
    assert not (tmp_path / "x").exists() and not (tmp_path.parent / "x").exists()
    assert not any(hostile.hits.get(p) for p in hostile.hits if "ESC" in p or "x/" in p)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["../../x", "/ABS/x", ".hidden", "a/b"])
def test_a_matrix_name_that_is_a_path_is_refused(tmp_path: Path, name: str) -> None:
    if name.startswith("/ABS"):
        name = str(tmp_path / "abs")
    path = tmp_path / "m.toml"
    path.write_text(f"[matrix]\nname = {json.dumps(name)}\nprobes = ['import:a']\n"
                    "[[axis]]\npackage = 'a'\n")  # fmt: skip
    for cmd in (["matrix", str(path)], ["publish", str(path)]):
        proc = envbisect(*cmd, "--results", str(tmp_path / "r"))
        assert_clean_error(proc, 2, "[matrix] name")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.toml"]


def test_output_paths_are_checked_to_stay_inside_results(tmp_path: Path) -> None:
    from envbisect.errors import UsageError
    from envbisect.modes.outputs import inside

    results = tmp_path / "r"
    results.mkdir()
    assert inside(results, results / "a-1234" / "report.md")
    (results / "link").symlink_to(tmp_path)
    for bad in (results / ".." / "x", Path("/tmp/x"), results / "link" / "x"):
        with pytest.raises(UsageError, match="outside --results"):
            inside(results, bad)


@pytest.mark.slow
def test_a_fake_dist_info_does_not_reach_the_lockfile(
    hostile: HostileIndex, python: str, tmp_path: Path
) -> None:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib

    repro = _repro(tmp_path, "evilpkg")
    proc = envbisect(
        "run", "--package", "evilpkg", "--repro", str(repro), "--json",
        *_common(hostile.url(), python, tmp_path),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["first_bad"] == "2.0"
    run_dir = Path(data["report"]).parent
    req = (run_dir / "requirements.txt").read_text()
    lock = (run_dir / "pylock.toml").read_text()
    for text in (req, lock, (run_dir / "report.md").read_text()):
        assert "zz" not in text and "<script" not in text and "127.0.0.1:9" not in text
    assert "evilpkg==1.0" in req
    names = [p["name"] for p in tomllib.loads(lock)["packages"]]
    assert names == ["evilpkg"]


@pytest.mark.slow
def test_a_trickling_index_meets_a_deadline(
    hostile: HostileIndex, python: str, tmp_path: Path
) -> None:
    env = {**os.environ, "ENVBISECT_INDEX_DEADLINE": "4"}
    start = time.monotonic()
    proc = envbisect(
        "versions", "authpkg", "--index-url", hostile.url("trickle"), "--python", python,
        "--cache-dir", str(tmp_path / "cache"), env=env, timeout=60,
    )  # fmt: skip
    assert time.monotonic() - start < 30
    assert_clean_error(proc, 3, "too slowly")
    assert "[index-too-slow]" in proc.stderr


@pytest.mark.slow
def test_a_huge_page_is_stopped_at_the_cap(
    hostile: HostileIndex, python: str, tmp_path: Path
) -> None:
    from envbisect.errors import InfrastructureError
    from envbisect.index.client import IndexClient
    from envbisect.model import IndexConfig

    hostile.big_bytes = 48 << 20
    cfg = IndexConfig(index_url=hostile.url("big"))
    client = IndexClient(cfg, max_page_bytes=8 << 20, retries=1)
    with client, pytest.raises(InfrastructureError, match="cap") as info:
        client.project_files("authpkg")
    assert info.value.ref == "index-page-too-big"
    # No Content-Length, a body without end: read up to the cap, then the connection dropped.
    client = IndexClient(IndexConfig(index_url=hostile.url("endless")), max_page_bytes=4 << 20)
    with client, pytest.raises(InfrastructureError, match="cap"):
        client.project_files("authpkg")
    time.sleep(0.5)
    assert hostile.hits["endless bytes"] < 64 << 20  # the server was stopped, not drained
    env = {**os.environ, "ENVBISECT_INDEX_MAX_BYTES": str(1 << 20)}
    proc = envbisect(
        "versions", "authpkg", "--index-url", hostile.url("big"), "--python", python,
        "--cache-dir", str(tmp_path / "cache"), env=env,
    )  # fmt: skip
    assert_clean_error(proc, 3, "cap")
