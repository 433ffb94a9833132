"""Dialogues: multi-turn sessions whose user turns are items (import/export, history, preview)."""
