"""The libraries a shared object links (core/evidence/elfneeds.py), which CUDA toolkit and
which ``nvidia-*`` wheel a library name belongs to (core/evidence/cudalibs.py), the
``cannot open shared object file`` message (core/evidence/failure.py) and the CUDA a report
states (core/evidence/stated.py). The ELF reader is also run on shared objects gcc builds
here, linked against a library named as CUDA's runtime is."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from envbisect.core.evidence import cudalibs
from envbisect.core.evidence.elfneeds import libraries_named_in, libraries_needed_by
from envbisect.core.evidence.failure import MissingLibrary, read_failure
from envbisect.core.evidence.stated import stated_cuda
from support.wheels import elf_linking


def test_the_libraries_a_shared_object_links_from_its_dynamic_section() -> None:
    elf = elf_linking("libcudart.so.11.0", "libc.so.6")
    assert libraries_needed_by(elf) == ("libcudart.so.11.0", "libc.so.6")
    assert libraries_needed_by(elf_linking()) == ()
    assert libraries_needed_by(b"not an ELF file") is None
    assert libraries_needed_by(elf[:70]) is None  # cut short: no answer, no error


def test_a_large_shared_object_is_judged_by_its_first_bytes() -> None:
    elf = elf_linking("libcublas.so.12", "libstdc++.so.6", padding=4096)
    assert libraries_named_in(elf[:1024]) == ("libcublas.so.12", "libstdc++.so.6")
    assert libraries_named_in(b"MZ\0libcublas.so.12\0") is None  # not ELF


@pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed")
def test_shared_objects_gcc_links_against_a_cuda_named_library(tmp_path: Path) -> None:
    (tmp_path / "rt.c").write_text("int cudaRuntimeGetVersion(int *v) { *v = 11080; return 0; }\n")
    (tmp_path / "ext.c").write_text(
        "int cudaRuntimeGetVersion(int *v);\n"
        "int ext(void) { int v; return cudaRuntimeGetVersion(&v); }\n"
    )
    subprocess.run(
        ["gcc", "-shared", "-fPIC", "-Wl,-soname,libcudart.so.11.0", "-o",
         str(tmp_path / "libcudart.so.11.0"), str(tmp_path / "rt.c")],
        check=True,
    )  # fmt: skip
    subprocess.run(
        ["gcc", "-shared", "-fPIC", "-o", str(tmp_path / "_C.so"), str(tmp_path / "ext.c"),
         f"-L{tmp_path}", "-l:libcudart.so.11.0"],
        check=True,
    )  # fmt: skip
    data = (tmp_path / "_C.so").read_bytes()
    needed = libraries_needed_by(data)
    assert needed is not None and "libcudart.so.11.0" in needed
    named = libraries_named_in(data[: 64 * 1024])
    assert named is not None and "libcudart.so.11.0" in named


@pytest.mark.parametrize(
    ("soname", "toolkit"),
    [
        ("libcudart.so.11.0", 11),
        ("libcudart.so.12", 12),
        ("libcublasLt.so.11", 11),
        ("libcufft.so.10", 11),  # cufft's major is one behind the toolkit's
        ("libnvrtc.so.11.2", 11),
        ("libcurand.so.10", None),  # shipped with CUDA 11 and 12 alike
        ("libcudnn.so.8", None),  # not the toolkit's
        ("libc.so.6", None),
        ("not a soname", None),
    ],
)
def test_the_toolkit_a_library_name_belongs_to(soname: str, toolkit: int | None) -> None:
    assert cudalibs.toolkit_of(soname) == toolkit


def test_a_release_fits_the_reports_toolkit() -> None:
    cu11 = ["libcudart.so.11.0", "libcublas.so.11", "libc.so.6"]
    cu12 = ["libcudart.so.12", "libc.so.6"]
    assert cudalibs.fits(cu11, "libcudart.so.12", 11)
    assert not cudalibs.fits(cu12, "libcudart.so.12", 11)
    assert cudalibs.fits(["libc.so.6"], "libcudart.so.12", 11)  # links no toolkit library
    # a binary per toolkit (bitsandbytes): fits where one of them is the report's
    assert cudalibs.fits([*cu11, *cu12], "libcudart.so.12", 11)
    assert not cudalibs.fits(cu11, "libcudart.so.12", 12)
    # no toolkit said: the machine lacks the missing one's toolkit and, first, the newer ones
    assert cudalibs.fits(cu11, "libcudart.so.12", None)
    assert not cudalibs.fits(cu12, "libcudart.so.12", None)
    assert not cudalibs.fits(["libcudart.so.13"], "libcudart.so.12", None)
    # or it has a newer one than the old release asked for
    assert cudalibs.fits(cu12, "libcudart.so.11.0", None, newer=True)
    assert not cudalibs.fits(cu11, "libcudart.so.11.0", None, newer=True)
    # a library of no toolkit: only its own name counts
    assert not cudalibs.fits(["libcudnn.so.8"], "libcudnn.so.8", 12)
    assert cudalibs.fits(["libcudnn.so.9"], "libcudnn.so.8", 12)


def test_the_nvidia_wheel_a_release_requires_for_a_library() -> None:
    requires = [
        "filelock",
        'nvidia-cuda-runtime-cu12 (==12.1.105) ; platform_system == "Linux"',
        'nvidia-cudnn-cu12==8.9.2.26; platform_system == "Linux"',
        "nvidia-cublas-cu11==11.10.3.66",
    ]
    assert cudalibs.nvidia_dist_for("libcudart.so.12", requires) == (
        "nvidia-cuda-runtime-cu12",
        "==12.1.105",
    )
    assert cudalibs.nvidia_dist_for("libcudnn.so.8", requires) == (
        "nvidia-cudnn-cu12",
        "==8.9.2.26",
    )
    assert cudalibs.nvidia_dist_for("libcublas.so.12", requires) is None  # it requires cu11's
    assert cudalibs.nvidia_dist_for("libfoo.so.1", requires) is None


def test_cannot_open_shared_object_file_names_the_module_loading_it() -> None:
    text = (
        "Traceback (most recent call last):\n"
        '  File "/srv/u/run.py", line 1, in <module>\n'
        "    from vllm import LLM\n"
        '  File "/srv/conda/lib/python3.10/site-packages/vllm/model_executor/layers/'
        'activation.py", line 9, in <module>\n'
        "    from vllm._C import ops\n"
        "ImportError: libcudart.so.12: cannot open shared object file: No such file or "
        "directory\n"
    )
    (item,) = read_failure(text).items
    assert isinstance(item, MissingLibrary)
    assert (item.library, item.module) == ("libcudart.so.12", "vllm._C")
    relative = (
        '  File "/usr/lib/python3/dist-packages/xformers/ops/__init__.py", line 9, in <module>\n'
        "    from . import _C\n"
        "OSError: libcublasLt.so.11: cannot open shared object file: No such file or directory\n"
    )
    (item,) = read_failure(relative).items
    assert isinstance(item, MissingLibrary)
    assert (item.library, item.module) == ("libcublasLt.so.11", "xformers.ops._C")
    (bare,) = read_failure("OSError: libnvrtc.so.11.2: cannot open shared object file").items
    assert isinstance(bare, MissingLibrary) and bare.module is None
    # the import quoted just above the error, no traceback (vllm-project/vllm#1718)
    quoted = (
        "```\nfrom vllm import cuda_utils\nImportError: libcudart.so.12: cannot open shared "
        "object file: No such file or directory\n```"
    )
    (item,) = read_failure(quoted).items
    assert isinstance(item, MissingLibrary) and item.module == "vllm"
    # torch 2.0's own search for the nvidia-* wheels' libraries (pytorch/pytorch#100974)
    (item,) = read_failure(
        "ValueError: libnvrtc.so.*[0-9].*[0-9] not found in the system path"
    ).items
    assert isinstance(item, MissingLibrary)
    assert (item.library, item.module) == ("libnvrtc.so", "torch")


@pytest.mark.parametrize(
    ("text", "cuda"),
    [
        ("Cuda compilation tools, release 11.8, V11.8.89", (11, 8)),
        ("torch 2.1.2+cu118", (11, 8)),
        ("CUDA used to build PyTorch: 12.1", (12, 1)),
        ("I use CUDA 11.7 on the cluster", (11, 7)),
        ("pytorch2.0 cuda12.4", (12, 4)),
        ("| NVIDIA-SMI 535.54.03   Driver Version: 535.54.03   CUDA Version: 12.2 |", (12, 2)),
        ("libcudart.so.11.0: cannot open shared object file", None),
    ],
)
def test_the_cuda_a_report_states(text: str, cuda: tuple[int, int] | None) -> None:
    assert stated_cuda(text) == cuda
