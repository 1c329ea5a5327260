"""One evaluation run around :func:`progress_sql.evaluation.harness.evaluate`: generation with a
backend, the typed ``summary.json`` (:class:`EvalSummary`), the run folder and its loader
(``progress-sql eval`` and ``compare-runs`` are thin layers over it; docs/evaluation.md)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import MISSING, asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any, cast

from progress_sql.backends.base import AnswerReporting, GenerationConfig
from progress_sql.cluster.shards import ShardOutput, ShardRunner
from progress_sql.data.ddl import SchemaProfile, db_details
from progress_sql.data.loaders import database_problem, nothing_scored
from progress_sql.data.tasks import Task
from progress_sql.errors import ConfigError, DatasetError, GenerationError
from progress_sql.evaluation.analysis import odt_config_version
from progress_sql.evaluation.harness import Breakdown, EvalRecord, Sample, evaluate
from progress_sql.evaluation.journal import JOURNAL_FILE, GenerationJournal, conversation_key, unfinished
from progress_sql.evaluation.metrics import notes, summarize_eval
from progress_sql.evaluation.report import render_report, write_plots
from progress_sql.execution.engines import ENGINES, engine_of, engine_settings
from progress_sql.execution.executor import ExecLimits
from progress_sql.execution.pool import ExecutionPool
from progress_sql.judge.analysis import AnalysisPool
from progress_sql.judge.cache import GoldCache
from progress_sql.judge.compare import Preset, describe
from progress_sql.judge.gold import GoldStore
from progress_sql.odt.config import OdtConfig
from progress_sql.profiles import DEFAULT_PROFILE, get_profile
from progress_sql.progress import Phase
from progress_sql.prompts import PAPER_STYLE, Message, PromptStyle, opening_messages
from progress_sql.rewards.progressive import ProgressiveConfig
from progress_sql.runfolder import RunFolder, package_versions, writing_results
from progress_sql.sql.extract import extract
from progress_sql.testsuite.manifest import suite_lookup
from progress_sql.types import PREVIEW_ROWS, Example, plain

#: Conversations sent to a backend per call: progress is reported and the journal written between calls. Several
#: of the transformers backend's batches (16 rows), so that rows whose answers end take the next question of
#: the same schema (docs/benchmarks.md#a-shared-prompt-prefix-on-a-cpu).
GENERATION_BATCH = 64


def generate_samples(
    examples: Sequence[Example],
    backend: Any,
    config: GenerationConfig,
    profile: SchemaProfile,
    progress: Callable[[int, int], Callable[[int], object]] = lambda todo, kept: lambda n: None,
    *,
    db_engine: str = "SQLite",
    style: PromptStyle | None = None,
    journal: GenerationJournal | None = None,
) -> list[list[Sample]]:
    """Prompt ``backend`` (a ``backends.base`` generator) with the opening messages of ``style`` (the
    paper's by default) for every example whose database is present and extract the SQL of each
    response in that style's format; the examples without a database get an empty list.
    With a ``journal``, the questions it answered are not sent again and every new answer is appended
    to it as its batch finishes. ``progress(to_generate, kept)`` is called once, with the number of
    questions to send and of those the journal answered, and returns ``advance``, called with ``k`` as
    ``k`` more questions are answered: after each call, or during it where the backend reports its
    answers (:class:`~progress_sql.backends.base.AnswerReporting`)."""
    style = style or PAPER_STYLE
    samples: list[list[Sample]] = [[] for _ in examples]
    present = [i for i, e in enumerate(examples) if database_problem(e) is None]
    schemas: dict[str, str] = {}
    conversations: dict[int, list[Message]] = {}
    for i in present:
        example = examples[i]
        if example.db_path not in schemas:
            schemas[example.db_path] = db_details(example.db_path, profile)
        conversations[i] = opening_messages(example, schemas[example.db_path], db_engine=db_engine, style=style)

    def keep(i: int, texts: Sequence[str]) -> None:
        found = [extract(text, reasoning=style.reasoning) for text in texts]
        samples[i] = [Sample(x.sql, text, x.format_ok) for x, text in zip(found, texts, strict=True)]

    keys = {i: conversation_key(examples[i].index, conversations[i]) for i in present} if journal else {}
    todo = []
    for i in present:
        kept = journal.get(keys[i]) if journal is not None else None
        if kept is None:
            todo.append(i)
        else:
            keep(i, kept)
    advance = progress(len(todo), len(present) - len(todo))
    for start in range(0, len(todo), GENERATION_BATCH):
        batch = todo[start : start + GENERATION_BATCH]
        told = _counted(advance)  # a backend that reports its answers moves the bar during the call
        if isinstance(backend, AnswerReporting):
            responses = backend.generate_reporting([conversations[i] for i in batch], config, told)
        else:
            responses = backend.generate([conversations[i] for i in batch], config)
        for i, texts in zip(batch, responses, strict=True):
            keep(i, texts)
        if journal is not None:
            journal.record([(examples[i].index, keys[i], texts) for i, texts in zip(batch, responses, strict=True)])
        if told.done < len(batch):
            advance(len(batch) - told.done)
    return samples


@dataclass(frozen=True, slots=True)
class EvalInputs:
    """What an evaluation run is asked to do, known before it runs (the options of ``eval``)."""

    task: Task
    task_argument: str  # as given: a task name or a questions file
    data_dir: Path | None
    preset: Preset
    limits: ExecLimits
    workers: int  # 0: one per core
    predictions: Path | None = None
    backend: str | None = None
    model: str | None = None
    generation: GenerationConfig = field(default_factory=GenerationConfig)
    schema_profile: str = "full"
    prompt: str = "paper"  # the prompt style (progress_sql.prompts.PROMPT_STYLES)
    suite: Path | None = None
    predictions_format: str | None = None  # as read (detected or named with --format)
    bird_metrics: bool = False  # EX / Soft-F1 (/ R-VES) as BIRD's evaluators compute them
    ves_repeats: int = 0  # R-VES timing repeats per correct answer; 0: no R-VES
    db_root: Path | None = None  # the databases folder, when given outright (--db-root)
    backend_db: str | None = None  # the ported collection the SQL runs on (--backend-db); None: SQLite files
    profile: str = DEFAULT_PROFILE  # its ODT analyses the answers (Table 8 rates); its schema profile the prompt


@dataclass(frozen=True, slots=True)
class EvalSettings:
    """``summary.json``'s ``settings``: everything that decides the run's numbers."""

    task: Mapping[str, Any]  # name (as given for a questions file), spec, version, breakdown
    data_dir: str | None
    source: str
    predictions: str | None
    backend: str | None
    model: str | None
    decoding: Mapping[str, Any]
    suite: str | None
    preset: Mapping[str, Any]  # judge.compare.describe: name and options
    limits: Mapping[str, Any]
    workers: int | None  # None: one per core
    predictions_format: str | None = None  # the prediction file's format (predictions.FORMATS)
    bird: Mapping[str, Any] | None = None  # BIRD metrics asked for: ves_repeats, machine_dependent
    engine: Mapping[str, Any] | None = None  # with --backend-db: engine, dialect, location (never a password)
    profile: Mapping[str, Any] | None = None  # progress_sql.profiles: name and values (None: written before)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> EvalSettings:
        """Fields with a default may be absent (summaries written before they existed)."""
        return cls(
            **{f.name: data[f.name] if f.default is MISSING else data.get(f.name, f.default) for f in fields(cls)}
        )


@dataclass(frozen=True, slots=True)
class EvalSummary:
    """``summary.json`` of ``progress-sql eval``.

    ``metrics`` is :func:`progress_sql.evaluation.metrics.summarize_eval`'s mapping; ``reward_config``
    records the progressive reward's version and hash (the reward the environment would score these
    answers with; kept because runs are compared across reward versions).
    """

    settings: EvalSettings
    versions: Mapping[str, str]
    odt_config_version: str
    reward_config: Mapping[str, Any]
    metrics: Mapping[str, Any]
    gold_cache: Mapping[str, int]
    elapsed_s: float
    notes: tuple[str, ...] = ()
    command: str = "eval"

    def to_dict(self) -> dict[str, Any]:
        """``command`` first, then the fields in order."""
        data: dict[str, Any] = plain(self)
        return {"command": data.pop("command"), **data}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> EvalSummary:
        """The summary of a ``summary.json``; a KeyError names a missing field."""
        optional = {"notes": tuple(data.get("notes", ())), "command": data.get("command", "eval")}
        required = {f.name: data[f.name] for f in fields(cls) if f.name not in optional}
        return cls(**(required | optional | {"settings": EvalSettings.from_dict(data["settings"])}))


def degenerate_vote(backend: str | None, n: int, temperature: float) -> str | None:
    """The warning for a vote over identical samples, or None: ``n`` > 1 at temperature 0 with a backend
    that samples (greedy decoding gives one answer ``n`` times, so Vote@N and pass@k equal greedy EX). A
    prediction file and the replay backend have no temperature: never degenerate by setting."""
    from progress_sql.backends.registry import SCRIPTED_BACKENDS

    if backend is None or backend in SCRIPTED_BACKENDS or n == 1 or temperature > 0:
        return None
    return (
        f"--n {n} at temperature 0: greedy decoding gives every question the same answer {n} times, so "
        f"vote@{n} and pass@k equal greedy EX and the {n} samples cost {n} times the generation; "
        "give --temperature > 0 (e.g. 0.8) for a vote over different samples, or --n 1"
    )


def _decoding(inputs: EvalInputs, samples_per_example: int, draws: str | None) -> dict[str, Any]:
    generation = inputs.generation
    if inputs.backend is None:  # a prediction file: its own number of samples, no sampling settings
        n = samples_per_example
        return {"mode": "prediction file" if n == 1 else f"vote@{n} (prediction file)", "n": n}
    greedy = generation.n == 1 and generation.temperature == 0
    return {
        "mode": "greedy" if greedy else (f"vote@{generation.n}" if generation.n > 1 else "sampled"),
        "n": generation.n,
        "temperature": generation.temperature,
        "degenerate_vote": degenerate_vote(inputs.backend, generation.n, generation.temperature) is not None,
        "top_p": generation.top_p,
        "max_tokens": generation.max_tokens,
        "seed": generation.seed,
        "schema_profile": inputs.schema_profile,
        "prompt": inputs.prompt,
        "draws": draws,
    }


def summarize_run(
    inputs: EvalInputs,
    records: Sequence[EvalRecord],
    *,
    gold_cache: Mapping[str, int],
    elapsed_s: float,
    draws: str | None = None,
) -> EvalSummary:
    """The typed summary of a finished run: settings, versions, metrics and notes; ``draws`` says how
    the backend drew its samples (its ``draws``)."""
    metrics = summarize_eval(records)
    spec = inputs.task
    if inputs.predictions is not None:
        source = f"predictions {inputs.predictions}"
    else:
        source = f"backend {inputs.backend} {inputs.model or ''}".strip()
    settings = EvalSettings(
        task={
            "name": spec.name if spec.name != "spider-format" else inputs.task_argument,
            "spec": spec.name,
            "version": spec.version,
            "breakdown": spec.breakdown,
            **({"db_root": str(inputs.db_root)} if inputs.db_root is not None else {}),
        },
        data_dir=str(inputs.data_dir) if inputs.data_dir is not None else None,
        source=source,
        predictions=str(inputs.predictions) if inputs.predictions is not None else None,
        backend=inputs.backend,
        model=inputs.model,
        decoding=_decoding(inputs, metrics["samples_per_example"], draws),
        suite=str(inputs.suite) if inputs.suite is not None else None,
        preset=describe(inputs.preset),
        limits=asdict(inputs.limits),
        workers=inputs.workers or None,
        predictions_format=inputs.predictions_format,
        engine=None if inputs.backend_db is None else engine_settings(inputs.backend_db),
        profile=get_profile(inputs.profile).settings(),
        bird=(
            {"ves_repeats": inputs.ves_repeats, "r_ves_machine_dependent": inputs.ves_repeats > 0}
            if inputs.bird_metrics
            else None
        ),
    )
    reward = ProgressiveConfig()
    vote_warning = degenerate_vote(inputs.backend, inputs.generation.n, inputs.generation.temperature)
    return EvalSummary(
        settings=settings,
        versions=package_versions(),
        odt_config_version=odt_config_version(get_profile(inputs.profile).odt_config()),
        reward_config={"version": reward.version, "config_hash": reward.config_hash},
        metrics=metrics,
        gold_cache=dict(gold_cache),
        elapsed_s=round(elapsed_s, 3),
        notes=(*notes(metrics), *([] if vote_warning is None else [vote_warning])),
    )


def write_eval_run(out: Path, records: Sequence[EvalRecord], summary: EvalSummary, *, plots: bool = True) -> RunFolder:
    """``samples.jsonl``, the plots (when asked and matplotlib is there), ``report.md`` and, last,
    ``summary.json`` into ``out``: a run cut short leaves no summary that claims it finished (an old
    one is removed first). OSError propagates."""
    folder = RunFolder(out).create()
    folder.summary_path.unlink(missing_ok=True)
    folder.write_records(records)
    data = summary.to_dict()
    drawn: list[str] = []
    problem = None
    if plots:
        try:
            drawn = [path.name for path in write_plots(out, data, records)]
        except Exception as error:  # matplotlib absent or a drawing failure: the results still stand
            problem = f"{type(error).__name__}: {error}"
    folder.write_report(render_report(data, drawn, problem))
    folder.write_summary(summary)
    return folder


# ---- on a cluster ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ShardedEval:
    """What every cluster shard of an evaluation builds its own gold store from, and how it judges:
    the same store and the same :func:`~progress_sql.evaluation.harness.evaluate` as one machine runs.
    ``cache_dir`` and ``suite`` are paths every node reads (docs/scaling.md)."""

    preset: Preset
    limits: ExecLimits
    workers: int = 1
    cache_dir: str | None = None
    suite: str | None = None
    breakdown: Breakdown = "hardness"
    with_soft_f1: bool = False
    ves_repeats: int = 0
    #: First rows of the gold's and the answer's results kept in each record (``evaluate``'s ``preview_rows``).
    preview_rows: int = 0
    #: The ODT of the run's profile (``eval --profile``), as one machine's store gets it.
    odt: OdtConfig = field(default_factory=OdtConfig)


def evaluate_on_cluster(
    examples: Sequence[Example],
    samples: Sequence[Sequence[Sample]],
    settings: ShardedEval,
    cluster: ShardRunner,
    progress: Callable[[int], None] | None = None,
) -> tuple[list[EvalRecord], dict[str, int]]:
    """:func:`~progress_sql.evaluation.harness.evaluate` (and R-VES when asked) sharded by database over
    ``cluster``: the records, in order, and the gold cache's hits and misses over every shard.
    ``progress(n)`` hears the examples of each finished shard."""
    from functools import partial

    from progress_sql.cluster.shards import relocate_example

    pairs = [(example, list(items)) for example, items in zip(examples, samples, strict=True)]
    run = cluster.map(
        partial(_evaluate_shard, settings), pairs, db_path=_pair_db_path,
        relocate=lambda pair, path: (relocate_example(pair[0], path), pair[1]), progress=progress,
    )  # fmt: skip
    return list(run.results), {"hits": run.counts.get("hits", 0), "misses": run.counts.get("misses", 0)}


def _pair_db_path(pair: tuple[Example, list[Sample]]) -> str:
    return pair[0].db_path


#: The execution pool of this process's cluster shards, by size: started by the first shard a Ray
#: worker process runs, reused by the next (a pool's start costs about half a second).
_SHARD_POOLS: dict[int, ExecutionPool] = {}


def _evaluate_shard(settings: ShardedEval, pairs: list[tuple[Example, list[Sample]]]) -> ShardOutput[EvalRecord]:
    """One cluster shard: a gold store over this process's pool, then the same evaluation as here."""
    from progress_sql.evaluation.ves import measure_ves

    pool = _SHARD_POOLS.get(settings.workers)
    if pool is None or pool.closed:
        pool = _SHARD_POOLS[settings.workers] = ExecutionPool(settings.workers)
    cache = GoldCache(settings.cache_dir)
    suite = None if settings.suite is None else suite_lookup(settings.suite)
    store = GoldStore(settings.preset, pool=pool, limits=settings.limits, cache=cache, suite=suite, odt=settings.odt)
    examples = [example for example, _ in pairs]
    records = evaluate(
        examples,
        [items for _, items in pairs],
        store,
        breakdown=settings.breakdown,
        with_soft_f1=settings.with_soft_f1,
        preview_rows=settings.preview_rows,
    )
    if settings.ves_repeats:
        records = measure_ves(examples, records, store, settings.ves_repeats)
    return ShardOutput(tuple(records), {"hits": cache.hits, "misses": cache.misses})


# ---- the whole run, as ``eval`` asks for it ------------------------------------------------------


@dataclass(frozen=True, slots=True)
class EvalRequest:
    """One ``eval`` run as its options give it: what to judge (``predictions`` or a ``backend``), on
    which task, how, and where the run folder goes. None: the task's, the prompt style's or the
    backend's default."""

    task: str
    out: Path
    data_dir: Path | None = None
    db_root: Path | None = None
    predictions: Path | None = None
    prediction_format: str | None = None
    backend: str | None = None
    base_url: str | None = None
    model: str | None = None
    replay: Path | None = None
    api_key: str | None = None
    sampling: str = "n"
    n: int = 1
    temperature: float = 0.0
    top_p: float = 1.0
    max_tokens: int | None = None  # None: the prompt style's
    seed: int | None = None
    prompt: str = "paper"
    schema_profile: str | None = None
    suite: Path | None = None
    preset: str | None = None
    keep_distinct: bool = False
    limit: int | None = None
    timeout_s: float = 30.0
    workers: int = 0
    cache_dir: Path | None = None
    plots: bool = True
    bird_metrics: bool | None = None
    ves_repeats: int = 0
    backend_db: str | None = None
    ray: str | None = None
    ray_databases: str = "shared"
    #: Also write the page's contexts (questions, gold SQL, schema excerpts) for ``--view``.
    contexts: bool = False
    #: The profile (``progress_sql.profiles``): its ODT analyses the answers; with its prompt style, its
    #: schema profile is the prompt's unless ``schema_profile`` is given.
    profile: str = DEFAULT_PROFILE
    #: Keep the answers an earlier run of the same backend and settings journaled in ``out``
    #: (:mod:`progress_sql.evaluation.journal`) and generate only the rest.
    resume: bool = False


@dataclass(frozen=True, slots=True)
class EvalOutcome:
    """A finished ``eval`` run: its summary (as written to ``summary.json``) and records."""

    out: Path
    summary: EvalSummary
    records: tuple[EvalRecord, ...]


@dataclass(frozen=True, slots=True)
class _Plan:
    """A request checked and resolved: the inputs the summary records, the examples, and the answers
    of a prediction file (None: generate them)."""

    inputs: EvalInputs
    style: PromptStyle
    examples: tuple[Example, ...]
    answers: tuple[tuple[Sample, ...], ...] | None


def _plan(request: EvalRequest) -> _Plan:
    """Check ``request`` against itself and the task (ConfigError says what to fix) and read the task and
    the whole prediction file before anything runs or is written."""
    from progress_sql.data.ddl import SCHEMA_PROFILES
    from progress_sql.data.tasks import resolve_task
    from progress_sql.evaluation.predictions import read_predictions
    from progress_sql.judge.compare import get_preset
    from progress_sql.prompts import PROMPT_STYLES

    given = request
    checks = (
        (given.sampling in ("n", "separate"), f"--sampling must be 'n' or 'separate', got {given.sampling!r}"),
        ((given.predictions is None) != (given.backend is None),
         "give exactly one of --predictions FILE and --backend NAME"),
        (given.n >= 1, f"--n must be >= 1, got {given.n}"),
        (given.ves_repeats >= 0, f"--ves-repeats must be >= 0, got {given.ves_repeats}"),
        (given.prediction_format is None or given.predictions is not None,
         "--format applies to --predictions FILE only"),
        (given.prompt in PROMPT_STYLES, f"--prompt must be one of {', '.join(PROMPT_STYLES)}, got {given.prompt!r}"),
        (not given.resume or given.backend is not None,
         "--resume keeps the answers a backend generated: it needs --backend (a prediction file is read whole)"),
    )  # fmt: skip
    for holds, message in checks:
        if not holds:
            raise ConfigError(message)
    style, profile = PROMPT_STYLES[request.prompt], get_profile(request.profile)
    # the profile's schema profile goes with its prompt style; another style keeps its own
    profile_schema = profile.schema_profile.value if style.name == profile.prompt.value else style.schema_profile
    schema_profile = request.schema_profile or profile_schema
    if schema_profile not in SCHEMA_PROFILES:
        raise ConfigError(f"--schema-profile must be one of {', '.join(SCHEMA_PROFILES)}, got {schema_profile!r}")
    if request.suite is not None and not request.suite.is_dir():
        raise ConfigError(f"suite folder not found: {request.suite} (expected <db_id>/*.sqlite databases)")
    if request.db_root is not None and not request.db_root.is_dir():
        raise ConfigError(f"databases folder not found: {request.db_root}")
    spec, examples = resolve_task(request.task, request.data_dir, db_root=request.db_root, need_databases=True)
    chosen_name = request.preset or spec.preset
    if request.keep_distinct and chosen_name != "spider":
        raise ConfigError("--keep-distinct applies to --preset spider only (the other presets keep DISTINCT)")
    chosen = get_preset(chosen_name, **({"keep_distinct": True} if request.keep_distinct else {}))
    with_bird = chosen.name == "bird" if request.bird_metrics is None else request.bird_metrics
    if request.ves_repeats and not with_bird:
        raise ConfigError("--ves-repeats measures BIRD's R-VES: use it with --preset bird or --bird-metrics")
    loaded = None
    if request.predictions is not None:  # the whole file against every example (counts and db_ids)
        loaded = read_predictions(request.predictions, [e.db_id for e in examples], request.prediction_format)
    if request.limit is not None:
        examples = examples[: max(0, request.limit)]
    if request.backend_db is not None and request.suite is not None:
        raise ConfigError("--suite needs the SQLite files: it cannot be combined with --backend-db")
    if request.backend_db is not None and request.ray is not None:
        raise ConfigError("--ray judges on the SQLite files: it cannot be combined with --backend-db")
    max_tokens = request.max_tokens if request.max_tokens is not None else style.max_new_tokens
    generation = GenerationConfig(request.n, request.temperature, request.top_p, max_tokens, request.seed)
    inputs = EvalInputs(
        task=spec, task_argument=request.task, data_dir=request.data_dir, preset=chosen,
        limits=ExecLimits(timeout_s=request.timeout_s), workers=request.workers, predictions=request.predictions,
        backend=request.backend, model=request.model, generation=generation, schema_profile=schema_profile,
        prompt=request.prompt, suite=request.suite, predictions_format=None if loaded is None else loaded.format,
        bird_metrics=with_bird, ves_repeats=request.ves_repeats, db_root=request.db_root,
        backend_db=request.backend_db, profile=profile.name,
    )  # fmt: skip
    answers = None
    if loaded is not None:
        answers = tuple(tuple(Sample(sql) for sql in loaded.entries[e.index].samples) for e in examples)
    return _Plan(inputs, style, tuple(examples), answers)


def run_eval(request: EvalRequest, phase: Phase = lambda description, total: lambda n: None) -> EvalOutcome:
    """Run ``eval``: generate the answers (a backend) or read them (a prediction file), judge them on this
    machine's pools or on a Ray cluster, time R-VES when asked, and write the run folder. A bad request
    raises ConfigError before anything runs; a backend failure raises GenerationError."""
    import contextlib
    import os
    import time

    from progress_sql.cluster.connect import joined_cluster, shard_workers

    plan = _plan(request)
    with writing_results(request.out):  # before the work: a bad --out fails at once, not after the run
        RunFolder(request.out).create()
    engine = ENGINES["sqlite"] if request.backend_db is None else engine_of(request.backend_db)
    # the profile's ODT on the engine that runs the queries: the same on this machine and on every shard
    odt = replace(get_profile(request.profile).odt_config(), dialect=engine.dialect, db_engine=engine.display_name)
    processes = shard_workers(request.workers, request.ray, os.cpu_count() or 1)
    started = time.perf_counter()
    cache = GoldCache(request.cache_dir)
    generator = None
    with contextlib.ExitStack() as stack:
        cluster = stack.enter_context(joined_cluster(request.ray, request.ray_databases, request.workers))
        if cluster is None:  # this machine's pools, started before generation as ever
            pool = stack.enter_context(ExecutionPool(processes))
            analysis = stack.enter_context(AnalysisPool(processes))
        answers = plan.answers
        if answers is None:
            generator, answers = _generate(request, plan, engine.display_name, phase)
        answers = tuple(items or (Sample(None),) for items in answers)
        if cluster is not None:
            records, gold_cache, contexts = _judge_on_cluster(request, plan, answers, cluster, processes, odt, phase)
        else:
            store = GoldStore(
                plan.inputs.preset, pool=pool, limits=plan.inputs.limits, cache=cache,
                suite=None if request.suite is None else suite_lookup(request.suite), backend_db=request.backend_db,
                odt=odt, analysis=analysis,
            )  # fmt: skip
            records, contexts = _judge_here(request, plan, answers, store, phase)
            gold_cache = {"hits": cache.hits, "misses": cache.misses}
    summary = summarize_run(
        plan.inputs, records, gold_cache=gold_cache, elapsed_s=time.perf_counter() - started,
        draws=None if generator is None else generator.draws,
    )  # fmt: skip
    if not summary.metrics["scored"]:  # no figure to report: a summary would read as a run that measured
        metrics = summary.metrics
        skipped = {kind: sum(dbs.values()) for kind, dbs in metrics["skipped_examples"]["by_reason"].items()}
        raise DatasetError(nothing_scored(metrics["examples"], skipped, metrics["gold_invalid"]))
    with writing_results(request.out):
        RunFolder(request.out).summary_path.unlink(missing_ok=True)
        if request.contexts:  # before the summary, which comes last (a present summary: a complete run)
            from progress_sql.data.context import write_contexts

            write_contexts(request.out, contexts)
        write_eval_run(request.out, records, summary, plots=request.plots)
    return EvalOutcome(request.out, summary, tuple(records))


def _generate(
    request: EvalRequest, plan: _Plan, db_engine: str, phase: Phase
) -> tuple[Any, tuple[tuple[Sample, ...], ...]]:
    """The backend of ``request`` and its answers to every example whose database is present, each
    journaled in the run folder as its batch finishes (``--resume`` reads them back)."""
    from progress_sql.backends.registry import make_backend

    identity = {
        "backend": request.backend, "model": request.model, "base_url": request.base_url,
        "replay": None if request.replay is None else str(request.replay), "sampling": request.sampling,
        "decoding": asdict(plan.inputs.generation), "prompt": plan.style.name,
        "schema_profile": plan.inputs.schema_profile, "db_engine": db_engine,
    }  # fmt: skip
    kept = unfinished(request.out, RunFolder(request.out).summary_path)
    if kept and not request.resume:
        raise ConfigError(
            f"{request.out} holds {kept} answers journaled by an eval run that did not finish: add --resume to keep "
            f"them and generate only the rest, or remove {request.out / JOURNAL_FILE} to start again"
        )
    with writing_results(request.out):  # before the model loads: a journal of other settings fails at once
        journal = GenerationJournal.open(request.out, identity, resume=request.resume)
    with journal:
        generator = make_backend(
            request.backend or "", base_url=request.base_url, model=request.model, replay=request.replay,
            api_key=request.api_key, sampling=request.sampling,
        )  # fmt: skip

        def progress(todo: int, kept: int) -> Callable[[int], None]:
            resumed = f" ({kept} answers kept from {JOURNAL_FILE})" if kept else ""
            return phase(f"generating with {request.backend}{resumed}", todo)

        try:
            samples = generate_samples(
                plan.examples, generator, plan.inputs.generation, cast(SchemaProfile, plan.inputs.schema_profile),
                progress, db_engine=db_engine, style=plan.style, journal=journal,
            )  # fmt: skip
        except Exception as error:  # a backend failure (network, model) ends the run with its message
            raise GenerationError(f"generation failed: {type(error).__name__}: {error}") from error
    return generator, tuple(tuple(items) for items in samples)


def _judge_on_cluster(
    request: EvalRequest,
    plan: _Plan,
    answers: Sequence[Sequence[Sample]],
    cluster: ShardRunner,
    processes: int,
    odt: OdtConfig,
    phase: Phase,
) -> tuple[list[EvalRecord], dict[str, int], list[Any]]:
    """Judged on the cluster's nodes, shard by shard, with the run's ODT ``odt`` (progress: examples);
    the page's contexts are read here (nothing runs)."""
    inputs = plan.inputs
    sharded = ShardedEval(
        inputs.preset, inputs.limits, processes, None if request.cache_dir is None else str(request.cache_dir),
        None if request.suite is None else str(request.suite), inputs.task.breakdown, inputs.bird_metrics,
        inputs.ves_repeats, PREVIEW_ROWS, odt,
    )  # fmt: skip
    advance = phase(f"{inputs.preset.name} on {inputs.task.name}, on Ray", len(plan.examples))
    records, gold_cache = evaluate_on_cluster(plan.examples, answers, sharded, cluster, advance)
    contexts: list[Any] = []
    if request.contexts:
        import functools

        from progress_sql.data.context import example_contexts
        from progress_sql.data.schema import read_schema

        schema_of = functools.cache(read_schema)  # each database's schema read once
        contexts = example_contexts(plan.examples, {r.index: r.sql for r in records}, records, schema_of)
    return records, gold_cache, contexts


def _judge_here(
    request: EvalRequest, plan: _Plan, answers: Sequence[Sequence[Sample]], store: GoldStore, phase: Phase
) -> tuple[list[EvalRecord], list[Any]]:
    """Judged with ``store`` on this machine's pools, then R-VES timing when asked; the page's contexts
    come from the store (result rows are in the records: nothing runs)."""
    inputs = plan.inputs
    present = sum(database_problem(e) is None for e in plan.examples)
    total = present * (1 + inputs.generation.n)
    advance = _counted(phase(f"{inputs.preset.name} on {inputs.task.name}", total))
    records = evaluate(
        plan.examples, answers, store, breakdown=inputs.task.breakdown, progress=advance,
        with_soft_f1=inputs.bird_metrics,
        preview_rows=PREVIEW_ROWS,  # the first rows of both results, kept in samples.jsonl for reading
    )  # fmt: skip
    advance(max(0, total - advance.done))  # the bar full: skipped examples have no queries
    if inputs.ves_repeats:
        from progress_sql.evaluation.ves import measure_ves

        timed = sum(r.status == "scored" and r.match for r in records)
        advance = _counted(phase(f"R-VES timing ({inputs.ves_repeats} repeats)", 2 * inputs.ves_repeats * timed))
        records = measure_ves(plan.examples, records, store, inputs.ves_repeats, advance)
    contexts: list[Any] = []
    if request.contexts:
        from progress_sql.data.context import example_contexts

        contexts = example_contexts(plan.examples, {r.index: r.sql for r in records}, records, store.schema)
    return records, contexts


class _counted:  # noqa: N801 - used as a function
    """An ``advance(n)`` callback that also counts what it was told."""

    def __init__(self, advance: Callable[[int], object]) -> None:
        self.advance = advance
        self.done = 0

    def __call__(self, n: int) -> None:
        self.done += n
        self.advance(n)
