"""Hosted episodes (what SkyRL, OpenEnv, NeMo Gym, verifiers and Atropos step) started and stepped from
many threads go through the coalescer of their pool and end as the same episodes stepped one call at
a time; an unscored episode stays its own."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from progress_sql.env.coalesce import coalescer_of
from progress_sql.integrations.hosted import HostedEpisode, close_pools, execution_pool, host_settings
from progress_sql.types import Example
from tests.conftest import build_database
from tests.env.conftest import GOLD
from tests.env.test_probe_protocol import WRONG
from tests.env.test_step_many import answer

SCRIPTS = [[answer(GOLD)], [answer(WRONG), answer(GOLD)], ["no sql here", answer(WRONG)], [answer("SELECT nme")]] * 4


@pytest.fixture
def pools() -> Iterator[None]:
    yield
    close_pools()


def _play(episode: HostedEpisode, script: list[str]) -> list[tuple[object, ...]]:
    episode.start()
    steps = []
    for response in script:
        step = episode.step(response)
        steps.append((step.observation, step.reward, step.done, step.metadata))
        if step.done:
            break
    return steps


def test_hosted_episodes_on_threads_coalesce_and_end_as_alone(tmp_path: Path, pools: None) -> None:
    db = build_database("music.sql", tmp_path)
    music = Example(0, "Which singers from France are over 40?", "music", str(db), GOLD)
    bad_gold = Example(1, music.question, "music", str(db), "SELECT nme FROM singer")
    settings = host_settings({"max_turns": 2, "execution_workers": 1})
    examples = [music] * (len(SCRIPTS) - 1) + [bad_gold]
    alone = [
        _play(HostedEpisode(settings, example, coalesce=False), script)
        for example, script in zip(examples, SCRIPTS, strict=True)
    ]
    turns = coalescer_of(execution_pool(1)).turns
    before = turns.counts()
    with ThreadPoolExecutor(len(SCRIPTS)) as threads:
        episodes = [HostedEpisode(settings, example) for example in examples]
        together = list(threads.map(_play, episodes, SCRIPTS))
    assert together == alone
    assert together[-1][0][3]["stop"] == "gold_invalid"  # the failing gold: its episode only, unscored
    ran_sql = sum(
        1 for script, steps in zip(SCRIPTS[:-1], together[:-1], strict=True)
        for response, _ in zip(script, steps, strict=False) if response != "no sql here"
    )  # fmt: skip
    assert turns.counts().items - before.items == ran_sql  # every turn with SQL went through the coalescer
