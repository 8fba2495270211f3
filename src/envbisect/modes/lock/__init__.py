"""``envbisect lock``: the newest environment the requirements allow in which the repro passes.

solve    the command: the newest first, then each constraint found and proven
bydate   the constraints found between release moments
descent  the failure-driven descent, when no environment of the past passes
upgrade  ``lock --from LOCK``: one round's constraint by delta debugging
outputs  what lock leaves in ``results/<run-id>/``
"""
