"""``envbisect why`` end to end against a real index on 127.0.0.1 serving wheels this module
makes: a name removed (behind a ``*`` re-export), a name moved behind a lazy table, a
parameter renamed, a broken release (a wheel without its own package), a module shipped by a
distribution of another name, a caller that caught up, a wheel that does not parse, an index
that serves no range requests, and a second run offline from the cache. The real CLI runs in
a subprocess; what it asked of the index is counted by the index itself."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from support.cli import assert_clean_error, envbisect
from support.index_server import IndexFile, LocalIndex
from support.wheels import build_wheel, elf_linking, elf_needing

START = datetime(2024, 1, 1, tzinfo=timezone.utc)
SITE = "/srv/venv/lib/python3.11/site-packages"


def _releases() -> dict[str, list[tuple[str, dict[str, str | bytes]]]]:
    """Every project's releases, oldest first: version -> files."""
    core = '__all__ = ["keep", "old_name"]\ndef keep(): pass\ndef old_name(): pass\n'
    core2 = '__all__ = ["keep"]\ndef keep(): pass\n'
    init = "from .core import *\n"
    lazy = '_import_structure = {"sub": ["Foo"]}\n'
    return {
        # old_name leaves alib's star re-export at 2.0
        "alib": [
            (v, {"alib/__init__.py": init, "alib/core.py": core if v < "2.0" else core2})
            for v in ("1.0", "1.1", "1.2", "2.0", "2.1")
        ],
        # the caller: imports old_name up to 2.0, not from 3.0 on
        "ulib": [
            ("1.0", {"ulib/__init__.py": "", "ulib/use.py": "from alib import old_name\n"}),
            ("2.0", {"ulib/__init__.py": "", "ulib/use.py": "from alib import old_name\n"}),
            ("3.0", {"ulib/__init__.py": "", "ulib/use.py": "from alib import keep\n"}),
        ],
        # Foo defined, then moved behind a lazy table (still there), then gone
        "blib": [
            ("1.0", {"blib/__init__.py": "class Foo: pass\n"}),
            ("2.0", {"blib/__init__.py": lazy, "blib/sub.py": "class Foo: pass\n"}),
            ("3.0", {"blib/__init__.py": "_import_structure = {}\n", "blib/sub.py": ""}),
        ],
        # Trainer(tokenizer=) renamed to processing_class at 2.0
        "clib": [
            (
                v,
                {
                    "clib/__init__.py": "from .trainer import Trainer\n",
                    "clib/trainer.py": "class Trainer:\n"
                    f"    def __init__(self, model, {kw}=None):\n"
                    "        pass\n",
                },
            )
            for v, kw in (("1.0", "tokenizer"), ("1.5", "tokenizer"), ("2.0", "processing_class"))
        ],
        # 1.1 was published without its package
        "dlib": [
            ("1.0", {"dlib/__init__.py": ""}),
            ("1.1", {"README.txt": "oops"}),
            ("1.2", {"dlib/__init__.py": ""}),
        ],
        # 2.0's binaries ask for glibc 2.28 (its manylinux tag); 1.x's for 2.17
        "glib": [(v, {"glib/__init__.py": ""}) for v in ("1.0", "1.1", "2.0")],
        # tagged manylinux2014 (glibc 2.17) every time; 2.0's binary asks 2.34 all the same
        "elflib": [
            (v, {"elflib/__init__.py": "", "elflib/_x.so": elf_needing(need)})
            for v, need in (("1.0", "2.14"), ("1.1", "2.17"), ("2.0", "2.34"))
        ],
        # built for CUDA 11 up to 1.1, for CUDA 12 from 2.0 on (2.0's binary too large to read
        # whole: judged by its first bytes, over ranges)
        "culib": [
            (v, {"culib/__init__.py": "", "culib/_C.so": elf_linking(*libs, padding=pad)})
            for v, libs, pad in (
                ("1.0", ("libcudart.so.11.0", "libc.so.6"), 0),
                ("1.1", ("libcudart.so.11.0", "libcublas.so.11"), 0),
                ("2.0", ("libcudart.so.12", "libc.so.6"), 9 * 1024 * 1024),
                ("2.1", ("libcudart.so.12", "libcublas.so.12"), 0),
            )
        ],
        # brings its CUDA runtime as an nvidia-* wheel (REQUIRES), as torch does
        "tlib": [("1.0", {"tlib/__init__.py": "", "tlib/_C.so": elf_linking("libcudart.so.12")})],
        # the distribution py-elib ships the import name elib
        "py-elib": [
            ("1.0", {"elib/__init__.py": "thing = 1\n"}),
            ("2.0", {"elib/__init__.py": "other = 1\n"}),
        ],
    }


TAGS = {
    "glib==1.0": "cp311-cp311-manylinux2014_x86_64",
    "glib==1.1": "cp311-cp311-manylinux2014_x86_64",
    "glib==2.0": "cp311-cp311-manylinux_2_28_x86_64",
    "elflib==1.0": "cp311-cp311-manylinux2014_x86_64",
    "elflib==1.1": "cp311-cp311-manylinux2014_x86_64",
    "elflib==2.0": "cp311-cp311-manylinux2014_x86_64",
    **{f"culib=={v}": "cp311-cp311-manylinux2014_x86_64" for v in ("1.0", "1.1", "2.0", "2.1")},
    "tlib==1.0": "cp311-cp311-manylinux2014_x86_64",
}


REQUIRES = {
    "tlib==1.0": ['nvidia-cuda-runtime-cu12 (==12.1.105) ; platform_system == "Linux"'],
}


def _serve(tmp: Path, *, ranges: bool = True, broken: str | None = None) -> LocalIndex:
    index = LocalIndex(ranges=ranges)
    when = START
    for project, releases in _releases().items():
        for version, files in releases:
            tag = TAGS.get(f"{project}=={version}", "py3-none-any")
            requires = REQUIRES.get(f"{project}=={version}", [])
            path = build_wheel(tmp, project, version, files, tag=tag, requires=requires)
            if f"{project}=={version}" == broken:
                _damage(path, f"{project}/core.py")
            when += timedelta(days=1)
            index.add(IndexFile(project=project, path=path, upload_time=when))
    return index.start()


def _damage(path: Path, member: str) -> None:
    """The member's compressed bytes overwritten: the archive and its METADATA still read
    (the index serves it), the member does not (zipfile: a bad CRC or a zlib error)."""
    data = bytearray(path.read_bytes())
    at = data.find(member.encode()) + len(member)  # the local header's name: data follows
    data[at + 2 : at + 12] = b"\xff" * 10
    path.write_bytes(bytes(data))


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalIndex]:
    index = _serve(tmp_path_factory.mktemp("why-wheels"))
    yield index
    index.stop()


def _why(index: LocalIndex, text: str, cache: Path, *more: str) -> tuple[int, dict[str, Any]]:
    proc = envbisect(
        "why", "-", "--index-url", index.url, "--cache-dir", str(cache), "--json", *more, input=text
    )
    assert proc.returncode in (0, 1), proc.stderr
    assert "Traceback" not in proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def _fixes(answer: dict[str, Any]) -> list[str]:
    return [f["requirement"] for e in answer["findings"] for f in e["fixes"]]


def _import_failure(module: str, name: str, frame: str) -> str:
    top = module.split(".")[0]
    return (
        "Traceback (most recent call last):\n"
        f'  File "{SITE}/{frame}", line 1, in <module>\n'
        f"    from {module} import {name}\n"
        f"ImportError: cannot import name '{name}' from '{module}' ({SITE}/{top}/__init__.py)\n"
    )


def test_a_name_removed_behind_a_star_and_the_caller_that_caught_up(
    served: LocalIndex, tmp_path: Path
) -> None:
    text = "alib==2.1\nulib==2.0\n\n" + _import_failure("alib", "old_name", "ulib/use.py")
    code, answer = _why(served, text, tmp_path / "c")
    assert code == 1
    assert _fixes(answer) == ["ulib>=3.0", "alib<2.0"]  # move the caller forward first
    (finding,) = answer["findings"]
    callee = next(h for h in finding["histories"] if h["role"] == "callee")
    assert callee["installed"] == "2.1"
    assert [(c["last_old"], c["first_new"]) for c in callee["changes"]] == [("1.2", "2.0")]
    assert finding["kind"] == "version"


def test_offline_the_second_time_from_the_cache(served: LocalIndex, tmp_path: Path) -> None:
    text = "alib==2.1\n" + _import_failure("alib", "old_name", "ulib/use.py")
    _, first = _why(served, text, tmp_path / "c")
    assert first["requests"] > 0
    _, again = _why(served, text, tmp_path / "c", "--offline")
    assert again["requests"] == 0
    assert _fixes(again) == _fixes(first)


def test_a_name_moved_behind_a_lazy_table_is_still_there(
    served: LocalIndex, tmp_path: Path
) -> None:
    text = "blib==3.0\n" + _import_failure("blib", "Foo", "ulib/use.py")
    _, answer = _why(served, text, tmp_path / "c")
    assert _fixes(answer) == ["blib<3.0"]  # not <2.0: the lazy table of 2.0 offers it


def test_a_parameter_renamed(served: LocalIndex, tmp_path: Path) -> None:
    text = (
        "clib==2.0\nTypeError: Trainer.__init__() got an unexpected keyword argument 'tokenizer'\n"
    )
    _, answer = _why(served, text, tmp_path / "c")
    assert _fixes(answer) == ["clib<2.0"]
    (history,) = answer["findings"][0]["histories"]
    assert history["question"] == "clib.trainer.Trainer.__init__() accepts tokenizer"


def test_a_broken_release(served: LocalIndex, tmp_path: Path) -> None:
    text = "dlib==1.1\nModuleNotFoundError: No module named 'dlib'\n"
    code, answer = _why(served, text, tmp_path / "c")
    assert code == 1
    (finding,) = answer["findings"]
    assert finding["kind"] == "broken-release"
    assert _fixes(answer) == ["dlib>=1.2", "dlib<1.1"]


def test_a_module_shipped_by_a_distribution_of_another_name(
    served: LocalIndex, tmp_path: Path
) -> None:
    text = "py-elib==2.0\n" + _import_failure("elib", "thing", "ulib/use.py")
    _, answer = _why(served, text, tmp_path / "c")
    assert _fixes(answer) == ["py-elib<2.0"]


def test_not_installed_and_shipped_by_nobody_are_no_version_finding(
    served: LocalIndex, tmp_path: Path
) -> None:
    code, answer = _why(served, "ModuleNotFoundError: No module named 'alib'\n", tmp_path / "c")
    assert (code, answer["findings"][0]["kind"], _fixes(answer)) == (1, "not-installed", [])
    code, answer = _why(served, "No module named 'zzz_nowhere'\n", tmp_path / "c")
    assert (code, answer["findings"][0]["kind"], _fixes(answer)) == (0, "unexplained", [])
    code, answer = _why(served, "RuntimeError: CUDA out of memory.\n", tmp_path / "c")
    assert (code, answer["findings"]) == (0, [])
    plain = envbisect("why", "RuntimeError: CUDA out of memory.", "--index-url", served.url)
    assert plain.returncode == 0 and "no finding: the text names no import" in plain.stdout
    assert "hint: give the whole traceback" in plain.stderr
    assert "Traceback (most recent call last):\n" not in plain.stderr  # said, not raised


def test_an_index_without_range_requests_and_a_wheel_that_does_not_parse(
    tmp_path: Path,
) -> None:
    (tmp_path / "w").mkdir()
    index = _serve(tmp_path / "w", ranges=False, broken="alib==1.1")
    try:
        text = "alib==2.1\n" + _import_failure("alib", "old_name", "ulib/use.py")
        proc = envbisect(
            "why", "-", "--index-url", index.url, "--cache-dir", str(tmp_path / "c"), input=text
        )
        assert proc.returncode == 1, proc.stderr
        assert "pip install 'alib<2.0'" in proc.stdout
        assert "alib-1.1-py3-none-any.whl could not be read and was stepped around" in (proc.stdout)
        assert index.range_requests == 0  # whole wheels, read where ranges are not served
        assert "Traceback" not in proc.stderr
    finally:
        index.stop()


def test_bad_input_is_a_clean_error(tmp_path: Path) -> None:
    empty = tmp_path / "empty.txt"
    empty.write_text("\n")
    assert_clean_error(envbisect("why", str(empty)), 2, "is empty")
    assert_clean_error(envbisect("why", str(tmp_path / "nosuch.txt")), 2, "cannot read")


def test_a_report_saved_as_utf16_by_powershell(served: LocalIndex, tmp_path: Path) -> None:
    report = tmp_path / "env.txt"
    text = "alib==2.1\r\n" + _import_failure("alib", "old_name", "ulib/use.py")
    report.write_bytes(b"\xff\xfe" + text.encode("utf-16-le"))
    proc = envbisect(
        "why", str(report), "--index-url", served.url, "--cache-dir", str(tmp_path / "c")
    )
    assert proc.returncode == 1, proc.stderr
    assert "alib<2.0" in proc.stdout


def test_prove_builds_the_two_environments_of_each_first_fix(
    served: LocalIndex, tmp_path: Path, python: str
) -> None:
    """Real uv environments from the test's index: the caller that caught up passes, the one
    before fails, the callee held at the text's version; a renamed parameter shown by binding
    the call's keyword to the signature of each release."""
    text = "alib==2.1\nulib==2.0\n\n" + _import_failure("alib", "old_name", "ulib/use.py")
    proc = envbisect(
        "why",
        "-",
        "--index-url",
        served.url,
        "--cache-dir",
        str(tmp_path / "c"),
        "--prove",
        "--python",
        python,
        "--json",
        input=text,
        cwd=tmp_path,
    )
    assert proc.returncode == 1, proc.stderr
    (proof,) = json.loads(proc.stdout)["proofs"]
    assert proof["fix"] == "ulib>=3.0" and proof["proven"]
    assert proof["good"]["requirements"] == ["ulib==3.0", "alib==2.1"]
    assert proof["bad"]["requirements"] == ["ulib==2.0", "alib==2.1"]
    assert (proof["good"]["outcome"]["kind"], proof["bad"]["outcome"]["kind"]) == ("pass", "fail")

    text = (
        "clib==2.0\nTypeError: Trainer.__init__() got an unexpected keyword argument 'tokenizer'\n"
    )
    proc = envbisect(
        "why",
        "-",
        "--index-url",
        served.url,
        "--cache-dir",
        str(tmp_path / "c"),
        "--prove",
        "--python",
        python,
        input=text,
        cwd=tmp_path,
    )
    assert proc.returncode == 1, proc.stderr
    assert "proven: clib==1.5: pass; clib==2.0: fail (TypeError" in proc.stdout, proc.stdout


def test_check_online_adds_the_wheels_findings(served: LocalIndex, tmp_path: Path) -> None:
    report = tmp_path / "issue.md"
    report.write_text(
        "alib==2.1\nulib==2.0\n\n" + _import_failure("alib", "old_name", "ulib/use.py")
    )
    proc = envbisect(
        "check",
        str(report),
        "--online",
        "--index-url",
        served.url,
        "--cache-dir",
        str(tmp_path / "c"),
        "--json",
    )
    assert proc.returncode == 1, proc.stderr
    (finding,) = json.loads(proc.stdout)["findings"]
    assert (finding["kind"], finding["package"], finding["fix"]) == (
        "release-change",
        "ulib",
        "pip install 'ulib>=3.0'",
    )
    assert finding["verify"] == f"envbisect why {report} --prove"
    assert "pip install 'alib<2.0'" in finding["message"]  # the other fix, said
    # without --online: nothing is fetched, and the shipped history knows neither package
    offline = envbisect("check", str(report), "--json")
    assert offline.returncode == 0 and json.loads(offline.stdout)["findings"] == []


def test_a_glibc_symbol_version_names_the_release_built_for_a_newer_one(
    served: LocalIndex, tmp_path: Path
) -> None:
    text = (
        "glib==2.0\nPlatform: Linux-3.10.0-x86_64-with-glibc2.17\n"
        "ImportError: /lib64/libc.so.6: version `GLIBC_2.28' not found (required by "
        f"{SITE}/glib/_core.cpython-311-x86_64-linux-gnu.so)\n"
    )
    code, answer = _why(served, text, tmp_path / "c")
    assert code == 1 and _fixes(answer) == ["glib<2.0"]
    (history,) = answer["findings"][0]["histories"]
    assert history["question"] == "glib's Linux wheels need at most glibc 2.17"
    assert answer["requests"] <= 3  # the index page: no wheel read


def test_a_binary_that_asks_more_than_its_wheels_tag_claims(
    served: LocalIndex, tmp_path: Path
) -> None:
    """elflib's wheels all claim manylinux2014 (glibc 2.17), and the machine has 2.20: the
    tags say every release fits, so the binaries' own ELF version needs decide."""
    text = (
        "elflib==2.0\nPlatform: Linux-4.4.0-x86_64-with-glibc2.20\n"
        "ImportError: /lib64/libc.so.6: version `GLIBC_2.34' not found (required by "
        f"{SITE}/elflib/_x.so)\n"
    )
    code, answer = _why(served, text, tmp_path / "c")
    assert code == 1 and _fixes(answer) == ["elflib<2.0"]
    (history,) = answer["findings"][0]["histories"]
    assert history["question"] == "elflib's shared objects need at most glibc 2.20"


def _library_failure(project: str, library: str) -> str:
    return (
        "Traceback (most recent call last):\n"
        '  File "/home/u/train.py", line 1, in <module>\n'
        f"    import {project}.ops\n"
        f'  File "{SITE}/{project}/ops.py", line 3, in <module>\n'
        f"    from {project}._C import kernel\n"
        f"ImportError: {library}: cannot open shared object file: No such file or directory\n"
    )


def test_a_cuda_library_of_another_toolkit_names_the_release_built_for_it(
    served: LocalIndex, tmp_path: Path
) -> None:
    """culib 2.0 was built for CUDA 12; the report's torch is CUDA 11.8's: hold culib back
    below 2.0, read from the libraries each release's binary links (2.0's by its first
    bytes)."""
    text = "culib==2.0\ntorch==2.1.2+cu118\n" + _library_failure("culib", "libcudart.so.12")
    code, answer = _why(served, text, tmp_path / "c")
    assert code == 1 and _fixes(answer) == ["culib<2.0"]
    (finding,) = answer["findings"]
    assert finding["evidence"]["kind"] == "shared-library"
    assert finding["evidence"]["module"] == "culib._C"
    (history,) = finding["histories"]
    assert history["question"] == (
        "culib's shared objects link CUDA 11's libraries (the report's CUDA 11.8)"
    )
    # without the toolkit said: the releases that do not link the missing library, and a note
    code, answer = _why(served, _library_failure("culib", "libcudart.so.11.0"), tmp_path / "d")
    assert code == 1 and _fixes(answer) == ["culib>=2.0"]
    assert any("does not say its CUDA" in n for n in answer["findings"][0]["notes"])


def test_a_cuda_library_its_release_brings_as_an_nvidia_wheel(
    served: LocalIndex, tmp_path: Path
) -> None:
    text = "tlib==1.0\n" + _library_failure("tlib", "libcudart.so.12")
    code, answer = _why(served, text, tmp_path / "c")
    (finding,) = answer["findings"]
    assert code == 1 and finding["kind"] == "not-installed"
    assert _fixes(answer) == ["nvidia-cuda-runtime-cu12==12.1.105"]
    assert finding["fixes"][0]["command"] == "pip install nvidia-cuda-runtime-cu12==12.1.105"
