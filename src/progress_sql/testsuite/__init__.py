"""Test suites for test-suite accuracy (TS): fuzzed databases (:mod:`.fuzz`), neighbour queries
(:mod:`.neighbors`), distillation (:mod:`.distill`) and the suite manifest (:mod:`.manifest`)."""
