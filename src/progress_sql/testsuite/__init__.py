"""Test suites for test-suite accuracy (TS): what a database holds (:mod:`.profile`, over
:mod:`progress_sql.data.introspect`), what its gold queries ask of it (:mod:`.hints`), random
databases with its schema (:mod:`.fuzz`, :mod:`.values`), neighbour queries (:mod:`.neighbors`),
distillation (:mod:`.distill`), many schemas in parallel (:mod:`.build`) and the suite manifest
(:mod:`.manifest`). See docs/testsuite.md."""
