"""The index client against a real HTTP index on 127.0.0.1 (and a dead port)."""

from __future__ import annotations

import socket
from pathlib import Path

import httpx
import pytest

from envbisect.errors import IndexUnreachable, InfrastructureError, UnknownPackage
from envbisect.index import IndexClient, mask_text, mask_url, parse_simple_html
from envbisect.model import IndexConfig
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
