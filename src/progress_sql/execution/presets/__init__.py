"""The comparison presets; see :mod:`progress_sql.execution.compare` for the registry."""
