"""The SQLite store: round trips, the schema guard, concurrent readers."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from envbisect.core.outcome import same_failure
from envbisect.errors import StoreError, UsageError
from envbisect.model import InstalledDist, Outcome, OutcomeKind, installed_hash
from envbisect.store import ProbeRecord, Store


def record(env_id: str = "e1", kind: OutcomeKind = OutcomeKind.CRASH) -> ProbeRecord:
    installed = (
        InstalledDist(name="datasets", version="2.14.6"),
        InstalledDist(name="pyarrow", version="21.0.0"),
    )
    return ProbeRecord(
        env_id=env_id,
        repro_id="r1",
        spec={"requirements": ["datasets==2.14.6"]},
        installed=installed,
        installed_hash=installed_hash(installed),
        outcome=Outcome(
            kind=kind, signal="SIGSEGV", signature="SIGSEGV in f (a/b.py:1)", detail="..."
        ),
        stdout_tail="",
        stderr_tail="Fatal Python error",
        build_seconds=0.5,
        probe_seconds=1.5,
        timeout=600.0,
        started_at="2026-11-30T00:00:00+00:00",
        envbisect_version="0.1.0",
    )


def test_round_trip_and_reopen(tmp_path: Path) -> None:
    with Store(tmp_path) as s:
        s.put(record())
    with Store(tmp_path) as s:
        got = s.get("e1", "r1")
        assert got == record()
        assert s.get("e1", "other-repro") is None


def test_same_key_replaces(tmp_path: Path) -> None:
    with Store(tmp_path) as s:
        s.put(record(kind=OutcomeKind.TIMEOUT))
        s.put(record(kind=OutcomeKind.PASS))
        assert len(list(s.all())) == 1
        got = s.get("e1", "r1")
        assert got is not None and got.outcome.kind is OutcomeKind.PASS


def test_installed_hash_ignores_order_and_name_spelling() -> None:
    a = (InstalledDist(name="PyYAML", version="6.0"), InstalledDist(name="numpy", version="1.26.4"))
    b = (InstalledDist(name="numpy", version="1.26.4"), InstalledDist(name="pyyaml", version="6.0"))
    assert installed_hash(a) == installed_hash(b)


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    Store(tmp_path).close()
    db = sqlite3.connect(tmp_path / "envbisect.db")
    with db:
        db.execute("UPDATE meta SET value='99' WHERE key='schema'")
    db.close()
    with pytest.raises(StoreError) as e:
        Store(tmp_path)
    assert "newer envbisect" in e.value.message


def test_unwritable_results_dir(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(StoreError) as e:
        Store(blocker / "results")
    assert e.value.hint


def native_crash(function: str | None) -> Outcome:
    return Outcome(
        kind=OutcomeKind.CRASH,
        signal="SIGSEGV",
        signature=f"SIGSEGV in libarrow.so.1500 ({function})",
        library="libarrow.so.1500",
        function=function,
    )


def test_the_faulting_function_is_kept_with_every_run(tmp_path: Path) -> None:
    """Resumed and reused records compare as fresh ones: the function comes back, for the
    record and for each run of a --repeat probe (its per-run JSON)."""
    runs = (Outcome(kind=OutcomeKind.PASS), native_crash("arrow::Exec.constprop.0"))
    rec = replace(record(), outcome=runs[1], runs=runs)
    with Store(tmp_path) as s:
        s.put(rec)
    with Store(tmp_path) as s:
        got = s.get("e1", "r1")
    assert got is not None and got == rec
    assert got.outcome.function == "arrow::Exec.constprop.0"
    assert got.runs[1].function == "arrow::Exec.constprop.0" and got.runs[0].function is None


def test_a_schema_5_store_is_migrated_and_its_crashes_have_no_function(tmp_path: Path) -> None:
    """A store written before the function was kept (schema 5: no ``function`` column, runs
    without it): opened, migrated, and its crashes have none, so the function does not
    decide for them (same_failure) and an old reference still matches a new crash."""
    old = replace(record(), outcome=native_crash(None), runs=(native_crash(None),))
    with Store(tmp_path) as s:
        s.put(old)
    db = sqlite3.connect(tmp_path / "envbisect.db")
    with db:
        db.execute("ALTER TABLE probes DROP COLUMN function")
        runs = db.execute("SELECT runs FROM probes").fetchone()[0]
        assert '"function": null' in runs
        db.execute("UPDATE probes SET runs = ?", (runs.replace('"function": null, ', ""),))
        db.execute("UPDATE meta SET value = '5' WHERE key = 'schema'")
    db.close()
    with Store(tmp_path) as s:
        got = s.get("e1", "r1")
    assert got is not None and got.outcome.function is None and got.runs[0].function is None
    db = sqlite3.connect(tmp_path / "envbisect.db")
    assert db.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone() == ("6",)
    assert "function" in [c[1] for c in db.execute("PRAGMA table_info(probes)")]
    db.close()
    new = replace(native_crash("arrow::Exec"), library="libarrow.so.1600")
    assert same_failure(got.outcome, new) and same_failure(new, got.outcome)


def test_a_claim_is_held_while_its_claimant_lives_and_taken_over_after(tmp_path: Path) -> None:
    """No environment probed twice at once: a live run's claim holds; a claim whose process
    is gone (this machine), or that was not renewed for CLAIM_TTL (another machine), is a
    dead run's and is taken over."""
    import socket
    import subprocess
    import sys

    from envbisect.store import CLAIM_TTL, Claimant

    me = Claimant.this_process()
    with Store(tmp_path) as store:
        gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                              capture_output=True, text=True, check=True)  # fmt: skip
        dead = Claimant(owner="dead", host=socket.gethostname(), pid=int(gone.stdout))
        assert store.claim("e1", "r", dead) is None
        assert store.claim("e1", "r", me) is None  # its process is gone: taken over
        held = store.held("e1", "r")
        assert held is not None and (held.owner, held.host, held.pid) == (me.owner, me.host, me.pid)
        other = Claimant(owner="other", host="elsewhere.invalid", pid=1)
        assert store.claim("e1", "r", other) is not None  # mine, and alive
        assert store.claim("e2", "r", other) is None
        holder = store.claim("e2", "r", me)
        assert holder is not None and holder.owner == "other"  # renewed recently: alive
        store._db.execute("UPDATE claims SET beat = beat - ?", (CLAIM_TTL + 1,))
        store._db.commit()
        assert store.held("e2", "r") is None
        assert store.claim("e2", "r", me) is None  # not renewed: a dead run's
        store.release(me, "e1", "r")
        assert store.held("e1", "r") is None and store.held("e2", "r") is not None
        store.release(me)
        assert store.held("e2", "r") is None


def test_a_results_folder_that_is_not_envbisects_is_never_written_into(tmp_path: Path) -> None:
    """./results is a common folder name in ML repositories: one with files of its own and
    no marker is refused, untouched; a new or empty one, or one envbisect wrote before the
    marker existed, becomes envbisect's (the marker is written)."""
    theirs = tmp_path / "results"
    (theirs / "run-3").mkdir(parents=True)
    (theirs / "metrics.csv").write_text("loss\n0.1\n")
    before = sorted(p.relative_to(theirs) for p in theirs.rglob("*"))
    with pytest.raises(UsageError) as err:
        Store(theirs)
    assert err.value.ref == "results-not-ours" and "--results" in (err.value.hint or "")
    assert sorted(p.relative_to(theirs) for p in theirs.rglob("*")) == before  # untouched
    # The real CLI: the error line and its hint, nothing written, exit 2.
    proc = subprocess.run(
        [sys.executable, "-m", "envbisect", "run", "--package", "x", "--results", str(theirs),
         "--index-url", "http://127.0.0.1:9/simple", "--", "true"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 2 and "[results-not-ours]" in proc.stderr, proc.stderr
    assert "hint: " in proc.stderr and "Traceback" not in proc.stderr
    assert sorted(p.relative_to(theirs) for p in theirs.rglob("*")) == before
    # New, empty, or envbisect's from before: the marker makes it envbisect's from now on.
    for folder in (tmp_path / "new", tmp_path / "empty"):
        if folder.name == "empty":
            folder.mkdir()
        with Store(folder):
            pass
        assert (folder / ".envbisect").is_file()
    old = tmp_path / "old"
    (old / "run-abc").mkdir(parents=True)
    (old / "run-abc" / "report.md").write_text("# envbisect run\n")
    with Store(old):
        pass
    assert (old / ".envbisect").is_file()
    (theirs / ".envbisect").write_text("")  # the user says it is envbisect's
    with Store(theirs):
        pass


def test_a_folder_claimed_between_the_two_looks_is_ours(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two runs at once: the other one writes the marker after this one looked for it and
    before it lists the folder (CI caught it once). The folder is envbisect's, not foreign."""
    from envbisect.store import MARKER, refuse_foreign

    folder = tmp_path / "r"
    folder.mkdir()
    listing = Path.iterdir

    def claimed_meanwhile(self: Path) -> Any:
        if self == folder and not (folder / MARKER).exists():
            (folder / MARKER).write_text("envbisect\n")
        return listing(self)

    monkeypatch.setattr(Path, "iterdir", claimed_meanwhile)
    assert refuse_foreign(folder) is True
