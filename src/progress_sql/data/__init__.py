"""Datasets, schemas and the embedded default data."""
