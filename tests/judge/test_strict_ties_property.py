"""Property: ``strict`` accepts every valid answer to a top-k query whose ORDER BY key ties at the
LIMIT boundary (the key is not in the projection), and rejects answers that leave the tie."""

from __future__ import annotations

import sqlite3
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from progress_sql.execution.executor import execute
from progress_sql.judge.compare import get_preset, judge


def _database(folder: Path, scores: list[int]) -> Path:
    path = folder / "scores.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE player (name TEXT PRIMARY KEY, score INTEGER)")
    conn.executemany("INSERT INTO player VALUES (?, ?)", [(f"p{i}", s) for i, s in enumerate(scores)])
    conn.commit()
    conn.close()
    return path


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.integers(0, 3), min_size=2, max_size=9),
    st.integers(1, 8),
    st.randoms(use_true_random=False),
)
def test_any_member_of_the_boundary_tie_is_accepted(scores: list[int], k: int, rnd: object) -> None:
    k = min(k, len(scores))
    names = [f"p{i}" for i in range(len(scores))]
    # A valid answer: sort by score descending, breaking ties at random, and keep the first k.
    order = sorted(range(len(scores)), key=lambda i: (-scores[i], rnd.random()))  # type: ignore[attr-defined]
    chosen = [names[i] for i in order[:k]]
    gold_sql = f"SELECT name FROM player ORDER BY score DESC LIMIT {k}"
    preset = get_preset("strict")
    with tempfile.TemporaryDirectory() as folder:
        db = _database(Path(folder), scores)
        gold = [execute(db, sql) for sql in preset.gold_queries(gold_sql)]
        listed = ", ".join(f"'{n}'" for n in chosen)
        pred = execute(db, f"SELECT name FROM player WHERE name IN ({listed}) ORDER BY score DESC, random()")
        assert judge(preset, gold_sql, gold, pred).match
        boundary = scores[order[k - 1]]
        below = [names[i] for i in range(len(scores)) if scores[i] < boundary]
        if below:  # swap the last chosen member for one strictly below the boundary: not top-k
            wrong = ", ".join(f"'{n}'" for n in [*chosen[:-1], below[0]])
            pred = execute(db, f"SELECT name FROM player WHERE name IN ({wrong}) ORDER BY score DESC")
            assert not judge(preset, gold_sql, gold, pred).match
