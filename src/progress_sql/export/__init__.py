"""Training files for trainers: verl, SkyRL and TRL rows built from examples (``progress-sql export``)."""
