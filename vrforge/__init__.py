"""vrforge: build, publish and evaluate visual-reasoning benchmarks."""

__version__ = "0.1.0"
