"""The synthetic dataset: the same seed writes the same bytes, another seed other ones; every command
reads it as a Spider-format task; golds run, some flawed ones fire the audit, predictions load."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from progress_sql.audit.runner import audit_examples
from progress_sql.cluster.synthetic import SyntheticConfig, generate_dataset, main
from progress_sql.data.tasks import load_task
from progress_sql.errors import ConfigError
from progress_sql.evaluation.predictions import read_predictions


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_the_same_seed_gives_the_same_bytes_and_another_seed_others(tmp_path: Path) -> None:
    config = SyntheticConfig(databases=12, questions_per_database=3, seed=7)
    first = generate_dataset(tmp_path / "a", config)
    generate_dataset(tmp_path / "b", config)
    generate_dataset(tmp_path / "c", SyntheticConfig(databases=12, questions_per_database=3, seed=8))
    assert _files(tmp_path / "a") == _files(tmp_path / "b")
    assert _files(tmp_path / "a") != _files(tmp_path / "c")
    assert first.examples == 36
    assert len(list(first.databases.glob("*/*.sqlite"))) == 12


def test_it_is_a_spider_format_task_whose_golds_run_and_audit(tmp_path: Path) -> None:
    dataset = generate_dataset(tmp_path, SyntheticConfig(databases=30, questions_per_database=2, flawed_share=0.3))
    examples = load_task(str(dataset.questions), None)
    assert len(examples) == 60
    assert all(Path(e.db_path).is_file() for e in examples)
    records = audit_examples(examples, ["G01", "G03", "G06"])
    assert not any("G01" in r.fired for r in records)  # every gold runs
    fired = {check for r in records for check in r.fired}
    assert {"G03", "G06"} <= fired  # the flawed ones are found
    predictions = read_predictions(dataset.predictions, [e.db_id for e in examples])
    assert len(predictions.entries) == 60
    assert json.loads(dataset.questions.read_text())[0]["db_id"] == "syn_00000"


def test_the_command_line_writes_a_dataset_and_refuses_bad_sizes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([str(tmp_path), "--databases", "3", "--seed", "1"]) == 0
    assert "6 questions over 3 databases" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main([str(tmp_path), "--databases", "0"])
    with pytest.raises(ConfigError):
        SyntheticConfig(flawed_share=2)


def test_immutable_reads_are_asked_for_by_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``PROGRESS_SQL_SQLITE_IMMUTABLE=1`` (network filesystems, docs/scaling.md): every opener reads the
    database with immutable=1, and the results do not change."""
    from progress_sql.data.introspect import IMMUTABLE_ENV, readonly_uri

    dataset = generate_dataset(tmp_path, SyntheticConfig(databases=3, flawed_share=0.5))
    examples = load_task(str(dataset.questions), None)
    plain = [r.as_dict() for r in audit_examples(examples)]
    assert readonly_uri(examples[0].db_path).endswith(".sqlite?mode=ro")
    monkeypatch.setenv(IMMUTABLE_ENV, "1")
    assert readonly_uri(examples[0].db_path).endswith("?mode=ro&immutable=1")
    assert [r.as_dict() for r in audit_examples(examples)] == plain
