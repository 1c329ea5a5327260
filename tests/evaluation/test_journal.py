"""``eval --resume``: the generation journal keeps every batch's answers as it finishes, an interrupted
run goes on from it and ends with the records a run without interruption writes."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import pytest
from typer.testing import CliRunner

from progress_sql.backends import registry
from progress_sql.backends.base import GenerationConfig
from progress_sql.backends.replay import ReplayBackend
from progress_sql.cli import app
from progress_sql.errors import ConfigError
from progress_sql.evaluation import run as eval_run
from progress_sql.evaluation.journal import JOURNAL_FILE, GenerationJournal, conversation_key, journaled
from progress_sql.prompts import Message
from tests.evaluation.test_eval_command import PREDICTIONS, QUESTIONS, shop  # noqa: F401 - the fixture

runner = CliRunner()
IDENTITY = {"backend": "replay", "model": None, "decoding": {"n": 1, "temperature": 0.0}}


def test_a_journal_reads_back_what_it_recorded(tmp_path: Path) -> None:
    with GenerationJournal.open(tmp_path, IDENTITY, resume=False) as journal:
        journal.record([(0, "k0", ["SELECT 1"]), (1, "k1", ["SELECT 2", "SELECT 3"])])
    assert journaled(tmp_path) == 2
    with GenerationJournal.open(tmp_path, IDENTITY, resume=True) as again:
        assert (again.get("k0"), again.get("k1"), again.get("k2")) == (["SELECT 1"], ["SELECT 2", "SELECT 3"], None)
        again.record([(2, "k2", ["SELECT 4"])])
    assert journaled(tmp_path) == 3
    with GenerationJournal.open(tmp_path, IDENTITY, resume=False):  # a new run: the earlier answers go
        pass
    assert journaled(tmp_path) == 0


def test_any_text_a_backend_returns_reads_back_the_same(tmp_path: Path) -> None:
    texts = ["a\nb\u2028c", "lone \ud800 surrogate", "", "日本語 ' \" \\"]
    with GenerationJournal.open(tmp_path, IDENTITY, resume=False) as journal:
        journal.record([(0, conversation_key(0, [{"role": "user", "content": "\udcff?"}]), texts)])
    with GenerationJournal.open(tmp_path, IDENTITY, resume=True) as again:
        assert list(again.answers.values()) == [texts]
    assert len((tmp_path / JOURNAL_FILE).read_text(encoding="utf-8").splitlines()) == 2


def test_a_line_cut_short_by_a_kill_is_generated_again(tmp_path: Path) -> None:
    with GenerationJournal.open(tmp_path, IDENTITY, resume=False) as journal:
        journal.record([(0, "k0", ["SELECT 1"])])
    path = tmp_path / JOURNAL_FILE
    path.write_text(path.read_text() + '{"index": 1, "key": "k1", "tex', encoding="utf-8")
    with GenerationJournal.open(tmp_path, IDENTITY, resume=True) as again:
        assert again.get("k1") is None
        again.record([(1, "k1", ["SELECT 2"])])
    with GenerationJournal.open(tmp_path, IDENTITY, resume=True) as third:
        assert (third.get("k0"), third.get("k1")) == (["SELECT 1"], ["SELECT 2"])
    assert all(json.loads(line) for line in path.read_text().splitlines())


def test_answers_of_other_settings_are_refused_by_name(tmp_path: Path) -> None:
    with GenerationJournal.open(tmp_path, IDENTITY, resume=False) as journal:
        journal.record([(0, "k0", ["SELECT 1"])])
    other = {**IDENTITY, "decoding": {"n": 1, "temperature": 0.7}}
    with pytest.raises(ConfigError, match=r"decoding: .*0\.0.* there, .*0\.7.* now"):
        GenerationJournal.open(tmp_path, other, resume=True)
    (tmp_path / JOURNAL_FILE).write_text("not json\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="not a generation journal"):
        GenerationJournal.open(tmp_path, IDENTITY, resume=True)


def test_the_key_is_the_question_and_its_exact_prompt() -> None:
    messages: list[Message] = [{"role": "system", "content": "s"}, {"role": "user", "content": "How many?"}]
    changed: list[Message] = [messages[0], {"role": "user", "content": "How many? "}]
    assert conversation_key(3, messages) == conversation_key(3, list(messages))
    assert len({conversation_key(3, messages), conversation_key(4, messages), conversation_key(3, changed)}) == 3


class _Counting(ReplayBackend):
    """The replay backend, counting the conversations it is sent and stopping as Ctrl-C would after
    ``stop_after`` calls (None: never)."""

    sent: ClassVar[list[str]] = []
    stop_after: ClassVar[int | None] = None

    def generate(self, conversations: Sequence[Sequence[Message]], config: GenerationConfig) -> list[list[str]]:
        if _Counting.stop_after is not None and len(_Counting.sent) >= _Counting.stop_after:
            raise KeyboardInterrupt
        _Counting.sent.extend(self.key(messages) for messages in conversations)
        return super().generate(conversations, config)


@pytest.fixture
def counting(monkeypatch: pytest.MonkeyPatch) -> type[_Counting]:
    """A ``counting`` backend in the registry; batches of two questions."""
    _Counting.sent, _Counting.stop_after = [], None

    def make(options: Mapping[str, Any]) -> _Counting:
        return _Counting(ReplayBackend.from_file(options["replay"]).script)

    monkeypatch.setitem(registry.BACKENDS, "counting", make)  # type: ignore[index]
    monkeypatch.setattr(eval_run, "GENERATION_BATCH", 2)
    return _Counting


def _eval(shop: Path, out: Path, replay: Path, *extra: str) -> Any:  # noqa: F811 - the fixture's name
    return runner.invoke(
        app,
        ["eval", "--task", str(shop / "questions.json"), "--out", str(out), "--workers", "1", "--timeout", "5",
         "--backend", "counting", "--replay", str(replay), "--no-plots", *extra],
    )  # fmt: skip


def test_an_interrupted_eval_resumes_where_it_stopped(
    shop: Path,  # noqa: F811 - the fixture
    tmp_path: Path,
    counting: type[_Counting],
) -> None:
    replay = tmp_path / "replay.jsonl"
    script = [{"key": q["question"], "responses": [f"<think>t</think><sql>{p}</sql>"]}
              for q, p in zip(QUESTIONS, PREDICTIONS, strict=True)]  # fmt: skip
    replay.write_text("\n".join(json.dumps(line) for line in script) + "\n", encoding="utf-8")
    whole = _eval(shop, tmp_path / "whole", replay)
    assert whole.exit_code == 0, whole.output
    assert len(counting.sent) == 6  # the six questions whose database is present

    counting.sent, counting.stop_after = [], 4
    stopped = _eval(shop, tmp_path / "out", replay)
    assert stopped.exit_code == 130, stopped.output
    assert "add --resume to keep the 4 answers" in " ".join(stopped.output.split())
    assert journaled(tmp_path / "out") == 4

    again = _eval(shop, tmp_path / "out", replay)  # without --resume: refused, nothing lost
    assert again.exit_code == 2
    assert "add --resume" in " ".join(again.output.split())
    assert journaled(tmp_path / "out") == 4

    counting.sent, counting.stop_after = [], None
    resumed = _eval(shop, tmp_path / "out", replay, "--resume")
    assert resumed.exit_code == 0, resumed.output
    assert len(counting.sent) == 2  # only the questions the first run had not reached
    assert "generating with counting (4 answers kept from generations.jsonl)" in resumed.output
    records = [(tmp_path / name / "samples.jsonl").read_text(encoding="utf-8") for name in ("whole", "out")]
    assert records[0] == records[1]

    changed = _eval(shop, tmp_path / "out", replay, "--resume", "--max-tokens", "64")
    assert changed.exit_code == 2
    assert "other settings" in " ".join(changed.output.split())


def test_resume_needs_a_backend(shop: Path, tmp_path: Path) -> None:  # noqa: F811 - the fixture
    predictions = tmp_path / "pred.txt"
    predictions.write_text("\n".join(PREDICTIONS) + "\n", encoding="utf-8")
    result = runner.invoke(
        app, ["eval", "--task", str(shop / "questions.json"), "--out", str(tmp_path / "out"),
              "--predictions", str(predictions), "--resume"],
    )  # fmt: skip
    assert result.exit_code == 2
    assert "--resume keeps the answers a backend generated" in " ".join(result.output.split())


class _Reporting(ReplayBackend):
    """The replay backend, saying after each conversation that its answers are done (as the transformers
    backend's decode loop does); ``steps`` records every bar step of the run, ``reported`` its own."""

    def __init__(self, script: Mapping[str, list[str]], steps: list[tuple[str, int]]) -> None:
        super().__init__(script)
        self.steps = steps

    def generate_reporting(
        self, conversations: Sequence[Sequence[Message]], config: GenerationConfig, answered: Any
    ) -> list[list[str]]:
        outputs = []
        for messages in conversations:
            outputs += self.generate([messages], config)
            self.steps.append(("reported", 1))
            answered(1)
        return outputs


def test_the_bar_moves_per_answer_where_the_backend_reports_them(
    shop: Path,  # noqa: F811 - the fixture
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from progress_sql.data.tasks import load_task
    from progress_sql.evaluation.run import generate_samples

    monkeypatch.setattr(eval_run, "GENERATION_BATCH", 4)
    examples = load_task(str(shop / "questions.json"), None)
    script = {q["question"]: [f"<think>t</think><sql>{p}</sql>"] for q, p in zip(QUESTIONS, PREDICTIONS, strict=True)}
    steps: list[tuple[str, int]] = []
    backend = _Reporting(script, steps)

    def progress(todo: int, kept: int) -> Any:
        steps.append(("todo", todo))
        return lambda n: steps.append(("bar", n))

    samples = generate_samples(examples, backend, GenerationConfig(), "full", progress)
    assert steps[0] == ("todo", 6)  # the six questions whose database is present
    bar = [n for kind, n in steps if kind == "bar"]
    assert bar == [1] * 6  # each answer as it came, nothing left to add after a call
    assert [kind for kind, _ in steps[1:]] == ["reported", "bar"] * 6  # during the calls, not after
    assert sum(bool(items) for items in samples) == 6
