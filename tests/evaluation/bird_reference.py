"""BIRD Mini-Dev's own evaluation scripts (tests/fixtures/bird_eval/, vendored unchanged) loaded as
modules, for the agreement tests."""

from __future__ import annotations

import hashlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from tests.conftest import REPO_ROOT

FOLDER = REPO_ROOT / "tests" / "fixtures" / "bird_eval"
#: SHA-256 of each script as published (tests/fixtures/bird_eval/README.md).
SHA256 = {
    "evaluation_utils": "f6943d249caac5aeaef9bce21d43dbf29dcef85a0c965a76df032a9542f308bf",
    "evaluation_ex": "da1bbcd4530be83692d7c650c814ea9704bb710d0c953eb75d02ccb38233cf89",
    "evaluation_f1": "ba2700ee09b0c34d7e203788544757e6e6d6c99c0425bb92b3daa3927eee29bf",
    "evaluation_ves": "c23d606c002fd9eb75c17ce3cbabdc26d0a791b8291615a75cbf5e9c98ae67df",
}
# Imported at the top of evaluation_utils for BIRD's MySQL / PostgreSQL runs, used only to connect there.
_SERVER_DRIVERS = ("psycopg2", "pymysql")


def load_bird_scripts() -> dict[str, ModuleType]:
    """The four scripts as modules, by name. They import each other by bare name
    (``from evaluation_utils import ...``): the names are registered while they load, then removed."""
    added = []
    for driver in _SERVER_DRIVERS:
        if driver not in sys.modules and importlib.util.find_spec(driver) is None:
            sys.modules[driver] = ModuleType(driver)
            added.append(driver)
    modules: dict[str, ModuleType] = {}
    try:
        for name, digest in SHA256.items():
            path = FOLDER / f"{name}.py.txt"
            source = path.read_bytes()
            if hashlib.sha256(source).hexdigest() != digest:
                raise AssertionError(f"{path} is not the published script (SHA-256 differs)")
            module = ModuleType(name)
            module.__file__ = str(path)
            sys.modules[name] = module
            exec(compile(source, str(path), "exec"), module.__dict__)
            modules[name] = module
    finally:
        for name in [*SHA256, *added]:
            sys.modules.pop(name, None)
    return modules


def bird_db_path(db_root: Path, db_id: str) -> str:
    """BIRD's layout, as its ``package_sqls`` builds the path: ``db_root + db_id/db_id.sqlite``."""
    return f"{db_root}/{db_id}/{db_id}.sqlite"
