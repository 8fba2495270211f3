"""The real-world suite's judging (bench/realworld_judge.py): no case's end is its answer, and
a JSON answer is "right" only with the right version AND the right failure; every other way
a search can go wrong gets its own verdict.

The JSON objects here have the shapes envbisect's ``--json`` prints (the results'
``to_dict``: the lock's constraints, diff's culprits and roots), written small: the judging
is pure, the suite itself runs the real CLI against PyPI (bench/realworld.py).
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))

from realworld_cases import CASES as NEW_CASES
from realworld_cases import HUB_A, HUB_B
from realworld_judge import check_ranges, judge, outcome_of, range_problems
from realworld_llamafactory import CASES as LF_CASES
from realworld_simple import CASES as SIMPLE_CASES

from envbisect.core.outcome import same_failure

CASES = {c.name: c for c in (*SIMPLE_CASES, *NEW_CASES, *LF_CASES)}


def _fail(line: str) -> dict[str, Any]:
    exc, _, msg = line.partition(": ")
    return {"kind": "fail", "signal": None, "exit_code": 1, "signature": f"{exc}: {msg}",
            "library": None, "function": None, "step": "python -c ..."}  # fmt: skip


def _crash(signal: str, library: str, function: str | None) -> dict[str, Any]:
    return {"kind": "crash", "signal": signal, "exit_code": None,
            "signature": f"{signal} in {library} ({function})", "library": library,
            "function": function, "step": "python -X faulthandler repro.py"}  # fmt: skip


A = _fail("ImportError: cannot import name 'cached_download' from 'huggingface_hub'")
B = _fail("ImportError: cannot import name 'hf_cache_home' from 'huggingface_hub.constants'")


def _run(first: str, outcome: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"package": "x", "status": "found", "direction": "regression", "first_bad": first,
            "probes": [{}] * 5, "first_bad_outcome": outcome, **extra}  # fmt: skip


def test_every_case_has_a_range_whose_ends_are_not_the_answer() -> None:
    assert check_ranges(tuple(CASES.values())) == []
    assert len(CASES) == len(SIMPLE_CASES) + len(NEW_CASES) + len(LF_CASES)  # names unique
    assert {c.mode for c in CASES.values()} == {"run", "by-date", "diff", "lock"}


@pytest.mark.parametrize(
    ("name", "args", "flagged"),
    [
        ("jinja2-31-Markup", ("--package", "jinja2", "--good", "3.0.0", "--bad", "3.1.0"),
         "--bad 3.1.0 is the answer"),
        ("jinja2-31-Markup", ("--package", "jinja2", "--good", "3.1.2", "--bad", "3.1.4"),
         "not strictly between"),
        ("abess-crash-fixed", ("--package", "abess", "--good", "0.4.8", "--bad", "0.4.6"),
         "--good 0.4.8 is the answer"),
        ("urllib3-2-method_whitelist", ("--package", "urllib3", "--good", "1.26.0", "--bad",
                                        "2.0.1"), "--bad 2.0.1 is the answer"),
        ("hfhub-diffusers024-two-failures", ("--package", "huggingface-hub", "--good", "0.26.0"),
         "--good 0.26.0 is the answer"),
        ("by-date-black-click", ("--with", "black==22.1.0", "--good", "2022-03-28", "--bad",
                                 "2022-07-01"), "not strictly inside"),
    ],
)  # fmt: skip
def test_an_end_that_is_the_answer_is_flagged(
    name: str, args: tuple[str, ...], flagged: str
) -> None:
    case = replace(CASES[name], args=args)
    problems = range_problems(case)
    assert problems and flagged in problems[0], problems


def test_a_diff_whose_lockfile_pins_the_answer_is_flagged() -> None:
    case = CASES["diff-flask-locks"]
    bad = case.files["bad.txt"].replace("werkzeug==3.0.3", "werkzeug==3.0.0")
    assert range_problems(replace(case, files={**case.files, "bad.txt": bad})) == [
        "diff-flask-locks: bad.txt pins werkzeug==3.0.0: an end is the answer"
    ]


def test_each_verified_failure_is_the_same_failure_after_a_json_round_trip() -> None:
    for case in CASES.values():
        expected = case.failure.outcome()
        assert expected.kind.value in ("fail", "crash"), case.name
        back = outcome_of({**expected.to_dict()})  # no "exception" key, as --json prints it
        assert back.exception == expected.exception, case.name
        assert same_failure(expected, back), case.name


def test_the_two_failures_of_one_range_are_two_failures() -> None:
    assert not same_failure(HUB_A.outcome(), HUB_B.outcome())
    assert not same_failure(HUB_A.outcome(), outcome_of(B))
    assert same_failure(HUB_A.outcome(), outcome_of(A))


def test_right_needs_the_version_and_the_failure() -> None:
    case = CASES["hfhub-diffusers024-any-failure"]
    assert judge(case, _run("0.26.0", A)).verdict == "right"
    wrong = judge(case, _run("0.26.0", B))
    assert wrong.verdict == "wrong failure"
    assert "hf_cache_home" in wrong.failure and "cached_download" in wrong.notes[0]
    assert judge(case, _run("0.26.1", A)).verdict == "wrong version"
    assert judge(case, _run("0.26.0", None)).verdict == "wrong failure"  # type: ignore[arg-type]
    passing = {"kind": "pass", "signature": ""}
    assert judge(case, _run("0.26.0", passing)).verdict == "wrong failure"


def test_the_breakpoints_a_case_lists_must_be_there_with_their_failure() -> None:
    case = CASES["hfhub-diffusers024-two-failures"]
    both = [{"first_bad": "0.26.0", "last_good": "0.25.2", "outcome": A},
            {"first_bad": "1.0.0", "last_good": "0.36.2", "outcome": B}]  # fmt: skip
    right = judge(case, _run("1.0.0", B, breakpoints=both))
    assert right.verdict == "right" and "breakpoints: 0.26.0, 1.0.0" in right.answer
    missing = judge(case, _run("1.0.0", B, breakpoints=both[1:]))
    assert missing.verdict == "wrong version" and missing.notes == ("breakpoints lack 0.26.0",)
    assert judge(case, _run("1.0.0", B)).verdict == "wrong version"  # no breakpoints at all
    unlike = [{**both[0], "outcome": B}, both[1]]
    assert judge(case, _run("1.0.0", B, breakpoints=unlike)).verdict == "wrong failure"


def test_a_crash_is_judged_by_signal_library_and_function_without_the_soname() -> None:
    case = CASES["pyarrow-fsb-slice-cast-crash"]
    func = "arrow::internal::TransferBitmap<(arrow::internal::TransferMode)0>"
    fixed = {"direction": "fix", "first_fixed": "17.0.0", "last_broken": "16.1.0"}

    def answer(outcome: dict[str, Any]) -> str:
        out = {**_run("x", outcome), **fixed}
        del out["first_bad"]
        return judge(case, out).verdict

    assert answer(_crash("SIGSEGV", "libarrow.so.1601", func)) == "right"
    assert answer(_crash("SIGSEGV", "libarrow.so.1500", func)) == "right"  # another release
    assert answer(_crash("SIGSEGV", "libarrow.so.1601", None)) == "right"  # no gdb name
    assert answer(_crash("SIGSEGV", "libparquet.so.1601", func)) == "wrong failure"
    assert answer(_crash("SIGSEGV", "libarrow.so.1601", "arrow::CopyBitmap")) == "wrong failure"
    assert answer(_crash("SIGABRT", "libarrow.so.1601", func)) == "wrong failure"
    regression = {**_run("17.0.0", _crash("SIGSEGV", "libarrow.so.1601", func))}
    assert judge(case, regression).verdict == "wrong version"  # found, but not a fix search


def test_a_vendored_library_is_the_same_library_under_another_hash() -> None:
    case = CASES["shapely-geos-concave-hull-crash"]
    out = {**_run("x", _crash("SIGSEGV", "libgeos-ee7a1634.so.3.11.1",
                              "geos::triangulate::tri::Tri::getIndex")),
           "direction": "fix", "first_fixed": "2.0.5"}  # fmt: skip
    assert judge(case, out).verdict == "right"


def test_yanked_releases_between_must_be_named() -> None:
    case = CASES["urllib3-2-method_whitelist"]
    err = _fail("TypeError: Retry.__init__() got an unexpected keyword argument 'method_whitelist'")
    good = judge(case, _run("2.0.2", err, yanked_between=["2.0.0", "2.0.1"]))
    assert good.verdict == "right" and "yanked between: 2.0.0, 2.0.1" in good.answer
    assert judge(case, _run("2.0.2", err)).verdict == "wrong version"
    assert judge(case, _run("2.0.0", err)).verdict == "wrong version"


def test_by_date_names_the_culprit_and_its_breakpoints() -> None:
    case = CASES["by-date-hfhub-diffusers024"]
    culprit = {"package": "huggingface-hub", "good_version": "0.36.0", "bad_version": "1.0.0"}
    points = [
        {"first_bad": "2024-10-18 08:01:21 (huggingface-hub 0.26.0)", "outcome": A},
        {"first_bad": "2025-10-27 13:29:50 (huggingface-hub 1.0.0)", "outcome": B},
    ]
    out = _run("2025-10-27 13:29:50 (huggingface-hub 1.0.0)", B, culprits=[culprit])
    assert judge(case, {**out, "breakpoints": points}).verdict == "right"
    assert judge(case, out).verdict == "wrong version"
    two = {**out, "culprits": [culprit, {**culprit, "package": "numpy"}], "breakpoints": points}
    assert judge(case, two).verdict == "wrong version"


def test_a_lock_is_right_with_the_constraint_below_the_first_failure() -> None:
    case = CASES["lock-hfhub-diffusers024"]

    def lock(*held: tuple[str, dict[str, Any]]) -> dict[str, Any]:
        cons = [{"package": "huggingface-hub", "specifier": s, "outcome": o} for s, o in held]
        return {"status": "found", "constraints": cons, "probes": [{}] * 20}

    short = {"kind": "fail", "signal": None, "signature": A["signature"]}  # its to_dict
    assert judge(case, lock(("<0.26.0", short))).verdict == "right"
    assert judge(case, lock(("<0.26.0", B))).verdict == "wrong failure"
    assert judge(case, lock(("<1.0.0", B))).verdict == "wrong version"
    assert judge(case, lock()).verdict == "wrong version"
    assert judge(case, {"status": "no-answer", "reason": "r"}).verdict == "no answer"


def test_a_diff_culprit_alone_with_what_it_drags_in_forced() -> None:
    case = CASES["diff-transformers5-vision2seq"]
    err = _fail("ImportError: cannot import name 'AutoModelForVision2Seq' from 'transformers'")
    culprit = {"package": "transformers", "good_version": "4.57.6", "bad_version": "5.0.0",
               "forced": ["huggingface-hub", "httpx"]}  # fmt: skip
    probes = [{"version": "BAD", "outcome": err}, {"version": "transformers 5.0.0",
                                                    "outcome": err}]  # fmt: skip
    roots = {"ddmin": ["huggingface-hub", "transformers"], "roots": ["transformers"]}
    out = {"status": "found", "first_bad_outcome": err, "probes": probes, "culprits": [culprit],
           "roots": roots}  # fmt: skip
    assert judge(case, out).verdict == "right"
    unforced = {**out, "culprits": [{**culprit, "forced": []}]}
    assert judge(case, unforced).notes == (
        "huggingface-hub is not forced by (nor moved with) the culprit",
    )
    moved = {**culprit, "forced": [], "moved_with": [{"package": "huggingface_hub"}]}
    assert judge(case, {**out, "culprits": [moved]}).verdict == "right"
    both = {**out, "culprits": [culprit, {**culprit, "package": "huggingface-hub",
                                          "bad_version": "1.5.0"}]}  # fmt: skip
    assert judge(case, both).verdict == "wrong version"
    other = {**out, "probes": [probes[0], {**probes[1], "outcome": B}]}
    assert judge(case, other).verdict == "wrong failure"  # the culprit's own probe decides


def test_errors_ambiguity_and_no_answer_have_their_verdicts() -> None:
    case = CASES["numpy2-float_"]
    err = {"status": "error", "error": {"ref": "bad-usage", "message": "unrecognized"}}
    assert judge(case, err).verdict == "error"
    amb = {"status": "ambiguous", "first_bad_candidates": ["2.0.0", "2.0.1"]}
    assert (judge(case, amb).verdict, judge(case, amb).answer) == (
        "ambiguous",
        "one of 2.0.0, 2.0.1",
    )
    assert judge(case, {"status": "no-answer", "reason": "r"}).verdict == "no answer"
    assert judge(case, {"status": "dry-run"}).verdict == "error"


def test_a_lock_that_holds_nothing_back_and_one_with_coupled_constraints() -> None:
    """A case whose truth is "" is right only when nothing is held back; a case of several
    constraints only with each of them, each answering its failure."""
    nothing = replace(CASES["lock-llamafactory-090"], truth="", held=())
    assert judge(nothing, {"status": "found", "constraints": []}).verdict == "right"
    one = {"package": "pyarrow", "specifier": "<26.0.0", "outcome": None}
    assert judge(nothing, {"status": "found", "constraints": [one]}).verdict == "wrong version"
    case = CASES["lock-llmtuner-063"]
    flash = _fail("ImportError: cannot import name 'LlamaFlashAttention2' from "
                  "'transformers.models.llama.modeling_llama'")  # fmt: skip
    logprobs = _fail("ImportError: cannot import name 'logprobs_from_logits' from 'trl.core'")
    both = [{"package": "trl", "specifier": "<0.14.0", "outcome": logprobs},
            {"package": "transformers", "specifier": "<4.48.0", "outcome": flash}]  # fmt: skip
    assert judge(case, {"status": "found", "constraints": both}).verdict == "right"
    assert judge(case, {"status": "found", "constraints": both[1:]}).verdict == "wrong version"
