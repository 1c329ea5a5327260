"""``python -m progress_sql.integrations.atropos serve|process|evaluate --env.rows FILE ...``: Atropos's
own command line (``BaseEnv.cli``) for the environment (docs/atropos.md)."""

from progress_sql.integrations.atropos.env import ProgressSQLAtroposEnv

if __name__ == "__main__":
    ProgressSQLAtroposEnv.cli()
