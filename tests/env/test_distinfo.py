"""distinfo.py reads a site-packages folder as importlib.metadata does: the METADATA headers
as ``email.message_from_string`` keeps them (fuzzed, on the lines that matter: header-like
lines, continuations, envelope lines, missing names, blank lines, every line ending), and
the distributions in the same order; what it does not read is said (``NotPlain``)."""

from __future__ import annotations

import email
from importlib import metadata
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from envbisect.env import distinfo

_BITS = st.sampled_from(
    ["Name: torch", "Version: 2.1.0", "Requires-Dist: numpy", "requires-dist: x; extra == 'a'",
     "Metadata-Version: 2.1", "From someone", "From: x", ": no name", "Name : spaced", " cont",
     "\tcont", "body text", "Na\x7fme: x", "Name:", "Name:  \t two", "\n", "\r\n", "\r", "",
     "é: x", "Version:1"]
)  # fmt: skip
_ENDS = st.sampled_from(["\n", "\r\n", "\r", ""])
METADATA = st.lists(st.tuples(st.one_of(_BITS, st.text(max_size=8)), _ENDS), max_size=10).map(
    lambda parts: "".join(a + b for a, b in parts)
)


@settings(max_examples=600, deadline=None, derandomize=True,
          suppress_health_check=list(HealthCheck))  # fmt: skip
@given(METADATA)
@example("From x\nName: a\n")
@example("Name: a\n continued\r\n\tagain\nVersion: 1\n\nName: body\n")
@example(" leading continuation\nName: a\n")
@example("Name: a\nFrom late\n")
@example("Name: a\nFrom middle\n more\nVersion: 2\n")
def test_headers_read_as_the_email_parser_reads_them(text: str) -> None:
    msg = email.message_from_string(text)
    ours = distinfo.Headers(text)
    for name in ("Name", "Version", "Requires-Dist", "From", "Metadata-Version", "é"):
        assert ours[name] == msg[name], (name, text)
        assert ours.get_all(name) == msg.get_all(name), (name, text)
    assert [ours[k] for k in msg] == [msg[k] for k in msg]  # every name it has


def _dist(site: Path, folder: str, metadata_text: str, **files: str) -> None:
    d = site / folder
    d.mkdir(parents=True)
    (d / "METADATA").write_text(metadata_text, encoding="utf-8")
    for name, text in files.items():
        (d / name).write_text(text, encoding="utf-8")


def test_distributions_as_importlib_finds_them(tmp_path: Path) -> None:
    site = tmp_path / "site"
    _dist(site, "b_pkg-1.0.dist-info", "Name: b-pkg\nVersion: 1.0\nRequires-Dist: a\n",
          RECORD="b_pkg/__init__.py,,\n")  # fmt: skip
    _dist(site, "A-2.0.dist-info", "Metadata-Version: 2.1\nName: A\nVersion: 2.0\n",
          RECORD='"a/x,y.py",,\na/__init__.py,,\n')  # fmt: skip
    _dist(site, "c-3.dist-info", "", **{"PKG-INFO": "Name: c\nVersion: 3\n"})
    _dist(site, "d-4.dist-info", "Name: d\nVersion: 4\n", **{"requires.txt": "six\n"})
    (site / "not-a-dist").mkdir()
    ours = distinfo.distributions(site)
    theirs = list(metadata.distributions(path=[str(site)]))
    assert [d.metadata["Name"] for d in ours] == [d.metadata["Name"] for d in theirs]
    for a, b in zip(ours, theirs, strict=True):
        assert a.metadata["Version"] == b.metadata["Version"]
        assert a.requires == b.requires
        assert a.read_text("RECORD") == b.read_text("RECORD")
        assert a.locate_file("x") == b.locate_file("x")
    byname = {d.metadata["Name"]: d for d in ours}
    assert [str(f) for f in byname["A"].files] == ["a/x,y.py", "a/__init__.py"]  # csv's
    assert byname["d"].requires == ["six"]  # requires.txt, as importlib reads it


@pytest.mark.parametrize("second", ["other-1.0.egg-info", "B.Pkg-2.0.dist-info"])
def test_what_it_does_not_read_is_said(tmp_path: Path, second: str) -> None:
    site = tmp_path / "site"
    _dist(site, "b_pkg-1.0.dist-info", "Name: b-pkg\nVersion: 1.0\n")
    _dist(site, second, "Name: x\nVersion: 2.0\n")  # an egg, or a second b-pkg
    with pytest.raises(distinfo.NotPlain):
        distinfo.distributions(site)
