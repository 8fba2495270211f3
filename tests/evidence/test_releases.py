"""The search over releases (strategy/releases.py) and the fixes its histories support
(core/evidence/boundaries.py), fed scripted answers: which releases are read, in how many
reads, every boundary of a name that came and went, an unknown answer stepped around, and
which side each fix moves."""

from __future__ import annotations

from collections.abc import Callable

from envbisect.core.evidence.boundaries import NO, YES, Change, History, fixes, merged
from envbisect.strategy.releases import Boundary, ReleaseSearch


def _run(
    count: int,
    answer: Callable[[int], int | None],
    *,
    must: list[int] | None = None,
    widen_until: int = 0,
) -> tuple[ReleaseSearch, list[int]]:
    search = ReleaseSearch(count, must=must or [])
    read: list[int] = []
    while True:
        while not search.done:
            batch = search.next_batch(4)
            assert batch, "a search that is not done asks for something"
            for i in batch:
                read.append(i)
                search.record(i, answer(i))
        same = len({c for c in search.classes.values()}) <= 1
        if not same or len(read) >= widen_until or not search.widen():
            break
    return search, read


def test_one_boundary_in_few_reads() -> None:
    search, read = _run(200, lambda i: YES if i < 137 else NO)
    assert search.boundaries() == [Boundary(last_old=136, first_new=137, old=YES, new=NO)]
    assert len(read) == len(set(read)) <= 20  # 5 spread + log2 of the gap in rounds of 4
    assert {0, 199} <= set(read[:5]) and len(read[:5]) == 5  # the ends and three between


def test_the_installed_release_is_read_in_the_first_round() -> None:
    _, read = _run(100, lambda i: YES, must=[63])
    assert 63 in read[:6]


def test_a_name_that_came_and_went_between_the_first_reads() -> None:
    present = range(61, 72)  # trl.commands: 0.8.0 to 0.12.2
    search, read = _run(105, lambda i: YES if i in present else NO, widen_until=32)
    assert [(b.first_new, b.new) for b in search.boundaries()] == [(61, YES), (72, NO)]
    assert len(read) <= 40


def test_unknown_answers_are_stepped_around_and_said() -> None:
    search, _ = _run(20, lambda i: None if i in (9, 10) else (YES if i < 10 else NO))
    (b,) = search.boundaries()
    assert (b.last_old, b.first_new, b.hidden) == (8, 11, (9, 10))


def _h(role: str, changes: list[Change], installed: str | None, answer: int | None) -> History:
    """A history whose every release was read, its answers as ``changes`` say."""
    versions = ("1.0", "1.1", "2.0", "2.1", "3.0")
    answers = []
    state = changes[0].old if changes else YES
    for v in versions:
        for c in changes:
            if c.first_new == v:
                state = c.new
        answers.append((v, state))
    return History(
        package="p",
        role=role,
        question="q",
        versions=versions,
        changes=tuple(changes),
        answers=tuple(answers),
        installed=installed,
        installed_answer=answer,
    )


REMOVED = Change(last_old="1.1", first_new="2.0", old=YES, new=NO)
ADDED = Change(last_old="1.1", first_new="2.0", old=NO, new=YES)


def test_the_callee_held_back_below_the_release_that_removed_it() -> None:
    (fix,) = fixes(_h("callee", [REMOVED], "2.1", NO))
    assert (fix.requirement, fix.command) == ("p<2.0", "pip install 'p<2.0'")


def test_the_callee_moved_up_to_the_release_that_brought_it() -> None:
    (fix,) = fixes(_h("callee", [ADDED], "1.0", NO))
    assert fix.requirement == "p>=2.0" and fix.forward


def test_a_window_it_lived_in() -> None:
    came = Change(last_old="1.0", first_new="1.1", old=NO, new=YES)
    went = Change(last_old="2.1", first_new="3.0", old=YES, new=NO)
    (fix,) = fixes(_h("callee", [came, went], "3.0", NO))
    assert fix.requirement == "p>=1.1,<3.0"


def test_the_caller_moved_up_to_the_release_that_caught_up() -> None:
    stopped = Change(last_old="1.1", first_new="2.0", old=YES, new=NO)
    (fix,) = fixes(_h("caller", [stopped], "1.0", YES))
    assert fix.requirement == "p>=2.0"


def test_no_version_stated_the_newest_stands_in() -> None:
    assert [f.requirement for f in fixes(_h("callee", [REMOVED], None, None))] == ["p<2.0"]
    # the newest has it: the text ran an older release
    assert [f.requirement for f in fixes(_h("callee", [ADDED], None, None))] == ["p>=2.0"]


def test_a_stated_release_that_contradicts_the_failure_is_set_aside() -> None:
    assert [f.requirement for f in fixes(_h("callee", [REMOVED], "1.0", YES))] == ["p<2.0"]


def test_forward_fixes_first_then_the_callee_held_back() -> None:
    callee = _h("callee", [REMOVED], "2.1", NO)
    caller = History(
        package="c",
        role="caller",
        question="c imports it",
        versions=("1", "2"),
        changes=(Change(last_old="1", first_new="2", old=YES, new=NO),),
        installed="1",
        installed_answer=YES,
    )
    assert [f.requirement for f in merged([callee, caller])] == ["c>=2", "p<2.0"]


def test_the_glibc_a_releases_wheels_ask_for() -> None:
    from envbisect.core.evidence.boundaries import glibc_needed
    from envbisect.core.evidence.stated import stated_glibc

    assert glibc_needed(
        [
            "a-1-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
            "a-1-cp311-cp311-manylinux_2_28_aarch64.whl",
        ]
    ) == (2, 17)
    assert glibc_needed(["a-2-cp311-cp311-manylinux_2_28_x86_64.whl"]) == (2, 28)
    assert glibc_needed(["a-3-py3-none-any.whl"]) == (0, 0)
    assert glibc_needed(["a-4-cp311-cp311-win_amd64.whl", "a-4.tar.gz"]) is None
    assert stated_glibc("Platform: Linux-5.15.0-x86_64-with-glibc2.35") == (2, 35)
    assert stated_glibc("ldd (GNU libc) 2.28") == (2, 28)
    assert stated_glibc("no C library named here") is None


def test_the_glibc_a_shared_object_needs_from_its_elf_bytes() -> None:
    from envbisect.core.evidence.elfneeds import glibc_needed_by
    from support.wheels import elf_needing

    assert glibc_needed_by(elf_needing("2.17", "2.28", "2.3.4")) == (2, 28)
    assert glibc_needed_by(elf_needing()) == (0, 0)
    assert glibc_needed_by(b"not an ELF file") is None
    assert glibc_needed_by(elf_needing("2.17")[:80]) is None  # cut short: no answer, no error
