"""Generators of schedules: seeded random walks, Hypothesis strategies and the state machine, and the shrinker."""
