"""Evaluation: scoring predictions against gold queries (execution accuracy first)."""
