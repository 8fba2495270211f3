"""Every error envbisect raises on purpose.

Nothing else escapes to the user: third-party errors (httpx, subprocess, sqlite3) are
translated at the boundary with ``raise ... from e``. Each class fixes its exit code, and
every instance carries a stable kebab-case reference, a one-line message and a hint.

    EnvbisectError                      (exit 3 unless a subclass says otherwise)
    ├── UsageError                      exit 2: the user asked for something that cannot be
    │   ├── UnknownPackage                      done as asked (bad flag, missing repro file,
    │   ├── NoCandidates                        unknown version, empty range, a published
    │   ├── UnknownVersion                      results.json that cannot be read)
    │   └── ResultsMalformed
    ├── NoAnswer                        exit 1: the question has no answer (the ends did not
    │                                           verify: good end fails, bad end passes)
    ├── InfrastructureError             exit 3: the machine or the network let us down
    │   ├── IndexUnreachable                    (index down, uv missing, disk full)
    │   ├── UvMissing
    │   ├── DiskFull
    │   └── StoreError
    └── Interrupted                     exit 130: Ctrl-C (143 SIGTERM, 129 SIGHUP, set by the
                                                CLI); the store keeps every finished probe
"""

from __future__ import annotations

import enum
from collections.abc import Iterable


class EnvbisectError(Exception):
    """Root of everything envbisect raises on purpose."""

    exit_code = 3
    ref = "error"

    def __init__(self, message: str, *, hint: str | None = None, ref: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        if ref is not None:
            self.ref = ref

    def __str__(self) -> str:
        return self.message


class UsageError(EnvbisectError):
    """The request cannot be carried out as asked; nothing was built."""

    exit_code = 2
    ref = "bad-usage"


class UnknownPackage(UsageError):
    ref = "unknown-package"


class NoCandidates(UsageError):
    ref = "no-candidates"


class UnknownVersion(UsageError):
    ref = "unknown-version"


class ResultsMalformed(UsageError):
    """A published ``results.json`` (or one of its cells) that cannot be read as written."""

    ref = "results-malformed"


class Unanswered(enum.Enum):
    """Why a question has no answer, for a caller that acts on it (``NoAnswer.why``)."""

    OTHER = "other"
    GOOD_FAILS = "good-fails"  # the end that must pass does not
    BAD_PASSES = "bad-passes"  # the end that must fail passes, or cannot be tested


class NoAnswer(EnvbisectError):
    """The question has no answer, for example the ends of the range did not verify.

    ``why``: which way it has none; ``result``: the run's result (its report is written)
    when the search got that far."""

    exit_code = 1
    ref = "no-answer"

    def __init__(
        self,
        message: str,
        *,
        hint: str | None = None,
        ref: str | None = None,
        why: Unanswered = Unanswered.OTHER,
    ) -> None:
        super().__init__(message, hint=hint, ref=ref)
        self.why = why
        # A core.results.search.SearchResult: typed by its readers (errors.py is below core/).
        self.result: object | None = None


class InfrastructureError(EnvbisectError):
    """The index, uv, the disk or the store failed; the question itself may be fine."""

    exit_code = 3
    ref = "infrastructure"


class IndexUnreachable(InfrastructureError):
    ref = "index-unreachable"


class UvMissing(InfrastructureError):
    ref = "uv-missing"


class DiskFull(InfrastructureError):
    ref = "disk-full"


class StoreError(InfrastructureError):
    ref = "store-error"


class Interrupted(EnvbisectError):
    """Ctrl-C: the running probe's process group was killed; finished probes are stored."""

    exit_code = 130
    ref = "interrupted"


def did_you_mean(word: str, options: Iterable[str]) -> str:
    """``did you mean X?`` where ``word`` (a key, a choice) is a misspelling of one of
    ``options`` (difflib, as the parser's own suggestion for a flag), else ""."""
    import difflib

    close = difflib.get_close_matches(word, list(options), n=1, cutoff=0.6)
    return f"did you mean {close[0]}?" if close and close[0] != word else ""
