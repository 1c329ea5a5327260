"""Run folders read back and compared: :mod:`~progress_sql.runs.read` (one typed reader per run kind)
and :mod:`~progress_sql.runs.compare` (two eval runs side by side)."""
