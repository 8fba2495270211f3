"""envbisect: find which package version broke a Python environment."""

__version__ = "0.1.0"
