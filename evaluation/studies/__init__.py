"""Blind human listening studies: design, assignment, playback-gated rating, screening, results."""
