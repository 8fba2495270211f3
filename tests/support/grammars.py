"""Hypothesis strategies that write what real files hold, by their grammars: PEP 508
requirements (names, extras, every version operator, URLs, markers with every variable,
operator, quoting and value shape, nested with ``and``/``or`` and parentheses), core metadata
(METADATA's header fields, folded lines, a body), pylock.toml (PEP 751's fields and tables),
requirements files (options, hashes, continuations, comments) and environment reports (pip
freeze, pip list, conda list, the ``- `pkg` version:`` lists, collect_env).

Each draws mostly valid text with a few broken pieces mixed in (``broken``), so a parser is
reached past its first check and then met with what a file written by hand may hold.
"""

from __future__ import annotations

from hypothesis import strategies as st

# Odd but real: what a hand, a tool or a paste puts where a word goes.
_ODD = ["", " ", "\t", "é", "ü", "\u00a0", "\x00", "\\", "'", '"', "#", ";", ",", "(", ")",
        "[", "]", "@", "==", "\n", "\r\n", "*", ".*", "+", "!", "~", "\x0b", "\x0c", "\x1c",
        "\x85", "\u2028", "٣", "\ufeff", "\r"]  # fmt: skip


def broken(valid: st.SearchStrategy[str], rate: int = 8) -> st.SearchStrategy[str]:
    """``valid`` most of the time; one time in ``rate`` an odd piece put in it or for it."""
    odd = st.sampled_from(_ODD)
    spliced = st.tuples(valid, odd, st.integers(0, 40)).map(
        lambda t: t[0][: t[2]] + t[1] + t[0][t[2] :]
    )
    return st.one_of(*([valid] * (rate - 2)), spliced, st.text(max_size=10))


# -- PEP 440 versions and PEP 508 requirements -------------------------------------------------

_NUM = st.integers(0, 30).map(str) | st.sampled_from(["00", "10", "2024", "999999999999"])
_RELEASE = st.lists(_NUM, min_size=1, max_size=4).map(".".join)
_PUBLIC = st.tuples(
    st.sampled_from(["", "", "", "1!", "v"]),
    _RELEASE,
    st.sampled_from(["", "", "", "a1", "b2", "rc1", "c0", ".post1", "-1", ".dev0", "dev",
                     "alpha", "pre3", "a1.post2.dev3"]),
).map("".join)  # fmt: skip
_LOCAL = st.sampled_from(["", "", "", "", "+cpu", "+cu124", "+local.7", "+g1a2b3c4"])
VERSION = st.tuples(_PUBLIC, _LOCAL).map("".join)
OPERATORS = ["==", "!=", "<=", ">=", "<", ">", "~=", "==="]
NAME = st.from_regex(r"\A[A-Za-z0-9]([A-Za-z0-9._-]{0,12}[A-Za-z0-9])?\Z", fullmatch=True)
_SPACE = st.sampled_from(["", "", " ", "  ", "\t"])


@st.composite
def _clause(draw: st.DrawFn) -> str:
    """One version clause: a local label and ``.*`` only where PEP 440 allows them (==, !=)."""
    op = draw(st.sampled_from(OPERATORS))
    version = draw(_PUBLIC)
    if op in ("==", "!="):
        version += draw(st.sampled_from(["", "", ".*"])) or draw(_LOCAL)
    elif op == "===":
        version = draw(st.one_of(VERSION, st.sampled_from(["foobar", "1.0-custom", "2.0+x.y"])))
    elif op == "~=" and "." not in version:
        version += ".0"
    return f"{draw(_SPACE)}{op}{draw(_SPACE)}{version}"


CLAUSE = _clause()
SPECIFIER = st.lists(CLAUSE, max_size=3).map(",".join)
EXTRAS = st.lists(NAME, max_size=3).map(lambda xs: f"[{','.join(xs)}]" if xs else "")

MARKER_VARIABLES = [
    "python_version", "python_full_version", "os_name", "sys_platform", "platform_release",
    "platform_system", "platform_version", "platform_machine", "platform_python_implementation",
    "implementation_name", "implementation_version", "extra", "os.name", "sys.platform",
    "platform.version", "platform.machine", "python_implementation", "dependency_groups",
]  # fmt: skip
MARKER_OPERATORS = [*OPERATORS, "in", "not in"]
_MARKER_VALUE = st.one_of(
    VERSION,
    st.sampled_from(["linux", "win32", "darwin", "Linux", "Windows", "x86_64", "aarch64", "AMD64",
                     "cpython", "CPython", "PyPy", "posix", "nt", "3", "3.1", "3.10", "2.7.18",
                     "5.15.0-1041-azure", "#1 SMP PREEMPT_DYNAMIC", "", " ", "gpu", "dev",
                     "x86_64 aarch64", "3.*"]),
    NAME,
)  # fmt: skip


def _quoted(value: str, quote: str) -> str:
    return f"{quote}{value}{quote}"


_QUOTE = st.sampled_from(["'", '"'])
_ATOM = st.one_of(
    # variable op 'value', as written
    st.tuples(st.sampled_from(MARKER_VARIABLES), _SPACE, st.sampled_from(MARKER_OPERATORS),
              _SPACE, st.tuples(_MARKER_VALUE, _QUOTE).map(lambda t: _quoted(*t)))
    .map(lambda t: f"{t[0]}{t[1] or ' '}{t[2]}{t[3] or ' '}{t[4]}"),
    # 'value' op variable, the other way round
    st.tuples(st.tuples(_MARKER_VALUE, _QUOTE).map(lambda t: _quoted(*t)),
              st.sampled_from(MARKER_OPERATORS), st.sampled_from(MARKER_VARIABLES))
    .map(lambda t: f"{t[0]} {t[1]} {t[2]}"),
    # two strings, or two variables
    st.tuples(st.tuples(_MARKER_VALUE, _QUOTE).map(lambda t: _quoted(*t)),
              st.sampled_from(MARKER_OPERATORS),
              st.tuples(_MARKER_VALUE, _QUOTE).map(lambda t: _quoted(*t)))
    .map(lambda t: f"{t[0]} {t[1]} {t[2]}"),
    st.tuples(st.sampled_from(MARKER_VARIABLES), st.sampled_from(MARKER_OPERATORS),
              st.sampled_from(MARKER_VARIABLES)).map(lambda t: f"{t[0]} {t[1]} {t[2]}"),
)  # fmt: skip
MARKER: st.SearchStrategy[str] = st.recursive(
    _ATOM,
    lambda inner: st.one_of(
        st.tuples(inner, st.sampled_from([" and ", " or ", " and  ", " or\t"]), inner).map("".join),
        inner.map(lambda m: f"({m})"),
    ),
    max_leaves=5,
)
URL = st.sampled_from([
    "https://files.example.org/x/pkg-1.0-py3-none-any.whl",
    "https://example.org/pkg-1.0.tar.gz#sha256=" + "0" * 64,
    "git+https://github.com/o/r@v1.0#egg=pkg", "file:///data/pkg-1.0-py3-none-any.whl",
    "file:pkg", "./local/path", "https://h/p?q=1&r=2#subdirectory=sub",
])  # fmt: skip


@st.composite
def requirement(draw: st.DrawFn) -> str:
    """One PEP 508 requirement as a file may write it."""
    name = draw(NAME)
    extras = draw(EXTRAS)
    space = draw(_SPACE)
    kind = draw(st.sampled_from(["spec", "spec", "paren", "url", "none"]))
    if kind == "url":
        body = f"{extras} @ {draw(URL)}"
    elif kind == "paren":
        body = f"{extras}{space}({draw(SPECIFIER)})"
    elif kind == "spec":
        body = f"{extras}{space}{draw(SPECIFIER)}"
    else:
        body = extras
    marker = draw(st.one_of(st.just(""), MARKER))
    if marker:
        # after a URL a space must come before ";" (PEP 508)
        body += (" ; " if kind == "url" else draw(st.sampled_from(["; ", " ; ", ";"]))) + marker
    return name + body


REQUIREMENT = broken(requirement(), 20)


# -- files ------------------------------------------------------------------------------------

_HASH = st.sampled_from(["sha256:" + "a" * 64, "sha256:00", "md5:x", "sha256:"])


@st.composite
def requirements_file(draw: st.DrawFn) -> str:
    """A requirements file: requirements, options, hashes, continuations, comments."""
    lines = []
    for _ in range(draw(st.integers(0, 8))):
        kind = draw(st.sampled_from(["req", "req", "req", "hash", "option", "comment", "blank",
                                     "continued", "editable"]))  # fmt: skip
        req = draw(REQUIREMENT)
        if kind == "hash":
            lines.append(f"{req} --hash={draw(_HASH)} \\\n    --hash={draw(_HASH)}")
        elif kind == "option":
            lines.append(draw(st.sampled_from(["--index-url https://x/simple", "-i x",
                                               "--extra-index-url=y", "--pre", "-r other.txt",
                                               "-c constraints.txt", "--only-binary :all:",
                                               "--no-binary=x", "-f ./wheels", "--trusted-host h",
                                               "--unknown-option"])))  # fmt: skip
        elif kind == "comment":
            lines.append(f"{req}  # {draw(st.text(max_size=8))}")
        elif kind == "blank":
            lines.append(draw(st.sampled_from(["", "   ", "#", "\t"])))
        elif kind == "continued":
            lines.append(f"{req[: len(req) // 2]}\\\n{req[len(req) // 2 :]}")
        else:
            lines.append(draw(st.sampled_from(["-e ", "--editable=", "-e git+"])) + req)
    return "\n".join(lines) + draw(st.sampled_from(["", "\n", "\\"]))


@st.composite
def metadata(draw: st.DrawFn) -> str:
    """A METADATA file: its header fields (some folded over lines), then maybe a body."""
    fields: list[tuple[str, st.SearchStrategy[str]]] = [
        ("Metadata-Version", st.sampled_from(["2.1", "2.2", "2.3", "2.4", "1.0", "x", ""])),
        ("Name", broken(NAME)),
        ("Version", broken(VERSION)),
        ("Requires-Python", broken(SPECIFIER)),
        ("Requires-Dist", REQUIREMENT),
        ("Requires-Dist", REQUIREMENT),
        ("Requires-Dist", REQUIREMENT),
        ("Provides-Extra", broken(NAME)),
        ("Provides-Extra", broken(NAME)),
        ("Dynamic", st.sampled_from(["Requires-Dist", "Version", "x"])),
        ("Summary", st.text(max_size=20)),
        ("License-Expression", st.sampled_from(["MIT", "Apache-2.0 OR MIT", ""])),
        ("Project-URL", st.sampled_from(["Source, https://x", "bad"])),
        ("Description-Content-Type", st.sampled_from(["text/markdown", "text/x-rst"])),
        ("requires-dist", REQUIREMENT),  # header names are case-insensitive
        ("Requires-External", st.sampled_from(["libc", "C (>=1)"])),
    ]
    lines = []
    for name, value in draw(st.lists(st.sampled_from(fields), max_size=10)):
        text = draw(value)
        if draw(st.integers(0, 6)) == 0 and " " in text:  # folded, as email headers may be
            head, _, tail = text.partition(" ")
            text = f"{head}\n {tail}"
        lines.append(f"{name}: {text}")
    body = draw(st.sampled_from(["", "", "\n\n# README\nRequires-Dist: not-a-header\n"]))
    return "\n".join(lines) + "\n" + body


_HASHES = st.dictionaries(st.sampled_from(["sha256", "md5", "blake2b"]),
                          st.sampled_from(["a" * 64, "00", ""]), max_size=2)  # fmt: skip
_FILE = st.fixed_dictionaries(
    {},
    optional={
        "name": st.sampled_from(["six-1.16.0-py2.py3-none-any.whl", "x.tar.gz", "bad name"]),
        "url": URL, "path": st.sampled_from(["./w/six.whl", "/abs/x.whl"]),
        "size": st.integers(-1, 10**9), "upload-time": st.sampled_from(["2024-01-01T00:00:00Z",
                                                                        "not a time"]),
        "hashes": _HASHES,
    },
)  # fmt: skip
_PACKAGE = st.fixed_dictionaries(
    {},
    optional={
        "name": broken(NAME), "version": broken(VERSION), "marker": broken(MARKER),
        "requires-python": broken(SPECIFIER),
        "dependencies": st.lists(st.fixed_dictionaries({"name": NAME}), max_size=2),
        "index": st.sampled_from(["https://pypi.org/simple", "x"]),
        "vcs": st.fixed_dictionaries({"type": st.just("git"), "url": URL},
                                     optional={"commit-id": st.text(max_size=8)}),
        "directory": st.fixed_dictionaries({"path": st.sampled_from([".", "../x"])}),
        "archive": _FILE, "sdist": _FILE, "wheels": st.lists(_FILE, max_size=2),
        "attestation-identities": st.lists(st.fixed_dictionaries({"kind": st.just("x")}),
                                           max_size=1),
        "tool": st.dictionaries(st.text(max_size=4), st.text(max_size=4), max_size=1),
    },
)  # fmt: skip
PYLOCK = st.fixed_dictionaries(
    {"lock-version": st.sampled_from(["1.0", "1.0", "1.1", "2.0", "x"])},
    optional={
        "environments": st.lists(broken(MARKER), max_size=2),
        "requires-python": broken(SPECIFIER),
        "extras": st.lists(broken(NAME), max_size=2),
        "dependency-groups": st.lists(broken(NAME), max_size=2),
        "default-groups": st.lists(broken(NAME), max_size=2),
        "created-by": st.sampled_from(["uv", "pip", "envbisect"]),
        "packages": st.lists(_PACKAGE, max_size=4),
        "tool": st.dictionaries(st.text(max_size=4), st.text(max_size=4), max_size=1),
    },
)  # fmt: skip


# -- environment reports ------------------------------------------------------------------------

_PKG_VERSION = st.tuples(broken(NAME, 12), broken(VERSION, 12))


@st.composite
def environment_report(draw: st.DrawFn) -> str:
    """One of the reports a bug report pastes, its rows drawn: pip freeze, pip list, conda
    list, the ``- `pkg` version:`` lists (llamafactory-cli env, transformers env), collect_env;
    inside a Markdown fence or not, with prose around it."""
    rows = draw(st.lists(_PKG_VERSION, min_size=1, max_size=6))
    kind = draw(st.sampled_from(["freeze", "list", "conda", "dash", "collect"]))
    if kind == "freeze":
        body = "\n".join(
            draw(
                st.sampled_from(
                    [
                        f"{n}=={v}",
                        f"{n} @ {draw(URL)}",
                        f"-e git+{draw(URL)}",
                        f"{n}==={v}",
                        f"{n}>={v}",
                    ]
                )
            )
            for n, v in rows
        )
    elif kind == "list":
        body = "Package    Version\n---------- -------\n" + "\n".join(
            f"{n}{draw(st.sampled_from(['  ', ' ', chr(9)]))}{v}" for n, v in rows
        )
    elif kind == "conda":
        body = "# Name Version Build Channel\n" + "\n".join(
            f"{n} {v} {draw(st.sampled_from(['py_0', 'pypi_0', 'h1234']))} "
            f"{draw(st.sampled_from(['pypi', 'conda-forge', '']))}"
            for n, v in rows
        )
    elif kind == "dash":
        label = draw(st.sampled_from(["- `{}` version: {}", "- {} version: {}",
                                      "- {} version: {} (GPU)", "- {}: {}"]))  # fmt: skip
        body = (
            "\n".join(label.format(n, v) for n, v in rows)
            + "\n"
            + draw(
                st.sampled_from(
                    [
                        "- Python version: 3.11.7",
                        "- Platform: Linux-5.15-x86_64",
                        "- GPU type: NVIDIA A100-SXM4-80GB",
                        "- Python version: 3.",
                        "- PyTorch version: 2.5.1+cu124 (GPU)",
                        "",
                    ]
                )
            )
        )
    else:
        body = (
            f"PyTorch version: {draw(broken(VERSION))}\nIs debug build: False\n"
            f"CUDA used to build PyTorch: {draw(st.sampled_from(['12.1', 'None', '', 'x']))}\n"
            f"Python version: {draw(broken(VERSION))} (main) [GCC 11] (64-bit runtime)\n"
            f"Nvidia driver version: {draw(st.sampled_from(['535.54.03', '470', 'x']))}\n"
            "Versions of relevant libraries:\n" + "\n".join(f"[pip3] {n}=={v}" for n, v in rows)
        )
    fence = draw(st.sampled_from(["", "```\n", "```text\n", "```bash\n"]))
    prose = draw(
        st.sampled_from(
            [
                "",
                "### System Info\n\n",
                "Traceback (most recent call last):\n"
                '  File "/a.py", line 1, in <module>\nImportError: x\n',
            ]
        )
    )
    return f"{prose}{fence}{body}\n{'```' if fence else ''}\n"
