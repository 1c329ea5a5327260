"""The ``train`` command's recipe: template data over embedded databases, a tokenizer and a tiny model
built locally, a supervised warm start, multi-turn RL through TRL, and the run report."""
