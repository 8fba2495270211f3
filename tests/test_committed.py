"""What is committed reads and installs the same on anyone's machine.

- No committed text file (``git ls-files``) names a path of one machine: a home folder,
  /opt, /tmp, /root, /work, /srv, /mnt, /Users, C:\\Users. Only the test files in ``ALLOWED``
  may, each for the reason it gives (they build such paths to check envbisect refuses or
  hides them).
- Each committed ``results/*/recommended-*.txt`` and its pylock name only public indexes,
  pin every requirement with a sha256 and name no folder; and the locks install with
  ``uv pip install --require-hashes``, with the command their header gives, from a local
  index on 127.0.0.1 laid out as the public indexes they name are (PyPI's ``/simple``,
  PyTorch's ``/whl/cpu``), serving the exact files their pylock names, hash for hash.
  The PyTorch host cannot be reached from here: its file comes from this machine's wheel
  folder (``ENVBISECT_TORCH_WHEELS``, default the one pip's settings name), after checking
  it is the file the lock pins. The other wheels come from the local wheel folders where
  they lie there, else from the URL the pylock names on PyPI (checked by sha256, kept in
  ``ENVBISECT_TEST_WHEELS``, default ~/.cache/envbisect/test-wheels). A lock whose wheels
  would mean downloading more than ``DOWNLOAD_BUDGET`` (llamafactory-transformers: PyPI's
  CUDA torch and its nvidia wheels, about 2.8 GB) is checked up to what lies here: every
  local file's hash against the lock; it is not installed, and the skip says so.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import httpx
import pytest
from packaging.pylock import Pylock, PylockValidationError

from envbisect.env.uv import find_uv
from support.index_server import IndexFile, LocalIndex

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]

# A path of one machine: an absolute folder under the places machines keep their own files,
# at the start of a word or after file:// (not inside a URL's path, which a letter precedes).
MACHINE_PATH = re.compile(
    r"(?<![\w.-])/(?:home|Users|root|opt|tmp|work|srv|mnt|var/folders|private/var)(?=[/\s'\"`),:]|$)"
    r"|\b[A-Za-z]:\\\\?(?:Users|Documents and Settings)\\\\?",
    re.MULTILINE,
)
# The committed files that may name one, and why: each builds such a path on purpose.
ALLOWED = {
    "tests/test_committed.py": "this test: the patterns it looks for",
    "tests/cli/test_hostile.py": "/tmp/x as a hostile package name and a --results outside",
    "tests/lock/test_lock.py": "a lock from /opt/mirror and /srv/wheels must name neither",
    "tests/env/test_outcome.py": "a message with a /tmp/ address, normalised away",
    "tests/support/pypi.py": "this machine's CPU torch folder, the default of its variable",
    "tests/env/test_scrub.py": "HOME=/home/u passed through the probe scrub",
    "tests/living/test_portable.py": "a wheel folder's file a lock must never name",
    "tests/envreport/test_bugreport.py": "a reporter's traceback, as pasted, with their home",
    "tests/envreport/test_envreports.py": "a freeze line naming a reporter's local project",
    "tests/envreport/test_repro.py": "a reporter's traceback, as pasted, with their home folder",
    "tests/test_json_golden.py": "a reporter's traceback, as pasted, with their home folder",
    "tests/run/test_overrides.py": "a reporter's traceback, as pasted, with their home folder",
    "tests/commits/test_commits.py": "an ext:: URL that would write /tmp/x, refused",
    "tests/commits/test_commits_core.py": "a file:// repository URL and an ext:: URL, refused",
    "tests/evidence/test_failure.py": "tracebacks' paths: a user's own file, site-packages",
    "tests/evidence/test_why_index.py": "a traceback's site-packages, as a venv prints it",
    "tests/evidence/test_native.py": "a vllm traceback as pasted: a user's file, conda's",
}
# Bug reports as users paste them (pip freeze, conda list, accelerate env): their own paths are
# part of the format that is read.
ALLOWED_FOLDERS = ("tests/data/reports/", "tests/data/failures/")

PUBLIC_INDEX = re.compile(r"\Ahttps://[^\s/]+(/\S*)?\Z")
PYPI = "https://pypi.org/simple"
TORCH_CPU = "https://download.pytorch.org/whl/cpu"
DOWNLOAD_BUDGET = 400_000_000  # bytes a lock's install may fetch from PyPI
LOCAL_WHEELS = [Path(p) for p in ("/opt/pypi/files", "/opt/pypi-more/files")]
TORCH_WHEELS = Path(os.environ.get("ENVBISECT_TORCH_WHEELS", "/opt/wheels"))
WHEEL_CACHE = Path(
    os.environ.get("ENVBISECT_TEST_WHEELS", Path.home() / ".cache" / "envbisect" / "test-wheels")
)


def committed() -> list[str]:
    out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True)
    return [p for p in out.stdout.decode().split("\0") if p]


def machine_paths(text: str) -> list[str]:
    return sorted({m.group(0) for m in MACHINE_PATH.finditer(text)})


def test_the_pattern_finds_machine_paths_and_not_urls() -> None:
    found = machine_paths(
        "--find-links /opt/wheels\nfile:///opt/pypi/simple ~/x `/tmp/demo` /root/.config\n"
        "/home/u/x /Users/me C:\\Users\\me https://example.org/opt/x a/tmp/b /optional /work\n"
    )
    assert found == ["/Users", "/home", "/opt", "/root", "/tmp", "/work", "C:\\Users\\"]


def test_no_committed_file_names_a_path_of_one_machine() -> None:
    files = committed()
    assert "README.md" in files and "results/transformers-peft/recommended-py3.11.txt" in files
    offenders: dict[str, list[str]] = {}
    for name in files:
        path = ROOT / name
        if name in ALLOWED or name.startswith(ALLOWED_FOLDERS) or not path.is_file():
            continue
        data = path.read_bytes()
        if b"\0" in data[:8192]:  # not a text file
            continue
        found = machine_paths(data.decode("utf-8", errors="replace"))
        if found:
            offenders[name] = found
    assert not offenders, f"committed files naming a path of one machine: {offenders}"
    # The allow-list stays small and true: every entry is committed and needs its exception.
    for name in ALLOWED:
        if name in files:
            assert machine_paths((ROOT / name).read_text()), f"{name} no longer needs it"


# -- the committed lockfiles ---------------------------------------------------------------


def recommended() -> list[Path]:
    return sorted((ROOT / "results").glob("*/recommended-py*.txt"))


def pylock_of(lock: Path) -> Path:
    tail = lock.name.removeprefix("recommended-py").removesuffix(".txt").replace(".", "")
    return lock.with_name(f"pylock.recommended-py{tail}.toml")


def read_lock(lock: Path) -> tuple[list[str], list[str], dict[str, set[str]]]:
    """(header comments, index lines, {name==version: hashes})."""
    header: list[str] = []
    options: list[str] = []
    pins: dict[str, set[str]] = {}
    current = ""
    for line in lock.read_text().splitlines():
        if line.startswith("#"):
            header.append(line)
        elif line.startswith("--"):
            options.append(line)
        elif line.startswith("    --hash=sha256:"):
            pins[current].add(line.split(":", 1)[1].rstrip(" \\"))
        elif line.strip():
            current = line.split(" ", 1)[0]
            pins[current] = set()
    return header, options, pins


def read_lock_text(text: str) -> list[str]:
    """The option lines (``--index-url`` ...) of a lock's text."""
    return [line for line in text.splitlines() if line.startswith("--")]


def install_command(header: list[str]) -> list[str]:
    (line,) = [h for h in header if h.startswith("# Install: ")]
    return line.removeprefix("# Install: ").split("  (", 1)[0].split()


@pytest.mark.parametrize("lock", recommended(), ids=lambda p: p.parent.name)
def test_a_committed_lock_names_only_public_indexes_and_pins_every_hash(lock: Path) -> None:
    header, options, pins = read_lock(lock)
    assert options and options[0] == f"--index-url {PYPI}"
    for opt in options:
        flag, _, url = opt.partition(" ")
        assert flag in ("--index-url", "--extra-index-url"), opt  # no --find-links
        assert PUBLIC_INDEX.match(url), opt
    assert pins and all(
        re.fullmatch(r"[A-Za-z0-9._-]+==\S+", p) and hashes for p, hashes in pins.items()
    )
    assert all(re.fullmatch(r"[0-9a-f]{64}", h) for hashes in pins.values() for h in hashes)
    cmd = install_command(header)
    assert cmd[:3] == ["uv", "pip", "install"] and cmd[-3:] == ["--require-hashes", "-r", lock.name]
    # Two indexes: uv's first-index rule would ask PyTorch's for numpy too; the header says so.
    assert ("--index-strategy" in cmd) == (len(options) > 1)
    # The pylock: PEP 751 as packaging checks it, the same pins and hashes, every file by a
    # public URL; an entry none can name is left out, and both files say so.
    data = tomllib.loads(pylock_of(lock).read_text())
    Pylock.from_dict(data)
    by_pin = {f"{p['name']}=={p['version']}": p for p in data["packages"]}
    left_out = data["tool"]["envbisect"].get("left-out", [])
    assert {k.lower().replace("_", "-") for k in pins} == {
        k.replace("_", "-") for k in [*by_pin, *left_out]
    }
    notes = data["tool"]["envbisect"].get("notes", [])
    for pkg in data["packages"]:
        assert "sdist" not in pkg and all("path" not in w for w in pkg["wheels"])
        assert PUBLIC_INDEX.match(pkg["index"]), pkg["index"]
        assert all(w["url"].startswith("https://") for w in pkg["wheels"]), pkg["name"]
    for pin in left_out:
        assert any(pin in n for n in notes), pin
        assert any(f"which leaves out {pin}" in h for h in header), pin
        assert not any("uv pip sync" in h for h in header)


def committed_pylocks() -> list[str]:
    return [p for p in committed() if p.startswith("results/") and p.endswith(".toml")
            and Path(p).name.startswith("pylock")]  # fmt: skip


def test_every_committed_pylock_validates() -> None:
    """packaging.pylock, the reference reader of PEP 751, accepts each committed pylock."""
    names = committed_pylocks()
    assert len(names) >= 270
    refused = {}
    for name in names:
        try:
            Pylock.from_dict(tomllib.loads((ROOT / name).read_text(encoding="utf-8")))
        except PylockValidationError as e:
            refused[name] = str(e)
    assert not refused, refused


@pytest.mark.parametrize("lock", recommended(), ids=lambda p: p.parent.name)
def test_uv_accepts_each_recommended_pylock(lock: Path, tmp_path: Path) -> None:
    """``uv pip install --dry-run -r pylock...`` as the committed file is: uv reads a pylock
    without fetching a file (the install test below installs the files, where they lie)."""
    if sys.version_info[:2] != (3, 11):
        pytest.skip("the committed locks are for CPython 3.11")
    uv = find_uv()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("UV_", "PIP_"))}
    venv = tmp_path / "venv"
    subprocess.run([uv, "venv", "-q", "--no-config", "--python", sys.executable, str(venv)],
                   check=True, env=env)  # fmt: skip
    proc = subprocess.run(
        [uv, "pip", "install", "--dry-run", "--no-config", "--offline",
         "--python", str(venv / "bin" / "python"), "-r", str(pylock_of(lock))],
        capture_output=True, text=True, env=env, cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    data = tomllib.loads(pylock_of(lock).read_text())
    assert f"+ {data['packages'][0]['name']}==" in proc.stderr


@pytest.mark.parametrize("lock", recommended(), ids=lambda p: p.parent.name)
def test_the_local_wheels_are_the_files_the_committed_locks_pin(lock: Path) -> None:
    """Whatever lies in this machine's wheel folders under a locked file's name is that file
    (so the folders are copies of the public indexes, and the install test below serves the
    exact files the lock pins)."""
    _, _, pins = read_lock(lock)
    wheels = {w["name"]: w for p in tomllib.loads(pylock_of(lock).read_text())["packages"]
              for w in p["wheels"]}  # fmt: skip
    checked = 0
    for folder in [*LOCAL_WHEELS, TORCH_WHEELS]:
        for name, w in wheels.items():
            path = folder / name
            if path.is_file():
                assert sha256(path) == w["hashes"]["sha256"], path
                checked += 1
    if not checked:
        pytest.skip("no wheel of this lock lies in this machine's wheel folders")
    assert {h for hashes in pins.values() for h in hashes} >= {
        w["hashes"]["sha256"] for w in wheels.values()
    }


def left_out_packages(data: dict[str, Any], pins: dict[str, set[str]]) -> list[dict[str, Any]]:
    """The entries a pylock left out (no public URL), as entries of the file the requirements
    lock pins by hash where it lies in this machine's wheel folders; a local version (+cpu)
    laid out as PyTorch's variant index serves it."""
    out = []
    for pin in data["tool"]["envbisect"].get("left-out", []):
        name, version = pin.split("==")
        want = next(h for k, h in pins.items() if k.lower().replace("_", "-") == pin)
        found = [
            f for d in [*LOCAL_WHEELS, TORCH_WHEELS] if d.is_dir()
            for f in d.glob(f"{name.replace('-', '_')}-{version}-*.whl") if sha256(f) in want
        ]  # fmt: skip
        wheel = {"name": found[0].name if found else f"{name}-{version}-none.whl",
                 "hashes": {"sha256": sha256(found[0]) if found else ""}}  # fmt: skip
        out.append({"name": name, "index": TORCH_CPU if "+" in version else PYPI,
                    "wheels": [wheel]})  # fmt: skip
    return out


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _pypi_reachable() -> bool:
    try:
        return httpx.head("https://pypi.org/simple/pip/", timeout=10).status_code < 500
    except httpx.HTTPError:
        return False


def fetch(wheel: dict[str, Any]) -> Path | None:
    """The locked file: from a local wheel folder, the cache, or PyPI's URL (checked)."""
    want, name = str(wheel["hashes"]["sha256"]), str(wheel["name"])
    for folder in [*LOCAL_WHEELS, TORCH_WHEELS, WHEEL_CACHE]:
        path = folder / name
        if path.is_file() and sha256(path) == want:
            return path
    url = str(wheel.get("url", ""))
    if not url.startswith("https://files.pythonhosted.org/"):
        return None  # not on PyPI (the PyTorch index cannot be reached from here)
    WHEEL_CACHE.mkdir(parents=True, exist_ok=True)
    part = WHEEL_CACHE / (name + ".part")
    with httpx.stream("GET", url, timeout=120, follow_redirects=True) as r, part.open("wb") as f:
        r.raise_for_status()
        for chunk in r.iter_bytes():
            f.write(chunk)
    assert sha256(part) == want, f"{url} is not the file the lock pins"
    return part.rename(WHEEL_CACHE / name)


@pytest.mark.slow
@pytest.mark.parametrize("lock", recommended(), ids=lambda p: p.parent.name)
def test_a_committed_lock_installs_with_hashes_from_its_indexes(lock: Path, tmp_path: Path) -> None:
    if sys.version_info[:2] != (3, 11):
        pytest.skip("the committed locks are for CPython 3.11")
    header, _, pins = read_lock(lock)
    data = tomllib.loads(pylock_of(lock).read_text())
    packages = [*data["packages"], *left_out_packages(data, pins)]
    # One wheel per package (the smallest: any of the locked ones installs), by its index.
    chosen = {p["name"]: min(p["wheels"], key=lambda w: w.get("size") or 0) for p in packages}
    missing = [
        w for w in chosen.values()
        if not any((d / w["name"]).is_file() for d in [*LOCAL_WHEELS, TORCH_WHEELS, WHEEL_CACHE])
    ]  # fmt: skip
    fetched = sum(w.get("size") or 0 for w in missing)
    if fetched > DOWNLOAD_BUDGET:
        pytest.skip(f"{lock.parent.name}: {len(missing)} wheels ({fetched / 1e6:.0f} MB) lie "
                    "nowhere here; checked without installing (the tests above)")  # fmt: skip
    if missing and not _pypi_reachable():
        pytest.skip(f"{len(missing)} locked wheels must come from PyPI, which cannot be reached")
    index = LocalIndex()
    when = datetime(2026, 1, 1, tzinfo=timezone.utc)
    for p in packages:
        path = fetch(chosen[p["name"]])
        if path is None:
            pytest.skip(f"{chosen[p['name']]['name']} lies in no wheel folder here "
                        f"({TORCH_WHEELS}: ENVBISECT_TORCH_WHEELS)")  # fmt: skip
        f = IndexFile(project=p["name"], path=path, upload_time=when)
        if p["index"] == TORCH_CPU:  # laid out as download.pytorch.org/whl/cpu
            index.variants.setdefault("cpu", []).append(f)
        else:
            assert p["index"] == PYPI, p["index"]
            index.add(f)
    index.start()
    try:
        # The lock as it is, but for its public indexes: the local ones, laid out the same.
        text = lock.read_text().replace(f"--index-url {PYPI}", f"--index-url {index.url}")
        text = text.replace(f"--extra-index-url {TORCH_CPU}",
                            f"--extra-index-url {index.base}/whl/cpu")  # fmt: skip
        assert not [o for o in read_lock_text(text) if "https://" in o]
        mine = tmp_path / lock.name
        mine.write_text(text)
        uv = find_uv()
        env = {k: v for k, v in os.environ.items() if not k.startswith(("UV_INDEX", "PIP_"))}
        venv = tmp_path / "venv"
        subprocess.run([uv, "venv", "-q", "--no-config", "--python", sys.executable, str(venv)],
                       check=True, env=env)  # fmt: skip
        py = str(venv / "bin" / "python")
        cmd = install_command(header)
        proc = subprocess.run([uv, *cmd[1:-1], str(mine), "--no-config", "--python", py, "-q"],
                              capture_output=True, text=True, env=env, cwd=tmp_path)  # fmt: skip
        assert proc.returncode == 0, proc.stderr[-3000:]
        listed = subprocess.run([uv, "pip", "freeze", "--python", py], capture_output=True,
                                text=True, check=True, env=env).stdout  # fmt: skip
        got = {line.lower().replace("_", "-") for line in listed.splitlines() if "==" in line}
        assert got == {p.lower().replace("_", "-") for p in pins}
        # Every file came from the local index, each once, torch's from the variant folder.
        served = {k.split("/")[-1] for k in index.hits if "/files/" in k or "/whl/cpu/" in k}
        assert {w["name"] for w in chosen.values()} <= {s.replace("%2B", "+") for s in served}
        # The pylock, as uv reads it: each URL for the same file on the local index.
        pylock = tmp_path / "pylock.toml"
        text = pylock_of(lock).read_text()
        for p in data["packages"]:
            for w in p["wheels"]:
                text = text.replace(w["url"], f"{index.base}/files/{w['name']}")
        pylock.write_text(text)
        dry = subprocess.run([uv, "pip", "install", "--dry-run", "--no-config", "--python", py,
                              "-r", str(pylock)],
                             capture_output=True, text=True, env=env, cwd=tmp_path)  # fmt: skip
        assert dry.returncode == 0, dry.stderr[-3000:]
    finally:
        index.stop()
        shutil.rmtree(tmp_path / "venv", ignore_errors=True)
