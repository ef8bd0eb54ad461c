"""Performance benchmarks; each writes bench/results/<name>.json."""
