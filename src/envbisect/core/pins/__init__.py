"""Pins: what the project the user runs asks for, read from every source into values.

sources      the pin sources (a pyproject, a PyPI release, a lock, requirements) into requirements
pinset       ``Pin`` and ``PinSet``: one requirement and where it was written, and the whole set
reqfile      pip's requirements-file format: logical lines, options, includes, hashes
scriptmeta   PEP 723 inline script metadata
from_report  an environment report's rows as pins
"""
