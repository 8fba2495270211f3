"""One native bug in a library whose soname carries the release (``libsofix.so.1200``,
``libsofix.so.1300``, ... as libarrow, libprotobuf and libicu name theirs) is one failure:
a bisection over its releases takes log time and answers the release next to the change.

Real parts: each release is compiled here with gcc (a versioned shared library and an extension
module linked to it with RPATH $ORIGIN), served from a local index on 127.0.0.1, installed by
uv into real environments, crashed for real and re-run under real gdb (``native_backtrace``
always), which names the library and the function. Skipped without gcc or gdb.
"""

from __future__ import annotations

import math
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import RecordingProgress, run_options
from envbisect.core.outcome import library_identity, same_failure
from envbisect.env.forensics import NativeBacktrace
from envbisect.model import OutcomeKind
from envbisect.modes.run import RunOptions, run_bisect
from envbisect.store import Store
from support.index_server import LocalIndex
from support.sonames import build_soname_index, family

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("gdb") is None, reason="gdb is not installed"),
    pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed"),
    pytest.mark.skipif(sys.platform != "linux", reason="ELF sonames and gdb as on Linux"),
]

MAJORS = range(4, 17)  # 13 releases, 4.0.0 ... 16.0.0
FAMILIES = {
    # A fix: 4.0.0 ... 12.0.0 (nine releases) crash in sofix_kernel, 13.0.0 fixed it.
    "sofix": family(MAJORS, lambda m: m <= 12),
    # A regression: 8.0.0 ... 16.0.0 (nine releases) crash in soreg_kernel; 6.0.0 crashes in
    # another function of the same library (another bug, which must not count as this one).
    "soreg": family(MAJORS, lambda m: m >= 8, other=lambda m: m == 6),
}


@pytest.fixture(scope="module")
def soname_index(tmp_path_factory: pytest.TempPathFactory, python: str) -> Iterator[LocalIndex]:
    idx = build_soname_index(tmp_path_factory.mktemp("soname-index"), python, FAMILIES)
    yield idx
    idx.stop()


def options(
    index: LocalIndex, python: str, package: str, tmp_path: Path, **kw: object
) -> RunOptions:
    """Under real gdb (``--native-backtrace always``: the test needs gdb's frames), unless
    ``kw`` says otherwise."""
    kw = {"native_backtrace": NativeBacktrace.ALWAYS, **kw}
    return run_options(index, python, tmp_path / "results", package, tmp_path, **kw)


def crash_rows(data: dict[str, object]) -> list[dict[str, object]]:
    probes = data["probes"]
    assert isinstance(probes, list)
    return [p["outcome"] for p in probes if p["outcome"]["kind"] == "crash"]


def test_a_fix_search_over_versioned_sonames_takes_log_time(
    soname_index: LocalIndex, python: str, tmp_path: Path, recorder: RecordingProgress
) -> None:
    res = run_bisect(options(soname_index, python, "sofix", tmp_path), recorder)
    data = res.to_dict()
    assert data["direction"] == "fix"
    # The release right before the fix, not the oldest broken one.
    assert (data["last_broken"], data["first_fixed"]) == ("12.0.0", "13.0.0")
    assert res.candidates == 13
    # The ends, then midpoints: no broken release is set aside as "a different failure".
    assert recorder.started == ["4.0.0", "16.0.0", "10.0.0", "13.0.0", "11.0.0", "12.0.0"]
    assert len(recorder.started) <= math.ceil(math.log2(13)) + 2
    assert not any(p.get("note") for p in data["probes"])
    crashes = crash_rows(data)
    # gdb named each broken release's own library, and the signature says it as gdb saw it.
    assert {c["library"] for c in crashes} == {f"libsofix.so.{m}00" for m in (4, 10, 11, 12)}
    for c in crashes:
        assert str(c["signature"]).startswith(f"SIGSEGV in {c['library']} (sofix_kernel")
    # Odd releases are -O2 builds: gdb names the function with gcc's clone suffix there.
    assert {c["function"] for c in crashes} == {"sofix_kernel", "sofix_kernel.constprop"}
    assert len({library_identity(str(c["library"])) for c in crashes}) == 1
    report = Path(str(data["report"])).read_text()
    assert "libsofix.so.1200" in report and "libsofix.so.400" in report


def test_a_regression_over_versioned_sonames_and_another_bug_beside_it(
    soname_index: LocalIndex, python: str, tmp_path: Path, recorder: RecordingProgress
) -> None:
    res = run_bisect(options(soname_index, python, "soreg", tmp_path), recorder)
    data = res.to_dict()
    assert data["direction"] == "regression"
    assert (data["last_good"], data["first_bad"]) == ("7.0.0", "8.0.0")
    assert recorder.started == ["4.0.0", "16.0.0", "10.0.0", "7.0.0", "8.0.0"]
    assert len(recorder.started) <= math.ceil(math.log2(13)) + 2
    first_bad = data["first_bad_outcome"]
    assert first_bad["library"] == "libsoreg.so.800"
    assert first_bad["function"] == "soreg_kernel"
    assert str(first_bad["signature"]).startswith("SIGSEGV in libsoreg.so.800 (soreg_kernel)")


def test_another_function_of_the_same_library_is_another_failure(
    soname_index: LocalIndex, python: str, tmp_path: Path, recorder: RecordingProgress
) -> None:
    """6.0.0 crashes in soreg_other: between 5.0.0 and 8.0.0 it is another bug, a segment of
    its own (it comes and goes: 7.0.0 passes), and the stored records compare the same way
    after a reopen (the function is kept in the store)."""
    opts = options(soname_index, python, "soreg", tmp_path, good="5.0.0", bad="8.0.0")
    data = (run_bisect(opts, recorder)).to_dict()
    assert (data["last_good"], data["first_bad"]) == ("7.0.0", "8.0.0")
    assert recorder.started == ["5.0.0", "8.0.0", "6.0.0", "7.0.0"]
    notes = {p["version"]: p.get("note", "") for p in data["probes"]}
    assert "segment of its own" in str(notes.get("6.0.0", ""))
    points = [(b["first_bad"], b["outcome"]["kind"]) for b in data["breakpoints"]]
    assert points == [("6.0.0", "crash"), ("7.0.0", "pass"), ("8.0.0", "crash")]
    with Store(tmp_path / "results") as store:
        stored = {
            r.installed[0].version: r.outcome
            for r in store.all()
            if r.outcome.kind is OutcomeKind.CRASH
        }
    assert stored["6.0.0"].function == "soreg_other"  # an -O0 build: no clone suffix
    reference = stored["8.0.0"]
    assert not same_failure(stored["6.0.0"], reference)
    assert all(same_failure(o, reference) for v, o in stored.items() if v != "6.0.0")
