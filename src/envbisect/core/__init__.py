"""The pure core: data in, data out (no subprocess, network, sqlite or file IO)."""
