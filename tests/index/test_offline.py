"""``--offline`` means no network at all: the planner, uv's builds and envbisect's own reads
answer from the caches a run online filled. The real CLI in a subprocess, against the local
index on 127.0.0.1, whose requests are counted, with every proxy variable pointing at a real
listener that records any connection (to the local index or to the internet: uv would try
pypi.org), so an attempt anywhere is seen, not only one to the index."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import write_repro
from envbisect.env.interp import locate
from envbisect.env.uv import Uv, find_uv
from support.cli import assert_clean_error, envbisect
from support.index_server import LocalIndex
from support.listener import PROXIES, Listener

pytestmark = pytest.mark.slow


@pytest.fixture
def stale_pages(index: LocalIndex) -> Iterator[LocalIndex]:
    """Pages every client must revalidate (as after PyPI's ten minutes): an online uv or
    envbisect would ask the index again, an offline one must not."""
    index.page_cache = "max-age=0, must-revalidate"
    yield index
    index.page_cache = "max-age=600, public"


def _env(uv_cache: Path, proxy: str | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in (*PROXIES, "NO_PROXY", "no_proxy")}
    env["UV_CACHE_DIR"] = str(uv_cache)  # this test's own: warm exactly by what it ran
    if proxy is not None:
        env.update(dict.fromkeys(PROXIES, proxy))
    return env


def test_offline_plans_builds_and_probes_without_a_connection(
    stale_pages: LocalIndex, python: str, tmp_path: Path, listener: Listener
) -> None:
    index = stale_pages
    repro = write_repro(tmp_path, "crashy")
    cache = ["--index-url", index.url, "--python", python, "--cache-dir", str(tmp_path / "c")]
    run = ["run", "--package", "crashy", "--good", "1.5.0", "--bad", "1.9.0", "--jobs", "2",
           "--repro", str(repro), "--json", *cache]  # fmt: skip
    plan = ["probe", "--with", "crashy<1.9", "--dry-run", "--json", *cache]
    online = _env(tmp_path / "uv")

    warm = envbisect(*run, "--results", str(tmp_path / "r1"), env=online)
    assert warm.returncode == 0, warm.stderr
    planned = envbisect(*plan, "--results", str(tmp_path / "r1"), "--", "true", env=online)
    assert planned.returncode == 0, planned.stderr
    before = sum(index.hits.values())
    assert before > 0

    offline = _env(tmp_path / "uv", proxy=listener.url)
    # Fresh results: nothing from the store, every environment built again, in worker
    # processes (each task crosses a pickle, with its offline flag).
    again = envbisect(*run, "--offline", "--executor", "process",
                      "--results", str(tmp_path / "r2"), env=offline)  # fmt: skip
    assert again.returncode == 0, again.stderr
    replan = envbisect(*plan, "--offline", "--results", str(tmp_path / "r2"), "--", "true",
                       env=offline)  # fmt: skip
    assert replan.returncode == 0, replan.stderr

    assert sum(index.hits.values()) == before, "an offline run asked the index"
    assert listener.seen == [], f"an offline run tried the network: {listener.seen}"
    first, second = json.loads(warm.stdout), json.loads(again.stdout)
    assert second["first_bad"] == first["first_bad"] == "1.7.0"
    built = sorted(p["version"] for p in second["probes"])
    assert built == sorted(p["version"] for p in first["probes"]) and len(built) >= 3
    assert second["reused"] == []  # every one of them was built, offline
    (p1,), (p2,) = json.loads(planned.stdout)["plans"], json.loads(replan.stdout)["plans"]
    assert p2["pins"] == p1["pins"] and p2["pins"]["crashy"] == "1.8.0"
    assert "helperlib" in p2["pins"]

    # The net is real: the same plan online, through the same proxies, is caught.
    caught = envbisect(*plan, "--results", str(tmp_path / "r3"), "--", "true", env=offline)
    assert caught.returncode != 0 and listener.seen, caught.stderr


def test_offline_and_not_in_uvs_cache_is_a_clear_error(
    index: LocalIndex, python: str, tmp_path: Path, listener: Listener
) -> None:
    cache = ["--index-url", index.url, "--python", python, "--cache-dir", str(tmp_path / "c")]
    plan = ["probe", "--with", "crashy<1.9", "--dry-run", *cache, "--results", str(tmp_path / "r")]
    warm = envbisect(*plan, "--", "true", env=_env(tmp_path / "uv"))
    assert warm.returncode == 0, warm.stderr
    # envbisect's metadata cache is warm, uv's (another one) is empty: offline, uv cannot plan
    # or build, and that says nothing about the environment.
    cold = _env(tmp_path / "uv-cold", proxy=listener.url)
    proc = envbisect(*plan, "--offline", "--", "true", env=cold)
    assert_clean_error(proc, 3, "offline", "uv's cache", "crashy")
    assert "[offline-miss]" in proc.stderr and "online" in proc.stderr
    repro = write_repro(tmp_path, "crashy")
    probe = envbisect("probe", "--with", "crashy==1.5.0", "--offline", "--repro", str(repro),
                      "--results", str(tmp_path / "r"), *cache, env=cold)  # fmt: skip
    assert_clean_error(probe, 3, "offline", "while installing")
    assert "[offline-miss]" in probe.stderr and "untestable" not in probe.stdout + probe.stderr
    assert listener.seen == []


def test_every_uv_call_takes_offline_from_one_place(
    python: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``Uv.env`` is where uv's environment is made: offline there, offline everywhere; a
    UV_OFFLINE of the caller's own does not make uv disagree with envbisect's client."""
    on, off = Uv(binary=find_uv(), offline=False), Uv(binary=find_uv(), offline=True)
    assert off.env()["UV_OFFLINE"] == "1"
    monkeypatch.setenv("UV_OFFLINE", "1")
    assert "UV_OFFLINE" not in on.env() and off.env()["UV_OFFLINE"] == "1"
    monkeypatch.delenv("UV_OFFLINE")
    # uv's interpreter lookup runs offline too, and finds what it finds online.
    version = subprocess.run([python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                             capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    assert locate(off, version, None) == locate(on, version, None)
