"""Runnable benchmarks; each prints its figures (README, "Benchmarks")."""
