"""The value types of the command line's flags: seconds, whole numbers, a probability.

Each is an argparse ``type``: text in, the value out, or an ``ArgumentTypeError`` whose message
argparse prints after the flag's name.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

MIN_TIMEOUT = 1.0  # below this a probe cannot even start Python


def seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number of seconds")
    if value <= 0:
        raise argparse.ArgumentTypeError("must be more than 0 seconds")
    if value < MIN_TIMEOUT:
        raise argparse.ArgumentTypeError(f"must be at least {MIN_TIMEOUT:g} second")
    return value


MAX_JOBS = 256


def _whole(minimum: int, maximum: int | None = None) -> Callable[[str], int]:
    """An argparse type: a whole number from ``minimum`` (to ``maximum``)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be {minimum} or more")
        if maximum is not None and value > maximum:
            raise argparse.ArgumentTypeError(f"must be at most {maximum}")
        return value

    return parse


count = _whole(1)  # runs, probes, cells
count0 = _whole(0)  # GPUs per probe
jobs = _whole(1, MAX_JOBS)


def probability(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a probability") from None
    if not 0.5 <= value < 1.0:
        raise argparse.ArgumentTypeError("must be at least 0.5 and below 1 (e.g. 0.95)")
    return value
