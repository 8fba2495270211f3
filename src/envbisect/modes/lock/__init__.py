"""``envbisect lock``: the newest environment the requirements allow in which the repro passes.

solve    the command: the newest first, then each round's constraints, found by the peer
         strategy whose turn it is (``Strategy``), then each constraint tried away
common   what one lock knows: a frozen ``LockContext`` (requirements, planner inputs, the
         constraints, the probe log) that every strategy plans and probes through
start    where the history's searches start (--from, --good-date, the newest pin's upload)
bydate   peer: the constraints found between release moments
descent  peer: the failure-driven descent, when no environment of the past passes
upgrade  peer: ``lock --from LOCK``, one round's constraint by delta debugging
outputs  what lock leaves in ``results/<run-id>/``
"""
