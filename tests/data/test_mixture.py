"""The mixture sampler: deterministic, duplicate-free, per-source counts; its JSON spec; real data."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from progress_sql.data.mixture import (
    MixtureSource,
    allocate,
    load_sources,
    parse_mixture_spec,
    read_mixture_spec,
    sample_mixture,
)
from progress_sql.errors import ConfigError, DatasetError
from progress_sql.types import Example


def examples(db: str, n: int, *, repeat_every: int = 0) -> tuple[Example, ...]:
    """``n`` examples on ``db``; with ``repeat_every`` k, every k-th repeats the previous question."""
    rows = []
    for i in range(n):
        q = i - 1 if repeat_every and i % repeat_every == 0 and i else i
        rows.append(Example(i, f"Question {q}?", db, f"/data/{db}.sqlite", f"SELECT {q}"))
    return tuple(rows)


def key(example: Example) -> tuple[str, str, str]:
    return example.db_id, example.question, example.gold_sql


def test_counts_weights_and_determinism() -> None:
    sources = [
        MixtureSource("spider", examples("s", 50), weight=1),
        MixtureSource("bird", examples("b", 50), weight=3),
        MixtureSource("fixed", examples("f", 10), count=4),
    ]
    mix = sample_mixture(sources, total=24, seed=7)
    assert mix.counts == {"spider": 5, "bird": 15, "fixed": 4}
    assert [d.source for d in mix.items].count("bird") == 15
    assert mix.items == sample_mixture(sources, total=24, seed=7).items
    assert mix.items != sample_mixture(sources, total=24, seed=8).items
    assert {d.source for d in mix.items[:6]} != {"spider"}  # shuffled, not concatenated


def test_duplicates_are_removed_before_sampling_and_reported() -> None:
    repeated = examples("s", 10, repeat_every=2)  # questions 1, 3, 5, 7 repeat at 2, 4, 6, 8
    mix = sample_mixture([MixtureSource("s", repeated, count=6), MixtureSource("copy", repeated[:3], count=0)])
    assert mix.duplicates == {"s": 4, "copy": 3}
    assert mix.available == {"s": 6, "copy": 0}
    assert len({key(d.example) for d in mix.items}) == 6
    with pytest.raises(DatasetError, match="7 examples asked for, 6 available"):
        sample_mixture([MixtureSource("s", repeated, count=7)])


@settings(max_examples=60, deadline=None)
@given(
    sizes=st.lists(st.integers(0, 30), min_size=1, max_size=4),
    weights=st.lists(st.floats(0.1, 5.0), min_size=4, max_size=4),
    share=st.floats(0.0, 1.0),
    seed=st.integers(0, 10_000),
)
def test_sample_invariants(sizes: list[int], weights: list[float], share: float, seed: int) -> None:
    sources = [MixtureSource(f"d{i}", examples(f"d{i}", n), weight=weights[i]) for i, n in enumerate(sizes)]
    total = int(share * min(sizes) * len(sizes) * 0.5)
    # only feasible requests: unequal weights can ask a small source for more than it has (that is the
    # DatasetError tested above)
    wanted = allocate({s.name: s.weight or 0.0 for s in sources}, total)
    assume(all(wanted[s.name] <= len(s.examples) for s in sources))
    mix = sample_mixture(sources, total=total, seed=seed)
    assert len(mix.items) == total == sum(mix.counts.values())
    assert len({key(d.example) for d in mix.items}) == total
    for source in sources:
        drawn = [d.example for d in mix.items if d.source == source.name]
        assert len(drawn) == mix.counts[source.name]
        assert set(drawn) <= set(source.examples)
    assert mix == sample_mixture(sources, total=total, seed=seed)


@given(weights=st.lists(st.floats(0.01, 100.0), min_size=1, max_size=6), total=st.integers(0, 100_000))
def test_allocate_sums_to_total(weights: list[float], total: int) -> None:
    counts = allocate({f"s{i}": w for i, w in enumerate(weights)}, total)
    assert sum(counts.values()) == total
    assert all(abs(counts[f"s{i}"] - total * w / sum(weights)) < 1 + 1e-9 for i, w in enumerate(weights))


def test_bad_mixtures_say_what_to_fix() -> None:
    with pytest.raises(ConfigError, match="exactly one of count or weight"):
        MixtureSource("x", (), count=1, weight=1.0)
    with pytest.raises(ConfigError, match="needs a total"):
        sample_mixture([MixtureSource("x", examples("x", 3), weight=1.0)])
    with pytest.raises(ConfigError, match="unique"):
        sample_mixture([MixtureSource("x", (), count=0), MixtureSource("x", (), count=0)])
    with pytest.raises(ConfigError, match="add up to 2, not the total 3"):
        sample_mixture([MixtureSource("x", examples("x", 3), count=2)], total=3)
    with pytest.raises(ConfigError, match="exceed the total"):
        sample_mixture([MixtureSource("x", examples("x", 3), count=2), MixtureSource("y", (), weight=1)], total=1)
    with pytest.raises(ConfigError, match='"sources"'):
        parse_mixture_spec({"sources": []})
    with pytest.raises(ConfigError, match="unknown keys size"):
        parse_mixture_spec({"sources": [{"task": "spider-train", "size": 3}]})
    with pytest.raises(ConfigError, match="count must be an integer"):
        parse_mixture_spec({"sources": [{"task": "spider-train", "count": 2.5}]})


def test_spec_file_resolves_data_folders_beside_it(tmp_path: Path) -> None:
    folder = tmp_path / "data"
    folder.mkdir()
    rows = [{"db_id": "shop", "question": f"Q{i}", "query": f"SELECT {i}"} for i in range(5)]
    (folder / "train_small.json").write_text(json.dumps(rows))
    spec_path = tmp_path / "mix.json"
    spec_path.write_text(
        json.dumps(
            {
                "seed": 3,
                "sources": [{"task": "spider-train", "data_dir": "data", "questions": "train_small.json", "count": 2}],
            }
        )
    )
    spec = read_mixture_spec(spec_path)
    assert spec.seed == 3
    assert spec.sources[0].name == "spider-train"
    assert spec.sources[0].data_dir == str(tmp_path / "data")
    (source,) = load_sources(spec)
    assert len(source.examples) == 5
    assert source.examples[0].db_path == str(folder / "database" / "shop" / "shop.sqlite")


@pytest.mark.shared_data
def test_spider_train_and_bird_superhero(shared_data: Path) -> None:
    spider = {"task": "spider-train", "data_dir": str(shared_data / "spider"), "questions": "train_spider.min.json"}
    superhero = {
        "name": "superhero",
        "task": "bird-dev",
        "data_dir": str(shared_data / "bird"),
        "db_ids": ["superhero"],
    }
    spec = parse_mixture_spec(
        {"seed": 11, "total": 300, "sources": [{**spider, "weight": 2}, {**superhero, "weight": 1}]}
    )
    sources = load_sources(spec)
    assert len(sources[0].examples) == 7000
    assert len(sources[1].examples) == 129
    mix = sample_mixture(sources, total=spec.total, seed=spec.seed)
    assert mix.counts == {"spider-train": 200, "superhero": 100}
    assert mix.duplicates["superhero"] == 0
    assert mix.duplicates["spider-train"] > 0  # Spider train repeats some (db, question, query) triples
    assert len({key(d.example) for d in mix.items}) == 300
    superhero = [d.example for d in mix.items if d.source == "superhero"]
    assert {e.db_id for e in superhero} == {"superhero"}
    assert all(Path(e.db_path).is_file() for e in superhero)
    assert mix == sample_mixture(load_sources(spec), total=300, seed=11)


def test_count_all_takes_every_example_after_duplicates() -> None:
    repeated = examples("s", 10, repeat_every=2)
    spec = parse_mixture_spec({"sources": [{"task": "spider-dev", "count": "all"}]})
    assert (spec.sources[0].everything, spec.sources[0].count) == (True, None)
    mix = sample_mixture([MixtureSource("s", repeated, everything=True), MixtureSource("b", examples("b", 5), count=2)])
    assert mix.counts == {"s": 6, "b": 2}
    with pytest.raises(ConfigError, match="exactly one of count or weight"):
        MixtureSource("x", repeated, count=3, everything=True)
