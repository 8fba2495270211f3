"""Index pages uv revalidated in this session: a build answers from uv's cache where it can.

uv revalidates a cached index page at every install unless the index said it stays fresh:
behind a proxy that strips the cache headers, or from an index that sends ``max-age=0`` (many
private mirrors do), every build of a bisection asks for every page of its closure again, one
level of the dependency tree after another. Measured on a 2-core machine behind such a proxy:
``Resolved 30 packages in`` 0.46 to 0.60 s online against 0.03 to 0.05 s offline, of a build of
0.7 to 0.8 s (datasets 2.14.6 with one pyarrow).

One session asks one question of one state of the index. A page uv revalidated during this
session less than ``WINDOW`` seconds ago (600 s, PyPI's own max-age and the index client's
heuristic for a page that says nothing) is not asked for again: a build first runs uv offline
(``UV_OFFLINE=1``: uv answers from its cache, stale or not). That answer counts only where
uv succeeded and every distribution it installed is a project whose page this session
revalidated within the window; otherwise the build is made again, online, in a fresh venv, and
what it installed is marked revalidated at the time it started. A package uv's cache lacks (a
version never downloaded) fails offline at once and is fetched online, as before.

What it does not see: a project uv considered and did not install (an alternative it backtracked
from) may be read from a page older than the window. An install online counts as revalidating
what it installed; on an index whose pages say ``max-age`` (PyPI: 600 s) uv may itself have
answered from a page that was still fresh, so such a page can be read up to twice the window
old (there uv saves little by this anyway: it revalidates nothing fresh). ``--refresh`` turns
all of this off (every build asks uv as before); so does ``--offline`` (every build is offline
already).

The registry is this process's (threads of ``--jobs`` and builds ahead share it; a Ray worker
keeps its own; a Slurm job starts empty). Its scope is the session's token, uv's cache and the
indexes: another session, another cache or other indexes never count as revalidated.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable, Iterable

WINDOW = 600.0


class Revalidated:
    """When each project's page was last revalidated by uv, per scope (a session's token,
    uv's cache, the indexes). Safe to share between threads."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._guard = threading.Lock()
        self._at: dict[Hashable, dict[str, float]] = {}

    def now(self) -> float:
        return self._clock()

    def any_fresh(self, scope: Hashable) -> bool:
        """Whether any page of ``scope`` was revalidated within the window: otherwise an
        offline try cannot count, and is not made."""
        now = self._clock()
        with self._guard:
            return any(now - t < WINDOW for t in self._at.get(scope, {}).values())

    def fresh(self, scope: Hashable, names: Iterable[str]) -> bool:
        """Whether every one of ``names`` (canonical) was revalidated within the window."""
        now = self._clock()
        with self._guard:
            seen = self._at.get(scope, {})
            return all(now - seen.get(n, -WINDOW * 2) < WINDOW for n in names)

    def mark(self, scope: Hashable, names: Iterable[str], at: float) -> None:
        """``names`` were revalidated no earlier than ``at`` (this registry's clock)."""
        with self._guard:
            seen = self._at.setdefault(scope, {})
            for n in names:
                seen[n] = max(at, seen.get(n, at))


REVALIDATED = Revalidated()
