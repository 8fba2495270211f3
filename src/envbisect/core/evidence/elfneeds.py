"""What a shared object asks of the loader: the newest ``GLIBC_2.N`` its version needs name,
and the libraries it links against (``DT_NEEDED``: ``libcudart.so.12``).

A manylinux tag is the wheel's claim; the binary's ``.gnu.version_r`` section is the fact the
loader checks (``version `GLIBC_2.28' not found``), and its ``.dynamic`` section names the
libraries the loader must find (``libcudart.so.11.0: cannot open shared object file``). Read
from the bytes of a 64-bit little-endian ELF file (x86_64, aarch64): the section headers, the
version-needs and dynamic sections and the string tables they link to. A shared object too
large to read whole is judged by its first bytes, where the dynamic string table lies
(``libraries_named_in``). Pure: bytes in, an answer out; None for anything that is not such
an ELF file, or a damaged one.
"""

from __future__ import annotations

import re
import struct

SHT_DYNAMIC = 6
SHT_GNU_VERNEED = 0x6FFFFFFE
DT_NEEDED = 1
_GLIBC = re.compile(rb"^GLIBC_(\d+)\.(\d+)(?:\.\d+)?$")


def glibc_needed_by(data: bytes) -> tuple[int, int] | None:
    """The newest ``GLIBC_X.Y`` the shared object's version needs name, (0, 0) for one that
    names none, None where ``data`` is not a readable 64-bit little-endian ELF file."""
    try:
        return _needed(data)
    except (struct.error, IndexError, ValueError):
        return None


def libraries_needed_by(data: bytes) -> tuple[str, ...] | None:
    """The libraries the shared object links against (its ``DT_NEEDED`` entries, in order),
    None where ``data`` is not a readable 64-bit little-endian ELF file."""
    try:
        sections = _sections(data)
        if sections is None:
            return None
        out: list[str] = []
        for _, kind, _, _, offset, size, link, _, _, _ in sections:
            if kind != SHT_DYNAMIC:
                continue
            strings = data[sections[link][4] : sections[link][4] + sections[link][5]]
            for at in range(offset, offset + size - 15, 16):
                tag, value = struct.unpack_from("<qQ", data, at)
                if tag == 0:
                    break
                if tag == DT_NEEDED:
                    end = strings.find(b"\0", value)
                    out.append(strings[value : end if end >= 0 else None].decode("latin-1"))
        return tuple(out)
    except (struct.error, IndexError, ValueError):
        return None


_SONAME = re.compile(rb"(?<=\0)(lib[A-Za-z0-9_+-]+(?:\.[A-Za-z0-9_+-]+)*?\.so(?:\.\d+)*)(?=\0)")


def libraries_named_in(head: bytes) -> tuple[str, ...] | None:
    """The library names (``libcudart.so.12``) in the first bytes of a shared object too large
    to read whole: its dynamic string table lies near the start, before the code, and holds
    every ``DT_NEEDED`` name (and the version needs' file names). None where ``head`` does not
    start a 64-bit little-endian ELF file."""
    if head[:4] != b"\x7fELF" or len(head) < 6 or head[4] != 2 or head[5] != 1:
        return None
    return tuple(dict.fromkeys(m.decode("latin-1") for m in _SONAME.findall(head)))


def _sections(data: bytes) -> list[tuple[int, ...]] | None:
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        return None  # not ELF, not 64-bit, not little-endian
    (shoff,) = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    if shentsize < 64 or shoff + shnum * shentsize > len(data):
        return None
    return [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]


def _needed(data: bytes) -> tuple[int, int] | None:
    sections = _sections(data)
    if sections is None:
        return None
    best = (0, 0)
    for _, kind, _, _, offset, size, link, info, _, _ in sections:
        if kind != SHT_GNU_VERNEED:
            continue
        str_offset, str_size = sections[link][4], sections[link][5]
        strings = data[str_offset : str_offset + str_size]
        at = offset
        for _ in range(info):  # sh_info: the number of Verneed entries
            _, cnt, _, aux, nxt = struct.unpack_from("<HHIII", data, at)
            vat = at + aux
            for _ in range(cnt):
                _, _, _, name, vnext = struct.unpack_from("<IHHII", data, vat)
                end = strings.find(b"\0", name)
                m = _GLIBC.match(strings[name : end if end >= 0 else None])
                if m:
                    best = max(best, (int(m.group(1)), int(m.group(2))))
                if not vnext:
                    break
                vat += vnext
            if not nxt:
                break
            at += nxt
        if at > offset + size:
            return None
    return best
