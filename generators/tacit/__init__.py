"""TACIT puzzle generators, one module per task."""
