"""Completion completes file names where an argument is a path, as ``cat r1<TAB>`` does: the
scripts ``envbisect completion SHELL`` prints, loaded in the real shells. bash: an interactive
bash on a pseudo-terminal, typed into key by key, the line it completed read back. fish:
fish's own ``complete -C`` (what fish offers at that point of a line)."""

from __future__ import annotations

import os
import pty
import re
import select
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from support.cli import envbisect

ESCAPES = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[()][A-Z0-9]|\r")


class Terminal:
    """An interactive shell on a pseudo-terminal: ``type`` sends keys, ``until`` reads what
    the terminal shows until a text appears (or the shell is given up on)."""

    def __init__(self, argv: list[str], cwd: Path, env: dict[str, str]) -> None:
        self.master, slave = pty.openpty()
        self.proc = subprocess.Popen(
            argv, stdin=slave, stdout=slave, stderr=slave, cwd=cwd, env=env,
            start_new_session=True,
        )  # fmt: skip
        os.close(slave)
        self.screen = ""

    def type(self, keys: str) -> None:
        os.write(self.master, keys.encode())

    def until(self, text: str, give_up: float = 60) -> str:
        """What the terminal showed (escapes dropped) once ``text`` is in it."""
        end = time.monotonic() + give_up  # a bound on a broken shell, not a timing assertion
        while text not in ESCAPES.sub("", self.screen) and time.monotonic() < end:
            ready, _, _ = select.select([self.master], [], [], 0.5)
            if ready:
                try:
                    self.screen += os.read(self.master, 65536).decode("utf-8", "replace")
                except OSError:
                    break
        return ESCAPES.sub("", self.screen)

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()
        os.close(self.master)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    for name in ("r1.md", "lockA.txt", "ab.toml"):
        (work / name).write_text("x\n")
    (work / "wheels").mkdir()
    return work


def _script(shell: str, tmp_path: Path) -> Path:
    proc = envbisect("completion", shell)
    assert proc.returncode == 0, proc.stderr
    path = tmp_path / f"envbisect.{shell}"
    path.write_text(proc.stdout)
    return path


def _bash_completes(term: Terminal, line: str, marker: str) -> str:
    """The line as bash holds it after ``line`` and a TAB: ``echo`` put in front and run, so
    the completed line is printed whole on a line of its own after ``marker``."""
    term.type(f"{line}\t")
    term.type(f"\x01echo {marker} \n")  # Ctrl-A: to the line's start
    shown = term.until(f"\n{marker} ")
    after = shown.rsplit(f"\n{marker} ", 1)
    assert len(after) == 2, shown
    return after[1].split("\n", 1)[0].strip()


@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash on this machine")
def test_bash_completes_file_names_where_a_path_goes(tmp_path: Path, folder: Path) -> None:
    script = _script("bash", tmp_path)
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp_path),
        "TERM": "dumb",
        "INPUTRC": "/dev/null",  # readline's defaults: TAB completes
        "PS1": "$ ",
    }
    term = Terminal(["bash", "--norc", "--noprofile", "-i"], folder, env)
    try:
        term.type(f"source {script}; echo loaded-$((40+2))\n")
        term.until("loaded-42")
        # as cat completes it
        assert _bash_completes(term, "cat r1", "A1") == "cat r1.md"
        # a positional argument that is a file (it beeped), each of diff's two
        assert _bash_completes(term, "envbisect check r1", "A2") == "envbisect check r1.md"
        assert _bash_completes(term, "envbisect why r1", "A3") == "envbisect why r1.md"
        assert _bash_completes(term, "envbisect diff lockA.txt r1", "A4") == (
            "envbisect diff lockA.txt r1.md"
        )
        # an option that takes a file, and one that takes a folder
        assert _bash_completes(term, "envbisect run --repro ab", "A5") == (
            "envbisect run --repro ab.toml"
        )
        assert _bash_completes(term, "envbisect run --find-links whe", "A6") == (
            "envbisect run --find-links wheels/"
        )
        # subcommands and flags are still completed as before
        assert _bash_completes(term, "envbisect chec", "A7") == "envbisect check"
        assert _bash_completes(term, "envbisect check --her", "A8") == "envbisect check --here"
    finally:
        term.close()


def _fish_offers(script: Path, folder: Path, line: str) -> list[str]:
    proc = subprocess.run(
        ["fish", "--no-config", "-c", f"source {script}; complete -C{line!r}"],
        capture_output=True, text=True, cwd=folder, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return [ln.split("\t", 1)[0] for ln in proc.stdout.splitlines()]


@pytest.mark.skipif(
    shutil.which("fish") is None,
    reason="no fish on this machine (Debian's package: apt-get install fish; .ci/run does)",
)
def test_fish_completes_file_names_where_a_path_goes(tmp_path: Path, folder: Path) -> None:
    script = _script("fish", tmp_path)
    assert _fish_offers(script, folder, "cat r1") == ["r1.md"]
    # the script turns files off for envbisect as a whole, and on again where a path goes
    assert _fish_offers(script, folder, "envbisect check r1") == ["r1.md"]
    assert _fish_offers(script, folder, "envbisect diff lockA.txt r1") == ["r1.md"]
    assert _fish_offers(script, folder, "envbisect run --repro ab") == ["ab.toml"]
    assert "r1.md" not in _fish_offers(script, folder, "envbisect run --package r1")
    assert "check" in _fish_offers(script, folder, "envbisect chec")
