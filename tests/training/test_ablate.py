"""`progress-sql ablate --quick`: the table's shape, each arm run with its own settings, bad
configuration refused at once, and an interrupted ablation resumed without rerunning finished arms."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

pytest.importorskip("trl", reason="training needs the [trl] extra")

from progress_sql.cli import app
from progress_sql.errors import ConfigError
from progress_sql.rewards.progressive import ProgressiveConfig, progressive_reward
from progress_sql.studies.ablate import (
    ARM_ALIASES,
    ARMS,
    DEFAULT_ARMS,
    DONE_MARKER,
    AblateConfig,
    ArmRun,
    Measured,
    arm_folder,
    arm_names,
    run_ablate,
    table,
)
from progress_sql.types import Trajectory, Turn

runner = CliRunner()


def no_bar(description: str, total: int):  # type: ignore[no-untyped-def]
    return lambda n: None


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    out = tmp_path_factory.mktemp("ablate") / "run"
    result = runner.invoke(app, ["ablate", "--quick", "--out", str(out), "--json"])
    assert result.exit_code == 0, result.output
    return out, json.loads(result.stdout[result.stdout.index('{\n  "command"') :])


def _runs(out: Path) -> dict[str, ArmRun]:
    return {
        arm: ArmRun.from_dict(json.loads((out / "seed-0" / "arms" / arm / "result.json").read_text()))
        for arm in DEFAULT_ARMS
    }


def test_quick_ablate_writes_one_row_per_arm(quick_run: tuple[Path, Any]) -> None:
    out, data = quick_run
    assert data["command"] == "ablate"
    rows = data["arms"]
    assert [row["arm"] for row in rows] == list(DEFAULT_ARMS)
    expected = {
        "arm", "label", "seeds", "n", "ex", "se", "se_examples", "se_seeds", "within_turns_ex", "change_vs_warm",
        "se_change_vs_warm", "beyond_2se_vs_warm", "diff_vs_progressive", "se_diff_vs_progressive",
        "beyond_2se_vs_progressive", "rl_seconds",
    }  # fmt: skip
    for row in rows:
        assert set(row) == expected
        assert row["seeds"] == 1
        assert row["n"] == 24
        assert 0.0 <= row["ex"] <= 1.0
        assert (row["diff_vs_progressive"] is None) == (row["arm"] == "progressive")
    assert set(data["warm_start"]) == {"0"}
    assert data["warm_start"]["0"]["n"] == 24
    assert data["resumed"] == []
    records = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    assert [(r["arm"], r["seed"]) for r in records] == [(arm, 0) for arm in DEFAULT_ARMS]
    report = (out / "report.md").read_text()
    assert "| arm | what changes | EX (%)" in report
    assert report.count("\n| ") == 1 + len(DEFAULT_ARMS)  # header and one row per arm
    assert (out / "ablation.png").read_bytes().startswith(b"\x89PNG")
    for arm in DEFAULT_ARMS:
        assert (out / "seed-0" / "arms" / arm / DONE_MARKER).is_file()
        assert (out / "seed-0" / "arms" / arm / "final" / "config.json").is_file()
    assert not (out / "seed-0" / "arms" / "progressive" / "checkpoints").exists()  # one warm start, shared


def test_each_arm_ran_with_its_settings(quick_run: tuple[Path, Any]) -> None:
    out, _ = quick_run
    runs = _runs(out)
    for arm, run in runs.items():
        assert run.steps == 3, arm  # the same number of RL steps for every arm
        # each component logged per step; GSPO generates once for four optimizer steps, and logs then
        logged = 1 if arm == "gspo" else 3
        assert len(run.turns_mean) == logged, arm
        for name, series in run.components.items():
            assert len(series) == logged, (arm, name)
    # T = 1 arms never show a second turn; the multi-turn arms do
    for arm in ("single-turn", "one-shot"):
        assert runs[arm].settings["turns"] == 1
        assert runs[arm].turns_mean == [1.0, 1.0, 1.0]
    assert max(runs["progressive"].turns_mean) > 1.0
    # the one-shot arm's components are the one-shot reward's
    assert runs["one-shot"].settings["reward"] == "one-shot"
    assert set(runs["one-shot"].components) == {"correct", "exec", "fmt"}
    assert set(runs["progressive"].components) == {"fmt", "exec", "late", "align"}
    # gamma = 1: first-turn and second-turn successes earn the same R_late; with the decay they do not
    assert runs["no-decay"].settings["progressive"]["gamma"] == 1.0
    late = runs["no-decay"].late_at_first_correct
    # the quick warm start succeeds at both turns during RL
    assert "1" in late, late
    assert "2" in late, late
    assert set(late["1"]) == set(late["2"]) == {2.0}
    assert set(runs["progressive"].late_at_first_correct.get("2", [1.0])) == {1.0}
    # the switched-off components read 0 on every step
    assert set(runs["no-align"].components["align"]) == {0.0}
    assert runs["no-align"].settings["progressive"]["disabled"] == ["align"]
    assert set(runs["no-exec"].components["exec"]) == {0.0}
    # GSPO used the GSPO preset (sequence-level importance ratios), the others GRPO
    assert runs["gspo"].settings["algorithm"] == "gspo"
    assert runs["gspo"].settings["trainer"]["importance_sampling_level"] == "sequence"
    assert runs["progressive"].settings["algorithm"] == "grpo"
    # the oracle-free arm's episodes got the execution observation, every other arm the ODT's tags
    assert runs["execution-feedback"].settings["feedback"] == "execution"
    assert {run.settings["feedback"] for arm, run in runs.items() if arm != "execution-feedback"} == {"tags"}
    assert max(runs["execution-feedback"].turns_mean) > 1.0


def test_the_measurement_feedback_is_one_for_every_arm_and_checked(tmp_path: Path) -> None:
    from progress_sql.errors import ConfigError
    from progress_sql.studies.ablate import AblateRequest, ablate_config

    config = ablate_config(AblateRequest(out=tmp_path, quick=True, measure_feedback="execution"))
    assert config.measure_feedback == "execution"
    with pytest.raises(ConfigError, match="feedback"):
        ablate_config(AblateRequest(out=tmp_path, quick=True, measure_feedback="gold-rows"))


def test_no_decay_arm_pays_a_late_success_as_an_early_one() -> None:
    settings = ARMS["no-decay"].settings(AblateConfig().rl, ProgressiveConfig())
    config = settings.env_config().progressive
    right = Turn("SELECT 1", True, True, True, 1.0)
    wrong = Turn("SELECT 2", True, True, False, 0.5)
    first = progressive_reward(Trajectory((right,)), config).component("late")
    second = progressive_reward(Trajectory((wrong, right)), config).component("late")
    assert first == second == config.omega_acc


def test_interrupted_ablate_resumes_only_unfinished_arms(quick_run: tuple[Path, Any], tmp_path: Path) -> None:
    import shutil

    out = tmp_path / "run"
    shutil.copytree(quick_run[0], out)
    # as if killed during the third arm: its marker was never written
    unfinished = out / "seed-0" / "arms" / "single-turn"
    (unfinished / DONE_MARKER).unlink()
    marker = out / "seed-0" / "arms" / "progressive" / DONE_MARKER
    mtime = marker.stat().st_mtime_ns
    sft = out / "seed-0" / "checkpoints" / "sft" / "sft.json"
    sft_mtime = sft.stat().st_mtime_ns
    result = run_ablate(AblateConfig.quick(out), no_bar)
    assert sorted(result.resumed) == sorted(f"{a}@seed0" for a in DEFAULT_ARMS if a != "single-turn")
    assert marker.stat().st_mtime_ns == mtime  # the finished arm was read back, not rerun
    assert sft.stat().st_mtime_ns == sft_mtime  # the shared warm start was reused
    assert result.sft[0].get("resumed") is True
    assert (unfinished / DONE_MARKER).is_file()
    assert [row.arm for row in result.rows()] == list(DEFAULT_ARMS)


def test_bad_configuration_fails_at_once(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="seeds >= 1"):
        AblateConfig(out=tmp_path, seeds=0)
    with pytest.raises(ConfigError, match="unknown ablation arm 'w/o-exec'; choose one of"):
        AblateConfig(out=tmp_path, arms=("progressive", "w/o-exec"))
    # a base reward with only R_exec on: the no-exec arm would make it constant
    base = ProgressiveConfig(disabled=frozenset({"late", "align", "fmt"}))
    with pytest.raises(ConfigError, match="the same for every trajectory"):
        AblateConfig(out=tmp_path, progressive=base, arms=("progressive", "no-exec"))
    for args, message in (
        (["--seeds", "0"], "seeds >= 1"),
        (["--arms", "progressive,nope"], "unknown ablation arm 'nope'"),
    ):
        result = runner.invoke(app, ["ablate", "--quick", "--out", str(tmp_path / "bad"), *args])
        assert result.exit_code == 2, result.output
        assert message in result.output
    assert not (tmp_path / "bad").exists()  # refused before anything ran


def test_arm_labels_follow_the_papers_wording() -> None:
    assert ARMS["no-decay"].label == "w/o per-turn decay (gamma = 1)"  # Appendix E.2: gamma = 1.0
    assert ARMS["one-shot"].label.startswith("Single-turn RL")  # Table 3's variant: T = 1, final-state rewards
    assert "Table 13" in ARMS["gspo"].label  # GSPO is the paper's Table 13, not an arm of Table 3
    assert not any("R_late" in arm.label for arm in ARMS.values())  # the text names no ablation without R_late


def test_the_former_name_no_late_runs_and_reads_back_as_no_decay(tmp_path: Path) -> None:
    assert ARM_ALIASES == {"no-late": "no-decay"}
    assert "no-late" not in ARMS  # an alias, not a second arm
    assert arm_names("progressive, no-late") == ("progressive", "no-decay")
    assert AblateConfig(out=tmp_path, arms=("no-late", "progressive")).arms == ("no-decay", "progressive")
    with pytest.raises(ConfigError, match="arm named twice: no-decay"):
        AblateConfig(out=tmp_path, arms=("no-late", "no-decay"))
    # a folder an earlier run wrote as arms/no-late is the no-decay arm's; the current name wins when both exist
    arms = tmp_path / "seed-0" / "arms"
    assert arm_folder(arms, ARMS["no-decay"]) == arms / "no-decay"
    (arms / "no-late").mkdir(parents=True)
    assert arm_folder(arms, ARMS["no-decay"]) == arms / "no-late"
    (arms / "no-decay").mkdir()
    assert arm_folder(arms, ARMS["no-decay"]) == arms / "no-decay"
    # a run recorded under the former name fills the no-decay row
    warm = {0: Measured((False, False), (False, False), 2, {})}
    old = ArmRun("no-late", 0, {}, 1, 1.0, Measured((True, False), (True, False), 2, {}), {}, [], [], {})
    (row,) = table([old], warm, ("no-decay",))
    assert (row.arm, row.label, row.ex) == ("no-decay", "w/o per-turn decay (gamma = 1)", 0.5)


def test_table_pairs_arms_with_the_warm_start_and_progressive() -> None:
    def run(arm: str, seed: int, matches: list[bool]) -> ArmRun:
        measured = Measured(tuple(matches), tuple(matches), 2, {})
        return ArmRun(arm, seed, {}, 1, 1.0, measured, {}, [], [], {})

    warm = {s: Measured((False,) * 4, (False,) * 4, 2, {}) for s in (0, 1)}
    runs = [
        run("progressive", 0, [True, True, False, False]),
        run("progressive", 1, [True, True, True, False]),
        run("no-exec", 0, [True, False, False, False]),
        run("no-exec", 1, [True, False, False, False]),
    ]
    rows = {row.arm: row for row in table(runs, warm, ("progressive", "no-exec", "gspo"))}
    assert set(rows) == {"progressive", "no-exec"}  # an arm without a finished run has no row
    assert rows["progressive"].ex == pytest.approx(0.625)
    assert rows["progressive"].change_vs_warm == pytest.approx(0.625)
    assert rows["progressive"].se_seeds == pytest.approx(0.125)
    assert rows["no-exec"].diff_vs_progressive == pytest.approx(-0.375)
    assert rows["no-exec"].seeds == 2
    assert rows["no-exec"].n == 8


def test_real_model_ablation_shares_one_warm_start(
    tmp_path: Path, music_dir: Path, tiny_chat_model: Path, heldout_dir: Path
) -> None:
    """A recipe's ablation (``ablate --recipe``): one warm start per seed, every arm from it, measured on
    the recipe's held-out questions (paired), the base model's measurement kept, and a rerun resumed."""
    from progress_sql.studies.ablate import records, report, summary
    from tests.training.real_run import config_for

    out = tmp_path / "ablate"
    real = config_for(out, tiny_chat_model, heldout_dir, trainable_layers=1)
    config = AblateConfig(out=out, arms=("progressive", "one-shot"), real=real,
                          real_task=str(music_dir / "questions.json"), data_dir=music_dir)  # fmt: skip
    name = str(heldout_dir / "questions.json")
    assert config.sets == (name,)
    result = run_ablate(config, no_bar)
    seed = out / "seed-0"
    assert (seed / "checkpoints" / "sft" / "base.json").is_file()
    assert (seed / "warm.json").is_file()
    runs = {run.arm: run for run in result.runs}
    assert set(runs) == {"progressive", "one-shot"}
    assert (runs["progressive"].settings["turns"], runs["progressive"].settings["reward"]) == (2, "progressive")
    assert (runs["one-shot"].settings["turns"], runs["one-shot"].settings["reward"]) == (1, "one-shot")
    for arm in runs:
        assert (seed / "arms" / arm / DONE_MARKER).is_file()
        assert (seed / "arms" / arm / "final" / "config.json").is_file()
        assert not (seed / "arms" / arm / "rl" / "final").exists()  # one copy of the policy
        assert len(runs[arm].measured.single) == 4  # the held-out questions, paired across arms
    rows = {row.arm: row for row in result.rows()}
    assert rows["one-shot"].diff_vs_progressive is not None
    data = summary(result)
    assert data["model"] == str(tiny_chat_model)
    assert data["heldout_sets"] == [name]
    before = data["warm_start"]["0"]["before_warm_start"]
    assert before["warm_start_change"]["n"] == 4
    assert len(result.base[0].single) == 4
    text = report(result, data, out)
    assert "held-out real questions of other databases" in text
    assert "before the warm start" in text
    assert len(records(result)) == 2

    again = run_ablate(config, no_bar)
    assert sorted(again.resumed) == ["one-shot@seed0", "progressive@seed0"]
    assert again.sft[0].get("resumed") is True
    assert again.rows() == result.rows()


def test_real_model_ablation_options(tmp_path: Path) -> None:
    unknown = runner.invoke(app, ["ablate", "--model", "no-such-model", "--out", str(tmp_path / "a")])
    assert unknown.exit_code == 2
    assert "no recipe trains 'no-such-model'" in unknown.output
    no_data = runner.invoke(app, ["ablate", "--recipe", "smollm2-cpu", "--out", str(tmp_path / "b")])
    assert no_data.exit_code == 2
    assert "needs --data-dir" in no_data.output
    stray = runner.invoke(app, ["ablate", "--heldout-size", "5", "--out", str(tmp_path / "c")])
    assert stray.exit_code == 2
    assert "use them with --recipe or --model" in stray.output
    from progress_sql.training.recipe import TrainConfig

    no_warm_start = TrainConfig(out=tmp_path, model="some/model")
    with pytest.raises(ConfigError, match="needs a recipe"):
        AblateConfig(out=tmp_path, real=no_warm_start)


def test_ablate_model_builds_the_recipe_run_with_the_options(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import progress_sql.studies.ablate as ablate
    from progress_sql.training.pretrained import RECIPES, recipe_config

    seen: list[AblateConfig] = []

    def capture(config: AblateConfig, phase: Any) -> None:
        seen.append(config)
        raise SystemExit(0)

    monkeypatch.setattr(ablate, "run_ablate", capture)
    base = ["ablate", "--model", "smollm2-135m", "--data-dir", str(tmp_path), "--out", str(tmp_path / "a"),
            "--arms", "progressive,one-shot"]  # fmt: skip
    runner.invoke(app, base)
    runner.invoke(app, [*base, "--lr", "2e-5", "--per-device-batch", "4", "--steps", "3", "--heldout-size", "50"])
    plain_run, changed = seen
    spec = RECIPES["smollm2-cpu"]
    assert plain_run.real == recipe_config(spec, out=tmp_path / "a", data_dir=tmp_path)
    assert (plain_run.real_task, plain_run.data_dir) == ("spider-train", tmp_path)
    assert plain_run.arms == ("progressive", "one-shot")
    assert changed.real is not None
    assert changed.real.heldout is not None
    assert (changed.base_rl.learning_rate, changed.base_rl.per_device_batch, changed.base_rl.steps) == (2e-5, 4, 3)
    assert changed.real.heldout.size == 50
