"""What a shared object asks of the C library: the newest ``GLIBC_2.N`` its version needs name.

A manylinux tag is the wheel's claim; the binary's ``.gnu.version_r`` section is the fact the
loader checks (``version `GLIBC_2.28' not found``). Read from the bytes of a 64-bit
little-endian ELF file (x86_64, aarch64): the section headers, the version-needs section
(``SHT_GNU_verneed``) and the string table it links to. Pure: bytes in, a version out; None
for anything that is not such an ELF file, or a damaged one.
"""

from __future__ import annotations

import re
import struct

SHT_GNU_VERNEED = 0x6FFFFFFE
_GLIBC = re.compile(rb"^GLIBC_(\d+)\.(\d+)(?:\.\d+)?$")


def glibc_needed_by(data: bytes) -> tuple[int, int] | None:
    """The newest ``GLIBC_X.Y`` the shared object's version needs name, (0, 0) for one that
    names none, None where ``data`` is not a readable 64-bit little-endian ELF file."""
    try:
        return _needed(data)
    except (struct.error, IndexError, ValueError):
        return None


def _needed(data: bytes) -> tuple[int, int] | None:
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        return None  # not ELF, not 64-bit, not little-endian
    (shoff,) = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    if shentsize < 64 or shoff + shnum * shentsize > len(data):
        return None
    sections = [
        struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)
    ]
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
