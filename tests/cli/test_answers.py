"""The typed answers of probe, versions and pins: their ``--json`` keys and text lines, and
the one rule for why a version is excluded (core/results/)."""

from __future__ import annotations

from datetime import datetime, timezone

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from envbisect.core.pins.sources import parse_requirements
from envbisect.core.results.pins import PinsResult
from envbisect.core.results.probe import EXIT_PROBE_FAILED, ProbeResult, probe_reports
from envbisect.core.results.versions import VersionsResult, excluded_reason
from envbisect.model import Candidate, InstalledDist, Outcome, OutcomeKind

WHEN = datetime(2025, 3, 1, 12, 0, tzinfo=timezone.utc)


def _candidate(version: str, *, yanked: bool = False, installable: bool = True) -> Candidate:
    return Candidate(
        version=Version(version),
        files=(),
        upload_time=WHEN,
        yanked=yanked,
        installable=installable,
        reason=None if installable else "no file for the target",
    )


def test_a_version_is_excluded_for_the_first_reason_that_holds() -> None:
    pins = SpecifierSet("<2")
    # yanked before pre-release before no file before outside the pins
    assert (
        excluded_reason(_candidate("3.0rc1", yanked=True, installable=False), pins, pre=False)
        == "yanked"
    )
    assert excluded_reason(_candidate("3.0rc1", installable=False), pins, pre=False) == (
        "pre-release (pass --pre to include)"
    )
    assert excluded_reason(_candidate("3.0", installable=False), pins, pre=True) == (
        "no file for the target"
    )
    assert excluded_reason(_candidate("3.0"), pins, pre=True) == "outside the pins (<2)"
    assert excluded_reason(_candidate("1.0"), pins, pre=False) is None


def test_versions_answer_keeps_todays_json_and_lines() -> None:
    res = VersionsResult.of(
        "peft",
        "cp311-manylinux_2_36_x86_64",
        SpecifierSet("<2"),
        [_candidate("1.0"), _candidate("2.0")],
        pre=False,
    )
    assert res.to_dict() == {
        "package": "peft",
        "target": "cp311-manylinux_2_36_x86_64",
        "candidates": [
            {"version": "1.0", "upload_time": WHEN.isoformat(), "yanked": False,
             "prerelease": False, "installable": True, "in_range": True,
             "excluded_reason": None},
            {"version": "2.0", "upload_time": WHEN.isoformat(), "yanked": False,
             "prerelease": False, "installable": True, "in_range": False,
             "excluded_reason": "outside the pins (<2)"},
        ],
    }  # fmt: skip
    assert res.lines() == [
        "peft: 1 candidate(s) of 2 for cp311-manylinux_2_36_x86_64, pins <2",
        f"  {'1.0':<16} {'2025-03-01':<10}",
        f"  {'2.0':<16} {'2025-03-01':<10}  excluded: outside the pins (<2)",
    ]


def _probe(
    outcome: Outcome, runs: tuple[Outcome, ...] = (), *, reused: bool = False
) -> ProbeResult:
    return ProbeResult(
        repro="probe import:x",
        outcome=outcome,
        reused=reused,
        installed=(InstalledDist(name="x", version="1.0"),),
        build_seconds=1.23456,
        probe_seconds=0.5,
        reports=probe_reports('noise\nENVBISECT-REPORT: {"b": 1, "a": 2}\nENVBISECT-REPORT: {bad'),
        env_id="e1",
        env=(("TOKEN", "s3cret"),),
        runs=runs or (outcome,),
        fails=sum(1 for r in runs if r.kind is not OutcomeKind.PASS),
    )


def test_probe_answer_json_keys_and_exit_codes() -> None:
    passed = _probe(Outcome(kind=OutcomeKind.PASS))
    data = passed.to_dict()
    assert list(data) == ["outcome", "reused", "installed", "build_seconds", "probe_seconds",
                          "reports", "env_id", "env"]  # fmt: skip
    assert data["build_seconds"] == 1.235 and data["reports"] == [{"b": 1, "a": 2}]
    assert data["env"]["TOKEN"] != "s3cret"  # masked: a credential is never printed
    assert passed.exit_code == 0 and passed.detail == ""
    assert passed.report_lines() == ['{"a": 2, "b": 1}']
    assert passed.how() == "built in 1.2 s, probed in 0.5 s"

    fail = Outcome(kind=OutcomeKind.FAIL, detail="Traceback ...")
    flaky = _probe(fail, (Outcome(kind=OutcomeKind.PASS), fail), reused=True)
    assert list(flaky.to_dict())[-3:] == ["runs", "fails", "run_outcomes"]
    assert flaky.exit_code == EXIT_PROBE_FAILED == 4
    assert flaky.detail == "Traceback ..."
    assert flaky.how() == "from the store; 1 of 2 runs failed"


def test_pins_answer_marks_what_does_not_apply() -> None:
    text = 'numpy>=1.26\ntorch ; sys_platform == "win32"\nrich[jupyter]==13.0\n'
    pins = parse_requirements(text, origin="requirements.txt")
    markers = (("sys_platform", "linux"), ("python_version", "3.11"))
    res = PinsResult(pins=pins, markers=markers, extras=(), target="cp311-x", python="3.11")
    assert res.lines() == [
        "# requirements.txt  (for cp311-x, Python 3.11)",
        "numpy>=1.26",
        'torch; sys_platform == "win32"  # does not apply here',
        "rich[jupyter]==13.0",
    ]
    assert res.to_dict() == pins.to_dict(dict(markers), ())
