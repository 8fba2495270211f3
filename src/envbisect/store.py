"""The results store: one SQLite row per probed (environment, repro).

Resume and reuse come from here: a probe whose (env_id, repro_id) is in the store is not run
again (with ``--repeat``, only the runs it lacks are made, and the row grows). Every write is
one transaction, so Ctrl-C at any moment leaves either the whole row or none of it. The schema
carries a version; opening a newer database than this code knows is an error, an older one is
migrated.
"""

from __future__ import annotations

import errno
import os
import platform
import sqlite3
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from envbisect.errors import DiskFull, StoreError, UsageError
from envbisect.model import ProbeRecord
from envbisect.storerows import from_row, to_row

SCHEMA_VERSION = 6
DB_NAME = "envbisect.db"
__all__ = ["DB_NAME", "SCHEMA_VERSION", "Claimant", "ProbeRecord", "Store"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS probes (
    id INTEGER PRIMARY KEY,
    env_id TEXT NOT NULL,
    repro_id TEXT NOT NULL,
    spec TEXT NOT NULL,
    installed TEXT NOT NULL,
    installed_hash TEXT NOT NULL,
    kind TEXT NOT NULL,
    signal TEXT,
    exit_code INTEGER,
    signature TEXT NOT NULL,
    exception TEXT,
    detail TEXT NOT NULL,
    stdout_tail TEXT NOT NULL,
    stderr_tail TEXT NOT NULL,
    build_seconds REAL NOT NULL,
    probe_seconds REAL NOT NULL,
    timeout REAL,
    started_at TEXT NOT NULL,
    envbisect_version TEXT NOT NULL,
    library TEXT,
    step TEXT NOT NULL DEFAULT '',
    env_report TEXT,
    runs TEXT,
    host TEXT,
    function TEXT,
    UNIQUE (env_id, repro_id)
);
CREATE TABLE IF NOT EXISTS matrix_cells (
    matrix TEXT NOT NULL,
    python TEXT NOT NULL,
    cell TEXT NOT NULL,
    state TEXT NOT NULL,
    env_id TEXT,
    repro_id TEXT,
    kind TEXT,
    signature TEXT NOT NULL DEFAULT '',
    inferred_from TEXT,
    updated_at TEXT NOT NULL,
    UNIQUE (matrix, python, cell)
);
CREATE TABLE IF NOT EXISTS claims (
    env_id TEXT NOT NULL,
    repro_id TEXT NOT NULL,
    owner TEXT NOT NULL,
    host TEXT NOT NULL,
    pid INTEGER NOT NULL,
    since REAL NOT NULL,
    beat REAL NOT NULL,
    PRIMARY KEY (env_id, repro_id)
);
"""
# A claim not renewed for this long is a dead claimant's (another machine's, where its process
# cannot be asked): a live one renews its claims every CLAIM_BEAT seconds.
CLAIM_TTL = 120.0
CLAIM_BEAT = 20.0
# Each step takes the schema from version N to N + 1.
_MIGRATIONS = {
    1: (
        "ALTER TABLE probes ADD COLUMN library TEXT",
        "ALTER TABLE probes ADD COLUMN step TEXT NOT NULL DEFAULT ''",
        "ALTER TABLE probes ADD COLUMN env_report TEXT",
    ),
    2: (),  # matrix_cells: created by the schema script itself
    3: ("ALTER TABLE probes ADD COLUMN runs TEXT",),  # every run of a --repeat probe
    4: ("ALTER TABLE probes ADD COLUMN host TEXT",),  # the node a probe ran on
    # the function a crash faulted in (rows from before have none: it does not decide)
    5: ("ALTER TABLE probes ADD COLUMN function TEXT",),
}


# The file that makes a folder envbisect's: it writes into no other (./results is a common
# name in ML repositories, and a foreign one must lose nothing).
MARKER = ".envbisect"
MARKER_TEXT = (
    "This folder holds envbisect's results: its store, reports, lockfiles and tables.\n"
    "envbisect writes only into a folder that has this file (or a new or empty one).\n"
)


def claim_results(results_dir: Path) -> None:
    """Make ``results_dir`` envbisect's, or refuse it: a new or empty folder gets the marker,
    as does one envbisect wrote before markers existed; a folder with other files and no
    marker is someone else's."""
    if refuse_foreign(results_dir):
        return
    marker = results_dir / MARKER
    try:
        results_dir.mkdir(parents=True, exist_ok=True)
        marker.write_text(MARKER_TEXT, encoding="utf-8")
    except OSError:
        pass  # the database below says what is wrong with the folder


def refuse_foreign(results_dir: Path) -> bool:
    """A ``UsageError`` when ``results_dir`` is someone else's (before any work is done);
    whether it already has the marker."""
    marker = results_dir / MARKER
    if marker.is_file():
        return True
    try:
        foreign = results_dir.is_dir() and any(results_dir.iterdir())
    except OSError:
        foreign = False  # unreadable: the mkdir or the database says why
    if foreign and marker.is_file():
        return True  # another envbisect claimed it between the two looks (two runs at once)
    if foreign and not _written_by_envbisect(results_dir):
        raise UsageError(
            f"{results_dir} is not envbisect's results folder (it holds other files and no "
            f"{MARKER}): nothing is written there",
            hint=f"pass --results DIR (a new or empty folder), or, if envbisect made it, "
            f"create {marker}",
            ref="results-not-ours",
        )
    return False


def _written_by_envbisect(folder: Path) -> bool:
    """A folder envbisect wrote before markers existed: its store, its environments' folder,
    or a run's report or a published table in a folder of its own."""
    if (folder / DB_NAME).is_file() or (folder / ".envs").is_dir():
        return True
    try:
        return any(
            (child / "results.json").is_file() or (child / "report.md").is_file()
            for child in folder.iterdir()
            if child.is_dir()
        )
    except OSError:
        return False


@dataclass(frozen=True, slots=True, kw_only=True)
class CellRow:
    """One matrix cell in the store (table ``matrix_cells``): what became of it (``state``:
    measured, inferred, unresolvable, untestable) and the probe that says so."""

    matrix: str
    python: str
    cell: str  # its axis versions, as JSON ({package: version}, in axis order)
    state: str
    env_id: str | None = None  # the probe's environment (measured; inferred: its source's)
    repro_id: str | None = None
    kind: str | None = None  # the outcome's kind (OutcomeKind's value)
    signature: str = ""
    inferred_from: str | None = None  # the cell (JSON) whose outcome an inferred one took
    updated_at: str


_CELL_COLUMNS = tuple(f.name for f in fields(CellRow))


def _wal(db: sqlite3.Connection) -> sqlite3.Cursor:
    """WAL mode, tried for 30 s: runs opening one database at once may find it locked."""
    for _ in range(600):
        try:
            return db.execute("PRAGMA journal_mode=WAL")
        except sqlite3.OperationalError as e:
            if "locked" not in str(e):
                raise
            time.sleep(0.05)
    return db.execute("PRAGMA journal_mode=WAL")


class Store:
    """A results database in ``results_dir``. Use as a context manager."""

    def __init__(self, results_dir: Path) -> None:
        self.path = results_dir / DB_NAME
        claim_results(results_dir)
        try:
            results_dir.mkdir(parents=True, exist_ok=True)
            # One connection per thread; check_same_thread=False only lets its owner close it
            # from the thread that started the workers.
            self._db = sqlite3.connect(self.path, timeout=30.0, check_same_thread=False)
            _wal(self._db)
            self._db.execute("PRAGMA synchronous=NORMAL")
            with self._db:
                self._db.executescript(_SCHEMA)
                row = self._db.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
                if row is None:
                    self._db.execute(
                        "INSERT INTO meta (key, value) VALUES ('schema', ?)", (str(SCHEMA_VERSION),)
                    )
                elif int(row[0]) > SCHEMA_VERSION:
                    raise StoreError(
                        f"{self.path} was written by a newer envbisect (schema {row[0]})",
                        hint="upgrade envbisect, or pass another --results directory",
                    )
                else:
                    for version in range(int(row[0]), SCHEMA_VERSION):
                        for statement in _MIGRATIONS[version]:
                            self._db.execute(statement)
                    self._db.execute(
                        "UPDATE meta SET value = ? WHERE key = 'schema'", (str(SCHEMA_VERSION),)
                    )
        except (sqlite3.Error, OSError) as e:
            raise _translate(e, self.path) from e

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def get(self, env_id: str, repro_id: str) -> ProbeRecord | None:
        try:
            cur = self._db.execute(
                "SELECT * FROM probes WHERE env_id = ? AND repro_id = ?", (env_id, repro_id)
            )
            row = cur.fetchone()
            if row is None:
                return None
            return _from_row_checked(
                dict(zip([c[0] for c in cur.description], row, strict=True)), self.path
            )
        except sqlite3.Error as e:
            raise _translate(e, self.path) from e

    def put(self, rec: ProbeRecord) -> None:
        self._replace("probes", to_row(rec))

    def put_cell(self, row: CellRow) -> None:
        """One matrix cell's row, replacing the one of its (matrix, python, cell)."""
        self._replace("matrix_cells", {c: getattr(row, c) for c in _CELL_COLUMNS})

    def _replace(self, table: str, row: Mapping[str, Any]) -> None:
        """Write ``row`` (column: value) into ``table``, replacing a row with its key."""
        cols = ", ".join(row)
        marks = ", ".join("?" for _ in row)
        try:
            with self._db:
                self._db.execute(
                    f"INSERT OR REPLACE INTO {table} ({cols}) VALUES ({marks})",
                    tuple(row.values()),
                )
        except sqlite3.Error as e:
            raise _translate(e, self.path) from e

    def cells(self, matrix: str) -> list[CellRow]:
        """Every cell row of ``matrix``."""
        try:
            cur = self._db.execute(
                f"SELECT {', '.join(_CELL_COLUMNS)} FROM matrix_cells WHERE matrix = ?",
                (matrix,),
            )
            return [CellRow(**dict(zip(_CELL_COLUMNS, row, strict=True))) for row in cur]
        except sqlite3.Error as e:
            raise _translate(e, self.path) from e

    # -- claims: no environment probed twice at once ------------------------------------------

    def claim(self, env_id: str, repro_id: str, me: Claimant) -> Claimant | None:
        """Claim probing (env_id, repro_id) for ``me``; None when it is ours now, else the live
        claimant that holds it (another run probing it: wait for its record). A claim whose
        claimant is dead (its process is gone, on this machine; not renewed for CLAIM_TTL
        seconds, on another) is taken over."""
        now = time.time()
        try:
            with self._db:
                self._db.execute("BEGIN IMMEDIATE")
                row = self._db.execute(
                    "SELECT owner, host, pid, since, beat FROM claims "
                    "WHERE env_id = ? AND repro_id = ?",
                    (env_id, repro_id),
                ).fetchone()
                if row is not None:
                    holder = Claimant(owner=row[0], host=row[1], pid=row[2], since=row[3])
                    if holder.owner == me.owner:
                        return None
                    if _alive(holder, row[4], now):
                        return holder
                self._db.execute(
                    "INSERT OR REPLACE INTO claims VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (env_id, repro_id, me.owner, me.host, me.pid, now, now),
                )
            return None
        except sqlite3.Error as e:
            raise _translate(e, self.path) from e

    def held(self, env_id: str, repro_id: str) -> Claimant | None:
        """The live claimant of (env_id, repro_id), if there is one."""
        try:
            row = self._db.execute(
                "SELECT owner, host, pid, since, beat FROM claims "
                "WHERE env_id = ? AND repro_id = ?",
                (env_id, repro_id),
            ).fetchone()
        except sqlite3.Error as e:
            raise _translate(e, self.path) from e
        if row is None:
            return None
        holder = Claimant(owner=row[0], host=row[1], pid=row[2], since=row[3])
        return holder if _alive(holder, row[4], time.time()) else None

    def release(self, me: Claimant, env_id: str | None = None, repro_id: str | None = None) -> None:
        """Give up ``me``'s claim on (env_id, repro_id), or every claim of ``me``."""
        try:
            with self._db:
                if env_id is None:
                    self._db.execute("DELETE FROM claims WHERE owner = ?", (me.owner,))
                else:
                    self._db.execute(
                        "DELETE FROM claims WHERE env_id = ? AND repro_id = ? AND owner = ?",
                        (env_id, repro_id, me.owner),
                    )
        except sqlite3.Error as e:
            raise _translate(e, self.path) from e

    def renew(self, me: Claimant) -> None:
        """Say ``me`` is alive: its claims are renewed."""
        try:
            with self._db:
                self._db.execute(
                    "UPDATE claims SET beat = ? WHERE owner = ?", (time.time(), me.owner)
                )
        except sqlite3.Error as e:
            raise _translate(e, self.path) from e

    def all(self) -> Iterator[ProbeRecord]:
        try:
            cur = self._db.execute("SELECT * FROM probes ORDER BY id")
            names = [c[0] for c in cur.description]
            rows = [dict(zip(names, row, strict=True)) for row in cur]
        except sqlite3.Error as e:
            raise _translate(e, self.path) from e
        for row in rows:
            yield _from_row_checked(row, self.path)


@dataclass(frozen=True, slots=True, kw_only=True)
class Claimant:
    """Who probes an environment now: a run, by a token of its own, on a host, as a pid."""

    owner: str
    host: str
    pid: int
    since: float = 0.0

    @classmethod
    def this_process(cls) -> Claimant:
        return cls(owner=os.urandom(16).hex(), host=platform.node(), pid=os.getpid())


def _alive(holder: Claimant, beat: float, now: float) -> bool:
    if holder.host == platform.node():  # socket.gethostname() where there is uname
        try:
            os.kill(holder.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            pass  # another user's live process
        # A live pid may be a new process that took a dead one's number: a claim that was
        # not renewed is dead either way.
    return now - beat < CLAIM_TTL


def _from_row_checked(row: dict[str, Any], path: Path) -> ProbeRecord:
    try:
        return from_row(row)
    except (KeyError, ValueError, TypeError, AttributeError) as e:
        raise StoreError(
            f"the results database {path} holds a damaged row ({type(e).__name__}: {e})",
            hint="move the database aside (finished probes in it are lost) or pass another "
            "--results directory",
            ref="store-damaged",
        ) from e


def _translate(e: Exception, path: Path) -> StoreError | DiskFull:
    text = str(e)
    if (isinstance(e, OSError) and e.errno == errno.ENOSPC) or "database or disk is full" in text:
        return DiskFull(
            f"the disk holding {path} is full",
            hint="free some space or pass --results on another disk; finished probes are kept",
        )
    if isinstance(e, StoreError):
        return e
    if isinstance(e, sqlite3.OperationalError) and "no such" in text:
        return StoreError(
            f"the results database {path} is damaged: {text}",
            hint="move it aside (finished probes in it are lost) or pass another --results "
            "directory",
            ref="store-damaged",
        )
    return StoreError(
        f"cannot use the results database {path}: {text}",
        hint="check that the --results directory is writable and not on a network file system",
    )
