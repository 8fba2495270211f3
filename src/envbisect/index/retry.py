"""How long to wait before asking an index again: its ``Retry-After`` when it sends one (a
429 or 503 names the wait it wants), else exponential backoff; both with jitter, so that the
threads of one run (and the runs of a cluster) do not ask again in the same instant."""

from __future__ import annotations

import random
from collections.abc import Callable
from email.utils import parsedate_to_datetime

# A server asking for more than this is not waited for longer: the run goes on (or fails)
# with what the retries give, rather than sleep for an hour on one header.
MAX_RETRY_AFTER = 60.0


def retry_after(value: str | None, now: float) -> float | None:
    """Seconds a ``Retry-After`` header asks for (delta-seconds or an HTTP date), or None."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None or when.tzinfo is None:
        return None
    return max(0.0, when.timestamp() - now)


def delay(
    attempt: int,
    backoff: float,
    header: str | None,
    now: float,
    rand: Callable[[float, float], float] = random.uniform,
) -> float:
    """The wait before retry ``attempt`` (1 for the first retry)."""
    asked = retry_after(header, now)
    if asked is not None:  # at least what the server asked, a little more for the spread
        return min(asked, MAX_RETRY_AFTER) * rand(1.0, 1.2)
    base = backoff * 2.0 ** (attempt - 1)
    return base * rand(0.5, 1.0)  # "equal jitter": never less than half the backoff
