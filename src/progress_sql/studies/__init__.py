"""Studies over the recipe library (:mod:`progress_sql.training`): a ``train`` run as one call with its
report (:mod:`~progress_sql.studies.train`, :mod:`~progress_sql.studies.report`) and the paper's
ablations from one shared warm start (:mod:`~progress_sql.studies.ablate`)."""
