"""Dataset schemas: row dataclasses, datasets.Features and JSON Schema files for meta."""
