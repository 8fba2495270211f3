"""Pin sources: pyproject, requirements files, lock files, core metadata, installed environments.

The fixtures under tests/data/pins are shaped like real ones (LLaMA-Factory 0.9.5's pyproject and
METADATA, a pip-compile lockfile, a uv pylock.toml). Everything is hermetic: the one subprocess
is the interpreter running these tests, and metadata is "fetched" by a recording callable.
"""

from __future__ import annotations

import importlib.metadata
import os
import stat
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.specifiers import Specifier, SpecifierSet
from packaging.version import Version

from envbisect.core.pins.sources import (
    Pin,
    PinSet,
    parse_metadata,
    parse_pylock,
    parse_pyproject,
    parse_requirements,
)
from envbisect.env.pinsource import load_pins
from envbisect.errors import EnvbisectError, UsageError

DATA = Path(__file__).parents[1] / "data" / "pins"
LLAMAFACTORY = DATA / "llamafactory" / "pyproject.toml"
METADATA = DATA / "metadata" / "llamafactory-0.9.5.METADATA"

# Marker environments as Target.marker_environment() gives them for two machines.
LINUX = {
    "implementation_name": "cpython",
    "implementation_version": "3.11.9",
    "os_name": "posix",
    "platform_machine": "x86_64",
    "platform_python_implementation": "CPython",
    "platform_release": "6.8.0-45-generic",
    "platform_system": "Linux",
    "platform_version": "#45-Ubuntu SMP PREEMPT_DYNAMIC",
    "python_full_version": "3.11.9",
    "python_version": "3.11",
    "sys_platform": "linux",
}
DARWIN = {
    **LINUX,
    "platform_machine": "arm64",
    "platform_release": "23.4.0",
    "platform_system": "Darwin",
    "platform_version": "Darwin Kernel Version 23.4.0",
    "sys_platform": "darwin",
}


def llamafactory(extras: tuple[str, ...] = ()) -> PinSet:
    return parse_pyproject(LLAMAFACTORY.read_text(), origin="pyproject.toml", extras=extras)


def by_name(pins: list[Pin] | tuple[Pin, ...]) -> dict[str, Pin]:
    return {pin.name: pin for pin in pins}


def names(pins: list[Pin] | tuple[Pin, ...]) -> list[str]:
    return [pin.name for pin in pins]


def usage_error(excinfo: pytest.ExceptionInfo[UsageError]) -> UsageError:
    err = excinfo.value
    assert isinstance(err, EnvbisectError) and err.hint, "every pins error carries a hint"
    assert "\n" not in err.message
    return err


# -- pyproject.toml ----------------------------------------------------------------------------


def test_pyproject_keeps_specifiers_as_written_and_markers() -> None:
    pins = llamafactory()
    base = by_name([p for p in pins.requirements if p.extra is None])
    rows = {name: pin.to_dict(LINUX) for name, pin in base.items()}
    assert rows["transformers"]["specifier"] == ">=4.55.0,<=5.6.0,!=4.52.0,!=4.57.0"
    assert rows["datasets"]["specifier"] == ">=2.16.0,<=4.0.0"
    assert rows["accelerate"]["specifier"] == ">=1.3.0,<=1.11.0"
    assert rows["peft"]["specifier"] == ">=0.18.0,<=0.18.1"
    assert rows["trl"]["specifier"] == ">=0.18.0,<=0.24.0"
    assert rows["torch"] == {
        "name": "torch",
        "specifier": ">=2.4.0",
        "marker": None,
        "extras": [],
        "extra": None,
        "origin": "pyproject.toml [project.dependencies]",
        "hashes": [],
        "applies": True,
    }
    assert rows["bitsandbytes"]["marker"] == 'sys_platform != "darwin"'
    assert rows["einops"]["specifier"] == ""
    assert pins.project == "llamafactory"
    assert pins.requires_python == ">=3.10.0"
    assert not pins.is_lock
    assert pins.source == "pyproject.toml"


def test_pyproject_markers_apply_on_linux_not_on_darwin() -> None:
    pins = llamafactory()
    assert "bitsandbytes" in names(pins.applicable(LINUX))
    assert "bitsandbytes" not in names(pins.applicable(DARWIN))
    assert by_name(pins.requirements)["bitsandbytes"].to_dict(DARWIN)["applies"] is False
    # Extra groups stay out until selected, wherever the machine.
    assert "deepspeed" not in names(pins.applicable(LINUX))
    with_vllm = names(pins.applicable(LINUX, extras=["vllm"]))
    assert "vllm" in with_vllm
    assert "vllm" not in names(pins.applicable(DARWIN, extras=["vllm"]))


def test_pyproject_specifier_for_intersects_and_excludes() -> None:
    pins = llamafactory()
    spec = pins.specifier_for("Transformers", LINUX)
    assert Version("4.57.0") not in spec
    assert Version("4.52.0") not in spec
    assert Version("4.56.2") in spec and Version("5.6.0") in spec
    assert Version("5.6.1") not in spec
    # The sglang group pins transformers==4.51.1, which nothing else allows: an empty range.
    assert not list(
        pins.specifier_for("transformers", LINUX, extras=["sglang"]).filter(["4.51.1", "4.56.0"])
    )
    assert pins.specifier_for("torchvision", LINUX, extras=["torch-npu"]) == SpecifierSet(
        ">=0.19.0,==0.20.1"
    )
    assert pins.specifier_for("bitsandbytes", DARWIN) == SpecifierSet()
    assert pins.specifier_for("not-a-dependency", LINUX) == SpecifierSet()


def test_pyproject_optional_groups_carry_their_extra() -> None:
    pins = llamafactory()
    groups = {pin.extra for pin in pins.requirements}
    assert {None, "deepspeed", "vllm", "bitsandbytes", "metrics", "minicpm-v"} <= groups
    deepspeed = next(p for p in pins.requirements if p.extra == "deepspeed")
    assert deepspeed.origin == "pyproject.toml [project.optional-dependencies.deepspeed]"
    assert deepspeed.to_dict(LINUX)["applies"] is False
    assert deepspeed.to_dict(LINUX, extras=["deepspeed"])["applies"] is True
    aqlm = next(p for p in pins.requirements if p.name == "aqlm")
    assert aqlm.to_dict(LINUX)["extras"] == ["gpu"]
    assert "minicpm-v" in pins.provides_extras
    assert "soundfile" in names(pins.applicable(LINUX, extras=["MiniCPM_V"]))


def test_pyproject_self_reference_is_expanded_not_a_requirement() -> None:
    pins = llamafactory()
    assert "llamafactory" not in {p.name for p in pins.requirements}
    assert [str(p.requirement) for p in pins.self_references] == [
        "llamafactory[deepspeed,metrics,torch]"
    ]
    everything = names(pins.applicable(LINUX, extras=["all"]))
    assert {"deepspeed", "nltk", "jieba", "rouge-chinese"} <= set(everything)
    assert "vllm" not in everything and "llamafactory" not in everything
    assert pins.selected_extras(LINUX, ["all"]) == {"all", "torch", "metrics", "deepspeed"}
    # Selected at load time, the extras stay in effect.
    assert "deepspeed" in names(llamafactory(extras=("all",)).applicable(LINUX))
    rows = llamafactory().to_dict(LINUX, extras=["all"])
    assert rows["extras"] == ["all", "deepspeed", "metrics", "torch"]
    assert any(r["name"] == "deepspeed" and r["applies"] for r in rows["requirements"])


def test_pyproject_unknown_extra() -> None:
    with pytest.raises(UsageError) as excinfo:
        llamafactory(extras=("deepspeeed",))
    err = usage_error(excinfo)
    assert err.ref == "pins-unknown-extra"
    assert "deepspeeed" in err.message and "deepspeed" in (err.hint or "")


def test_pyproject_without_project_table() -> None:
    text = (DATA / "setup_era" / "pyproject.toml").read_text()
    with pytest.raises(UsageError) as excinfo:
        parse_pyproject(text, origin="setup_era/pyproject.toml")
    err = usage_error(excinfo)
    assert err.ref == "pins-no-project"
    assert "setup_era/pyproject.toml" in err.message
    assert "requirements.txt" in (err.hint or "")


def test_pyproject_invalid_toml_names_file_and_line() -> None:
    text = '[project]\nname = "x"\ndependencies = [\n  "torch>=2",\n  "numpy" "scipy",\n]\n'
    with pytest.raises(UsageError) as excinfo:
        parse_pyproject(text, origin="proj/pyproject.toml")
    err = usage_error(excinfo)
    assert err.ref == "pins-syntax"
    assert err.message.startswith("proj/pyproject.toml:5: invalid TOML")
    assert isinstance(err.__cause__, ValueError)


def test_pyproject_invalid_requirement_names_line() -> None:
    text = '[project]\nname = "x"\ndependencies = [\n  "torch>=2",\n  "numpy>>1",\n]\n'
    with pytest.raises(UsageError) as excinfo:
        parse_pyproject(text, origin="pyproject.toml")
    err = usage_error(excinfo)
    assert err.message == (
        "pyproject.toml:5 [project.dependencies]: invalid requirement 'numpy>>1'"
    )


def test_pyproject_dynamic_dependencies() -> None:
    with pytest.raises(UsageError) as excinfo:
        parse_pyproject((DATA / "dynamic" / "pyproject.toml").read_text(), origin="pyproject.toml")
    assert usage_error(excinfo).ref == "pins-dynamic"


# -- requirements files ------------------------------------------------------------------------


def test_requirements_with_includes_markers_hashes_and_options() -> None:
    pins = load_pins("reqs/requirements.txt", cwd=DATA)
    assert names(pins.requirements) == [
        "numpy",
        "datasets",
        "nltk",
        "jieba",
        "torch",
        "transformers",
        "bitsandbytes",
        "accelerate",
    ]
    req = by_name(pins.requirements)
    assert req["numpy"].origin == os.path.join("reqs", "common", "base.txt") + ":2"
    assert req["nltk"].origin == os.path.join("reqs", "extras", "eval.txt") + ":1"
    assert req["torch"].origin == "reqs/requirements.txt:13"
    assert req["torch"].hashes == (
        "sha256:0d4e8c52a1fcf5ed6cfc256d9a370fcf4360958fc79d0b08a51d55e70914df46",
        "sha256:3b8b8a4b1a2c1d7e0b9ef7c3f1ea0a3a1c1f5e0d2b8c1a3d5e7f9b1c3d5e7f9a",
    )
    assert req["transformers"].specifier_text == ">=4.40,<5"
    assert req["accelerate"].to_dict(LINUX)["specifier"] == ">=0.30,<1.0"
    assert req["accelerate"].to_dict(LINUX)["marker"] == 'python_version >= "3.9"'
    assert req["jieba"].to_dict(DARWIN)["applies"] is False
    assert "bitsandbytes" not in names(pins.applicable(DARWIN))
    assert names(pins.constraints) == ["numpy", "datasets", "tokenizers"]
    assert pins.constraints[0].origin == os.path.join("reqs", "constraints", "lock.txt") + ":2"
    assert pins.index_url == "https://pypi.org/simple"
    assert pins.extra_index_urls == ("https://download.pytorch.org/whl/cu121",)
    assert pins.find_links == ("./wheels",)
    assert pins.skipped == (
        "reqs/requirements.txt:21: -e .",
        "reqs/requirements.txt:22: ./vendor/helper-0.1-py3-none-any.whl",
    )
    assert not pins.is_lock
    # Constraints narrow what requirements allow, and give the baseline of what they pin.
    assert pins.specifier_for("numpy", LINUX) == SpecifierSet("<2,==1.26.4")
    assert pins.baseline() == {
        "torch": Version("2.1.0+cu121"),
        "numpy": Version("1.26.4"),
        "datasets": Version("2.19.0"),
        "tokenizers": Version("0.19.1"),
    }


def test_requirements_syntax_error_names_file_and_line() -> None:
    with pytest.raises(UsageError) as excinfo:
        load_pins("bad/requirements.txt", cwd=DATA)
    err = usage_error(excinfo)
    assert err.ref == "pins-syntax"
    assert err.message == "bad/requirements.txt:7: invalid requirement 'transformers>>4'"
    assert "PEP 508" in (err.hint or "")


def test_requirements_error_in_an_included_file_names_that_file() -> None:
    files = {"top.txt": "torch\n-r sub/child.txt\n", "sub/child.txt": "# first\nnumpy ==\n"}

    def read(location: str) -> tuple[str, str]:
        return files[location.replace(os.sep, "/")], location.replace(os.sep, "/")

    with pytest.raises(UsageError) as excinfo:
        parse_requirements(files["top.txt"], origin="top.txt", read=read)
    assert usage_error(excinfo).message.startswith("sub/child.txt:2: invalid requirement")


def test_requirements_continued_line_reports_its_first_line() -> None:
    text = "numpy\n\nscipy>=1 \\\n  --hash=sha256:00ff \\\n  --hash=nonsense\n"
    with pytest.raises(UsageError) as excinfo:
        parse_requirements(text, origin="r.txt")
    assert usage_error(excinfo).message == "r.txt:3: invalid --hash 'nonsense'"


def test_requirements_include_loop() -> None:
    with pytest.raises(UsageError) as excinfo:
        load_pins("loop/requirements.txt", cwd=DATA)
    err = usage_error(excinfo)
    assert err.ref == "pins-include-loop"
    loop = os.path.join("loop", "requirements.txt")
    assert err.message.startswith(os.path.join("loop", "sub", "more.txt") + ":2: include loop:")
    assert err.message.endswith(f"{loop} -> {os.path.join('loop', 'sub', 'more.txt')} -> {loop}")


def test_requirements_missing_include_and_no_reader(tmp_path: Path) -> None:
    (tmp_path / "requirements.txt").write_text("torch\n-c missing.txt\n")
    with pytest.raises(UsageError) as excinfo:
        load_pins("requirements.txt", cwd=tmp_path)
    err = usage_error(excinfo)
    assert err.ref == "pins-include"
    assert err.message.startswith("requirements.txt:2: cannot read missing.txt")
    with pytest.raises(UsageError) as excinfo:
        parse_requirements("-r other.txt\n", origin="r.txt")
    assert usage_error(excinfo).ref == "pins-include"
    with pytest.raises(UsageError) as excinfo:
        parse_requirements("-r https://user:tok@example.com/r.txt\n", origin="r.txt", read=None)
    err = usage_error(excinfo)
    assert "tok" not in err.message and "***@example.com" in err.message


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("--frobnicate\n", "r.txt:1: unknown option '--frobnicate'"),
        ("numpy\n--index-url\n", "r.txt:2: option --index-url needs a value"),
        ("--hash=sha256:00ff\n", "r.txt:1: --hash without a requirement"),
        ("--pre=yes\n", "r.txt:1: option --pre takes no value"),
        ("-r a.txt b.txt\n", "r.txt:1: unexpected 'b.txt'"),
        ("numpy -r a.txt\n", "r.txt:1: 'numpy' and -r on one line"),
    ],
)
def test_requirements_option_errors(text: str, message: str) -> None:
    with pytest.raises(UsageError) as excinfo:
        parse_requirements(text, origin="r.txt", read=lambda p: ("", p))
    err = usage_error(excinfo)
    assert (err.ref, err.message) == ("pins-syntax", message)


def test_requirements_accepts_pip_only_options_and_forms() -> None:
    text = (
        "--pre\n--prefer-binary\n--only-binary=:all:\n--no-binary torch\n"
        "--trusted-host=example.com\n-ihttps://mirror.example/simple\n"
        "--find-links=https://download.example/wheels.html\n"
        "-e git+https://user:tok@github.com/org/proj.git#egg=proj\n"
        "https://example.com/pkg-1.0.tar.gz\n"
        "proj @ https://example.com/proj-1.0-py3-none-any.whl\n"
        "pkg==1.0 --hash sha256:ABCDEF  # a comment\n"
    )
    pins = parse_requirements(text, origin="r.txt")
    assert pins.index_url == "https://mirror.example/simple"
    assert pins.find_links == ("https://download.example/wheels.html",)
    assert names(pins.requirements) == ["proj", "pkg"]
    assert pins.requirements[0].requirement.url == "https://example.com/proj-1.0-py3-none-any.whl"
    assert pins.requirements[1].hashes == ("sha256:ABCDEF",)
    assert pins.skipped == (
        "r.txt:8: -e git+https://***@github.com/org/proj.git#egg=proj",
        "r.txt:9: https://example.com/pkg-1.0.tar.gz",
    )


def test_requirements_source_and_to_dict_never_show_credentials() -> None:
    text = "--index-url https://bot:s3cret@pypi.example.com/simple\nnumpy==1.26.4\n"
    pins = parse_requirements(text, origin="https://bot:s3cret@files.example.com/r.txt")
    assert pins.index_url == "https://bot:s3cret@pypi.example.com/simple"  # uv needs it
    shown = pins.to_dict(LINUX)
    assert "s3cret" not in repr(shown)
    assert shown["source"] == "https://***@files.example.com/r.txt"
    assert shown["index_url"] == "https://***@pypi.example.com/simple"


# -- lock files --------------------------------------------------------------------------------


def test_requirements_lockfile_is_a_baseline() -> None:
    pins = load_pins("lock/requirements.lock.txt", cwd=DATA)
    assert pins.is_lock
    assert pins.baseline() == {
        "accelerate": Version("0.30.1"),
        "filelock": Version("3.14.0"),
        "numpy": Version("1.26.4"),
        "torch": Version("2.1.0+cu121"),
        "transformers": Version("4.41.2"),
    }
    torch = by_name(pins.requirements)["torch"]
    assert str(torch.requirement) == "torch==2.1.0+cu121"
    assert torch.hashes == (
        "sha256:0d4e8c52a1fcf5ed6cfc256d9a370fcf4360958fc79d0b08a51d55e70914df46",
    )
    assert len(by_name(pins.requirements)["accelerate"].hashes) == 2
    assert pins.index_url == "https://ci-bot:s3cret-token@pypi.example.com/simple"
    assert pins.to_dict()["index_url"] == "https://***@pypi.example.com/simple"
    assert Version("2.1.0+cu121") in pins.specifier_for("torch")


def test_pylock_baseline_hashes_and_markers() -> None:
    pins = load_pins("pylock/pylock.toml", cwd=DATA)
    assert pins.is_lock
    assert pins.baseline() == {
        "colorama": Version("0.4.6"),
        "numpy": Version("1.26.4"),
        "torch": Version("2.1.0+cu121"),
    }
    assert pins.baseline(DARWIN) == {"numpy": Version("1.26.4")}
    assert names(pins.applicable(LINUX)) == ["numpy", "torch"]
    numpy = by_name(pins.requirements)["numpy"]
    assert numpy.hashes == (
        "sha256:2a02aba9ed12e4ac4eb3ea9421c420301a0c6460d9830d74a9df87efa4912010",
        "sha256:666dbfb6ec68962c033a450943ded891bed2d54e6755e35e5835d63f4f6931d5",
        "sha256:edd8b5fe47dab091176d21bb6de568acdd906d1887a4584a15a9a96a1dca06ef",
    )
    assert by_name(pins.requirements)["colorama"].to_dict(LINUX)["marker"] == (
        'sys_platform == "win32"'
    )
    assert pins.extra_index_urls == ("https://download.pytorch.org/whl/cu121",)
    assert len(pins.skipped) == 1 and "myproject" in pins.skipped[0]
    assert pins.requires_python == ">=3.11"


def test_pylock_lock_file_markers_use_selected_extras() -> None:
    text = (
        'lock-version = "1.0"\nextras = ["gpu"]\ncreated-by = "test"\n'
        '[[packages]]\nname = "cupy"\nversion = "13.0.0"\nmarker = "\'gpu\' in extras"\n'
        'wheels = [{name = "cupy-13.0.0-py3-none-any.whl", url = "https://example.org/c.whl", '
        'hashes = {sha256 = "00"}}]\n'
    )
    pins = parse_pylock(text, origin="pylock.toml")
    assert pins.applicable(LINUX) == []
    assert names(pins.applicable(LINUX, extras=["gpu"])) == ["cupy"]


def test_a_pylock_an_installer_refuses_is_a_clear_error() -> None:
    """A file entry with neither url nor path (what older envbisect wrote for a wheel of a
    folder) fails packaging.pylock's validation: refused with what the field lacks."""
    text = (
        'lock-version = "1.0"\ncreated-by = "test"\n'
        '[[packages]]\nname = "torch"\nversion = "2.13.0+cpu"\n'
        'wheels = [{name = "torch-2.13.0+cpu-cp311-cp311-linux_x86_64.whl", '
        'hashes = {sha256 = "00"}}]\n'
    )
    with pytest.raises(UsageError) as excinfo:
        parse_pylock(text, origin="pylock.toml")
    err = usage_error(excinfo)
    assert err.ref == "pins-syntax" and "not a valid PEP 751 lock" in err.message
    assert "path or url must be provided in 'packages[0].wheels[0]'" in err.message


def test_pylock_unsupported_version() -> None:
    with pytest.raises(UsageError) as excinfo:
        parse_pylock('lock-version = "2.0"\n', origin="pylock.toml")
    assert usage_error(excinfo).ref == "pins-lock-version"


# -- core metadata and released distributions -------------------------------------------------


def test_metadata_requires_dist_and_extras() -> None:
    pins = parse_metadata(METADATA.read_text(), origin="METADATA")
    req = by_name(pins.requirements)
    assert req["transformers"].specifier_text == "!=4.52.0,!=4.57.0,<=5.6.0,>=4.55.0"
    assert req["nltk"].extra == "metrics"
    assert req["vllm"].extra == "vllm"
    assert req["datasets"].extra is None
    assert "this-is-the-description-not-a-header" not in req
    assert pins.provides_extras == ("torch", "metrics", "deepspeed", "vllm", "all")
    assert pins.project == "llamafactory" and pins.requires_python == ">=3.10.0"
    base = names(pins.applicable(LINUX))
    assert "nltk" not in base and "bitsandbytes" in base
    assert "vllm" in names(pins.applicable(LINUX, extras=["vllm"]))
    assert "vllm" not in names(pins.applicable(DARWIN, extras=["vllm"]))
    everything = names(pins.applicable(LINUX, extras=["all"]))
    assert {"nltk", "jieba", "torchvision", "deepspeed"} <= set(everything)
    assert "llamafactory" not in everything


def test_metadata_rejects_what_is_not_metadata() -> None:
    with pytest.raises(UsageError) as excinfo:
        parse_metadata("<html>rate limited</html>", origin="x==1 METADATA")
    assert usage_error(excinfo).ref == "pins-syntax"


def test_load_pins_released_distribution_fetches_its_metadata_once(tmp_path: Path) -> None:
    calls: list[tuple[str, str]] = []

    def fetch(name: str, version: str) -> str:
        calls.append((name, version))
        return METADATA.read_text()

    pins = load_pins("llamafactory[metrics]==0.9.5", cwd=tmp_path, fetch_metadata=fetch)
    assert calls == [("llamafactory", "0.9.5")]
    assert pins.source == "llamafactory[metrics]==0.9.5"
    assert pins.extras == ("metrics",)
    assert "nltk" in names(pins.applicable(LINUX))
    with pytest.raises(UsageError) as excinfo:
        load_pins("llamafactory==0.9.5", cwd=tmp_path)
    assert usage_error(excinfo).ref == "pins-no-index"


@pytest.mark.parametrize(
    "spec", ["requirements.txt", "missing/pyproject.toml", "llamafactory>=0.9", "torch==2.*", "=="]
)
def test_load_pins_no_such_source(tmp_path: Path, spec: str) -> None:
    with pytest.raises(UsageError) as excinfo:
        load_pins(spec, cwd=tmp_path, fetch_metadata=lambda n, v: "")
    err = usage_error(excinfo)
    assert err.ref == "pins-not-found"
    assert err.message == f"no such pin source: {spec}"
    assert "installed:PYTHON" in (err.hint or "") and "name==version" in (err.hint or "")


# -- load_pins over folders --------------------------------------------------------------------


def test_load_pins_folder_with_only_requirements() -> None:
    pins = load_pins("only_reqs", cwd=DATA)
    assert pins.is_lock and pins.source == "only_reqs"
    assert pins.requirements[0].origin == os.path.join("only_reqs", "requirements.txt") + ":1"


def test_load_pins_folder_prefers_pyproject() -> None:
    pins = load_pins(str(DATA / "llamafactory"), cwd=Path("/"), extras=["metrics"])
    assert pins.project == "llamafactory" and pins.extras == ("metrics",)
    assert "nltk" in names(pins.applicable(LINUX))


@pytest.mark.parametrize("folder", ["setup_era", "dynamic"])
def test_load_pins_setup_py_era_folder_falls_back_to_requirements(folder: str) -> None:
    pins = load_pins(folder, cwd=DATA)
    assert pins.requirements[0].origin.startswith(os.path.join(folder, "requirements.txt"))


def test_load_pins_empty_folder_and_bad_extras(tmp_path: Path) -> None:
    with pytest.raises(UsageError) as excinfo:
        load_pins(".", cwd=tmp_path)
    assert usage_error(excinfo).ref == "pins-not-found"
    with pytest.raises(UsageError) as excinfo:
        load_pins("only_reqs", cwd=DATA, extras=["gpu"])
    err = usage_error(excinfo)
    assert err.ref == "pins-unknown-extra" and err.hint == "it provides no extras"


def test_load_pins_unreadable_file(tmp_path: Path) -> None:
    (tmp_path / "requirements.txt").write_bytes(b"torch\xff\xfe\n")
    with pytest.raises(UsageError) as excinfo:
        load_pins("requirements.txt", cwd=tmp_path)
    assert usage_error(excinfo).ref == "pins-unreadable"


# -- installed environments --------------------------------------------------------------------


def test_installed_lists_this_interpreter() -> None:
    pins = load_pins(f"installed:{sys.executable}", cwd=Path.cwd())
    assert pins.is_lock
    assert pins.source == f"installed:{sys.executable}"
    baseline = pins.baseline()
    assert baseline["pytest"] == Version(importlib.metadata.version("pytest"))
    assert baseline["packaging"] == Version(importlib.metadata.version("packaging"))
    assert str(by_name(pins.requirements)["pytest"].requirement).startswith("pytest==")


def test_installed_with_missing_or_broken_interpreters(tmp_path: Path) -> None:
    for spec in ("installed:no-such-python-3.99", f"installed:{tmp_path / 'nope'}", "installed:"):
        with pytest.raises(UsageError) as excinfo:
            load_pins(spec, cwd=tmp_path)
        assert usage_error(excinfo).ref == "pins-no-interpreter"
    broken = tmp_path / "python"
    broken.write_text("#!/bin/sh\necho 'Fatal Python error: init_fs_encoding' >&2\nexit 1\n")
    broken.chmod(broken.stat().st_mode | stat.S_IXUSR)
    with pytest.raises(UsageError) as excinfo:
        load_pins("installed:./python", cwd=tmp_path)
    err = usage_error(excinfo)
    assert err.ref == "pins-no-interpreter" and "init_fs_encoding" in err.message


# -- properties --------------------------------------------------------------------------------

_versions = st.tuples(*(st.integers(0, 3),) * 3).map(lambda t: ".".join(map(str, t)))
_clauses = st.tuples(st.sampled_from(["==", "!=", ">=", "<=", ">", "<", "~="]), _versions).map(
    "".join
)
_atoms = st.one_of(
    st.tuples(st.sampled_from(["==", "!="]), st.sampled_from(["linux", "darwin", "win32"])).map(
        lambda t: f'sys_platform {t[0]} "{t[1]}"'
    ),
    st.tuples(st.sampled_from(["<", ">=", "=="]), st.sampled_from(["3.9", "3.11", "3.12"])).map(
        lambda t: f'python_version {t[0]} "{t[1]}"'
    ),
    st.sampled_from(["x86_64", "arm64"]).map(lambda m: f'platform_machine == "{m}"'),
    st.sampled_from(["gpu", "eval"]).map(lambda e: f'extra == "{e}"'),
)
_markers = st.recursive(
    _atoms,
    lambda inner: st.tuples(inner, st.sampled_from(["and", "or"]), inner).map(
        lambda t: f"({t[0]} {t[1]} {t[2]})"
    ),
    max_leaves=5,
)


@settings(max_examples=200, deadline=None)
@given(
    groups=st.lists(
        st.tuples(st.lists(_clauses, min_size=1, max_size=3), st.booleans()),
        min_size=1,
        max_size=4,
    ),
    probes=st.lists(_versions, min_size=1, max_size=8),
)
def test_specifier_for_is_the_intersection_of_every_clause(
    groups: list[tuple[list[str], bool]], probes: list[str]
) -> None:
    def pin(text: str, i: int) -> Pin:
        return Pin(requirement=Requirement(text), origin=f"r.txt:{i}", text=text)

    spellings = ["pkg", "Pkg", "PKG"]
    reqs = [
        pin(f"{spellings[i % 3]}{','.join(c)}", i) for i, (c, con) in enumerate(groups) if not con
    ]
    cons = [pin(f"pkg{','.join(c)}", i) for i, (c, con) in enumerate(groups) if con]
    pins = PinSet(
        source="r.txt", requirements=(*reqs, pin("other<0.1", 99)), constraints=tuple(cons)
    )
    spec = pins.specifier_for("PKG", LINUX)
    clauses = [c for cs, _ in groups for c in cs]
    for probe in probes:
        expected = all(Specifier(c).contains(probe, prereleases=True) for c in clauses)
        assert spec.contains(probe, prereleases=True) is expected


@settings(max_examples=200, deadline=None)
@given(
    clauses=st.lists(_clauses, max_size=3),
    marker=st.none() | _markers,
    extras=st.sets(st.sampled_from(["gpu", "eval"])),
    spaced=st.booleans(),
    commented=st.booleans(),
    continued=st.booleans(),
)
def test_requirements_round_trip_through_to_dict(
    clauses: list[str],
    marker: str | None,
    extras: set[str],
    spaced: bool,
    commented: bool,
    continued: bool,
) -> None:
    spec = (" , " if spaced else ",").join(clauses)
    line = f"pkg {spec}" if spaced else f"pkg{spec}"
    if marker is not None:
        line += " \\\n    ; " + marker if continued else f"; {marker}"
    if commented:
        line += "  # why it is pinned"
    pins = parse_requirements(f"# header\n\n{line}\n", origin="r.txt")
    (pin,) = pins.requirements
    for env in (LINUX, DARWIN):
        row = pin.to_dict(env, extras=extras)
        assert row["name"] == "pkg" and row["specifier"] == ",".join(clauses)
        assert pin.origin == "r.txt:3"
        rebuilt = Requirement(f"pkg{row['specifier']}" + (f"; {row['marker']}" if marker else ""))
        assert rebuilt == pin.requirement
        if marker is None:
            assert row["marker"] is None and row["applies"] is True
            continue
        assert Marker(row["marker"]) == Marker(marker)
        expected = any(Marker(marker).evaluate({**env, "extra": e}) for e in sorted(extras) or [""])
        assert row["applies"] is expected
        assert (pin in pins.applicable(env, extras)) is expected
