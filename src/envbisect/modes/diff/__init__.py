"""``envbisect diff GOOD BAD``: the culprits between two environments.

mode    the command: read both ends, verify them, run the engine, write the outputs
engine  the search between two environments, shared with ``lock --from``
roots   the roots of ddmin's failing set: the changes that are causes, not forced
"""
