"""A command on a real terminal: its stderr (and, for a shell, stdin too) on a pseudo-terminal,
as a user's terminal would be, and what the terminal received read back as bytes."""

from __future__ import annotations

import fcntl
import os
import pty
import struct
import subprocess
import termios
import threading


def under_pty(argv: list[str], env: dict[str, str], cols: int = 100) -> tuple[int, str, str]:
    """Run argv with stderr on a pseudo-terminal (``cols`` wide); (exit code, stdout, what the
    terminal received)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, cols, 0, 0))
    proc = subprocess.Popen(
        argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=slave, env=env, text=True
    )
    os.close(slave)
    chunks: list[bytes] = []

    def read() -> None:
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: the other side closed
                return
            if not data:
                return
            chunks.append(data)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    out, _ = proc.communicate(timeout=300)
    reader.join(timeout=10)
    os.close(master)
    return proc.returncode, out, b"".join(chunks).decode("utf-8", "replace")
