"""Paired before/after statistics and the per-step group statistics of the RL logs."""

from __future__ import annotations

import math
import random

import pytest

from progress_sql.evaluation.stats import Accuracy, PairedChange, pooled
from progress_sql.training.rl import group_statistics


def test_paired_standard_error_matches_the_per_prompt_differences() -> None:
    rng = random.Random(0)
    before = [rng.random() < 0.6 for _ in range(300)]
    after = [b if rng.random() < 0.85 else not b for b in before]
    change = PairedChange.of(Accuracy.of(before), Accuracy.of(after))
    diffs = [int(a) - int(b) for b, a in zip(before, after, strict=True)]
    mean = sum(diffs) / len(diffs)
    sd = math.sqrt(sum((d - mean) ** 2 for d in diffs) / (len(diffs) - 1))
    assert change.difference == pytest.approx(mean)
    assert change.se_difference == pytest.approx(sd / math.sqrt(len(diffs)))
    assert change.gained - change.lost == sum(diffs)
    # pairing: far below the unpaired standard error when most prompts keep their outcome
    unpaired = math.sqrt(Accuracy.of(before).standard_error ** 2 + Accuracy.of(after).standard_error ** 2)
    assert change.se_difference < unpaired


def test_no_change_has_no_spread_and_is_not_significant() -> None:
    same = Accuracy.of([True, False, True])
    change = PairedChange.of(same, same)
    assert (change.difference, change.se_difference, change.significant) == (0.0, 0.0, False)


def test_pairing_needs_the_same_prompts_scored_twice() -> None:
    with pytest.raises(ValueError, match="same prompts"):
        PairedChange.of(Accuracy.of([True, False]), Accuracy.of([True]))
    with pytest.raises(ValueError, match="same prompts"):
        PairedChange.of(Accuracy(2, 1), Accuracy(2, 2))  # no per-prompt outcomes


def test_pooled_sets_keep_their_outcomes_in_order() -> None:
    joined = pooled([Accuracy.of([True, False]), Accuracy.of([False])])
    assert (joined.n, joined.correct, joined.matches) == (3, 1, (True, False, False))


def test_group_statistics_count_float_noise_as_a_tie() -> None:
    tied = [{"late": 2.0, "align": -0.1 + k * 7.6e-9} for k in range(4)]  # TRL would count this as variance
    varied = [
        {"late": 2.0, "align": 0.4},
        {"late": 0.0, "align": -0.1},
        {"late": 1.0, "align": -0.1},
        {"late": 0.0, "align": -0.1},
    ]
    stats = group_statistics([*tied, *varied], group_size=4)
    assert stats["groups/zero_variance_share"] == 0.5
    shares = stats["groups/variance_share/late"] + stats["groups/variance_share/align"]
    assert shares == pytest.approx(1.0)  # the components' shares of the total's variance add up
    assert stats["groups/variance_share/late"] > stats["groups/variance_share/align"] > 0


def test_rl_pool_is_unseen_by_the_warm_start_and_disjoint_from_its_heldout_set() -> None:
    from progress_sql.data.embedded import embedded_databases
    from progress_sql.training.recipe import rl_pool
    from progress_sql.training.templates import build_dataset

    databases = embedded_databases()
    data = build_dataset(databases, seed=0)
    pool = rl_pool(data, databases, seed=0, heldout_size=300)
    sql = {(e.db_id, " ".join(e.gold_sql.split())) for e in pool.prompts}
    held = {(e.db_id, " ".join(e.gold_sql.split())) for e in pool.heldout}
    seen = {
        (e.db_id, " ".join(e.gold_sql.split())) for e in [*data.train, *data.heldout_new_combo, *data.heldout_new_value]
    }
    assert len(pool.heldout) == len(held) == 300  # one paraphrase per SQL
    assert not sql & held
    assert not (sql | held) & seen
    assert len(pool.prompts) > 2000  # every paraphrase of the remaining SQL: thousands of prompts
    families = {e.difficulty for e in pool.heldout}
    assert len(families) >= 5  # family-balanced, as far as the unseen pairs allow
    assert rl_pool(data, databases, seed=0, heldout_size=300) == pool  # deterministic for a seed
    checked = rl_pool(data, databases, seed=0, heldout_size=300, validation_size=150)
    assert checked.heldout == pool.heldout  # the held-out set is the same with or without a validation set
    validation = {(e.db_id, " ".join(e.gold_sql.split())) for e in checked.validation}
    assert len(checked.validation) == len(validation) == 150
    prompts = {(e.db_id, " ".join(e.gold_sql.split())) for e in checked.prompts}
    assert not validation & (held | prompts | seen)
    assert prompts == sql - validation
