"""The openai backend against a real OpenAI-compatible server that ignores ``n``: ``transformers serve``
with a tiny model built in the test (nothing downloaded). ``eval --n 4`` used to stop with "asked for 4
choices, the server returned 1"; now the samples the server leaves out are drawn as separate requests and
``summary.json`` says so."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

pytest.importorskip("transformers", reason="needs the [trl] extra (transformers)")
pytest.importorskip("fastapi", reason="needs the [serve] extra (transformers serve's server stack)")

from progress_sql.backends.base import GenerationConfig
from progress_sql.backends.openai_compat import OpenAICompatibleBackend
from progress_sql.cli import app
from progress_sql.prompts import initial_messages
from tests.conftest import build_database
from tests.evaluation.test_eval_command import QUESTIONS
from tests.tiny_lm import tiny_model, tiny_tokenizer

pytestmark = pytest.mark.slow

CHAT_TEMPLATE = (
    "{% for m in messages %}<bos>{{ m['role'] }}\n{{ m['content'] }}<eos>\n{% endfor %}"
    "{% if add_generation_prompt %}<bos>assistant\n{% endif %}"
)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def served_model(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """(base URL, model name) of a `transformers serve` process serving a tiny random Qwen2."""
    folder = tmp_path_factory.mktemp("tiny-served")
    tokenizer = tiny_tokenizer([q["query"] + " " + q["question"] for q in QUESTIONS], vocab_size=300)
    tokenizer.chat_template = CHAT_TEMPLATE
    tiny_model(tokenizer).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    port = _free_port()
    command = [str(Path(sys.executable).with_name("transformers")), "serve", str(folder)]
    command += ["--host", "127.0.0.1", "--port", str(port), "--device", "cpu"]
    log = folder / "serve.log"
    with log.open("w") as sink:
        server = subprocess.Popen(
            command, stdout=sink, stderr=subprocess.STDOUT, env={**os.environ, "HF_HUB_OFFLINE": "1"}
        )
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 180
        while True:
            try:
                urllib.request.urlopen(base_url + "/models", timeout=2).close()
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"transformers serve did not start:\n{log.read_text()[-2000:]}")
                time.sleep(0.5)
        yield base_url, str(folder)
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_the_server_ignores_n_and_the_backend_draws_the_rest(served_model: tuple[str, str]) -> None:
    base_url, model = served_model
    backend = OpenAICompatibleBackend(base_url, model, concurrency=2)
    conversations = [initial_messages("", "How many items are there?"), initial_messages("", "List all fruit.")]
    outputs = backend.generate(conversations, GenerationConfig(n=4, temperature=1.0, max_tokens=6, seed=3))
    assert [len(texts) for texts in outputs] == [4, 4]
    assert all(isinstance(text, str) for texts in outputs for text in texts)
    assert "the server returned 1 choice(s)" in backend.draws
    # Same seeds, same samples: the extra requests are seeded seed + k.
    again = backend.generate(conversations, GenerationConfig(n=4, temperature=1.0, max_tokens=6, seed=3))
    assert again == outputs


def test_eval_with_n_4_against_the_server(served_model: tuple[str, str], tmp_path: Path) -> None:
    base_url, model = served_model
    questions = tmp_path / "questions.json"
    questions.write_text(json.dumps(QUESTIONS[:3]))
    build_database("shop.sql", tmp_path / "database")
    out = tmp_path / "run"
    result = CliRunner().invoke(
        app,
        ["eval", "--task", str(questions), "--backend", "openai", "--base-url", base_url, "--model", model,
         "--n", "4", "--temperature", "1.0", "--max-tokens", "6", "--seed", "1", "--workers", "1",
         "--out", str(out), "--no-plots", "--json"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    decoding = summary["settings"]["decoding"]
    assert decoding["n"] == 4
    assert "the server returned 1 choice(s)" in decoding["draws"]
    samples = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    assert [s["samples"] for s in samples] == [4, 4, 4]
