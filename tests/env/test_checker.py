"""The conformance checker, run over every fixture example with several scripted policies."""

from __future__ import annotations

from pathlib import Path

import pytest

from progress_sql.data import case_study
from progress_sql.data.tasks import load_task
from progress_sql.env import EnvConfig, SQLRefineEnv
from progress_sql.env.checker import check_env
from progress_sql.env.core import make_store
from progress_sql.execution.pool import ExecutionPool
from progress_sql.types import Example


def answer(sql: str) -> str:
    return f"<think>plan</think><sql>{sql}</sql>"


def scripted_policies(gold: str) -> dict[str, list[str]]:
    return {
        "right first": [answer(gold)],
        "right at the end": [answer("SELECT 1"), "garbage", answer("SELECT name FROM nope"), answer(gold)],
        "never right": [answer("SELECT 1"), "", "<think>x</think>", answer("SELECT 2")],
        "unformatted right": [gold],
    }


def fixture_examples(music_dir: Path, lenses_db: Path) -> list[Example]:
    music = load_task(str(music_dir / "questions.json"), music_dir)
    return [*music, Example(len(music), case_study.QUESTION, "contact_lenses", str(lenses_db), case_study.GOLD_SQL)]


@pytest.mark.parametrize("policy", ["right first", "right at the end", "never right", "unformatted right"])
@pytest.mark.parametrize("config", [EnvConfig(), EnvConfig(max_turns=2, reward="one-shot", preset="spider")])
def test_every_fixture_example_conforms(
    music_dir: Path, lenses_db: Path, pool: ExecutionPool, policy: str, config: EnvConfig
) -> None:
    store = make_store(config, pool=pool)  # every environment of the check shares one store
    for example in fixture_examples(music_dir, lenses_db):
        responses = scripted_policies(example.gold_sql)[policy]
        report = check_env(lambda: SQLRefineEnv(config, store=store), example, responses)
        assert report.ok, f"example {example.index}: {report.failures}"
        assert len(report.checked) >= 6


def probe_policies(gold: str) -> dict[str, list[str]]:
    """Probes, invalid turns and answers in ``<solution>``."""
    look, solve = "<think>look</think><sql>SELECT 1</sql>", "<think>so</think><solution>{}</solution>"
    return {
        "probe then right": [look, solve.format(gold)],
        "wrong then right": [solve.format("SELECT 2"), look, solve.format(gold), look, look],
        "only probes": [look, "no tags at all", look, look, look],
    }


@pytest.mark.parametrize("policy", ["probe then right", "wrong then right", "only probes"])
@pytest.mark.parametrize(
    "config",
    [EnvConfig(protocol="probe", feedback="execution"), EnvConfig(protocol="skyrl", max_turns=5, reward="skyrl-sql")],
)
def test_every_fixture_example_conforms_under_the_probe_protocols(
    music_dir: Path, lenses_db: Path, pool: ExecutionPool, policy: str, config: EnvConfig
) -> None:
    """The same rules, where a probe or an invalid turn is no answer and (skyrl) any answer ends the episode."""
    store = make_store(config, pool=pool)
    for example in fixture_examples(music_dir, lenses_db):
        report = check_env(lambda: SQLRefineEnv(config, store=store), example, probe_policies(example.gold_sql)[policy])
        assert report.ok, f"example {example.index}: {report.failures}"
        assert len(report.checked) >= 6


class EarlyStopEnv(SQLRefineEnv):
    """A broken environment: it reports truncation after the first turn."""

    def step(self, response: str):  # type: ignore[no-untyped-def]
        result = super().step(response)
        self._done = True
        return type(result)(None, result.reward, result.terminated, True, result.info)


def test_checker_catches_a_broken_environment(music_dir: Path, lenses_db: Path, pool: ExecutionPool) -> None:
    example = fixture_examples(music_dir, lenses_db)[0]
    store = make_store(EnvConfig(), pool=pool)
    report = check_env(lambda: EarlyStopEnv(store=store), example, [answer("SELECT 1")] * 4)
    assert not report.ok
    assert any("truncated only at the budget" in failure for failure in report.failures)
