"""``evaluate`` over a gold store: the ODT analysis uses the schema, as the environment's feedback
does; hardness comes from the store; skipped and invalid examples."""

from __future__ import annotations

from pathlib import Path

import pytest

from progress_sql.env import EnvConfig, SQLRefineEnv
from progress_sql.env.core import exec_limits, make_store
from progress_sql.evaluation.harness import Sample, evaluate
from progress_sql.execution.cache import GoldCache
from progress_sql.execution.compare import get_preset
from progress_sql.execution.gold import GoldStore
from progress_sql.execution.pool import ExecutionPool
from progress_sql.odt import diagnose, prepare_gold
from progress_sql.types import Example
from tests.conftest import build_database

#: Unqualified ``price``: the schema attributes it to contact_lenses.
GOLD = (
    "SELECT supplier_name FROM suppliers JOIN contact_lenses ON suppliers.supplier_id = contact_lenses.supplier_id "
    "WHERE price > 20"
)
WRONG = GOLD.replace("WHERE price > 20", "WHERE contact_lenses.price > 40")


@pytest.fixture(scope="module")
def lenses_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_database("contact_lenses.sql", tmp_path_factory.mktemp("harness"))


def test_the_analysis_agrees_with_the_environments_feedback(lenses_db: Path, pool: ExecutionPool) -> None:
    example = Example(0, "Suppliers of lenses over 20?", "contact_lenses", str(lenses_db), GOLD)
    cache = GoldCache()
    config = EnvConfig(max_turns=1)
    store = GoldStore(get_preset("strict"), pool=pool, cache=cache, limits=exec_limits(config))
    [record] = evaluate([example], [[Sample(WRONG)]], store)
    assert (record.status, record.match, record.hardness, record.level) == ("scored", False, "medium", "medium")
    env = SQLRefineEnv(config, store=make_store(config, pool=pool, cache=cache))
    env.reset(example)
    info = env.step(f"<think>x</think><sql>{WRONG}</sql>").info
    assert record.tags == info.tags == ()  # the same structure; only the value differs
    assert record.f_struct == round(info.f_struct, 6) == 1.0
    # Without the schema (the analysis before issue 13) the unqualified column looked like another one.
    assert diagnose(WRONG, prepare_gold(GOLD)).tags == ("WHERE_ERROR",)
    assert (cache.misses, cache.hits) == (1, 1)  # the environment's store found the gold the evaluation ran


def test_skipped_and_invalid_examples(lenses_db: Path, pool: ExecutionPool, tmp_path: Path) -> None:
    store = GoldStore(get_preset("strict"), pool=pool)
    missing = Example(0, "?", "nowhere", str(tmp_path / "nowhere.sqlite"), "SELECT count(*) FROM t")
    broken = Example(1, "?", "contact_lenses", str(lenses_db), "SELECT * FROM no_such_table")
    skipped, invalid = evaluate([missing, broken], [[Sample("SELECT 1")], [Sample("SELECT 1")]], store)
    assert (skipped.status, skipped.verdict, skipped.hardness) == ("skipped", "skipped", "easy")
    assert (invalid.status, invalid.verdict, invalid.samples) == ("gold_invalid", "gold_invalid", 1)
    assert "no_such_table" in invalid.reason
    with pytest.raises(ValueError, match="has no samples"):
        evaluate([broken], [[]], store)
