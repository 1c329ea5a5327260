"""``progress-sql eval``: evaluate a model (a generation backend) or a prediction file on a task
(docs/evaluation.md); the run itself is :func:`progress_sql.evaluation.run.run_eval`."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import typer

from progress_sql.backends.base import GenerationConfig
from progress_sql.backends.registry import BACKENDS
from progress_sql.cli import _common as common
from progress_sql.data.ddl import SCHEMA_PROFILES
from progress_sql.errors import ConfigError
from progress_sql.evaluation.bird import BIRD_VES_REPEATS
from progress_sql.evaluation.predictions import FORMATS
from progress_sql.evaluation.run import EvalRequest, degenerate_vote, run_eval
from progress_sql.progress import phases, progress_bar
from progress_sql.prompts import PROMPT_STYLES, prompt_style

_DB_ROOT = typer.Option(
    None,
    "--db-root",
    help="The databases folder (<db_id>/<db_id>.sqlite), when not the task's own: for a questions file, "
    "<stem>_database/ beside it (Spider's test.json + test_database/) or else database/.",
)
_PREDICTIONS = typer.Option(
    None,
    "--predictions",
    help="A prediction file: one SQL per line, SQL<TAB>db_id lines, BIRD's JSON object, a JSON list or "
    "JSONL (with 'samples' for several); the format is detected unless --format names it.",
)
_PREDICTION_FORMAT = typer.Option(
    None, "--format", help=f"The prediction file's format: {', '.join(FORMATS)} (default: detected)."
)
_MAX_TOKENS = typer.Option(
    None, "--max-tokens", help="Tokens per response (default: the prompt style's, 1024 for paper, 128 for small)."
)
_SAMPLING = typer.Option(
    "n",
    "--sampling",
    help="openai: 'n' asks for --n samples per request and draws what a server leaves out (it ignores or "
    "caps n) as separate requests; 'separate' sends one request per sample (servers that refuse n).",
)
_PROMPT = typer.Option(
    "paper", "--prompt", help=f"Prompt style: {', '.join(PROMPT_STYLES)} (docs/data.md#prompt-styles)."
)
_SCHEMA_PROFILE = typer.Option(
    None,
    "--schema-profile",
    help=f"One of {', '.join(SCHEMA_PROFILES)} (default: the profile's with its prompt style, paper; "
    "else the prompt style's).",
)
_BIRD_METRICS = typer.Option(
    None,
    "--bird-metrics/--no-bird-metrics",
    help="BIRD's EX by difficulty and Soft-F1 as its evaluators compute them (default: with --preset bird).",
)
_VES_REPEATS = typer.Option(
    0,
    "--ves-repeats",
    help=f"R-VES: time each correct answer and its gold this many times (BIRD uses {BIRD_VES_REPEATS}); "
    "0: no R-VES. The result depends on the machine.",
)


_TURNS = typer.Option(
    None,
    "--turns",
    help="Evaluate interactively: each question is an episode of up to T turns with --feedback after a wrong "
    "answer (execution: no gold in any prompt) and --protocol; reports EX within T turns, turns used, probes "
    "per question and the single-turn EX of the same run (docs/evaluation.md#interactive-evaluation).",
)

_RESUME = typer.Option(
    False,
    "--resume",
    help="Go on with an interrupted run into --out: keep the answers its backend generated (generations.jsonl, "
    "written as each batch finishes) and generate only the rest; the settings must be the same.",
)


def eval_command(
    task: str = common.task_option(),
    data_dir: Path | None = common.data_dir_option(),
    db_root: Path | None = _DB_ROOT,
    predictions: Path | None = _PREDICTIONS,
    prediction_format: str | None = _PREDICTION_FORMAT,
    backend: str | None = typer.Option(None, "--backend", help=f"Generation backend: {', '.join(sorted(BACKENDS))}."),
    base_url: str | None = typer.Option(None, "--base-url", help="openai: server URL, e.g. http://localhost:8000/v1"),
    model: str | None = typer.Option(None, "--model", help="openai: model name; transformers: model folder."),
    replay: Path | None = typer.Option(None, "--replay", help="replay: JSONL file of scripted responses."),
    n: int = typer.Option(1, "--n", help="Samples per question (majority vote and pass@k when > 1)."),
    temperature: float = typer.Option(0.0, "--temperature", help="0 = greedy decoding."),
    top_p: float = typer.Option(1.0, "--top-p", help="Nucleus sampling threshold."),
    max_tokens: int | None = _MAX_TOKENS,
    seed: int | None = typer.Option(None, "--seed", help="Sampling seed passed to the backend."),
    sampling: str = _SAMPLING,
    prompt: str = _PROMPT,
    schema_profile: str | None = _SCHEMA_PROFILE,
    profile: str = common.profile_option(),
    suite: Path | None = typer.Option(None, "--suite", help="Test-suite folder: <db_id>/*.sqlite databases (TS)."),
    preset: str | None = common.preset_option(),
    out: Path = common.out_dir_option(also="plots"),
    limit: int | None = typer.Option(None, "--limit", help="Only the first N examples."),
    resume: bool = _RESUME,
    timeout: float = common.timeout_option("eval"),
    workers: int = common.workers_option(),
    cache_dir: Path | None = typer.Option(None, "--cache-dir", help="Keep gold results on disk here across runs."),
    keep_distinct: bool = typer.Option(False, "--keep-distinct", help="spider preset: do not strip DISTINCT."),
    plots: bool = typer.Option(True, "--plots/--no-plots", help="Draw the report's plots (needs matplotlib)."),
    bird_metrics: bool | None = _BIRD_METRICS,
    ves_repeats: int = _VES_REPEATS,
    backend_db: str | None = common.backend_db_option(),
    json_output: bool = common.json_option(),
    view: bool = common.view_option(),
    ray: str | None = common.ray_option(),
    ray_databases: str = common.ray_databases_option(),
    turns: int | None = _TURNS,
    feedback: str | None = common.feedback_option(),
    protocol: str | None = common.protocol_option(),
) -> None:
    """Evaluate a model or a prediction file: EX / TS, Vote@N, pass@k, difficulty levels, ODT errors."""
    common.check_timeout(timeout)
    if turns is not None or feedback is not None or protocol is not None:
        _interactive(locals())
        return
    common.resolve_shard_workers(workers, ray)  # a bad count fails before anything loads
    common.backend_engine(backend_db)  # its driver checked before anything runs
    options = locals()
    request = EvalRequest(
        **{name: options[name] for name in _REQUEST_OPTIONS}, prediction_format=prediction_format,
        timeout_s=timeout, api_key=os.environ.get("OPENAI_API_KEY"), contexts=view,
    )  # fmt: skip
    if (vote_warning := degenerate_vote(backend, n, temperature)) is not None:
        common.warn(vote_warning)  # once, before generation; summary.json's notes keep it
    with progress_bar("[bold]eval[/] {task.description}", console=common.stdout, quiet=json_output) as bar:
        outcome = run_eval(request, phases(bar))
    _report(outcome.summary, out, as_json=json_output)
    common.write_view(out, view, quiet=json_output)


#: The options :class:`EvalRequest` takes as they are, by its field names.
_REQUEST_OPTIONS = (
    "task", "out", "data_dir", "db_root", "predictions", "backend", "base_url", "model", "replay", "sampling",
    "n", "temperature", "top_p", "max_tokens", "seed", "prompt", "schema_profile", "profile", "suite", "preset",
    "keep_distinct", "limit", "workers", "cache_dir", "plots", "bird_metrics", "ves_repeats", "backend_db", "ray",
    "ray_databases", "resume",
)  # fmt: skip


def _interactive(options: dict[str, Any]) -> None:
    """``eval --turns``: the episodes in the profile's environment with the options given on top."""
    # Imported here: the environment brings the parser, which eval's single-turn parent process never loads.
    from progress_sql.env.rollout import RolloutRequest
    from progress_sql.env.settings import env_config_from_options
    from progress_sql.studies.interactive import check_interactive, run_interactive_eval

    if options["turns"] is None:
        raise ConfigError("--feedback and --protocol evaluate interactively: give --turns T as well")
    check_interactive(predictions=options["predictions"], n=options["n"], ray=options["ray"],
                      ves_repeats=options["ves_repeats"], resume=options["resume"])  # fmt: skip
    env = env_config_from_options(options["profile"], {
        "max_turns": options["turns"], "feedback": options["feedback"], "protocol": options["protocol"],
        "preset": options["preset"], "schema_profile": options["schema_profile"], "timeout_s": options["timeout"],
        "suite": None if options["suite"] is None else str(options["suite"]), "backend_db": options["backend_db"],
        "prompt": options["prompt"],
    })  # fmt: skip
    max_tokens = options["max_tokens"] or prompt_style(env.prompt).max_new_tokens
    generation = GenerationConfig(temperature=options["temperature"], top_p=options["top_p"], max_tokens=max_tokens,
                                  seed=options["seed"])  # fmt: skip
    out, as_json = common.prepare_out(options["out"]), options["json_output"]
    request = RolloutRequest(
        options["task"], options["backend"] or "", out, env, generation, data_dir=options["data_dir"],
        base_url=options["base_url"], model=options["model"], replay=options["replay"],
        api_key=os.environ.get("OPENAI_API_KEY"), limit=options["limit"],
        workers=common.resolve_workers(options["workers"]), workers_given=options["workers"],
        contexts=options["view"], profile=options["profile"], db_root=options["db_root"],
    )  # fmt: skip
    with progress_bar("[bold]eval --turns[/] {task.description}", console=common.stdout, quiet=as_json) as bar:
        run = run_interactive_eval(request, phases(bar))
    if as_json:
        typer.echo(json.dumps(run.summary.to_dict(), indent=2))
    else:
        measures = run.metrics["interactive"]
        common.stdout.print(
            f"EX within {measures['turns']} turns: [bold]{_percent(measures['ex_within_turns']['ex'])}%[/]; "
            f"single-turn EX {_percent(measures['single_turn_ex']['ex'])}%, first answer "
            f"{_percent(measures['first_answer_ex']['ex'])}% ({measures['ex_within_turns']['n']} scored); turns "
            f"used {measures['turns_used']}, probes per question {measures['probes_per_question']}"
        )
        common.stdout.print(f"results: {out / 'samples.jsonl'}, {out / 'summary.json'}, {out / 'report.md'}")
    common.write_view(out, options["view"], quiet=as_json)


def _report(summary: Any, out: Path, *, as_json: bool) -> None:
    """The run's figures on stdout: its summary as JSON, or the lines :func:`_print` writes."""
    if as_json:
        typer.echo(json.dumps(summary.to_dict(), indent=2))
    else:
        _print(summary.metrics, out, summary.settings.preset["name"])


def _print(metrics: Any, out: Path, preset: str) -> None:
    accuracy = metrics["execution_accuracy"]
    se = metrics.get("execution_accuracy_se")
    shown = "n/a" if accuracy is None else f"{100 * accuracy:.2f}%" + ("" if se is None else f" +- {100 * se:.2f}")
    common.stdout.print(
        f"execution accuracy ({preset}): [bold]{shown}[/] ({metrics['matched']} of {metrics['scored']} scored examples)"
    )
    if metrics["ts_scored"]:
        common.stdout.print(
            f"test-suite accuracy: {100 * metrics['test_suite_accuracy']:.2f}% ({metrics['ts_scored']} examples; "
            f"EX - TS on them: {100 * metrics['ex_minus_ts']:.2f} points)"
        )
    for level, block in metrics["by_level"].items():
        value = block["execution_accuracy"]
        common.stdout.print(f"  {level}: {'n/a' if value is None else f'{100 * value:.2f}%'} of {block['scored']}")
    bird = metrics.get("bird")
    if bird:
        for name, key in (("BIRD EX", "ex"), ("Soft-F1", "soft_f1"), ("R-VES (machine-dependent)", "r_ves")):
            if bird[key] is not None:
                cells = ", ".join(f"{level} {_percent(v)}" for level, v in bird[key].items())
                common.stdout.print(f"{name}: {cells}")
    for reason, by_db in metrics["skipped_examples"]["by_reason"].items():  # docs/data.md#data-checks
        common.stdout.print(f"skipped ({reason}): {sum(by_db.values())}")
    if metrics["gold_invalid"]:
        common.stdout.print(f"invalid (gold query failed): {metrics['gold_invalid']}")
    common.stdout.print(f"results: {out / 'samples.jsonl'}, {out / 'summary.json'}, {out / 'report.md'}")


def _percent(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.2f}"


def register(app: typer.Typer) -> None:
    common.add_command(app, "eval", eval_command)
