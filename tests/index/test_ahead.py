"""What a cold plan reads ahead, and the clients its threads read with, against a real index
on 127.0.0.1.

torch 2.11 asks for ``cuda-toolkit[cublas,cudart,...]``, whose CUDA packages are behind
``extra == "cublas"`` markers: the planner reads ahead what those extras bring (a cold plan of
LLaMA-Factory's pins otherwise waited on 11 of them one after the other), and nothing an extra
no one asked for brings."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from datetime import datetime, timezone

import pytest
from packaging.version import Version

from envbisect.env.interp import locate
from envbisect.env.uv import Uv, find_uv
from envbisect.errors import UnknownPackage
from envbisect.index.client import IndexClient
from envbisect.index.source import IndexMetadataSource
from envbisect.model import IndexConfig
from support.index_server import IndexFile, LocalIndex
from support.wheels import build_wheel

WHEN = datetime(2025, 1, 1, tzinfo=timezone.utc)


@pytest.fixture(scope="module")
def kit(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalIndex]:
    out = tmp_path_factory.mktemp("kit")
    index = LocalIndex()
    for name, requires in [
        ("top", ["kit[alpha]==1.0"]),
        (
            "kit",
            [
                'leaf-alpha==1.0; extra == "alpha"',
                'leaf-beta==1.0; extra == "beta"',
                'leaf-never==1.0; extra == "alpha" and python_version < "3"',
                'deep[delta]; extra == "beta"',  # beta is not asked: delta is not either
            ],
        ),
        ("leaf-alpha", ["deep[gamma]"]),
        ("leaf-beta", []),
        ("leaf-never", []),
        ("deep", ['deeper; extra == "gamma"', 'deepest; extra == "delta"']),
        ("deeper", []),
        ("deepest", []),
    ]:
        path = build_wheel(out, name, "1.0", {f"{name}.py": ""}, requires=requires)
        index.add(IndexFile(project=name, path=path, upload_time=WHEN))
    index.start()
    yield index
    index.stop()


def _wait_for(index: LocalIndex, path: str, seconds: float = 30.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if index.hits[path]:
            return True
        time.sleep(0.02)
    return False


def test_what_an_asked_extra_brings_is_read_ahead_and_nothing_else(
    kit: LocalIndex, python: str
) -> None:
    target = locate(Uv(binary=find_uv(), offline=False), python, None)[1]
    with IndexClient(IndexConfig(index_url=kit.url)) as client:
        source = IndexMetadataSource(client, target)
        try:
            # The resolver reads top's requirements; everything after is the pool's own.
            assert [str(r) for r in source.dependencies("top", Version("1.0"))] == [
                "kit[alpha]==1.0"
            ]
            # two levels down, through two extras: deep[gamma] brings deeper
            assert _wait_for(kit, "GET /files/deeper-1.0-py3-none-any.whl.metadata")
            assert kit.hits["GET /files/leaf_alpha-1.0-py3-none-any.whl.metadata"] == 1
        finally:
            source.close()
    for unasked in ("leaf-beta", "leaf-never", "deepest"):
        assert not kit.hits[f"GET /simple/{unasked}/"], unasked


def test_threads_read_with_clients_of_their_own_reused_and_closed(kit: LocalIndex) -> None:
    """One client per request in flight (httpcore's pool lock is not shared by the planner's
    threads): 8 at once make at most 8 clients; requests one after another reuse one; closing
    closes every one."""
    kit.page_delay = 0.2
    names = ["top", "kit", "leaf-alpha", "leaf-beta", "leaf-never", "deep", "deeper", "deepest"]
    try:
        client = IndexClient(IndexConfig(index_url=kit.url))
        barrier = threading.Barrier(len(names))

        def read(name: str) -> None:
            barrier.wait()
            client.project_files(name)

        threads = [threading.Thread(target=read, args=(n,)) for n in names]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        fetcher = client._fetcher
        made = len(fetcher._made)
        assert 2 <= made <= len(names)
        assert kit.most_pages_in_flight >= 2
        for name in names:
            client.metadata_for(name, "1.0")  # one after another
        assert len(fetcher._made) == made
        clients = list(fetcher._made)
        client.close()
        assert all(c.is_closed for c in clients)
    finally:
        kit.page_delay = 0.0


def test_a_transport_of_the_callers_is_one_client() -> None:
    import httpx

    seen: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(str(request.url))
        return httpx.Response(404)

    transport = httpx.MockTransport(answer)
    client = IndexClient(IndexConfig(index_url="http://127.0.0.1:9/simple"), transport=transport)
    with pytest.raises(UnknownPackage):
        client.project_files("anything")
    with pytest.raises(UnknownPackage):
        client.project_files("other")
    assert len(client._fetcher._made) == 1 and len(seen) == 2
    client.close()
