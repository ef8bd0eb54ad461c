"""The build system: recipes, plan, item pipeline, shard writer, manifest, card."""
