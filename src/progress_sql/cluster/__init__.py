"""Scale-out on a Ray cluster: work sharded by database, each shard run with the same code (and the same
isolated execution pool) as on one machine, results streamed back in input order, a lost node's shards
run again elsewhere; the synthetic dataset that measures it (docs/scaling.md).

Ray is imported only in :mod:`progress_sql.cluster.ray` (and only when a command is given ``--ray``):
planning (:mod:`~progress_sql.cluster.shards`) and the generator (:mod:`~progress_sql.cluster.synthetic`)
need none of it.
"""
