"""verifiers' name for the taskset (``vf-eval progress-sql-verifiers``): verifiers 0.4.0 imports a taskset
by a top-level module name, so this re-exports :mod:`progress_sql.integrations.verifiers`."""

from progress_sql.integrations.verifiers import *  # noqa: F403
from progress_sql.integrations.verifiers import __all__  # noqa: F401
