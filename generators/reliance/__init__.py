"""Golden scenes for the visual-reliance audit: questions whose answer can only come from the image."""

from vrforge.generators.reliance.scenes import (
    GENERATOR_VERSION,
    QUESTION_TYPES,
    GoldenItem,
    generate_item,
    read_answer,
    verify_item,
)

__all__ = ["GENERATOR_VERSION", "QUESTION_TYPES", "GoldenItem", "generate_item", "read_answer", "verify_item"]
