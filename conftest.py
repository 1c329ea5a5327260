"""Collection rules for the whole repository.

The verl integration needs verl 0.9.1, which cannot share an environment with the [trl] extra:
scripts/test.sh runs ``tests/with_verl`` and ``src/progress_sql/integrations/verl`` in the verl
environment that scripts/verl_venv.sh builds. In an environment without verl they are not collected
here (they are not skipped: they run in their own environment). Likewise the SkyRL trainer's entry
point needs skyrl 0.4.0 (Python >= 3.12); its skyrl-free parts are tested everywhere
(tests/integrations/test_skyrl_entrypoint.py), and ``tests/with_skyrl`` is skipped with one line
saying why where skyrl is missing (it has no environment of its own here).
"""

from __future__ import annotations

import importlib.util

VERL_ONLY = [
    "tests/with_verl",
    *(f"src/progress_sql/integrations/verl/{name}.py" for name in ("agent_loop", "trainer", "main")),
]
SKYRL_ONLY = ["src/progress_sql/integrations/skyrl_entrypoint.py"]
collect_ignore = ([] if importlib.util.find_spec("verl") else VERL_ONLY) + (
    [] if importlib.util.find_spec("skyrl") else SKYRL_ONLY
)
