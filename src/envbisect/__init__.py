"""envbisect: find which package version broke a Python environment."""

__version__ = "0.1.0"
# Whether the tag v{__version__} is in the repository: set in the commit that is tagged, when
# the version is released (CHANGELOG.md). Until then nothing names that tag: an install line
# names a checkout, a local path, or the repository's default branch (tests/test_install_lines.py
# checks every tag named against ``git tag``).
RELEASED = False

# envbisect's distribution: the PyPI project named "envbisect" is an unrelated tool.
DISTRIBUTION = "envbisect-ml"


def source_url() -> str:
    """Where envbisect installs from until it is on PyPI: the ``Source`` of pyproject.toml's
    ``[project.urls]`` (the one place that says it), read from the installed distribution's
    metadata."""
    from importlib.metadata import PackageNotFoundError, metadata

    urls: list[str]
    try:
        urls = list(metadata(DISTRIBUTION).get_all("Project-URL") or [])
    except PackageNotFoundError:  # run from a source tree never installed: its pyproject.toml
        import re
        from pathlib import Path

        pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
        text = pyproject.read_text(encoding="utf-8") if pyproject.is_file() else ""
        urls = [f"Source, {u}" for u in re.findall(r'(?m)^Source = "([^"]+)"', text)]
    for entry in urls:
        label, _, url = str(entry).partition(",")
        if label.strip() == "Source":
            return url.strip()
    raise LookupError(f"{DISTRIBUTION} names no Source URL in its metadata")


def install_requirement(extras: str = "") -> str:
    """What pip, uv and pipx install envbisect from: ``envbisect-ml[EXTRAS] @ git+SOURCE``,
    at the tag of this version once it is released, else the repository's default branch."""
    ref = f"@v{__version__}" if RELEASED else ""
    return f"{DISTRIBUTION}{extras and f'[{extras}]'} @ git+{source_url()}{ref}"
