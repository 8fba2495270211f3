"""The session's side of the store: what it answers, what this run claims, what it records.

Who does what: ``Ledger`` looks an environment up in the store (a stored timeout under a
shorter limit than today's is stale: probed again), claims an environment before this run
builds or probes it (two runs never probe one at once; the claims are renewed while the run
lives: sharing.py), waits for the record another run is making, and writes each record that
comes back (only the controller writes the store). The probe runner (prober.py) asks it;
the session (session.py) closes it.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterable
from dataclasses import replace

from envbisect.core.outcome import failed
from envbisect.env.worker import ProbeTask
from envbisect.errors import EnvbisectError
from envbisect.model import EnvSpec, OutcomeKind, ProbeRecord
from envbisect.modes.edges import Edges
from envbisect.modes.sharing import CLAIM_POLL, Renewal
from envbisect.modes.want import Want
from envbisect.options import CommonOptions
from envbisect.store import Claimant


class Ledger:
    """The store as one session reads and writes it, with this run's claims."""

    def __init__(self, edges: Edges) -> None:
        self._edges = edges
        self.me = Claimant.this_process()  # this run, as its claims in the store name it
        self._beat: Renewal | None = None

    def close(self) -> None:
        """Stop renewing this run's claims and give up those left (an interruption's)."""
        if self._beat is not None:
            self._beat.stop()
            with contextlib.suppress(EnvbisectError):
                self._edges.store.release(self.me)

    def stored(self, spec: EnvSpec, runs: int) -> ProbeRecord | None:
        """The stored record that answers for ``spec`` with ``runs`` runs, if there is one."""
        rec = self.earlier(spec)
        if rec is None:
            return None
        if len(rec.all_runs) >= runs or rec.outcome.kind is OutcomeKind.UNTESTABLE:
            return _first_runs(rec, runs)
        return None

    def earlier(self, spec: EnvSpec) -> ProbeRecord | None:
        """The stored record of ``spec`` with this repro, unless it is stale."""
        edges = self._edges
        rec = edges.store.get(spec.env_id, edges.repro.repro_id)
        if rec is None or _stale(rec, edges.opts):
            return None
        return rec

    # -- claims: two runs never probe one environment at once -------------------------------

    def claim(self, want: Want) -> Claimant | None:
        """Claim probing ``want``'s environment; None when it is this run's to probe, else
        the live run that probes it now."""
        assert want.spec is not None
        edges = self._edges
        holder = edges.store.claim(want.spec.env_id, edges.repro.repro_id, self.me)
        if holder is None and self._beat is None:
            self._beat = Renewal(edges.opts.results, self.me)
        return holder

    def release(self, env_id: str) -> None:
        """This run's claim on ``env_id`` (with this repro), given up."""
        self._edges.store.release(self.me, env_id, self._edges.repro.repro_id)

    def wait(self, want: Want, holding: Iterable[str]) -> ProbeRecord | None:
        """The record another run is making of ``want``'s environment, waited for; None when
        that run ended without one (interrupted, killed) and this run now holds the claim:
        the caller probes it. ``holding``: the environments this run claimed to build ahead,
        given up first."""
        assert want.spec is not None
        # A run that waits holds no claim another could be waiting for (the builds ahead keep
        # building, unclaimed): two runs never wait for each other.
        for env_id in holding:
            self.release(env_id)
        store, told = self._edges.store, False
        while True:
            hit = self.stored(want.spec, want.runs)
            if hit is not None:
                return hit
            holder = store.held(want.spec.env_id, self._edges.repro.repro_id)
            if holder is None and self.claim(want) is None:
                return None
            if holder is not None and not told:
                self._edges.progress.message(
                    f"{want.label}: another envbisect run (pid {holder.pid} on {holder.host}) "
                    "is probing this environment; waiting for its outcome"
                )
                told = True
            time.sleep(CLAIM_POLL)

    def record(self, task: ProbeTask, rec: ProbeRecord) -> bool:
        """``rec``, what ``task`` came back with, stored and its claim given up; whether it
        was the store's already (nothing new was seen)."""
        if task.earlier is not None and rec == task.earlier:
            self._edges.store.release(self.me, task.spec.env_id, task.repro.repro_id)
            return True
        self._edges.store.put(rec)
        self._edges.store.release(self.me, task.spec.env_id, task.repro.repro_id)
        return False


def _first_runs(rec: ProbeRecord, runs: int) -> ProbeRecord:
    """The record as it was after ``runs`` runs: a rerun asks for what the first run asked
    for at each step, so it sees the same evidence and retraces the same search."""
    if len(rec.all_runs) <= runs:
        return rec
    kept = rec.all_runs[:runs]
    first = next((i for i, o in enumerate(rec.all_runs) if failed(o)), None)
    outcome = rec.outcome if first is not None and first < runs else kept[0]
    return replace(rec, runs=kept if runs > 1 else (), outcome=outcome)


def _stale(rec: ProbeRecord, opts: CommonOptions) -> bool:
    """A stored timeout under a shorter limit than today's says nothing: probe again (a
    build cut at a lower --build-timeout too)."""
    if rec.outcome.kind is OutcomeKind.UNTESTABLE and rec.spec.get("source"):
        from envbisect.env.srcbuild import stale_build

        return stale_build(rec.outcome, opts.planning.build_timeout)
    return rec.outcome.kind is OutcomeKind.TIMEOUT and (rec.timeout or 0) < opts.probing.timeout
