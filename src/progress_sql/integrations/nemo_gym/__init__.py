"""NeMo Gym integration (extra ``[nemo-gym]``, its own environment: constraints-nemo_gym.txt): the
refinement environment as a NeMo Gym resources server (:mod:`.server`, which imports nemo_gym) over
NeMo Gym rows made from ``progress-sql export`` (:mod:`.rows`, which does not). docs/nemo-gym.md."""
