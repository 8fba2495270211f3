"""Candidate lists and wheel compatibility computed for the *target* interpreter."""

from __future__ import annotations

from datetime import datetime, timezone

from packaging.version import Version

from envbisect.core.candidates import build_candidates
from envbisect.core.target import Target
from envbisect.model import DistFile


def target(
    version: tuple[int, int, int] = (3, 11, 7),
    glibc: str | None = "2.31",
    platform: str = "linux-x86_64",
) -> Target:
    return Target.from_facts(
        {
            "executable": "/x/python",
            "implementation": "cpython",
            "version": list(version),
            "abiflags": "",
            "platform": platform,
            "glibc": glibc,
            "macos": None,
            "markers": {},
        }
    )


def f(name: str, **kw: object) -> DistFile:
    return DistFile(filename=name, url=f"https://h/{name}", **kw)  # type: ignore[arg-type]


def test_manylinux_tags_follow_the_target_glibc() -> None:
    plats = target(glibc="2.28").platform_tags()
    assert plats[0] == "manylinux_2_28_x86_64"
    assert "manylinux2014_x86_64" in plats and "manylinux1_x86_64" in plats
    assert "manylinux_2_31_x86_64" not in plats
    assert plats[-1] == "linux_x86_64"


def test_installability_is_decided_for_the_target_not_for_us() -> None:
    files = [
        f("pyarrow-15.0.0-cp311-cp311-manylinux_2_28_x86_64.whl"),
        f("pyarrow-16.0.0-cp312-cp312-manylinux_2_28_x86_64.whl"),
        f("pyarrow-17.0.0-cp311-cp311-manylinux_2_34_x86_64.whl"),
        f("pyarrow-18.0.0.tar.gz"),
        f("pyarrow-19.0.0-cp39-abi3-manylinux2014_x86_64.whl"),
    ]
    cl = build_candidates(files, target(glibc="2.31"))
    ok = {str(c.version): (c.installable, c.reason) for c in cl.candidates}
    assert ok["15.0.0"] == (True, None)
    assert ok["16.0.0"][0] is False and "no wheel for cp311-manylinux_2_31_x86_64" in str(
        ok["16.0.0"][1]
    )
    assert ok["17.0.0"][0] is False  # needs glibc 2.34, the target has 2.31
    assert ok["18.0.0"] == (
        False,
        "only an sdist (wheels only by default; --allow-sdist builds it)",
    )
    assert ok["19.0.0"] == (True, None)  # abi3 from cp39 up
    # Python 3.12 target: 16.0.0 is now the installable one.
    cl312 = build_candidates(files, target(version=(3, 12, 1)))
    ok312 = {str(c.version): c.installable for c in cl312.candidates}
    assert ok312["16.0.0"] and not ok312["15.0.0"]
    assert build_candidates(files, target(), allow_sdist=True).candidates[3].installable


def test_yanked_pre_and_too_new_are_dropped_unless_named() -> None:
    t = datetime(2024, 6, 1, tzinfo=timezone.utc)
    files = [
        f("p-1.0-py3-none-any.whl", upload_time=t),
        f("p-1.1-py3-none-any.whl", yanked=True, upload_time=t),
        f("p-2.0rc1-py3-none-any.whl", upload_time=t),
        f("p-2.0-py3-none-any.whl", upload_time=datetime(2025, 1, 1, tzinfo=timezone.utc)),
    ]
    cl = build_candidates(files, target(), exclude_newer=datetime(2024, 12, 1, tzinfo=timezone.utc))
    assert [str(c.version) for c in cl.candidates] == ["1.0"]
    assert cl.dropped[Version("1.1")] == "yanked"
    assert cl.dropped[Version("2.0rc1")].startswith("pre-release")
    assert "after --exclude-newer" in cl.dropped[Version("2.0")]
    kept = build_candidates(files, target(), pre=True, keep=[Version("1.1")])
    assert [str(c.version) for c in kept.candidates] == ["1.0", "1.1", "2.0rc1", "2.0"]


def test_requires_python_reason() -> None:
    cl = build_candidates([f("q-1.0-py3-none-any.whl", requires_python=">=3.12")], target())
    assert cl.candidates[0].reason == "requires-python >=3.12 excludes Python 3.11.7"
