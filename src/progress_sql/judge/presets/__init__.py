"""The comparison presets; see :mod:`progress_sql.judge.compare` for the registry."""
