"""Row builders and writers: every format's rows survive the file round trip unchanged, whatever the
text, and share one ``extra_info``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from progress_sql.errors import ConfigError
from progress_sql.export.formats import (
    FORMATS,
    ExportItem,
    build_rows,
    extra_info,
    get_format,
    skyrl_row,
    trl_row,
    verl_row,
    write_rows,
)
from progress_sql.types import Example

text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40)
examples = st.builds(
    Example,
    index=st.integers(0, 10**6),
    question=text,
    db_id=st.from_regex(r"[a-z_]{1,12}", fullmatch=True),
    db_path=text,
    gold_sql=text,
    evidence=text,
    difficulty=st.none() | st.sampled_from(["simple", "moderate", "hard"]),
)
items = st.builds(
    ExportItem,
    example=examples,
    source=st.sampled_from(["spider-train", "bird-train", "synsql"]),
    messages=st.tuples(
        st.fixed_dictionaries({"role": st.just("system"), "content": text}),
        st.fixed_dictionaries({"role": st.just("user"), "content": text}),
    ),
    verified=st.booleans(),
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batch=st.lists(items, min_size=1, max_size=6), name=st.sampled_from(sorted(FORMATS)))
def test_rows_round_trip_through_files(batch: list[ExportItem], name: str, tmp_path: Path) -> None:
    rows = build_rows(batch, get_format(name))
    assert [r["extra_info"]["index"] if "extra_info" in r else r["index"] for r in rows] == list(range(len(batch)))
    jsonl = tmp_path / f"{name}.jsonl"
    write_rows(rows, jsonl)
    assert [json.loads(line) for line in jsonl.read_text(encoding="utf-8").splitlines()] == rows
    pq = pytest.importorskip("pyarrow.parquet")
    parquet = tmp_path / f"{name}.parquet"
    write_rows(rows, parquet)
    assert pq.read_table(parquet).to_pylist() == rows


def test_every_format_carries_the_same_extra_info() -> None:
    item = ExportItem(Example(4, "Q?", "db", "/x/db.sqlite", "SELECT 1", "E", None), "s",
                      ({"role": "user", "content": "Q?"},), verified=False)  # fmt: skip
    info = extra_info(item, 2)
    assert info == {"index": 2, "source_index": 4, "db_id": "db", "db_path": "/x/db.sqlite", "question": "Q?",
                    "evidence": "E", "difficulty": "", "task_spec": "", "verified": False, "dialect": "sqlite",
                    "backend_db": None}  # fmt: skip
    verl, skyrl, trl = (FORMATS[name].row(item, 2) for name in ("verl", "skyrl", "trl"))
    assert verl["extra_info"] == skyrl["extra_info"] == {k: trl[k] for k in info}
    assert verl["reward_model"]["ground_truth"] == skyrl["reward_spec"]["ground_truth"] == trl["gold_sql"]
    assert verl["prompt"] == skyrl["prompt"] == trl["prompt"] == [{"role": "user", "content": "Q?"}]


def test_each_row_names_its_trainer_and_decodes_back_to_its_example() -> None:
    item = ExportItem(Example(3, "How many?", "shop", "/d/shop.sqlite", "SELECT 1"), "spider-train",
                      ({"role": "user", "content": "How many?"},), verified=True)  # fmt: skip
    row = verl_row(item, 0)
    assert row["agent_name"] == "progress_sql_agent"
    assert row["reward_model"] == {"style": "rule", "ground_truth": "SELECT 1"}
    assert row["extra_info"]["source_index"] == 3
    assert (skyrl_row(item, 0)["env_class"], trl_row(item, 0)["gold_sql"]) == ("progress_sql", "SELECT 1")
    assert all(f.example(f.row(item, 0)) == item.example for f in FORMATS.values())


def test_unknown_format_and_output_type(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="unknown export format 'openrlhf'; choose one of skyrl, trl, verl"):
        get_format("openrlhf")
    with pytest.raises(ConfigError, match=r"use \.parquet or \.jsonl"):
        write_rows([{"a": 1}], tmp_path / "rows.csv")


def test_rows_carry_the_backend_database_without_a_password(tmp_path: Path) -> None:
    """export --backend-db: the rows name the dialect and the location (no password), and the prompt
    asks for that engine's SQL; the location reads back as EnvConfig.backend_db."""
    from progress_sql.env.core import EnvConfig
    from progress_sql.export.build import export_items
    from progress_sql.export.formats import row_backend_db

    example = Example(0, "How many?", "db", str(tmp_path / "absent.sqlite"), "SELECT 1")
    location = "postgresql://reader:s3cret@localhost/bench"
    [item] = export_items([("s", example)], backend_db=location)
    for name in sorted(FORMATS):
        row = FORMATS[name].row(item, 0)
        fields = row.get("extra_info", row)
        assert fields["dialect"] == "postgres"
        assert fields["backend_db"] == "postgresql://reader@localhost/bench"
        assert "s3cret" not in json.dumps(row)
        assert "PostgreSQL" in row["prompt"][0]["content"] + row["prompt"][-1]["content"]
        assert EnvConfig(backend_db=row_backend_db(fields)).odt.dialect == "postgres"
