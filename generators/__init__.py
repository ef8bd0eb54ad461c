"""Puzzle and scenario generators; importing a task module registers it."""
