"""A cut-off as uv writes one: a date, a timestamp, or a span back from now.

``--exclude-newer`` (and ``UV_EXCLUDE_NEWER``, and a PEP 723 script's ``[tool.uv]
exclude-newer``) take what uv takes: ``2024-03-01``, ``2024-03-01T00:00:00Z``, a friendly span
(``7 days``, ``1 week 2 days``, ``24h``, ``30 days ago``) or an ISO 8601 one (``P7D``,
``PT24H``, ``P1W``). Months and years are refused, as uv refuses them (they have no fixed
length: "use days instead"). A span is turned into the moment it names *once*, when it is
read: an environment's id must not mean another day tomorrow. Pure: text and "now" in, an
aware datetime out, or a ``UsageError`` naming the value.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

from envbisect.errors import UsageError

_UNITS = {
    "weeks": 7 * 86400,
    "days": 86400,
    "hours": 3600,
    "minutes": 60,
    "seconds": 1,
}
# Each unit as people spell it in a span ("2 wks", "36h", "3 mins").
_SPELLINGS = {
    "weeks": ("w", "wk", "wks", "week", "weeks"),
    "days": ("d", "day", "days"),
    "hours": ("h", "hr", "hrs", "hour", "hours"),
    "minutes": ("m", "min", "mins", "minute", "minutes"),
    "seconds": ("s", "sec", "secs", "second", "seconds"),
}
_NAMES = {spelt: unit for unit, spellings in _SPELLINGS.items() for spelt in spellings}
_CALENDAR_SPELLINGS = {
    "years": ("y", "yr", "yrs", "year", "years"),
    "months": ("mo", "mos", "month", "months"),
}
_CALENDAR = {spelt: unit for unit, spellings in _CALENDAR_SPELLINGS.items() for spelt in spellings}
_FRIENDLY = re.compile(r"(\d+)\s*([a-z]+)")
_ISO = re.compile(
    r"P(?:(?P<years>\d+)Y)?(?:(?P<months>\d+)M)?(?:(?P<weeks>\d+)W)?(?:(?P<days>\d+)D)?"
    r"(?:T(?:(?P<hours>\d+)H)?(?:(?P<minutes>\d+)M)?(?:(?P<seconds>\d+)S)?)?"
)
HINT = (
    "use YYYY-MM-DD, an RFC 3339 timestamp (2024-03-01T00:00:00Z) or a span back from now "
    "as uv writes one (7 days, 24 hours, P7D)"
)


def parse_cutoff(text: str, now: datetime, *, what: str = "--exclude-newer") -> datetime:
    """The moment ``text`` names (UTC when it names no zone)."""
    value = text.strip()
    try:
        dt = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        span = _span(value, what)
        if span is None:
            raise UsageError(f"{what} {text!r} is not a date", hint=HINT, ref="bad-date") from None
        return (now - span).astimezone(timezone.utc)
    return dt if dt.tzinfo else dt.replace(tzinfo=timezone.utc)


def is_span(text: str) -> bool:
    """Whether ``text`` is a span back from now (not a date): said when it is resolved."""
    try:
        datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        return True
    return False


def stamp(when: datetime) -> str:
    """The moment as uv reads it back: ``2024-03-01T00:00:00Z``."""
    return when.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _span(value: str, what: str) -> timedelta | None:
    iso = _ISO.fullmatch(value)
    if iso is not None and value != "P" and value != "PT":
        parts = {k: int(v) for k, v in iso.groupdict().items() if v is not None}
        for unit in ("years", "months"):
            if parts.get(unit):
                _calendar(value, unit, what)
        return timedelta(seconds=sum(n * _UNITS[k] for k, n in parts.items() if k in _UNITS))
    body = value.removesuffix(" ago").replace(",", " ")
    found = _FRIENDLY.findall(body)
    if not found or _FRIENDLY.sub("", body).strip():
        return None
    seconds = 0
    for number, unit in found:
        if unit in _CALENDAR:
            _calendar(value, _CALENDAR[unit], what)
        if unit not in _NAMES:
            return None
        seconds += int(number) * _UNITS[_NAMES[unit]]
    return timedelta(seconds=seconds)


def _calendar(value: str, unit: str, what: str) -> None:
    raise UsageError(
        f"{what} {value!r} uses {unit}, which have no fixed length",
        hint="use days instead, e.g. 30 days (as uv asks)",
        ref="bad-date",
    )
