"""The environment edge: uv, the probe runner, repros and built-in probes, forensics, reports."""
