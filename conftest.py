"""Collection rules for the whole repository.

The verl integration needs verl 0.9.1, which cannot share an environment with the [trl] extra:
scripts/test.sh runs ``tests/with_verl`` and ``src/progress_sql/integrations/verl`` in the verl
environment that scripts/verl_venv.sh builds. In an environment without verl they are not collected
here (they are not skipped: they run in their own environment).
"""

from __future__ import annotations

import importlib.util

VERL_ONLY = [
    "tests/with_verl",
    *(f"src/progress_sql/integrations/verl/{name}.py" for name in ("agent_loop", "trainer", "main")),
]
collect_ignore = [] if importlib.util.find_spec("verl") else VERL_ONLY
