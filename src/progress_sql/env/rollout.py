"""Run the refinement environment over a dataset with a generation backend.

Episodes advance turn by turn in lockstep: every turn, all unfinished conversations go to the
backend in one batch (an HTTP backend serves them concurrently), then each environment steps.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from progress_sql.backends.base import Backend, GenerationConfig
from progress_sql.data.loaders import database_problem, nothing_scored, problem_kind
from progress_sql.env.core import EnvConfig, SQLRefineEnv, make_store, prepare_golds, step_many
from progress_sql.env.records import TurnRecord
from progress_sql.errors import DatasetError, GoldQueryError
from progress_sql.execution.pool import ExecutionPool
from progress_sql.judge.cache import GoldCache
from progress_sql.judge.gold import GoldStore
from progress_sql.profiles import DEFAULT_PROFILE, get_profile
from progress_sql.progress import Phase
from progress_sql.prompts import Message
from progress_sql.runfolder import RunSummary, writing_results
from progress_sql.types import TASK_KINDS, Example, ResultPreview, RewardBreakdown, TaskKind, result_previews

Progress = Callable[[int], None]
#: A run's metrics from its episode records and turn budget (:func:`summarize_rollouts`, or a caller's).
Metrics = Callable[[Sequence["EpisodeRecord"], int], dict[str, Any]]
EpisodeStatus = Literal["ok", "gold_invalid", "skipped"]
#: Decimals of the numbers in samples.jsonl.
DIGITS = 6


@dataclass(frozen=True, slots=True)
class EpisodeRecord:
    """One example's rollout; its samples.jsonl line is ``types.plain(record, DIGITS)``.

    ``gold_result`` / ``pred_result``: the first rows of the gold's result and of the result of the
    SQL the episode ended with, as the environment ran them (only when :func:`run_rollouts` is asked
    for ``preview_rows``; ``pred_result`` None when the last turn had no SQL or asked a question)."""

    index: int
    db_id: str
    status: EpisodeStatus
    reason: str = ""
    turns: tuple[TurnRecord, ...] = ()
    reward: RewardBreakdown | None = None
    k_star: int | None = None
    #: The example's task kind (docs/tasks.md): the summary breaks results down by it.
    kind: TaskKind = "read"
    gold_result: ResultPreview | None = None
    pred_result: ResultPreview | None = None


def run_rollouts(
    examples: Sequence[Example],
    backend: Backend,
    config: EnvConfig,
    generation: GenerationConfig,
    pool: ExecutionPool,
    *,
    cache: GoldCache | None = None,
    store: GoldStore | None = None,
    preview_rows: int = 0,
    progress: Progress | None = None,
) -> list[EpisodeRecord]:
    """One episode per example (``generation.n`` must be 1); records in example order. The
    environments share one gold store: ``store`` (built for ``config``), else one over ``pool`` and
    ``cache``. ``preview_rows`` > 0 keeps that many first rows of the gold's and the final SQL's
    results in each record (what the run explorer shows; nothing runs again for it)."""
    if generation.n != 1:
        raise ValueError("rollouts sample one response per turn (GenerationConfig.n = 1)")
    if store is None:
        store = make_store(config, pool=pool, cache=cache)
    records: list[EpisodeRecord | None] = [None] * len(examples)
    turns: list[list[TurnRecord]] = [[] for _ in examples]
    active: list[tuple[int, SQLRefineEnv, list[Message]]] = []
    episodes: list[tuple[int, SQLRefineEnv]] = []
    for position, example in enumerate(examples):
        if (problem := database_problem(example)) is not None:  # docs/data.md#data-checks
            records[position] = _unscored(example, "skipped", problem)
            _advance(progress, config.max_turns)
            continue
        episodes.append((position, SQLRefineEnv(config, store=store)))
    prepare_golds([(env, examples[position]) for position, env in episodes])  # the golds in one batch
    for position, env in episodes:
        example = examples[position]
        try:
            active.append((position, env, env.reset(example)))
        except GoldQueryError as error:
            records[position] = _unscored(example, "gold_invalid", str(error))
            _advance(progress, config.max_turns)
    for _ in range(config.max_turns):
        if not active:
            break
        responses = backend.generate([messages for _, _, messages in active], generation)
        still_active = []
        # The turn's SQL of every active episode goes to the workers in one batch.
        steps = step_many([(env, choices[0]) for (_, env, _), choices in zip(active, responses, strict=True)])
        for (position, env, messages), choices, step in zip(active, responses, steps, strict=True):
            response = choices[0]
            turns[position].append(step.info)
            if step.terminated or step.truncated:
                example = examples[position]
                gold, pred = result_previews(store.prepare(example).results, env.last_result, preview_rows)
                records[position] = EpisodeRecord(
                    example.index, example.db_id, "ok", "", tuple(turns[position]), step.info.reward,
                    env.trajectory.k_star, example.kind, gold, pred,
                )  # fmt: skip
                _advance(progress, config.max_turns - step.info.turn + 1)
            else:
                assert step.observation is not None
                next_messages = [*messages, Message(role="assistant", content=response), step.observation]
                still_active.append((position, env, next_messages))
                _advance(progress, 1)
        active = still_active
    assert all(record is not None for record in records)  # every episode ends within max_turns
    return [record for record in records if record is not None]


def _unscored(example: Example, status: EpisodeStatus, reason: str) -> EpisodeRecord:
    return EpisodeRecord(example.index, example.db_id, status, reason, kind=example.kind)


def _advance(progress: Progress | None, amount: int) -> None:
    if progress is not None:
        progress(amount)


def summarize_rollouts(records: Sequence[EpisodeRecord], max_turns: int) -> dict[str, Any]:
    """Success by turn (cumulative), mean reward and turns, counts of invalid and skipped examples;
    ``by_kind``: the same for each task kind present (read, write, ambiguous), with its clarifying
    questions. ``k_star`` counts answers: a clarifying question is a turn but no answer."""
    summary = _summary(records, max_turns)
    kinds = [kind for kind in TASK_KINDS if any(r.kind == kind for r in records)]
    summary["by_kind"] = {kind: _summary([r for r in records if r.kind == kind], max_turns) for kind in kinds}
    return summary


def _summary(records: Sequence[EpisodeRecord], max_turns: int) -> dict[str, Any]:
    scored = [r for r in records if r.status == "ok"]
    n = len(scored)
    successes = [r.k_star for r in scored if r.k_star is not None]
    rewards = [r.reward.total for r in scored if r.reward is not None]
    return {
        "examples": len(records),
        "scored": n,
        "gold_invalid": sum(r.status == "gold_invalid" for r in records),
        "skipped": sum(r.status == "skipped" for r in records),
        "success_by_turn": {
            str(k): round(sum(1 for s in successes if s <= k) / n, 6) if n else 0.0 for k in range(1, max_turns + 1)
        },
        "first_turn_accuracy": round(sum(1 for s in successes if s == 1) / n, 6) if n else 0.0,
        "mean_reward": round(sum(rewards) / len(rewards), 6) if rewards else 0.0,
        "mean_turns": round(sum(len(r.turns) for r in scored) / n, 6) if n else 0.0,
        "format_rate": round(
            sum(t.format_ok for r in scored for t in r.turns) / max(1, sum(len(r.turns) for r in scored)), 6
        ),
        "asks": sum(t.action == "ask" for r in scored for t in r.turns),
        "match_rate": round(sum(bool(r.turns and r.turns[-1].match) for r in scored) / n, 6) if n else 0.0,
    }


# ---- the whole run, as ``rollout`` asks for it -----------------------------------------------------


@dataclass(frozen=True, slots=True)
class RolloutRequest:
    """One ``rollout`` run as its options give it: the task, the backend, the environment's settings
    (``env``) and decoding, and where the run folder goes."""

    task: str
    backend: str
    out: Path
    env: EnvConfig
    generation: GenerationConfig
    data_dir: Path | None = None
    base_url: str | None = None
    model: str | None = None
    replay: Path | None = None
    api_key: str | None = None
    limit: int | None = None
    workers: int = 1  # processes (resolved)
    workers_given: int = 0  # as given (0: one per core), recorded
    #: Also write the page's contexts (questions, gold SQL, schema excerpts) for ``--view``.
    contexts: bool = False
    #: The profile ``env`` was built from (``progress_sql.profiles``), recorded in ``summary.json``.
    profile: str = DEFAULT_PROFILE
    #: The databases folder of a questions file, when given outright (``eval --db-root``).
    db_root: Path | None = None


@dataclass(frozen=True, slots=True)
class RolloutRun:
    """A finished ``rollout``: its ``summary.json`` and its episode records."""

    summary: RunSummary
    records: tuple[EpisodeRecord, ...]

    @property
    def metrics(self) -> dict[str, Any]:
        return dict(self.summary.results["metrics"])


def run_rollout(
    request: RolloutRequest, phase: Phase, *, command: str = "rollout", metrics: Metrics | None = None
) -> RolloutRun:
    """Run ``rollout``: every example's episode with the backend, then the run folder (``summary.json``,
    ``samples.jsonl``, ``report.md``, and with ``contexts`` the page's ``examples.jsonl``). A backend
    failure raises GenerationError; a folder that cannot be written, ConfigError. ``command`` names the
    run in its summary and ``metrics`` computes its metrics (default: :func:`summarize_rollouts`): an
    interactive ``eval --turns`` is this run with measures of its own."""
    from progress_sql.backends.openai_compat import BackendError
    from progress_sql.backends.registry import make_backend
    from progress_sql.data.context import example_contexts, write_contexts
    from progress_sql.data.tasks import resolve_task
    from progress_sql.errors import GenerationError
    from progress_sql.runfolder import RunFolder, basic_report
    from progress_sql.types import PREVIEW_ROWS, plain

    examples = resolve_task(request.task, request.data_dir, db_root=request.db_root, need_databases=True)[1]
    if request.limit is not None:
        examples = examples[: max(0, request.limit)]
    generator = make_backend(
        request.backend, base_url=request.base_url, model=request.model, replay=request.replay,
        api_key=request.api_key,
    )  # fmt: skip
    config = request.env
    with ExecutionPool(workers=request.workers) as pool:
        store = make_store(config, pool=pool, cache=GoldCache())
        try:
            records = run_rollouts(
                examples, generator, config, request.generation, pool, store=store,
                preview_rows=PREVIEW_ROWS,  # the first rows of both results, kept in samples.jsonl for reading
                progress=phase("turns", len(examples) * config.max_turns),
            )  # fmt: skip
        except BackendError as error:
            raise GenerationError(f"generation failed: {error}") from error
        contexts = []
        if request.contexts:  # questions, gold SQL and schema excerpts; result rows are in the records
            last = {r.index: r.turns[-1].sql if r.turns else None for r in records}
            contexts = example_contexts(examples, last, records, store.schema)
    if not any(record.status == "ok" for record in records):  # no figure: a summary would read as a measurement
        skipped = Counter(problem_kind(r.reason) for r in records if r.status == "skipped")
        raise DatasetError(
            nothing_scored(len(records), dict(skipped), sum(r.status == "gold_invalid" for r in records))
        )
    measured = (metrics or summarize_rollouts)(records, config.max_turns)
    summary = RunSummary(command, rollout_settings(request), {"metrics": measured})
    with writing_results(request.out):
        RunFolder(request.out).write(
            summary, [plain(r, DIGITS) for r in records],
            basic_report(f"{command.capitalize()}: {request.task}", summary.to_dict(), results=measured),
        )  # fmt: skip
        if request.contexts:
            write_contexts(request.out, contexts)
    return RolloutRun(summary, tuple(records))


def rollout_settings(request: RolloutRequest) -> dict[str, Any]:
    """``summary.json``'s settings of a rollout: everything that decides its numbers."""
    from progress_sql.execution.engines import engine_settings
    from progress_sql.rewards.registry import get_reward

    config, generation = request.env, request.generation
    spec = get_reward(config.reward)
    return {
        "task": request.task,
        "data_dir": str(request.data_dir) if request.data_dir else None,
        **({"db_root": str(request.db_root)} if request.db_root is not None else {}),
        "profile": get_profile(request.profile).settings(),
        "backend": request.backend,
        "model": request.model,
        "turns": config.max_turns,
        "preset": config.preset,
        "feedback": config.feedback,
        "protocol": config.protocol,
        "schema_profile": config.schema_profile,
        "suite": config.suite,
        "reward": {"name": spec.name, "version": spec.version, "config_hash": config.progressive.config_hash},
        # The terms of clarifying questions and write checks (docs/environment.md), added to every episode.
        "task_terms": {"offer_ask": config.tasks.offer_ask, "config_hash": config.tasks.config_hash},
        "generation": {
            "temperature": generation.temperature,
            "max_tokens": generation.max_tokens,
            "seed": generation.seed,
        },
        "timeout_s": config.timeout_s,
        "workers": request.workers_given or None,
        "engine": None if config.backend_db is None else engine_settings(config.backend_db),
    }
