"""One evaluation run around :func:`progress_sql.evaluation.harness.evaluate`: generation with a
backend, the typed ``summary.json`` (:class:`EvalSummary`), the run folder and its loader
(``progress-sql eval`` and ``compare-runs`` are thin layers over it; docs/evaluation.md)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import MISSING, asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from progress_sql.backends.base import GenerationConfig
from progress_sql.cluster.shards import ShardOutput, ShardRunner
from progress_sql.data.ddl import SchemaProfile, db_details
from progress_sql.data.tasks import Task
from progress_sql.errors import DatasetError
from progress_sql.evaluation.analysis import odt_config_version
from progress_sql.evaluation.harness import Breakdown, EvalRecord, Sample, evaluate
from progress_sql.evaluation.metrics import notes, summarize_eval
from progress_sql.evaluation.report import render_report, write_plots
from progress_sql.execution.engines import engine_of
from progress_sql.execution.executor import ExecLimits
from progress_sql.execution.pool import ExecutionPool
from progress_sql.judge.cache import GoldCache
from progress_sql.judge.compare import Preset, describe
from progress_sql.judge.gold import GoldStore
from progress_sql.prompts import PAPER_STYLE, PromptStyle, opening_messages
from progress_sql.rewards.progressive import ProgressiveConfig
from progress_sql.runfolder import RunFolder, package_versions
from progress_sql.sql.extract import extract
from progress_sql.testsuite.manifest import suite_lookup
from progress_sql.types import Example, plain

#: Conversations sent to a backend per call (progress is reported between calls).
GENERATION_BATCH = 16


def generate_samples(
    examples: Sequence[Example],
    backend: Any,
    config: GenerationConfig,
    profile: SchemaProfile,
    advance: Callable[[int], object] = lambda n: None,
    *,
    db_engine: str = "SQLite",
    style: PromptStyle | None = None,
) -> list[list[Sample]]:
    """Prompt ``backend`` (a ``backends.base`` generator) with the opening messages of ``style`` (the
    paper's by default) for every example whose database is present and extract the SQL of each
    response in that style's format; the examples without a database get an empty list.
    ``advance(k)`` is called after each batch of ``k`` examples."""
    style = style or PAPER_STYLE
    samples: list[list[Sample]] = [[] for _ in examples]
    present = [i for i, e in enumerate(examples) if Path(e.db_path).is_file()]
    schemas: dict[str, str] = {}
    for start in range(0, len(present), GENERATION_BATCH):
        batch = present[start : start + GENERATION_BATCH]
        conversations = []
        for i in batch:
            example = examples[i]
            if example.db_path not in schemas:
                schemas[example.db_path] = db_details(example.db_path, profile)
            conversations.append(opening_messages(example, schemas[example.db_path], db_engine=db_engine, style=style))
        responses = backend.generate(conversations, config)
        for i, texts in zip(batch, responses, strict=True):
            found = [extract(text, reasoning=style.reasoning) for text in texts]
            samples[i] = [Sample(x.sql, text, x.format_ok) for x, text in zip(found, texts, strict=True)]
        advance(len(batch))
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


def engine_settings(backend_db: str) -> dict[str, str]:
    """What a run records of its backend database: engine, SQL dialect and location, never a password."""
    engine = engine_of(backend_db)
    return {"engine": engine.name, "dialect": engine.dialect, "location": engine.public_location(backend_db)}


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
        bird=(
            {"ves_repeats": inputs.ves_repeats, "r_ves_machine_dependent": inputs.ves_repeats > 0}
            if inputs.bird_metrics
            else None
        ),
    )
    reward = ProgressiveConfig()
    return EvalSummary(
        settings=settings,
        versions=package_versions(),
        odt_config_version=odt_config_version(),
        reward_config={"version": reward.version, "config_hash": reward.config_hash},
        metrics=metrics,
        gold_cache=dict(gold_cache),
        elapsed_s=round(elapsed_s, 3),
        notes=tuple(notes(metrics)),
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


@dataclass(frozen=True, slots=True)
class EvalRun:
    """An eval run folder read back: its summary and its ``samples.jsonl`` records by example index."""

    path: Path
    summary: EvalSummary
    samples: Mapping[int, Mapping[str, Any]]


def load_eval_run(path: Path) -> EvalRun:
    """Read a folder written by :func:`write_eval_run`; DatasetError says what is missing or broken."""
    folder = RunFolder(path)
    try:
        summary = EvalSummary.from_dict(folder.read_summary())
        samples = {int(s["index"]): s for s in folder.read_records()}
    except FileNotFoundError as error:
        raise DatasetError(f"{path} is not an eval run folder (missing {Path(error.filename).name})") from error
    except KeyError as error:
        raise DatasetError(f"{path} is not an eval run folder (summary.json lacks {error})") from error
    except (OSError, ValueError) as error:
        raise DatasetError(f"cannot read the run in {path}: {error}") from error
    return EvalRun(path, summary, samples)


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
    store = GoldStore(settings.preset, pool=pool, limits=settings.limits, cache=cache, suite=suite)
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
