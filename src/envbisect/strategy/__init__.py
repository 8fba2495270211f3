"""Search strategies as state machines: ``next()`` / ``record()``; they never run anything."""
