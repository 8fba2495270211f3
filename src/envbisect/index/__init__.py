"""The index edge: the httpx client, its on-disk cache, PyTorch variant indexes, wheel metadata."""
