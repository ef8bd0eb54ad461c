"""Dataset-card templates and the gallery maker."""
