"""Shard planning and the in-order merge: every position in exactly one shard, each database in one
shard only, results back in input order however the shards finish, a shard counted once."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from progress_sql.cluster.shards import OrderedMerge, plan_shards, shard_size
from progress_sql.errors import ConfigError


@given(st.lists(st.sampled_from("abcdefgh"), max_size=60), st.integers(1, 12))
def test_every_position_is_in_one_shard_and_every_database_in_one_shard(databases: list[str], size: int) -> None:
    shards = plan_shards(databases, shard_items=size)
    positions = [p for s in shards for p in s.positions]
    assert sorted(positions) == list(range(len(databases)))
    owner = {db: s.index for s in shards for db in s.databases}
    assert sum(len(s.databases) for s in shards) == len(owner)  # no database in two shards
    for shard in shards:
        assert {databases[p] for p in shard.positions} == set(shard.databases)
        # a shard is over the size only when it is one database
        assert len(shard.positions) <= size or len(shard.databases) == 1
    assert [s.index for s in shards] == list(range(len(shards)))


@given(st.lists(st.sampled_from("abcdef"), min_size=1, max_size=40), st.integers(1, 6), st.randoms())
def test_the_merge_gives_input_order_whatever_order_shards_finish(
    databases: list[str], size: int, rng: random.Random
) -> None:
    shards = plan_shards(databases, shard_items=size)
    merge: OrderedMerge[str] = OrderedMerge(shards)
    order = list(shards)
    rng.shuffle(order)
    out: list[tuple[int, str]] = []
    for shard in order:
        results = [f"{databases[p]}{p}" for p in shard.positions]
        out.extend(merge.add(shard.index, results))
        out.extend(merge.add(shard.index, results))  # a duplicate run of a shard adds nothing
    assert out == [(p, f"{db}{p}") for p, db in enumerate(databases)]
    assert merge.complete


def test_a_shard_with_the_wrong_number_of_results_is_refused() -> None:
    merge: OrderedMerge[int] = OrderedMerge(plan_shards(["a", "a"], shard_items=2))
    with pytest.raises(ValueError, match="2 items"):
        merge.add(0, [1])


def test_sizes_and_bad_sizes() -> None:
    assert shard_size(1000, 2) == 125
    assert shard_size(0, 4) == 1
    with pytest.raises(ConfigError, match="shard_items"):
        plan_shards(["a"], shard_items=0)
