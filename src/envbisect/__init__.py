"""envbisect: find which package version broke a Python environment."""

__version__ = "0.1.0"

# envbisect's distribution (the PyPI project named "envbisect" is an unrelated tool) and where
# it installs from until that name is on PyPI: this repository, at the tag of this version.
DISTRIBUTION = "envbisect-ml"
SOURCE = "https://github.com/envbisect/envbisect"


def install_requirement(extras: str = "") -> str:
    """What pip, uv and pipx install this version from: ``envbisect-ml[EXTRAS] @ git+...``."""
    return f"{DISTRIBUTION}{extras and f'[{extras}]'} @ git+{SOURCE}@v{__version__}"
