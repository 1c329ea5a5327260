"""Adapters to the trainers people use; the only place a trainer package is imported.

Each module needs its extra: ``trl`` ([trl]), ``verl`` ([verl], its own environment), ``skyrl``.
"""
