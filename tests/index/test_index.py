"""The index client against a real HTTP index on 127.0.0.1 (and a dead port)."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import socket
import time
import zipfile
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

import httpx
import pytest

from envbisect.errors import (
    IndexUnreachable,
    InfrastructureError,
    UnknownPackage,
    UnknownVersion,
    UsageError,
)
from envbisect.index import retry
from envbisect.index.client import (
    IndexClient,
    ProjectFiles,
    default_cache_dir,
    mask_text,
    mask_url,
    parse_simple_html,
    parse_simple_json,
)
from envbisect.model import DistFile, IndexConfig
from support.corpus import corpus
from support.index_server import LocalIndex
from support.wheels import build_wheel


def dead_url(user: str = "") -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://{user}127.0.0.1:{port}/simple"


def test_json_api_gives_upload_times_hashes_and_yanked(index: LocalIndex) -> None:
    with IndexClient(IndexConfig(index_url=index.url)) as client:
        pf = client.project_files("Crashy")
    names = {f.filename: f for f in pf.files}
    whl = names["crashy-1.0.0-py3-none-any.whl"]
    assert whl.upload_time is not None and whl.upload_time.year == 2024
    assert whl.hash("sha256") and whl.url.startswith(index.base + "/files/")
    assert names["crashy-1.12.0-py3-none-any.whl"].yanked
    assert "crashy-1.4.0.tar.gz" in names


def test_html_fallback(index: LocalIndex) -> None:
    with IndexClient(IndexConfig(index_url=f"{index.base}/html")) as client:
        pf = client.project_files("py99")
    by = {f.filename: f for f in pf.files}
    assert by["py99-1.1.0-py3-none-any.whl"].requires_python == ">=3.99"
    assert by["py99-1.1.0-py3-none-any.whl"].upload_time is None
    assert len(by["py99-1.0.0-py3-none-any.whl"].hash("sha256") or "") == 64


def test_first_index_wins_as_in_uv(index: LocalIndex, tmp_path: Path) -> None:
    # The extra index is consulted first; the main one is not asked once the extra has it.
    before = index.hits["GET /html/raisy/"]
    cfg = IndexConfig(index_url=f"{index.base}/html", extra_index_urls=(index.url,))
    with IndexClient(cfg) as client:
        pf = client.project_files("raisy")
    assert pf.source == index.url
    assert index.hits["GET /html/raisy/"] == before


def test_find_links_folder_adds_files(index: LocalIndex, tmp_path: Path) -> None:
    build_wheel(tmp_path, "raisy", "9.0.0", {"raisy/__init__.py": ""})
    cfg = IndexConfig(index_url=index.url, find_links=(str(tmp_path),))
    with IndexClient(cfg) as client:
        names = {f.filename for f in client.project_files("raisy").files}
    assert "raisy-9.0.0-py3-none-any.whl" in names and "raisy-1.0.0-py3-none-any.whl" in names


def test_unknown_package(index: LocalIndex) -> None:
    with (
        IndexClient(IndexConfig(index_url=index.url)) as client,
        pytest.raises(UnknownPackage) as e,
    ):
        client.project_files("no-such-thing")
    assert "no-such-thing" in e.value.message and e.value.exit_code == 2


def test_unreachable_index_is_retried_then_named_with_credentials_masked() -> None:
    url = dead_url("alice:s3cret@")
    client = IndexClient(IndexConfig(index_url=url), backoff=0.01)
    with client, pytest.raises(IndexUnreachable) as e:
        client.project_files("anything")
    assert "s3cret" not in e.value.message and "alice" not in e.value.message
    assert "***@127.0.0.1" in e.value.message and "3 attempts" in e.value.message
    assert e.value.exit_code == 3


def test_server_errors_are_retried() -> None:
    calls = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request.url)
        if len(calls) < 3:
            return httpx.Response(503)
        return httpx.Response(
            200,
            headers={"content-type": "application/vnd.pypi.simple.v1+json"},
            json={
                "meta": {"api-version": "1.1"},
                "name": "x",
                "files": [
                    {
                        "filename": "x-1.0-py3-none-any.whl",
                        "url": "x-1.0-py3-none-any.whl",
                        "hashes": {"sha256": "ab"},
                    }
                ],
            },
        )

    # Transport swapped, not the client (httpx's own habit): a scripted flaky server.
    client = IndexClient(
        IndexConfig(index_url="https://example.invalid/simple"),
        transport=httpx.MockTransport(handler),
        backoff=0.01,
    )
    pf = client.project_files("x")
    assert (
        len(calls) == 3
        and pf.files[0].url == "https://example.invalid/simple/x/x-1.0-py3-none-any.whl"
    )


def test_a_429_is_retried_after_the_wait_it_asks_for_with_jitter() -> None:
    """Retry-After (seconds, or an HTTP date) sets the wait, capped; without it the backoff
    doubles, each with jitter (index/retry.py). The wait itself is recorded, not timed."""
    calls: list[float] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(time.monotonic())
        if len(calls) == 1:
            return httpx.Response(429, headers={"retry-after": "1"})
        return httpx.Response(
            200,
            headers={"content-type": "application/vnd.pypi.simple.v1+json"},
            json={"meta": {"api-version": "1.1"}, "name": "x", "files": []},
        )

    client = IndexClient(
        IndexConfig(index_url="https://example.invalid/simple"),
        transport=httpx.MockTransport(handler),
        backoff=0.01,
    )
    assert not client.project_files("x").files
    assert len(calls) == 2 and calls[1] - calls[0] >= 1.0  # slept at least what it asked for
    now = 1_000_000.0
    upper = lambda a, b: b  # noqa: E731  (the jitter's bounds, drawn at either end)
    lower = lambda a, b: a  # noqa: E731
    assert retry.delay(1, 0.5, "7", now, lower) == 7.0
    assert retry.delay(1, 0.5, "7", now, upper) == pytest.approx(8.4)
    assert retry.delay(1, 0.5, "3600", now, lower) == retry.MAX_RETRY_AFTER
    date = "Wed, 21 Oct 2015 07:28:00 GMT"
    when = datetime(2015, 10, 21, 7, 28, tzinfo=timezone.utc).timestamp()
    assert retry.delay(1, 0.5, date, when - 5, lower) == pytest.approx(5.0)
    assert retry.delay(1, 0.5, date, when + 5, lower) == 0.0  # a date gone by: no wait
    assert retry.delay(3, 0.5, None, now, upper) == 2.0  # 0.5 * 2**2, jitter down to half
    assert retry.delay(3, 0.5, None, now, lower) == 1.0
    assert retry.delay(1, 0.5, "soon", now, upper) == 0.5  # garbage: the backoff


def test_garbage_answer_is_a_clear_error(index: LocalIndex) -> None:
    client = IndexClient(IndexConfig(index_url=f"{index.base}/garbage"))
    with client, pytest.raises(InfrastructureError) as e:
        client.project_files("raisy")
    assert "not a Simple API page" in e.value.message
    assert e.value.ref == "index-garbage"


def test_credentials_never_kept_in_file_urls() -> None:
    files = parse_simple_html('<a href="f-1.0.tar.gz">f</a>', "https://u:pw@host/simple/f/")
    assert files[0].url == "https://host/simple/f/f-1.0.tar.gz"
    assert mask_url("https://u:pw@host/simple") == "https://***@host/simple"
    assert mask_text("error: https://tok@host/x and http://a:b@c/d") == (
        "error: https://***@host/x and http://***@c/d"
    )


# --- core metadata (PEP 658/714) --------------------------------------------------------------


class Clock:
    """The time the cache ages by, moved by hand: no test sleeps or times anything."""

    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def wheel_of(pf: ProjectFiles, version: str) -> DistFile:
    [f] = [f for f in pf.files if f.is_wheel and f"-{version}-" in f.filename]
    return f


def test_core_metadata_from_the_json_page(index: LocalIndex) -> None:
    with IndexClient(IndexConfig(index_url=index.url)) as client:
        f = wheel_of(client.project_files("crashy"), "1.10.0")
        assert f.core_metadata is not None and len(dict(f.core_metadata)["sha256"]) == 64
        before = index.hits.copy()
        text = client.core_metadata(f)
        assert client.core_metadata(f) == text  # read once per run
    assert "Version: 1.10.0" in text and "Requires-Dist: helperlib>=2" in text
    assert (
        index.hits[f"GET /files/{f.filename}.metadata"]
        - before[f"GET /files/{f.filename}.metadata"]
        == 1
    )
    assert index.hits[f"GET /files/{f.filename}"] == before[f"GET /files/{f.filename}"]


def test_core_metadata_from_the_html_page(index: LocalIndex) -> None:
    with IndexClient(IndexConfig(index_url=f"{index.base}/html")) as client:
        f = wheel_of(client.project_files("crashy"), "1.2.0")
        assert f.core_metadata is not None and f.core_metadata[0][0] == "sha256"
        before = index.hits[f"GET /files/{f.filename}"]
        assert "Requires-Dist: helperlib<2" in client.core_metadata(f)
    assert index.hits[f"GET /files/{f.filename}"] == before


@contextlib.contextmanager
def server(index: LocalIndex, *, metadata_files: bool, ranges: bool) -> Iterator[None]:
    saved = (index.metadata_files, index.ranges)
    index.metadata_files, index.ranges = metadata_files, ranges
    try:
        yield
    finally:
        index.metadata_files, index.ranges = saved


def test_unadvertised_metadata_file_is_tried_first(index: LocalIndex, tmp_path: Path) -> None:
    # Some proxies drop PEP 658's attribute while the files are there (PyPI has them all).
    with IndexClient(IndexConfig(index_url=f"{index.base}/nometa")) as client:
        f = wheel_of(client.project_files("raisy"), "1.2.0")
        assert f.core_metadata is None
        before = index.hits.copy()
        assert "Version: 1.2.0" in client.core_metadata(f)
    assert (
        index.hits[f"GET /files/{f.filename}.metadata"]
        == before[f"GET /files/{f.filename}.metadata"] + 1
    )
    assert index.hits[f"GET /files/{f.filename}"] == before[f"GET /files/{f.filename}"]


def test_metadata_read_by_range_requests_without_the_whole_wheel(
    index: LocalIndex, tmp_path: Path
) -> None:
    with server(index, metadata_files=False, ranges=True):
        with IndexClient(IndexConfig(index_url=f"{index.base}/nometa")) as client:
            f = wheel_of(client.project_files("raisy"), "1.5.0")
            before = index.range_requests
            text = client.core_metadata(f)
        assert "Version: 1.5.0" in text
        # A small wheel fits one 64 KiB chunk: one range request, never the whole file.
        assert index.range_requests - before >= 1
        assert client.stats.bytes_fetched < 70_000


def test_metadata_read_from_the_wheel_when_not_advertised(
    index: LocalIndex, tmp_path: Path
) -> None:
    cfg = IndexConfig(index_url=f"{index.base}/nometa")
    off = server(index, metadata_files=False, ranges=False)
    with off, IndexClient(cfg, cache_dir=tmp_path) as client:
        f = wheel_of(client.project_files("raisy"), "1.3.0")
        assert f.core_metadata is None
        before = index.hits.copy()
        text = client.core_metadata(f)
    assert "Name: raisy" in text and "Version: 1.3.0" in text
    # The .metadata try (404), a range try answered with the whole file, then the download.
    assert index.hits[f"GET /files/{f.filename}"] - before[f"GET /files/{f.filename}"] >= 1
    # Cached: a second run reads no wheel, and no wheel was kept on disk, only its METADATA.
    with IndexClient(cfg, cache_dir=tmp_path) as again:
        assert again.core_metadata(f) == text
        assert again.stats.requests == 0 and again.stats.cache_hits == 1
    kept = [p for p in tmp_path.rglob("*") if p.is_file()]
    # JSON entries and page bodies (the project page's, as it came): never the wheel.
    assert kept and all(p.suffix in (".json", ".bin") for p in kept)
    assert not any(zipfile.is_zipfile(p) for p in kept)


def test_metadata_hash_mismatch_is_a_clear_error(index: LocalIndex) -> None:
    with IndexClient(IndexConfig(index_url=f"{index.base}/badmeta")) as client:
        f = wheel_of(client.project_files("raisy"), "1.0.0")
        with pytest.raises(InfrastructureError) as e:
            client.core_metadata(f)
    assert e.value.ref == "metadata-hash-mismatch" and f.filename in e.value.message


def test_metadata_of_an_sdist_needs_a_build_which_envbisect_does_not_do(index: LocalIndex) -> None:
    with IndexClient(IndexConfig(index_url=index.url)) as client, pytest.raises(UsageError) as e:
        client.metadata_for("crashy", "1.4.0")  # sdist only
    assert "sdist" in e.value.message and "build" in e.value.message and e.value.hint


def test_metadata_for_an_unknown_version_lists_the_newest(index: LocalIndex) -> None:
    with IndexClient(IndexConfig(index_url=index.url)) as client:
        with pytest.raises(UnknownVersion) as e:
            client.metadata_for("crashy", "9.9")
        assert e.value.hint is not None and "2.0.0rc1, 1.12.0, 1.11.0" in e.value.hint
        with pytest.raises(UnknownVersion):
            client.metadata_for("crashy", "not a version")
        # The exact version, in any spelling PEP 440 calls equal.
        assert "Version: 1.10.0" in client.metadata_for("Crashy", "1.10")


def test_metadata_of_a_find_links_wheel_is_read_locally(index: LocalIndex, tmp_path: Path) -> None:
    build_wheel(tmp_path, "localpkg", "3.0.0", {"localpkg/__init__.py": ""}, requires=("raisy",))
    with IndexClient(IndexConfig(index_url=index.url, find_links=(str(tmp_path),))) as client:
        text = client.metadata_for("localpkg", "3.0.0")
        assert client.stats.requests == 1  # the index page (a 404), no file
    assert "Requires-Dist: raisy" in text


def test_core_metadata_flags_in_json_and_html() -> None:
    rows = [
        {"filename": "a-1-py3-none-any.whl", "url": "a", "core-metadata": {"sha256": "ab"}},
        {"filename": "b-1-py3-none-any.whl", "url": "b", "core-metadata": True},
        {"filename": "c-1-py3-none-any.whl", "url": "c", "core-metadata": False},
        {"filename": "d-1-py3-none-any.whl", "url": "d", "dist-info-metadata": {"sha256": "cd"}},
        {"filename": "e-1-py3-none-any.whl", "url": "e"},
    ]
    files = parse_simple_json({"files": rows}, "https://h/simple/x/")
    assert [f.core_metadata for f in files] == [
        (("sha256", "ab"),),
        (),
        None,
        (("sha256", "cd"),),
        None,
    ]
    page = (
        '<a href="a" data-core-metadata="sha256=ab">a</a>'
        '<a href="b" data-core-metadata="true">b</a>'
        '<a href="c" data-dist-info-metadata="sha256=cd">c</a>'
        '<a href="d" data-core-metadata>d</a>'
        '<a href="e">e</a>'
    )
    files = parse_simple_html(page, "https://h/simple/x/")
    assert [f.core_metadata for f in files] == [
        (("sha256", "ab"),),
        (),
        (("sha256", "cd"),),
        (),
        None,
    ]


# --- the disk cache ---------------------------------------------------------------------------


def test_a_fresh_page_is_served_from_disk_without_a_request(
    index: LocalIndex, tmp_path: Path
) -> None:
    clock = Clock()
    with IndexClient(IndexConfig(index_url=index.url), cache_dir=tmp_path, clock=clock) as c1:
        first = c1.project_files("fixy")
        assert c1.stats.requests == 1 and c1.stats.cache_hits == 0
    before = index.hits["GET /simple/fixy/"]
    clock.now += 599  # the index said max-age=600
    with IndexClient(IndexConfig(index_url=index.url), cache_dir=tmp_path, clock=clock) as c2:
        assert c2.project_files("fixy") == first
        assert c2.stats.requests == 0 and c2.stats.cache_hits == 1
    assert index.hits["GET /simple/fixy/"] == before


def test_a_stale_page_is_revalidated_and_a_304_reuses_it(index: LocalIndex, tmp_path: Path) -> None:
    clock = Clock()
    with IndexClient(IndexConfig(index_url=index.url), cache_dir=tmp_path, clock=clock) as c1:
        first = c1.project_files("fixy")
    before, before_304 = index.hits["GET /simple/fixy/"], index.not_modified["GET /simple/fixy/"]
    clock.now += 601
    with IndexClient(IndexConfig(index_url=index.url), cache_dir=tmp_path, clock=clock) as c2:
        assert c2.project_files("fixy") == first
        assert c2.stats.revalidated == 1 and c2.stats.requests == 1
        assert c2.stats.bytes_fetched == 0 and c2.stats.cache_hits == 0
    assert index.hits["GET /simple/fixy/"] - before == 1
    assert index.not_modified["GET /simple/fixy/"] - before_304 == 1
    # The 304 made the entry fresh again.
    clock.now += 599
    with IndexClient(IndexConfig(index_url=index.url), cache_dir=tmp_path, clock=clock) as c3:
        assert c3.project_files("fixy") == first and c3.stats.requests == 0


def test_offline_serves_stale_entries_and_names_a_miss(index: LocalIndex, tmp_path: Path) -> None:
    url = index.url.replace("http://", "http://alice:s3cretpw@")
    cfg = IndexConfig(index_url=url)
    clock = Clock()
    with IndexClient(cfg, cache_dir=tmp_path, clock=clock) as c1:
        files = c1.project_files("mixed")
        f = wheel_of(files, "1.1.0")
        text = c1.core_metadata(f)
    before = index.hits.copy()
    clock.now += 10 * 365 * 86400  # whatever the age
    with IndexClient(cfg, cache_dir=tmp_path, clock=clock, offline=True) as c2:
        assert c2.project_files("mixed") == files
        assert c2.core_metadata(f) == text
        with pytest.raises(InfrastructureError) as e:
            c2.project_files("hangy")
        with pytest.raises(InfrastructureError) as e2:
            c2.core_metadata(wheel_of(files, "1.2.0"))
        assert c2.stats.requests == 0
    assert index.hits == before
    assert e.value.ref == "offline-miss" and e2.value.ref == "offline-miss"
    assert "***@127.0.0.1" in e.value.message and "/hangy/" in e.value.message
    assert "s3cretpw" not in e.value.message and "alice" not in e.value.message
    assert e.value.hint is not None and "online" in e.value.hint
    # Credentials never reach the disk, in names or contents.
    for p in tmp_path.rglob("*"):
        assert "s3cret" not in p.name and "alice" not in p.name
        assert not p.is_file() or b"s3cret" not in p.read_bytes()


def test_a_damaged_cache_entry_is_refetched_not_a_crash(index: LocalIndex, tmp_path: Path) -> None:
    cfg = IndexConfig(index_url=index.url)
    with IndexClient(cfg, cache_dir=tmp_path) as c1:
        files = c1.project_files("raisy")
        text = c1.core_metadata(wheel_of(files, "1.0.0"))
    entries = sorted(p for p in tmp_path.rglob("*.json"))
    assert len(entries) == 2
    entries[0].write_text('{"url": "trunc')
    entries[1].write_text('{"url": 3, "body": []}')
    before = index.hits.copy()
    with IndexClient(cfg, cache_dir=tmp_path) as c2:
        assert c2.project_files("raisy") == files
        assert c2.core_metadata(wheel_of(files, "1.0.0")) == text
        assert c2.stats.requests == 2 and c2.stats.cache_hits == 0
    assert index.hits["GET /simple/raisy/"] - before["GET /simple/raisy/"] == 1
    with IndexClient(cfg, cache_dir=tmp_path) as c3:  # rewritten whole
        assert c3.project_files("raisy") == files and c3.stats.cache_hits == 1


def test_an_interrupted_write_leaves_the_old_entry_whole(
    index: LocalIndex, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg = IndexConfig(index_url=index.url)
    clock = Clock()
    with IndexClient(cfg, cache_dir=tmp_path, clock=clock) as c1:
        files = c1.project_files("hangy")
    [entry] = tmp_path.rglob("*.json")
    saved = entry.read_bytes()
    whole = sorted(p for p in tmp_path.rglob("*") if p.is_file())  # the entry and the body

    def ctrl_c(src: object, dst: object) -> None:
        raise KeyboardInterrupt

    clock.now += 601
    with monkeypatch.context() as m, IndexClient(cfg, cache_dir=tmp_path, clock=clock) as c2:
        m.setattr(os, "replace", ctrl_c)
        with pytest.raises(KeyboardInterrupt):
            c2.project_files("hangy")
    assert sorted(p for p in tmp_path.rglob("*") if p.is_file()) == whole  # no temp file left
    assert entry.read_bytes() == saved
    with IndexClient(cfg, cache_dir=tmp_path, offline=True) as c3:
        assert c3.project_files("hangy") == files


def test_a_404_is_remembered_so_offline_still_reaches_the_main_index(
    index: LocalIndex, tmp_path: Path
) -> None:
    # The extra index does not have the project: offline must know that, not stop at a miss.
    cfg = IndexConfig(index_url=index.url, extra_index_urls=(f"{index.base}/empty",))
    with IndexClient(cfg, cache_dir=tmp_path) as c1:
        pf = c1.project_files("raisy")
        assert c1.stats.requests == 2
    assert pf.source == index.url
    with IndexClient(cfg, cache_dir=tmp_path, offline=True) as c2:
        assert c2.project_files("raisy") == pf and c2.stats.cache_hits == 2


def test_default_cache_dir() -> None:
    home = Path.home()
    assert default_cache_dir({}) == home / ".cache" / "envbisect"
    assert default_cache_dir({"XDG_CACHE_HOME": "/x"}) == Path("/x/envbisect")
    env = {"XDG_CACHE_HOME": "/x", "ENVBISECT_CACHE_DIR": "/y/c"}
    assert default_cache_dir(env) == Path("/y/c")
    assert default_cache_dir({"ENVBISECT_CACHE_DIR": "", "XDG_CACHE_HOME": ""}) == (
        home / ".cache" / "envbisect"
    )


# --- many at once, and what it cost -----------------------------------------------------------


def test_project_files_many_fetches_each_page_once(index: LocalIndex) -> None:
    names = list(corpus())
    before = index.hits.copy()
    with IndexClient(IndexConfig(index_url=index.url)) as client:
        # Names repeat, in other spellings too: still one request a page.
        got = client.project_files_many([*names, *(n.upper() for n in names)], max_workers=8)
        assert client.stats.requests == len(names)
    assert set(got) == set(names) | {n.upper() for n in names}
    for name, versions in corpus().items():
        assert got[name] is got[name.upper()]
        assert len(got[name].files) == len(versions)
        assert index.hits[f"GET /simple/{name}/"] - before[f"GET /simple/{name}/"] == 1


def test_metadata_of_many_versions_is_read_once_each(index: LocalIndex, python: str) -> None:
    """As the planner reads them ahead (IndexMetadataSource.prefetch_dependencies): one page
    request, one METADATA request a version, repeats included."""
    from packaging.version import Version

    from envbisect.env.interp import locate
    from envbisect.env.uv import Uv, find_uv
    from envbisect.index.source import IndexMetadataSource

    pairs = [("raisy", f"1.{i}.0") for i in range(8)]
    target = locate(Uv(binary=find_uv(), offline=False), python, None)[1]
    before = index.hits.copy()
    with IndexClient(IndexConfig(index_url=index.url)) as client:
        source = IndexMetadataSource(client, target)
        try:
            source.prefetch_dependencies([(n, Version(v)) for n, v in [*pairs, *pairs]])
            assert client.stats.requests == 1 + len(pairs)
            assert all(source.dependencies(n, Version(v)) == [] for n, v in pairs)
            assert client.stats.requests == 1 + len(pairs)  # read ahead, not again
        finally:
            source.close()
    assert index.hits["GET /simple/raisy/"] - before["GET /simple/raisy/"] == 1
    for _, v in pairs:
        path = f"GET /files/raisy-{v}-py3-none-any.whl.metadata"
        assert index.hits[path] - before[path] == 1


def test_errors_of_many_are_raised(index: LocalIndex) -> None:
    with IndexClient(IndexConfig(index_url=index.url)) as client, pytest.raises(UnknownPackage):
        client.project_files_many(["raisy", "no-such-thing", "fixy"])


def test_stats_count_requests_and_bytes(index: LocalIndex) -> None:
    page, meta = "GET /simple/helperlib/", "GET /files/helperlib-2.0.0-py3-none-any.whl.metadata"
    before = index.sent.copy()
    with IndexClient(IndexConfig(index_url=index.url)) as client:
        client.project_files("helperlib")
        assert client.stats.requests == 1
        assert client.stats.bytes_fetched == index.sent[page] - before[page] > 0
        client.metadata_for("helperlib", "2.0.0")
        client.project_files("helperlib")
        assert client.stats.requests == 2
        sent = index.sent[page] - before[page] + index.sent[meta] - before[meta]
        assert client.stats.bytes_fetched == sent
        assert client.stats.cache_hits == 0 and client.stats.revalidated == 0


# --- garbage, credentials, damaged files ------------------------------------------------------


def json_answer(body: object, ctype: str = "application/vnd.pypi.simple.v1+json") -> IndexClient:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": ctype}, content=json.dumps(body))

    cfg = IndexConfig(index_url="https://example.invalid/simple")
    return IndexClient(cfg, transport=httpx.MockTransport(handler))


@pytest.mark.parametrize(
    "body",
    [
        {"meta": {"api-version": "1.1"}, "name": "x"},  # no "files"
        {"meta": {"api-version": "2.0"}, "name": "x", "files": []},  # a future major version
        {"files": ["x-1.0.tar.gz"]},
        ["not", "a", "page"],
    ],
)
def test_json_that_is_no_simple_page_is_garbage(body: object) -> None:
    with json_answer(body) as client, pytest.raises(InfrastructureError) as e:
        client.project_files("x")
    assert e.value.ref == "index-garbage" and e.value.hint


def test_html_garbage_is_a_clear_error() -> None:
    client = json_answer("no tags at all", ctype="text/html")
    with client, pytest.raises(InfrastructureError) as e:
        client.project_files("x")
    assert e.value.ref == "index-garbage"


def test_private_index_credentials_reach_its_own_files_only(tmp_path: Path) -> None:
    wheel = build_wheel(tmp_path, "x", "1.0", {"x/__init__.py": ""}).read_bytes()
    auth: dict[str, str | None] = {}

    def handler(request: httpx.Request) -> httpx.Response:
        auth[request.url.host + request.url.path] = request.headers.get("authorization")
        if request.url.path.endswith("/x/"):
            rows = [
                {
                    "filename": "x-1.0-py3-none-any.whl",
                    "url": "x-1.0-py3-none-any.whl",
                    "hashes": {"sha256": hashlib.sha256(wheel).hexdigest()},
                },
                {
                    "filename": "x-1.0-py2-none-any.whl",
                    "url": "https://files.example.org/x-1.0-py2-none-any.whl",
                    "hashes": {"sha256": "0" * 64},
                },
            ]
            return httpx.Response(
                200,
                headers={"content-type": "application/vnd.pypi.simple.v1+json"},
                content=json.dumps({"meta": {"api-version": "1.1"}, "files": rows}),
            )
        if request.url.path.endswith(".metadata"):
            return httpx.Response(404)
        return httpx.Response(200, content=wheel)  # no ranges: the whole wheel every time

    cfg = IndexConfig(index_url="https://alice:s3cret@example.invalid/simple")
    with IndexClient(cfg, transport=httpx.MockTransport(handler)) as client:
        own, other = client.project_files("x").files
        assert "s3cret" not in own.url and "alice" not in own.url
        assert "Name: x" in client.core_metadata(own)
        with pytest.raises(InfrastructureError) as e:
            client.core_metadata(other)
    basic = "Basic " + base64.b64encode(b"alice:s3cret").decode()
    assert auth["example.invalid/simple/x/x-1.0-py3-none-any.whl"] == basic
    assert auth["files.example.org/x-1.0-py2-none-any.whl"] is None
    assert e.value.ref == "wheel-hash-mismatch" and "s3cret" not in e.value.message


def test_a_broken_wheel_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "x-1.0-py3-none-any.whl").write_bytes(b"not a zip")
    with (
        IndexClient(IndexConfig(index_url="file:///nonexistent", find_links=(str(tmp_path),))) as c,
        pytest.raises(InfrastructureError) as e,
    ):
        c.metadata_for("x", "1.0")
    assert e.value.ref == "bad-wheel"


def test_heuristic_freshness_when_a_proxy_strips_cache_headers() -> None:
    from envbisect.index.cache import HEURISTIC_MAX_AGE, freshness

    # Nothing said at all: fresh for PyPI's own max-age rather than refetched every time.
    assert freshness(httpx.Headers({}), 1000.0) == (1000.0, HEURISTIC_MAX_AGE, True)
    # Validators present: revalidate (a 304 is cheap); explicit headers always win.
    assert freshness(httpx.Headers({"etag": '"x"'}), 1000.0)[1] == 0.0
    assert freshness(httpx.Headers({"cache-control": "max-age=30"}), 1000.0)[1] == 30.0
    assert freshness(httpx.Headers({"cache-control": "no-cache"}), 1000.0)[1] == 0.0
