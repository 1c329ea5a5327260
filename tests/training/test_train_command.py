"""`progress-sql train` end to end on the embedded data with a tiny budget, resume included."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

pytest.importorskip("trl", reason="training needs the [trl] extra")

from progress_sql.cli import app
from progress_sql.models import native_bf16
from progress_sql.prompts import CompactFormat
from progress_sql.studies.report import train_summary, write_train_run
from progress_sql.training.recipe import TrainConfig, embedded_data, evaluate, load_checkpoint, run_embedded
from progress_sql.training.rl import RLSettings

runner = CliRunner()


def tiny_config(out: Path, steps: int, compare: str | None = None) -> TrainConfig:
    return TrainConfig(
        out=out,
        rl=RLSettings(steps=steps, prompts_per_step=2, generations=2, max_new_tokens=16, save_steps=1),
        compare_reward=compare,
        sft_steps=6,
        rl_prompts=6,
        heldout_size=8,
        heldout_rl_size=8,
    )


def model_card_of(folder: Path, summary: dict[str, Any]) -> Any:
    """The model card ``train`` wrote in ``folder``, parsed by huggingface_hub, after checking that its
    model-index holds summary.json's held-out figures (EX, n, SE, greedy, the preset) for the saved weights."""
    from huggingface_hub import ModelCard
    from huggingface_hub.repocard_data import model_index_to_eval_results

    card = ModelCard.load(folder / "README.md")
    figures = summary["ex_before" if "supervised checkpoint is kept" in summary["guard"] else "ex_after"]
    _, results = model_index_to_eval_results(card.data.to_dict()["model-index"])
    assert {r.dataset_split: r.metric_value for r in results} == {name: v["ex"] for name, v in figures.items()}
    for result in results:
        measured = figures[result.dataset_split]
        assert (result.metric_type, result.task_type, result.metric_config) == ("execution_accuracy", "text-to-sql",
                                                                                "strict")  # fmt: skip
        assert result.metric_args["n"] == measured["n"]
        assert result.metric_args["se"] == measured["se"]
        assert result.metric_args["decoding"] == "greedy"
        assert result.metric_args["preset"] == "strict"
        assert f"n={measured['n']}" in result.metric_name
    return card


def no_bar(description: str, total: int):  # type: ignore[no-untyped-def]
    return lambda n: None


def test_embedded_run_writes_the_report_and_resumes(tmp_path: Path) -> None:
    out = tmp_path / "run"
    first = run_embedded(tiny_config(out, steps=1, compare="one-shot"), no_bar)
    assert first.sft["steps"] >= 1
    assert set(first.before) == {"heldout_new_combo", "heldout_new_value", "heldout_rl_kind", "real_test"}
    assert all(acc.n > 0 for acc in first.before.values())
    assert first.sft["steps"] == 6  # a step budget, not a time budget
    # the RL prompts and the same-kind held-out set share no SQL with each other or with the warm start
    assert first.data_sizes["heldout_rl_kind"] == 8
    assert first.rl_data["prompts"] == 6
    assert set(first.before_detail) == set(first.before)
    detail = first.before_detail["heldout_new_combo"]
    assert detail.turns == 2
    assert sum(detail.first_correct.values()) == detail.single.n
    assert set(detail.structural) == {"SELECT", "JOIN", "WHERE", "GROUP", "average"}
    assert set(first.rl) == {"progressive", "one-shot"}
    report = write_train_run(first, out)
    text = report.read_text()
    assert "EX before (%)" in text
    assert "Compared reward: `one-shot`" in text
    for png in ("training_curves.png", "reward_components.png", "ex_before_after.png"):
        assert (out / png).read_bytes().startswith(b"\x89PNG")
    assert "paired change" in text
    assert "Table 8" in text
    summary = json.loads((out / "summary.json").read_text())
    heldout = summary["heldout"]
    assert heldout["n"] == 24  # the three template sets of 8, pooled; real_test is reported apart
    for key in ("ex_before", "ex_after", "se_diff", "diff", "gained", "lost"):
        assert key in heldout
    assert set(summary["heldout_detail"]["heldout_rl_kind"]["before"]) == {
        "single_turn",
        "within_turns",
        "first_correct_turn",
        "structural_mismatch",
    }
    assert len(summary["rl"]["progressive"]["zero_variance_share"]) == 1
    metrics = [json.loads(line) for line in (out / "rl" / "metrics.jsonl").read_text().splitlines()]
    assert metrics[0]["step"] == 1
    for key in ("reward", "rewards/fmt/mean", "rewards/align/mean", "trajectory/turns_mean", "frac_reward_zero_std",
                "trajectory/first_turn_f", "completions/mean_length", "groups/zero_variance_share",
                "groups/variance_share/late", "groups/std/late"):  # fmt: skip
        assert key in metrics[0]
    assert (out / "final" / "config.json").is_file()
    assert "kept" in first.guard
    card = model_card_of(out / "final", summary)
    assert card.data.license == "unknown"  # built from a config: no base model's licence applies
    assert card.data.base_model is None
    assert card.data.progress_sql["leakage"] == "not applied"
    assert card.data.progress_sql["training_data_licence"] == "cc-by-sa-4.0"
    assert "Not applied: " in card.text
    assert "never score it on Spider dev" in card.text

    # a rerun with more steps reuses the supervised checkpoint and resumes RL from its last checkpoint
    second = run_embedded(tiny_config(out, steps=2), no_bar)
    assert second.sft.get("resumed") is True
    assert second.rl["progressive"].resumed_from is not None
    assert second.rl["progressive"].resumed_from.endswith("checkpoint-1")
    assert second.rl["progressive"].steps == 2


def test_rl_keeps_the_weights_of_its_best_validation_check(tmp_path: Path) -> None:
    """With a check after every step, the saved final RL model is the one of the best check (step 0: the
    warm start), scored on the held-out sets; the last step's EX is reported beside it when they differ."""
    out = tmp_path / "run"
    config = replace(tiny_config(out, steps=3), rl_check_every=1, sft_validation_size=12)
    result = run_embedded(config, no_bar)
    selection = result.rl_selection["progressive"]
    checks = selection["checks"]
    assert [c["step"] for c in checks] == [0, 1, 2, 3]
    best = max(c["validation_ex"] for c in checks)
    assert selection["chosen_step"] == next(c["step"] for c in checks if c["validation_ex"] == best)
    assert selection["last_step"] == 3
    validation = {"validation": list(embedded_data(config).pool.validation)}
    assert len(validation["validation"]) == 12
    final, tokenizer = load_checkpoint(out / "rl" / "final")
    assert evaluate(final, tokenizer, CompactFormat(), validation)["validation"].ex == pytest.approx(best, abs=1e-4)
    assert evaluate(final, tokenizer, CompactFormat(), dict(embedded_data(config).held_out)) == result.after
    summary = json.loads(write_train_run(result, out).with_name("summary.json").read_text())
    assert summary["rl_selection"]["progressive"] == selection
    assert (summary["heldout_last_step"] is None) == (selection["chosen_step"] == 3)
    assert "EX after RL is that of the kept weights (`progressive`): step" in (out / "report.md").read_text()

    last = run_embedded(replace(config, out=tmp_path / "last", rl_select="last"), no_bar)
    assert last.rl_selection == {}
    assert last.last_after == {}


BAD_CONFIGURATIONS = [
    (["--reward", "nope"], "unknown reward"),
    (["--turns", "0"], "T must be >= 1"),
    (["--sft-steps", "0"], "sft_steps must be >= 1"),
    (["--vllm", "bogus"], "vllm_mode must be colocate or server"),
    (["--model", "{tmp}/missing"], "needs --task"),
    (["--model", "{tmp}/missing", "--task", "nope.json"], "unknown task"),
    (["--filter", "lenient"], "unknown filter set 'lenient'"),
    (["--rl-select", "best"], "rl_select must be one of last, validation, got 'best'"),
    (["--rl-check-every", "0"], "rl_check_every must be >= 1"),
]


@pytest.mark.parametrize(("options", "message"), BAD_CONFIGURATIONS, ids=[m for _, m in BAD_CONFIGURATIONS])
def test_bad_configuration_fails_fast(options: list[str], message: str, tmp_path: Path) -> None:
    options = [option.format(tmp=tmp_path) for option in options]
    result = runner.invoke(app, ["train", "--out", str(tmp_path), *options])
    assert result.exit_code == 2
    assert message in result.output


def test_training_examples_are_filtered_with_reasons_beside_the_run(tmp_path: Path, music_dir: Path) -> None:
    from progress_sql.data.tasks import load_task
    from progress_sql.training.recipe import filter_training_examples

    examples = load_task(str(music_dir / "questions.json"), music_dir)
    broken = replace(examples[0], index=99, gold_sql="SELECT name FROM singer WHERE age > 1000")
    kept = filter_training_examples([*examples, broken], "rl-default", tmp_path)
    assert broken not in kept
    dropped = [json.loads(line) for line in (tmp_path / "dropped.jsonl").read_text().splitlines()]
    assert [(d["index"], d["reasons"][0][:9]) for d in dropped] == [(99, "G03 empty")]
    assert filter_training_examples([*examples, broken], "none", tmp_path) == [*examples, broken]
    assert (tmp_path / "dropped.jsonl").read_text() == ""


def test_missing_databases_fail_fast(tmp_path: Path) -> None:
    questions = tmp_path / "questions.json"
    questions.write_text(json.dumps([{"db_id": "nowhere", "question": "q", "query": "SELECT 1"}] * 3))
    result = runner.invoke(
        app,
        ["train", "--out", str(tmp_path / "run"), "--model", str(tmp_path / "model"), "--task", str(questions),
         "--data-dir", str(tmp_path)],
    )  # fmt: skip
    assert result.exit_code == 2
    assert "fewer than two examples have their database" in result.output


def test_pretrained_model_with_a_chat_template(tmp_path: Path, music_dir: Path) -> None:
    from progress_sql.training.recipe import run_pretrained
    from tests.tiny_lm import tiny_model, tiny_tokenizer

    tokenizer = tiny_tokenizer(["user: Question: how many singers? assistant: <sql>SELECT count(*) FROM singer</sql>"])
    tokenizer.chat_template = "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}assistant:"
    folder = tmp_path / "model"
    tiny_model(tokenizer).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    config = TrainConfig(
        out=tmp_path / "run",
        model=str(folder),
        rl=RLSettings(steps=1, prompts_per_step=2, generations=2, max_new_tokens=8, save_steps=1),
        rl_prompts=4,
    )
    result = run_pretrained(config, str(music_dir / "questions.json"), music_dir, no_bar)
    assert result.before["heldout"].n == 1  # every tenth of the six fixture questions
    assert result.rl["progressive"].steps == 1
    assert (tmp_path / "run" / "rl" / "final" / "config.json").is_file()
    assert (tmp_path / "run" / "dropped.jsonl").is_file()  # the rl-default gold filter ran
    assert result.data_sizes["dropped_by_filter"] == len((tmp_path / "run" / "dropped.jsonl").read_text().splitlines())
    assert "held-out EX" in result.guard
    (folder / "README.md").write_text("---\nlicense: apache-2.0\n---\n# a base model\n")
    settings = {"model": str(folder), "task": "spider-train", "reward": "progressive", "temperature": 1.0, "turns": 2,
                "rl_select": "last", "seed": 0}  # fmt: skip
    assert write_train_run(result, tmp_path / "run", train_summary(result, settings)).is_file()
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    card = model_card_of(tmp_path / "run" / "rl" / "final", summary)
    assert card.data.license == "apache-2.0"  # the base model's, read from its card
    assert card.data.base_model is None  # a local folder has no hub id
    assert card.data.datasets == ["spider-train"]  # the held-out set's task
    assert "Clean against nothing: no evaluation questions file was found" in card.text
    assert card.data.progress_sql["training_data_licence"] == "cc-by-sa-4.0"
    assert card.data.progress_sql["leakage"] == summary["leakage"]["decision"] == "clean"
    assert "selection" in card.data.progress_sql
    assert card.data.progress_sql["selection"] == "the last RL step"
    assert "Training data: spider-train" in card.text
    assert "CC BY-SA 4.0" in card.text


def test_rl_settings_give_the_rollouts_any_env_field() -> None:
    from progress_sql.errors import ConfigError

    settings = RLSettings(turns=3, reward="one-shot", timeout_s=1.0, env={"feedback": "tags+error",
                                                                         "progressive": {"gamma": 0.8}})  # fmt: skip
    config = settings.env_config()
    assert (config.max_turns, config.reward, config.timeout_s) == (3, "one-shot", 1.0)
    assert (config.feedback, config.progressive.gamma) == ("tags+error", 0.8)
    with pytest.raises(ConfigError, match=r"RLSettings\.env sets max_turns: give them as RLSettings turns"):
        RLSettings(env={"max_turns": 2})
    with pytest.raises(ConfigError, match=r"unknown RLSettings\.env keys: turns"):
        RLSettings(env={"turns": 2})


def test_rl_defaults_differ_for_the_embedded_model_and_a_real_one() -> None:
    from progress_sql.training.recipe import EMBEDDED_RL, REAL_MODEL_RL, default_rl_settings

    tiny = default_rl_settings("tiny", steps=None, temperature=None)
    assert (tiny.steps, tiny.prompts_per_step, tiny.learning_rate, tiny.temperature) == (
        EMBEDDED_RL["steps"],
        EMBEDDED_RL["prompts_per_step"],
        EMBEDDED_RL["learning_rate"],
        EMBEDDED_RL["temperature"],
    )
    assert TrainConfig().rl == tiny
    real = default_rl_settings("Qwen/Qwen2.5-Coder-7B-Instruct")
    assert real == RLSettings(**REAL_MODEL_RL)
    assert (real.turns, real.generations, real.temperature, real.learning_rate) == (4, 8, 1.0, 1e-6)  # the paper's
    assert default_rl_settings("tiny", steps=7, temperature=0.9).steps == 7
    assert default_rl_settings("tiny", steps=7, temperature=0.9).temperature == 0.9


def test_lora_gets_its_own_default_learning_rate() -> None:
    """A real model with LoRA: TRL's LoRA-for-GRPO rate (1e-5, ten times the full fine-tune's 1e-6) unless
    an lr is given; the embedded default keeps its measured 2e-4."""
    from progress_sql.training.recipe import REAL_MODEL_LORA_RL, REAL_MODEL_RL, default_rl_settings
    from progress_sql.training.rl import LoraSettings

    model = "Qwen/Qwen2.5-Coder-7B-Instruct"
    assert REAL_MODEL_LORA_RL == {"learning_rate": 1e-5}
    lora = default_rl_settings(model, lora=LoraSettings())
    assert lora == RLSettings(**(REAL_MODEL_RL | {"learning_rate": 1e-5}), lora=LoraSettings())
    assert default_rl_settings(model, lora=None).learning_rate == 1e-6
    assert default_rl_settings(model, lora=LoraSettings(), learning_rate=3e-6).learning_rate == 3e-6
    assert default_rl_settings("tiny").learning_rate == 2e-4


class CapturedError(Exception):
    """Raised by the stand-in for a run function: the command got as far as starting the run."""

    def __init__(self, config: TrainConfig) -> None:
        self.config = config


def parsed_config(monkeypatch: pytest.MonkeyPatch, runner_args: list[str], run: str) -> TrainConfig:
    """The TrainConfig ``progress-sql train`` builds from ``runner_args`` and hands to ``run``."""
    import progress_sql.training.recipe as recipe

    def capture(config: TrainConfig, *_: object) -> None:
        raise CapturedError(config)

    monkeypatch.setattr(recipe, run, capture)
    result = runner.invoke(app, ["train", *runner_args])
    assert isinstance(result.exception, CapturedError), result.output
    return result.exception.config


REAL_MODEL_OPTIONS = (
    "--turns", "--steps", "--lr", "--temperature", "--generations", "--prompts-per-step", "--per-device-batch",
    "--max-turn-tokens", "--max-completion-tokens", "--rl-prompts", "--rollout-timeout", "--save-steps",
    "--save-total-limit", "--report-to", "--lora", "--lora-r", "--lora-alpha", "--lora-target-modules", "--vllm",
    "--vllm-gpu-memory", "--vllm-server-host", "--vllm-server-port", "--vllm-server-timeout",
)  # fmt: skip


def test_help_lists_the_real_model_options() -> None:
    result = runner.invoke(app, ["train", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    for option in REAL_MODEL_OPTIONS:
        assert option in result.output, option
    # each hyper-parameter states both defaults: the embedded model's and a real model's (the paper's)
    assert "default: 2 for the embedded tiny model, 4 for a real --model" in result.output
    assert "default: 0.0002 for the embedded tiny model, 1e-06 for a real --model" in result.output
    assert "1e-05 for a real --model with --lora" in result.output


def test_the_embedded_default_keeps_its_measured_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from trl import GRPOConfig

    from progress_sql.training.rl import trainer_args

    config = parsed_config(monkeypatch, ["--out", str(tmp_path)], "run_embedded")
    assert (config.sft_steps, config.sft_target, config.rl_prompts, config.rl.lora) == (1200, 0.35, 4000, None)
    assert (config.sft_check_from, config.sft_check_every, config.sft_cooldown_steps) == (450, 50, 150)
    rl = config.rl
    assert (rl.steps, rl.prompts_per_step, rl.generations, rl.learning_rate, rl.temperature, rl.turns) == (
        300, 8, 8, 2e-4, 0.5, 2,
    )  # fmt: skip
    assert (rl.max_new_tokens, rl.timeout_s, rl.save_steps, rl.save_total_limit) == (48, 2.0, 10, None)
    grpo = GRPOConfig(**trainer_args(rl, tmp_path))
    assert (grpo.per_device_train_batch_size, grpo.gradient_accumulation_steps, grpo.steps_per_generation) == (64, 1, 1)
    assert (grpo.max_completion_length, grpo.learning_rate, grpo.temperature, grpo.num_generations) == (
        176, 2e-4, 0.5, 8,
    )  # fmt: skip
    assert (grpo.max_steps, grpo.save_steps, grpo.save_total_limit, grpo.report_to) == (300, 10, None, [])
    assert (grpo.loss_type, grpo.beta, grpo.use_vllm) == ("grpo", 0.0, False)


def test_real_model_defaults_and_options_reach_grpo_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from dataclasses import replace

    from trl import GRPOConfig

    from progress_sql.training.rl import trainer_args

    base = ["--out", str(tmp_path), "--model", "Qwen/Qwen2.5-0.5B-Instruct", "--task", "questions.json"]
    config = parsed_config(monkeypatch, base, "run_pretrained")
    assert config.rl_prompts is None  # every training example
    rl = replace(config.rl, use_cpu=True)  # as run_pretrained does without a GPU
    grpo = GRPOConfig(**trainer_args(rl, tmp_path))
    # the trainer setting's (integrations/trainer_setting.py; tests/integrations/test_trainer_setting.py)
    assert (grpo.learning_rate, grpo.num_generations, grpo.temperature, grpo.beta) == (1e-6, 8, 1.0, 0.001)
    assert rl.turns == 4
    assert rl.env_config().max_turns == 4
    assert rl.env_config().timeout_s == 10.0
    assert (grpo.max_completion_length, grpo.save_steps, grpo.save_total_limit, grpo.report_to) == (4096, 200, 2, [])
    # a rollout batch of 64 prompts x 8 samples, 4 updates of 16 prompts each in passes of 4 sequences: 32
    # accumulated passes per update on one GPU, 4 on 8; 400 updates are 100 rollout batches
    assert (grpo.per_device_train_batch_size, grpo.gradient_accumulation_steps, grpo.max_steps) == (4, 32, 400)
    assert (grpo.steps_per_generation, grpo.num_iterations, grpo.generation_batch_size) == (128, 1, 512)
    assert GRPOConfig(**trainer_args(rl, tmp_path, processes=8)).gradient_accumulation_steps == 4
    # TRL's default (bf16 autocast over the fp32 weights, on a CPU too) where bf16 is native; fp32 elsewhere
    assert grpo.bf16 is native_bf16()
    assert not GRPOConfig(**trainer_args(replace(rl, compute_dtype="fp32"), tmp_path)).bf16

    options = [
        "--turns", "3", "--steps", "5", "--lr", "3e-6", "--temperature", "0.8", "--generations", "4",
        "--prompts-per-step", "2", "--per-device-batch", "2", "--max-turn-tokens", "256",
        "--max-completion-tokens", "1024", "--rl-prompts", "50", "--rollout-timeout", "4", "--save-steps", "5",
        "--save-total-limit", "1", "--report-to", "tensorboard", "--algorithm", "gspo", "--lora", "--lora-r", "8",
        "--lora-alpha", "16", "--lora-target-modules", "q_proj,v_proj", "--vllm", "colocate", "--vllm-gpu-memory",
        "0.5",
    ]  # fmt: skip
    config = parsed_config(monkeypatch, [*base, *options], "run_pretrained")
    assert config.rl_prompts == 50
    rl = replace(config.rl, use_cpu=True)
    assert rl.lora is not None
    assert rl.lora.peft_kwargs() == {
        "r": 8,
        "lora_alpha": 16,
        "lora_dropout": 0.05,
        "target_modules": ["q_proj", "v_proj"],
    }
    args = trainer_args(rl, tmp_path)
    grpo = GRPOConfig(**args)
    assert (grpo.learning_rate, grpo.num_generations, grpo.temperature, grpo.max_steps) == (3e-6, 4, 0.8, 5)
    assert (grpo.per_device_train_batch_size, grpo.gradient_accumulation_steps) == (2, 4)
    assert grpo.steps_per_generation == 16  # GSPO: four optimizer steps per generation
    assert (grpo.max_completion_length, grpo.save_steps, grpo.save_total_limit) == (1024, 5, 1)
    assert grpo.report_to == ["tensorboard"]
    assert (grpo.use_vllm, grpo.vllm_mode, grpo.vllm_gpu_memory_utilization) == (True, "colocate", 0.5)
    assert grpo.generation_kwargs == {"max_tokens": 256}  # TRL's vLLM call samples one turn per call
    assert rl.env_config().max_turns == 3
    assert rl.env_config().timeout_s == 4.0
    # colocated: TRL's server settings stay its defaults
    assert (grpo.vllm_server_host, grpo.vllm_server_port, grpo.vllm_server_timeout) == ("0.0.0.0", 8000, 240.0)


def test_lora_without_lr_trains_at_the_lora_rate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from trl import GRPOConfig

    from progress_sql.training.rl import trainer_args

    base = ["--out", str(tmp_path), "--model", "Qwen/Qwen2.5-0.5B-Instruct", "--task", "questions.json"]
    for options, lr in ((["--lora"], 1e-5), (["--lora", "--lr", "2e-6"], 2e-6), ([], 1e-6)):
        config = parsed_config(monkeypatch, [*base, *options], "run_pretrained")
        assert config.rl.learning_rate == lr, options
        assert GRPOConfig(**trainer_args(replace(config.rl, use_cpu=True), tmp_path)).learning_rate == lr


def test_vllm_server_options_reach_grpo_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from trl import GRPOConfig

    from progress_sql.training.rl import trainer_args

    base = ["--out", str(tmp_path), "--model", "Qwen/Qwen2.5-0.5B-Instruct", "--task", "questions.json"]
    server = ["--vllm", "server", "--vllm-server-host", "10.0.0.7", "--vllm-server-port", "8123",
              "--vllm-server-timeout", "900"]  # fmt: skip
    config = parsed_config(monkeypatch, [*base, *server], "run_pretrained")
    rl = replace(config.rl, use_cpu=True)
    assert (rl.vllm_mode, rl.vllm_server_host, rl.vllm_server_port, rl.vllm_server_timeout) == (
        "server", "10.0.0.7", 8123, 900.0,
    )  # fmt: skip
    grpo = GRPOConfig(**trainer_args(rl, tmp_path))
    assert (grpo.use_vllm, grpo.vllm_mode) == (True, "server")
    assert (grpo.vllm_server_host, grpo.vllm_server_port, grpo.vllm_server_timeout) == ("10.0.0.7", 8123, 900.0)
    assert grpo.vllm_server_base_url is None  # host and port are what TRL's client connects to
    # only the port given: the others stay TRL's defaults
    config = parsed_config(monkeypatch, [*base, "--vllm", "server", "--vllm-server-port", "8001"], "run_pretrained")
    grpo = GRPOConfig(**trainer_args(replace(config.rl, use_cpu=True), tmp_path))
    assert (grpo.vllm_server_host, grpo.vllm_server_port, grpo.vllm_server_timeout) == ("0.0.0.0", 8001, 240.0)


def test_summary_settings_record_the_lora_rate_and_the_server() -> None:
    from progress_sql.studies.train import TrainRequest, train_config, train_settings
    from progress_sql.training.rl import LoraSettings

    request = TrainRequest(
        model="Qwen/Qwen2.5-0.5B-Instruct", task="questions.json", report_to=("none",), lora=LoraSettings(),
        vllm="server", vllm_server_host="127.0.0.1", vllm_server_port=8001, vllm_server_timeout=600.0,
    )  # fmt: skip
    settings = train_settings(request, train_config(request))
    assert settings["lr"] == 1e-5
    assert settings["vllm"] == "server"
    assert (settings["vllm_server_host"], settings["vllm_server_port"], settings["vllm_server_timeout"]) == (
        "127.0.0.1", 8001, 600.0,
    )  # fmt: skip
    plain = TrainRequest(model="Qwen/Qwen2.5-0.5B-Instruct", task="questions.json", report_to=("none",))
    settings = train_settings(plain, train_config(plain))
    assert settings["lr"] == 1e-6
    assert settings["vllm_server_host"] is settings["vllm_server_port"] is settings["vllm_server_timeout"] is None


def test_launch_options_are_checked(tmp_path: Path) -> None:
    from progress_sql.training.rl import batch_layout

    model = ["--out", str(tmp_path), "--model", str(tmp_path / "m"), "--task", "questions.json"]
    for options, message in (
        (["--report-to", "console"], "report_to takes none or any of tensorboard, wandb"),
        (["--save-total-limit", "0"], "save_total_limit must be >= 1"),
        (["--max-turn-tokens", "512", "--max-completion-tokens", "256"], "token budgets"),
        (["--vllm-gpu-memory", "1.5"], "vllm_gpu_memory is a share"),
        (["--lora", "--lora-r", "0"], "LoRA needs r >= 1"),
        (
            ["--vllm-server-port", "8001"],
            "--vllm-server-port: only with --vllm server (vllm_mode server), got --vllm off",
        ),
        (
            ["--vllm", "colocate", "--vllm-server-host", "h", "--vllm-server-timeout", "9"],
            "--vllm-server-host, --vllm-server-timeout: only with --vllm server (vllm_mode server), got --vllm "
            "colocate",
        ),
        (["--vllm", "server", "--vllm-server-port", "70000"], "vllm_server_port must be a TCP port"),
        (["--vllm", "server", "--vllm-server-timeout", "0"], "vllm_server_timeout must be > 0 seconds"),
    ):
        result = runner.invoke(app, ["train", *model, *options])
        assert result.exit_code == 2, options
        assert message in result.output, result.output
    result = runner.invoke(app, ["train", "--out", str(tmp_path), "--lora"])
    assert result.exit_code == 2
    assert "LoRA is for a real model" in result.output
    from progress_sql.errors import ConfigError

    with pytest.raises(ConfigError, match="do not split into passes of 3 sequences on 2 processes"):
        batch_layout(RLSettings(prompts_per_step=2, generations=8, per_device_batch=3), 2)
