"""The response reward model: architecture, audio features, training ladder, training, scoring, checkpoints."""
