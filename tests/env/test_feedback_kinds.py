"""The feedback registry and the oracle-free ``execution`` kind: no prompt of an episode in that kind
carries anything computed from the gold (tags, location sentences, the gold's literals or rows)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from progress_sql.env import EnvConfig, SQLRefineEnv
from progress_sql.env.core import make_store
from progress_sql.env.feedback import FEEDBACK_KINDS, feedback_kind
from progress_sql.errors import ConfigError
from progress_sql.execution.pool import ExecutionPool
from progress_sql.judge.gold import GoldStore
from progress_sql.odt.tags import TAGS
from progress_sql.prompts import Message
from progress_sql.types import Example

#: The gold's literals (its one result value is the first: no row matches its filter), none of which is
#: in the database or the question.
GOLD = "SELECT count(*) + 918273 FROM animals WHERE species = 'zebu-qx' OR name LIKE '%vv7%'"
GOLD_ONLY = ("918273", "zebu-qx", "vv7")
#: Words that only the ODT's text uses: its template, its neutral and fallback messages, location sentences.
ODT_WORDS = ("structural issues", "expected clause structure", "In the subquery", "the CTE", "arm 1 of", "In a JOIN")

ANSWERS = (
    "SELECT count(*) FROM animals",
    "SELECT name FROM animals WHERE id IN (SELECT id FROM animals WHERE age > 3) ORDER BY name",
    "SELECT species, count(*) FROM animals GROUP BY species HAVING count(*) > 1",
    "SELECT nme FROM animals",
    "SELEC oops",
    "WITH old AS (SELECT * FROM animals WHERE age > 5) SELECT name FROM old UNION SELECT species FROM animals",
    "SELECT a.name FROM animals AS a JOIN keepers AS k ON a.keeper_id = k.id WHERE k.name = 'Ines'",
)


@pytest.fixture(scope="module")
def zoo_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A database whose values never spell a gold-only literal."""
    path = tmp_path_factory.mktemp("zoo") / "zoo" / "zoo.sqlite"
    path.parent.mkdir(parents=True)
    with sqlite3.connect(path) as connection:
        connection.executescript(
            "CREATE TABLE keepers (id INTEGER PRIMARY KEY, name TEXT);"
            "INSERT INTO keepers VALUES (1, 'Ines'), (2, 'Tomas');"
            "CREATE TABLE animals (id INTEGER PRIMARY KEY, name TEXT, species TEXT, age INTEGER, keeper_id INTEGER "
            "REFERENCES keepers(id));"
            "INSERT INTO animals VALUES (1, 'Rex', 'dog', 4, 1), (2, 'Tom', 'cat', 7, 2), (3, 'Kiki', 'parrot', 2, 1),"
            "(4, 'Bo', 'dog', 9, 2);"
        )
    return path


def zoo_example(db: Path) -> Example:
    return Example(0, "How many animals of the rare kind are there, plus a constant?", "zoo", str(db), GOLD)


def answer(sql: str, tag: str = "sql") -> str:
    return f"<think>try</think><{tag}>{sql}</{tag}>"


def _prompts(env: SQLRefineEnv, example: Example, responses: list[str]) -> list[Message]:
    """Every message the policy is shown in one episode: the opening ones and each observation."""
    shown = list(env.reset(example))
    for response in responses:
        step = env.step(response)
        if step.observation is not None:
            shown.append(step.observation)
        if step.terminated or step.truncated:
            break
    return shown


def _leaks(text: str) -> list[str]:
    codes = [code for code in TAGS if code in text]
    return codes + [word for word in (*GOLD_ONLY, *ODT_WORDS) if word in text]


@pytest.fixture(scope="module")
def store(pool: ExecutionPool) -> GoldStore:
    return make_store(EnvConfig(), pool=pool)


def test_the_registry_names_every_kind_and_refuses_others() -> None:
    assert set(FEEDBACK_KINDS) == {"tags", "tags+error", "tags+error+preview", "execution"}
    assert [kind.name for kind in FEEDBACK_KINDS.values() if not kind.uses_gold] == ["execution"]
    with pytest.raises(ConfigError, match="unknown feedback kind 'odt'; choose one of"):
        feedback_kind("odt")
    with pytest.raises(ConfigError, match="unknown feedback kind"):
        EnvConfig(feedback="odt")


def test_the_same_episode_leaks_under_tags_and_not_under_execution(zoo_db: Path, store: GoldStore) -> None:
    responses = [answer(sql) for sql in ANSWERS[:4]]
    with_tags = _prompts(SQLRefineEnv(EnvConfig(feedback="tags"), store=store), zoo_example(zoo_db), responses)
    assert any(_leaks(m["content"]) for m in with_tags[2:])  # the check can see a leak when there is one
    plain = _prompts(SQLRefineEnv(EnvConfig(feedback="execution"), store=store), zoo_example(zoo_db), responses)
    assert [m["role"] for m in plain] == ["system", "user", "user", "user", "user"]
    assert [_leaks(m["content"]) for m in plain] == [[]] * 5
    assert plain[2]["content"].startswith("Execution: Your query returned 1 row(s); first rows: (4). Revise")
    assert plain[3]["content"].startswith("Execution: Your query returned 3 row(s); first rows: ('Bo'); ('Rex')")
    assert plain[4]["content"].startswith("Execution: Your query returned 1 row(s); first rows: ('dog', 2).")


def test_an_error_is_observed_with_the_database_text(zoo_db: Path, store: GoldStore) -> None:
    env = SQLRefineEnv(EnvConfig(feedback="execution"), store=store)
    env.reset(zoo_example(zoo_db))
    step = env.step(answer("SELECT nme FROM animals"))
    assert step.observation is not None
    assert step.observation["content"].startswith("Execution: The database reported: no such column: nme")
    assert step.info.tags  # the record still carries the diagnosis: the reward reads it, the prompt does not


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(st.sampled_from(ANSWERS), min_size=1, max_size=6),
    st.sampled_from(["answer", "probe"]),
    st.lists(st.booleans(), min_size=6, max_size=6),
    st.sampled_from(["paper", "small"]),
)
def test_no_prompt_carries_gold_derived_text_in_the_execution_kind(
    zoo_db: Path, store: GoldStore, sqls: list[str], protocol: str, probes: list[bool], style: str
) -> None:
    """Any episode (answers, probes under the probe protocol, either prompt style): every prompt is free
    of tag codes, ODT sentences, the gold's literals and its result."""
    config = EnvConfig(feedback="execution", protocol=protocol, max_turns=6, prompt=style)
    tags = ["sql" if protocol == "answer" or probe else "solution" for probe in probes]
    responses = [answer(sql, tag) for sql, tag in zip(sqls, tags, strict=False)]
    shown = _prompts(SQLRefineEnv(config, store=store), zoo_example(zoo_db), responses)
    assert [leak for m in shown for leak in _leaks(m["content"])] == []
