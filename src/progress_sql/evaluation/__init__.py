"""Evaluation: EX and TS of answers under a comparison preset, votes over samples, per-level metrics,
the offline ODT analysis and the report, all over a :class:`~progress_sql.judge.gold.GoldStore`."""
