"""Collection rules for the whole repository.

Packages whose pins clash with the [trl] environment run their tests in environments of their own
(scripts/side_venv.sh NAME builds each from constraints-NAME.txt; scripts/test.sh runs them there):
verl 0.9.1 (transformers < 5.11) and the environment standards of issue 33 (OpenEnv, verifiers,
NeMo Gym, Atropos). In an environment without the package their tests and adapter modules are not
collected here (they are not skipped: they run in their own environment). Likewise the SkyRL trainer's
entry point needs skyrl 0.4.0 (Python >= 3.12); its skyrl-free parts are tested everywhere
(tests/integrations/test_skyrl_entrypoint.py), and ``tests/with_skyrl`` is skipped with one line
saying why where skyrl is missing (it has no environment of its own here).
"""

from __future__ import annotations

import importlib.util

#: The package each side environment brings -> the paths only that environment collects.
SIDE_ENVIRONMENT_PATHS: dict[str, list[str]] = {
    "verl": [
        "tests/with_verl",
        *(f"src/progress_sql/integrations/verl/{name}.py" for name in ("agent_loop", "trainer", "main")),
    ],
    "skyrl": ["src/progress_sql/integrations/skyrl_entrypoint.py"],
    "openenv": ["tests/with_openenv", "src/progress_sql/integrations/openenv"],
    "verifiers": ["tests/with_verifiers", "src/progress_sql/integrations/verifiers", "src/progress_sql_verifiers"],
    "nemo_gym": ["tests/with_nemo_gym", "src/progress_sql/integrations/nemo_gym"],
    "atroposlib": ["tests/with_atropos", "src/progress_sql/integrations/atropos"],
}
collect_ignore = [
    path
    for package, paths in SIDE_ENVIRONMENT_PATHS.items()
    if importlib.util.find_spec(package) is None
    for path in paths
]
