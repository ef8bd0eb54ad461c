"""Deterministic verifiers: pure functions of (meta, image) -> Verdict."""
