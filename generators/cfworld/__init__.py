"""CF-World scenarios: the importer of the official release (and, later, the builder)."""
