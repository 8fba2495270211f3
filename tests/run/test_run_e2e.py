"""``envbisect run`` end to end: real uv environments from the local index, real crashes.

Every test here builds real virtualenvs with uv (from a private, session-wide cache) and runs
real subprocesses that segfault, hang or raise. The index is on 127.0.0.1.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib
from conftest import RecordingProgress, run_options, write_repro
from envbisect.core.results.parts import Direction, RowVerdict, Status
from envbisect.core.runreport import breakpoints_line, other_failures_hint, verdict_line
from envbisect.env.uv import find_uv
from envbisect.modes.run import run_bisect
from envbisect.store import Store
from support.cli import envbisect, on_index
from support.index_server import LocalIndex

pytestmark = pytest.mark.slow


def uv_installed(venv: Path, python: str, *install: str) -> str:
    """``venv`` made by uv for ``python``, ``uv pip install -q INSTALL`` run into it: its
    interpreter."""
    uv = find_uv()
    subprocess.run([uv, "venv", str(venv), "--python", python, "-q"], check=True)
    py = str(venv / "bin" / "python")
    subprocess.run([uv, "pip", "install", "-q", "--python", py, *install], check=True)
    return py


def test_crash_regression_found_in_few_environments(
    index: LocalIndex, python: str, results: Path, tmp_path: Path, recorder: RecordingProgress
) -> None:
    res = run_bisect(run_options(index, python, results, "crashy", tmp_path), recorder)
    assert res.status is Status.FOUND
    assert res.direction is Direction.REGRESSION
    assert (res.first_new, res.last_old) == ("1.7.0", "1.6.0")
    # 12 candidates (yanked 1.12.0 and 2.0.0rc1 dropped); 1.4.0 has only an sdist.
    assert res.candidates == 12
    # The path: ends first, then midpoints; the sdist-only 1.4.0 is never built.
    assert recorder.started == ["1.0.0", "1.11.0", "1.5.0", "1.8.0", "1.6.0", "1.7.0"]
    assert len(recorder.started) <= math.ceil(math.log2(12)) + 2
    data = res.to_dict()
    assert data["first_bad"] == "1.7.0" and data["last_good"] == "1.6.0"
    assert data["first_bad_outcome"]["kind"] == "crash"
    assert data["first_bad_outcome"]["signal"] == "SIGSEGV"
    assert "string_at" in data["first_bad_outcome"]["signature"]
    assert {
        "version": "1.4.0",
        "reason": "only an sdist (wheels only by default; --allow-sdist builds it)",
    } in data["skipped"]
    assert [p["version"] for p in data["probes"]] == recorder.started
    assert data["reused"] == []
    # Every probe recorded what was installed, transitive dependencies included.
    first = data["probes"][0]
    assert {d["name"] for d in first["installed"]} == {"crashy", "helperlib"}
    report = Path(data["report"]).read_text()
    assert "first bad version of crashy: 1.7.0" in report
    assert "| crashy | 1.6.0 | 1.7.0 |" in report


def test_rerun_reuses_every_stored_probe(
    index: LocalIndex, python: str, results: Path, tmp_path: Path
) -> None:
    opts = run_options(index, python, results, "raisy", tmp_path)
    first = run_bisect(opts)
    rec = RecordingProgress()
    again = run_bisect(opts, rec)
    assert (
        (again.first_new, again.last_old) == (first.first_new, first.last_old) == ("1.5.0", "1.4.0")
    )
    data = again.to_dict()
    assert data["probes"] == []
    assert [r["version"] for r in data["reused"]] == [r.version for r in first.rows]
    assert all(reused for _, _, reused in rec.finished)
    with Store(results) as store:
        assert len(list(store.all())) == len(first.rows)


def test_failure_signature_and_lockfile_installs_with_hashes(
    index: LocalIndex, python: str, results: Path, tmp_path: Path
) -> None:
    res = run_bisect(
        run_options(index, python, results, "raisy", tmp_path, good="1.1.0", bad="1.7.0")
    )
    data = res.to_dict()
    assert data["first_bad"] == "1.5.0"
    outcome = data["first_bad_outcome"]
    assert {k: outcome[k] for k in ("kind", "signal", "exit_code", "signature")} == {
        "kind": "fail",
        "signal": None,
        "exit_code": 1,
        "signature": "ValueError: raisy broke",
    }
    assert outcome["step"].endswith("repro_raisy.py")
    lock = Path(data["last_good_lock"])
    text = lock.read_text()
    assert "raisy==1.4.0 \\" in text and "--hash=sha256:" in text
    # The lockfile is real: uv installs it with --require-hashes and the repro passes there.
    py = uv_installed(tmp_path / "from-lock", python, "--index-url", index.url,
                      "--require-hashes", "-r", str(lock))  # fmt: skip
    probe = subprocess.run([py, "-c", "import raisy; raisy.run()"], capture_output=True)
    assert probe.returncode == 0
    # The PEP 751 lockfile is real too: uv installs from it.
    py2 = uv_installed(tmp_path / "from-pylock", python, "-r", data["pylock"])
    probe2 = subprocess.run(
        [py2, "-c", "import raisy; print(raisy.__version__)"],
        capture_output=True,
        text=True,
    )
    assert probe2.stdout.strip() == "1.4.0"
    pylock = tomllib.loads(Path(data["pylock"]).read_text())
    assert pylock["lock-version"] == "1.0"
    (pkg,) = [p for p in pylock["packages"] if p["name"] == "raisy"]
    assert pkg["version"] == "1.4.0"
    assert pkg["wheels"][0]["name"] == "raisy-1.4.0-py3-none-any.whl"
    assert len(pkg["wheels"][0]["hashes"]["sha256"]) == 64


def test_fix_search_when_the_old_end_fails(
    index: LocalIndex, python: str, results: Path, tmp_path: Path
) -> None:
    res = run_bisect(
        run_options(index, python, results, "fixy", tmp_path, good="1.5.0", bad="1.0.0")
    )
    data = res.to_dict()
    assert data["direction"] == "fix"
    assert (data["first_fixed"], data["last_broken"]) == ("1.3.0", "1.2.0")
    assert "first_bad" not in data
    assert data["first_bad_outcome"]["kind"] == "fail"
    assert "fixy==1.3.0" in Path(data["first_fixed_lock"]).read_text()


def test_default_ends_decide_the_direction(
    index: LocalIndex, python: str, results: Path, tmp_path: Path
) -> None:
    res = run_bisect(run_options(index, python, results, "fixy", tmp_path))
    assert res.direction is Direction.FIX and res.first_new == "1.3.0"


def test_hang_is_a_timeout_with_thread_stacks(
    index: LocalIndex, python: str, results: Path, tmp_path: Path
) -> None:
    res = run_bisect(run_options(index, python, results, "hangy", tmp_path, timeout=3.0))
    assert (res.first_new, res.last_old) == ("1.3.0", "1.2.0")
    bad = res.row("1.3.0")
    assert bad is not None and bad.outcome.kind.value == "timeout"
    # faulthandler printed the stuck thread's Python stack when the probe was stopped.
    assert "in run" in bad.outcome.detail and "hangy/__init__.py" in bad.outcome.detail


def test_untestable_points_give_an_honest_one_of(
    index: LocalIndex, python: str, results: Path, tmp_path: Path, recorder: RecordingProgress
) -> None:
    res = run_bisect(run_options(index, python, results, "gappy", tmp_path), recorder)
    assert res.status is Status.AMBIGUOUS
    assert res.possible == ("1.4.0", "1.5.0", "1.6.0")
    assert res.last_old == "1.3.0"
    assert "1.4.0" not in recorder.started and "1.5.0" not in recorder.started
    reasons = dict(res.skipped)
    assert reasons["1.4.0"].startswith("no wheel for cp3")


def test_a_different_failure_before_the_reference_is_its_own_breakpoint(
    index: LocalIndex, python: str, results: Path, tmp_path: Path, recorder: RecordingProgress
) -> None:
    # mixed: 1.0-1.3 pass, 1.4 raises a TypeError, 1.5 on crash (the bad end's failure).
    res = run_bisect(run_options(index, python, results, "mixed", tmp_path), recorder)
    assert (res.status, res.first_new, res.last_old, res.neighbour) == (
        Status.FOUND, "1.5.0", "1.3.0", "1.4.0",
    )  # fmt: skip
    assert recorder.started == ["1.0.0", "1.8.0", "1.4.0", "1.2.0", "1.3.0", "1.6.0", "1.5.0"]
    row = res.row("1.4.0")
    assert row is not None and row.verdict is RowVerdict.OTHER and "segment of its own" in row.note
    assert [(b.first_new, b.last_old, b.outcome.kind.value) for b in res.breakpoints] == [
        ("1.4.0", "1.3.0", "fail"),
        ("1.5.0", "1.4.0", "crash"),
    ]
    # Said in text, report.md and JSON alike; the known-good lockfile is the last pass.
    line = verdict_line(res)
    assert "first bad version of mixed: 1.5.0" in line
    assert "the version before it, 1.4.0, fails another way (fail (TypeError" in line
    assert line.endswith("last good: 1.3.0")
    points = breakpoints_line(res) or ""
    assert points.startswith(
        "breakpoints: 1.4.0: fail (TypeError: a different bug) (the first failure); "
        "1.5.0: crash (SIGSEGV"
    )
    out = res.to_dict()
    assert [b["first_bad"] for b in out["breakpoints"]] == ["1.4.0", "1.5.0"]
    assert out["breakpoints"][0]["last_good"] == "1.3.0"
    assert out["breakpoints"][0]["outcome"]["kind"] == "fail"
    assert out["fails_another_way"] == "1.4.0"
    report = Path(res.report_path or "").read_text()
    assert "## Breakpoints" in report and "- 1.4.0: fail (TypeError" in report
    assert "mixed==1.3.0" in Path(res.lock_path or "").read_text()
    assert other_failures_hint(res) is None  # nothing hides it: the breakpoints say it all
    anyf = run_bisect(run_options(index, python, results, "mixed", tmp_path, any_failure=True))
    assert (anyf.status, anyf.first_new, anyf.last_old) == (Status.FOUND, "1.4.0", "1.3.0")


def test_two_import_errors_of_different_names_are_kept_apart(
    index: LocalIndex, python: str, results: Path, tmp_path: Path, recorder: RecordingProgress
) -> None:
    # importy: 1.3-1.4 cannot import alpha, 1.5 passes, 1.6-1.8 cannot import beta. The bad
    # end's failure is beta's; alpha's ImportError (same type) is another bug, a segment of its
    # own: its boundaries are found too, and it is never taken for beta's (which would
    # answer 1.3.0).
    res = run_bisect(run_options(index, python, results, "importy", tmp_path), recorder)
    assert (res.status, res.first_new, res.last_old) == (Status.FOUND, "1.6.0", "1.5.0")
    assert res.neighbour is None  # 1.5.0, right before it, passes
    assert recorder.started == ["1.0.0", "1.8.0", "1.4.0", "1.2.0", "1.3.0", "1.6.0", "1.5.0"]
    assert [(b.first_new, b.outcome.kind.value) for b in res.breakpoints] == [
        ("1.3.0", "fail"),
        ("1.5.0", "pass"),
        ("1.6.0", "fail"),
    ]
    for version in ("1.3.0", "1.4.0"):
        row = res.row(version)
        assert row is not None and row.verdict is RowVerdict.OTHER
        assert row.outcome.signature == "ImportError: cannot import name 'alpha' from 'importy'"
    bad = res.first_new_outcome
    # The message is normalised: no environment's path in it, so every version's is alike.
    assert bad is not None
    assert bad.signature == "ImportError: cannot import name 'beta' from 'importy'"
    assert res.row("1.8.0").outcome.signature == bad.signature  # type: ignore[union-attr]
    # --any-failure: every failure is the bug, and the answer is the first failure, alpha's.
    anyf = run_bisect(run_options(index, python, results, "importy", tmp_path, any_failure=True))
    assert (anyf.status, anyf.first_new, anyf.last_old) == (Status.FOUND, "1.3.0", "1.2.0")


def test_requires_python_makes_a_version_untestable(
    index: LocalIndex, python: str, results: Path, tmp_path: Path
) -> None:
    res = run_bisect(run_options(index, python, results, "py99", tmp_path))
    assert res.status is Status.AMBIGUOUS and res.possible == ("1.1.0", "1.2.0")
    assert dict(res.skipped)["1.1.0"].startswith("requires-python >=3.99 excludes")


def test_ends_that_do_not_verify_give_no_answer(
    index: LocalIndex, python: str, results: Path, tmp_path: Path
) -> None:
    res = run_bisect(
        run_options(index, python, results, "crashy", tmp_path, good="1.8.0", bad="1.10.0")
    )
    assert res.status is Status.NO_ANSWER
    assert "both ends fail" in res.reason and "SIGSEGV" in res.reason
    assert res.to_dict()["last_good_lock"] is None


def test_unresolvable_environment_is_untestable_not_bad(
    index: LocalIndex, python: str, results: Path, tmp_path: Path
) -> None:
    # helperlib<2 cannot go with crashy >= 1.9 (which needs helperlib>=2).
    res = run_bisect(
        run_options(
            index,
            python,
            results,
            "crashy",
            tmp_path,
            with_reqs=("helperlib<2",),
            good="1.5.0",
            bad="1.11.0",
        )
    )
    assert res.status is Status.NO_ANSWER
    assert "untestable" in res.reason and "uv failed" in res.reason


def test_cli_json_and_exit_codes(index: LocalIndex, python: str, tmp_path: Path) -> None:
    repro = write_repro(tmp_path, "crashy")
    base = ["run", "--package", "crashy", *on_index(index.url, python, tmp_path)]
    ok = envbisect(*base, "--good", "1.5.0", "--bad", "1.9.0", "--repro", str(repro), "--json")
    assert ok.returncode == 0, ok.stderr
    data = json.loads(ok.stdout)
    assert data["first_bad"] == "1.7.0"
    assert "probing" in ok.stderr  # progress goes to stderr, data to stdout
    none = envbisect(*base, "--good", "1.8.0", "--bad", "1.10.0", "--", "python", str(repro))
    assert none.returncode == 1
    assert "both ends fail" in none.stdout


def test_a_named_end_without_a_wheel_is_stood_in_for(
    index: LocalIndex, python: str, results: Path, tmp_path: Path, recorder: RecordingProgress
) -> None:
    # crashy 1.4.0 has only an sdist: 1.5.0, the nearest testable version inward, stands in.
    opts = run_options(index, python, results, "crashy", tmp_path, good="1.4.0", bad="1.9.0")
    res = run_bisect(opts, recorder)
    assert (res.status, res.first_new, res.last_old) == (Status.FOUND, "1.7.0", "1.6.0")
    assert recorder.started[0] == "1.5.0" and "1.4.0" not in recorder.started
    reason = "only an sdist (wheels only by default; --allow-sdist builds it)"
    line = f"envbisect: --good 1.4.0 cannot be tested ({reason}); 1.5.0 stands in for it"
    assert line in recorder.messages
    data = res.to_dict()
    assert data["stand_ins"] == [
        {"flag": "--good", "asked": "1.4.0", "used": "1.5.0", "reason": reason}
    ]
    assert (
        f"- --good 1.4.0 cannot be tested ({reason}); 1.5.0 stands in for it"
        in Path(data["report"]).read_text()
    )
    plain = (
        run_bisect(run_options(index, python, results, "crashy", tmp_path, bad="1.9.0"))
    ).to_dict()
    assert plain["stand_ins"] == []


def test_a_stood_in_end_on_the_command_line(index: LocalIndex, python: str, tmp_path: Path) -> None:
    repro = write_repro(tmp_path / "repro", "crashy")
    proc = envbisect(
        "run", "--package", "crashy", *on_index(index.url, python, tmp_path), "--good", "1.4.0",
        "--bad", "1.9.0", "--repro", str(repro), "--json", "--native-backtrace", "never",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "--good 1.4.0 cannot be tested (only an sdist" in proc.stderr
    assert "1.5.0 stands in for it" in proc.stderr
    data = json.loads(proc.stdout)
    assert data["first_bad"] == "1.7.0"
    assert [(s["flag"], s["asked"], s["used"]) for s in data["stand_ins"]] == [
        ("--good", "1.4.0", "1.5.0")
    ]


def test_a_yanked_version_between_the_answer_is_named(
    index: LocalIndex, python: str, results: Path, tmp_path: Path
) -> None:
    """yanky 1.3.0 is yanked and crashes; a search never sees it and names 1.4.0: the verdict,
    --json and the skipped list say that 1.3.0 lies between and was not tested."""
    res = run_bisect(run_options(index, python, results, "yanky", tmp_path))
    assert (res.first_new, res.last_old) == ("1.4.0", "1.2.0")
    assert "yanked between them, not tested: 1.3.0" in verdict_line(res)
    data = res.to_dict()
    assert data["yanked_between"] == ["1.3.0"]
    assert any(s["version"] == "1.3.0" and "yanked" in s["reason"] for s in data["skipped"])
    named = run_bisect(run_options(index, python, results, "yanky", tmp_path, bad="1.3.0"))
    assert (named.first_new, named.last_old) == ("1.3.0", "1.2.0")
    assert "yanked_between" not in named.to_dict()


def test_builds_ahead_leave_the_path_and_the_answer_as_they_were(
    index: LocalIndex,
    python: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """While a probe runs, the two environments the bisection may want next are built (one
    probe at a time on this machine); the probes asked for, their order and the answer are
    those of a search that builds nothing ahead, and nothing built ahead stays on disk."""
    from envbisect.env import worker

    built: list[str] = []
    real = worker.prebuild

    def counted(task: worker.ProbeTask, watcher: worker.Watcher | None = None) -> worker.Built:
        built.append(task.spec.env_id)
        return real(task, watcher)

    monkeypatch.setattr(worker, "prebuild", counted)
    runs = {}
    for ahead in (False, True):
        if ahead:
            monkeypatch.delenv("ENVBISECT_NO_BUILD_AHEAD", raising=False)
        else:
            monkeypatch.setenv("ENVBISECT_NO_BUILD_AHEAD", "1")
        rec = RecordingProgress()
        results = tmp_path / f"results-{ahead}"
        res = run_bisect(run_options(index, python, results, "crashy", tmp_path), rec)
        runs[ahead] = (res, rec, results)
    (plain, plain_rec, _), (res, rec, results) = runs[False], runs[True]
    assert (res.status, res.first_new, res.last_old) == (plain.status, "1.7.0", "1.6.0")
    assert rec.started == plain_rec.started == ["1.0.0", "1.11.0", "1.5.0", "1.8.0", "1.6.0",
                                                "1.7.0"]  # fmt: skip
    assert [r.env_id for r in res.rows] == [r.env_id for r in plain.rows]
    guessed = [v for v, p in rec.phases if p == "built ahead"]
    assert guessed and set(guessed) <= set(rec.started[1:])  # never the first: nothing was ahead
    assert not [v for v, p in plain_rec.phases if p == "built ahead"]
    assert len(set(built)) == len(built)  # each environment built ahead once
    # Each step guesses two next points, one of them wanted: the others were removed.
    assert [p for p in (results / ".envs").iterdir() if p.is_dir()] == []
    # Allowed one core (a Slurm job's or a container's cpuset, whatever the machine has):
    # nothing is built ahead, the answer is the same.
    cpus = os.sched_getaffinity(0)
    if len(cpus) < 2:
        return
    os.sched_setaffinity(0, {min(cpus)})
    try:
        one = RecordingProgress()
        alone = run_bisect(run_options(index, python, tmp_path / "one", "crashy", tmp_path), one)
    finally:
        os.sched_setaffinity(0, cpus)
    assert (alone.first_new, alone.last_old) == ("1.7.0", "1.6.0")
    assert not [v for v, p in one.phases if p == "built ahead"]


def test_two_identical_runs_at_once_build_each_environment_once(
    index: LocalIndex, python: str, tmp_path: Path
) -> None:
    """Two runs of the same question on one results folder, started together: a claim in the
    store (this environment and repro are being probed, by whom) makes the second wait for
    the first's outcome and reuse it. Builds counted by a uv that logs each venv it makes
    (ENVBISECT_UV), ahead builds included; the answers are the same."""
    import os
    import stat

    from support.cli import start

    log = tmp_path / "venvs.log"
    wrapper = tmp_path / "uv"
    wrapper.write_text(
        f'#!/bin/sh\nif [ "$1" = venv ]; then echo "$2" >> {log}; fi\nexec {find_uv()} "$@"\n'
    )
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    repro = tmp_path / "slow_repro.py"  # long enough for the two runs to overlap
    repro.write_text("import time, crashy\ntime.sleep(1.5)\ncrashy.run()\n")
    args = ["run", "--package", "crashy", *on_index(index.url, python, tmp_path),
            "--good", "1.0.0", "--bad", "1.11.0", "--json", "--repro", str(repro)]  # fmt: skip
    env = {**os.environ, "ENVBISECT_UV": str(wrapper)}
    runs = [start(*args, env=env) for _ in range(2)]
    outs = [p.communicate(timeout=600) for p in runs]
    for p, (_, err) in zip(runs, outs, strict=True):
        assert p.returncode == 0, err
    data = [json.loads(out) for out, _ in outs]
    assert {d["first_bad"] for d in data} == {"1.7.0"}
    probed = [p["env_id"] for d in data for p in d["probes"]]
    seen = {p["env_id"] for d in data for p in (*d["probes"], *d["reused"])}
    assert sorted(probed) == sorted(seen)  # each environment probed by one run only
    venvs = [Path(line).name.rsplit("-", 1)[0] for line in log.read_text().split()]
    assert sorted(set(venvs)) == sorted(venvs), venvs  # and built once, ahead or not
    assert set(venvs) >= seen
    assert any("another envbisect run" in err for _, err in outs)
