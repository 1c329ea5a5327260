"""The gold store: what an example's gold query gives, prepared once per process and shared
(thread-safely) by every environment, evaluator and trainer adapter; what it holds and why it takes
the suite lookup as a value: docs/architecture.md, step 2."""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from dataclasses import asdict, dataclass, replace
from functools import cache, partial
from importlib.metadata import version
from pathlib import Path
from typing import TYPE_CHECKING, Generic, TypeVar

from progress_sql.data.ddl import SchemaProfile, db_details
from progress_sql.data.schema import Schema, read_schema
from progress_sql.errors import ConfigError, DatasetError, GoldQueryError
from progress_sql.execution.digest import file_digest
from progress_sql.execution.engines import engine_of, locate
from progress_sql.execution.executor import DEFAULT_LIMITS, ExecLimits
from progress_sql.execution.jobs import ExecJob
from progress_sql.execution.pool import ExecutionPool
from progress_sql.judge.analysis import AnalysisPool, prepare_reference
from progress_sql.judge.cache import GoldCache, cache_key
from progress_sql.judge.compare import Preset, describe
from progress_sql.judge.kinds import gold_problem, kind_rules
from progress_sql.odt.config import OdtConfig
from progress_sql.odt.records import Diagnosis, GoldReference
from progress_sql.sql.parse import DEFAULT_DIALECT, ParseFailure
from progress_sql.types import Closing, Example, ExecResult, Verdict

if TYPE_CHECKING:  # the parser is imported where a gold is parsed or transpiled, not to carry references
    from progress_sql.sql.affinity import TypedColumns
    from progress_sql.types import Hardness

SuiteLookup = Callable[[Example], Sequence[str] | None]
"""The suite database paths of an example's gold: empty when the suite covers its database but
assigns this gold no file (the suite is then the original database alone), None when the suite has
nothing for its database. ``progress_sql.testsuite.manifest.suite_lookup(folder)`` builds one."""

Progress = Callable[[int], None]  # advance by n finished executions

#: How many diagnoses of answers a store keeps (least recently used first out): the G samples of a
#: prompt and later epochs repeat answers, and a diagnosis is a pure function of the answer and the gold.
DIAGNOSES_KEPT = 8192

_K = TypeVar("_K", bound=Hashable)
_V = TypeVar("_V")


@dataclass(frozen=True, slots=True)
class PreparedGold:
    """One gold query on one database, ready for judging, diagnosing and reporting.

    ``results`` holds one result per gold query of the preset (the first is the gold itself);
    ``error`` is None when the gold is usable, else why not (it failed, timed out or hit the row
    cap): such an example is ``gold_invalid`` and never matches.
    """

    results: tuple[ExecResult, ...]
    reference: GoldReference
    hardness: Hardness | None
    error: str | None = None


class _Once(Generic[_K, _V]):
    """A map whose values are built at most once, even when several threads ask for a key at the
    same time: the first builds (outside the map's lock), the others wait for it on the key's lock."""

    def __init__(self) -> None:
        self._values: dict[_K, _V] = {}
        self._building: dict[_K, threading.Lock] = {}
        self._lock = threading.Lock()

    def __contains__(self, key: _K) -> bool:
        with self._lock:
            return key in self._values

    def get(self, key: _K, build: Callable[[], _V], keep: Callable[[_V], bool] = lambda _value: True) -> _V:
        """The value of ``key``, built now if absent; a built value that ``keep`` rejects is returned
        but not kept (the next caller builds again)."""
        with self._lock:
            if key in self._values:
                return self._values[key]
            building = self._building.setdefault(key, threading.Lock())
        with building:
            with self._lock:
                if key in self._values:  # built while this thread waited
                    return self._values[key]
            value = build()  # a failure leaves the key unbuilt: the next caller tries again
            with self._lock:
                if keep(value):
                    self._values[key] = value
                self._building.pop(key, None)
        return value

    def claim(self, keys: Sequence[_K]) -> list[_K]:
        """Of ``keys``, those neither built nor being built, now being built by the caller, who ends each
        with :meth:`finish` or :meth:`release`; meanwhile :meth:`get` of one waits for it. A batch of
        builds claims its keys first, so that batches running at once build no key twice."""
        claimed: list[_K] = []
        with self._lock:
            for key in dict.fromkeys(keys):
                if key in self._values or key in self._building:
                    continue
                building = self._building[key] = threading.Lock()
                building.acquire()
                claimed.append(key)
        return claimed

    def finish(self, key: _K, value: _V, keep: Callable[[_V], bool] = lambda _value: True) -> _V:
        """End a claim with its built ``value`` (kept unless ``keep`` rejects it)."""
        with self._lock:
            if keep(value):
                self._values[key] = value
            building = self._building.pop(key)
        building.release()
        return value

    def release(self, key: _K) -> None:
        """End a claim without a value (its build failed): a waiting :meth:`get` builds it itself."""
        with self._lock:
            building = self._building.pop(key)
        building.release()


def engine_sql(sql: str, dialect: str, schema: Schema | None = None, types: TypedColumns | None = None) -> str:
    """A SQLite gold query as the engine of ``dialect`` runs it (transpiled by sqlglot, with SQLite's
    affinity conversions where ``types`` - ``port.column_types`` - says a column is stored as text; a
    query sqlglot cannot transpile runs as written and fails there, which makes its example
    ``gold_invalid``)."""
    if dialect == DEFAULT_DIALECT:
        return sql
    from progress_sql.sql.normalize import transpile_sql

    moved = transpile_sql(sql, dialect, schema, types)
    return sql if isinstance(moved, ParseFailure) else moved


def run_with_rerun(
    pool: ExecutionPool,
    jobs: Sequence[ExecJob],
    on_result: Callable[[int, ExecResult], None] | None = None,
    meanwhile: Callable[[], object] | None = None,
) -> list[ExecResult]:
    """``pool.run_many(jobs)``, with each job that failed from outside (``failed_outside``: a connection
    terminated by another session, a server restarting, a dead worker) run once more, as the pool reruns
    a query whose worker died; a second outside failure stays one (never cached, never kept).
    ``meanwhile()`` runs once, while the first batch runs (:meth:`ExecutionPool.run_many`)."""
    if not jobs:
        if meanwhile is not None:
            meanwhile()
        return []
    results = pool.run_many(jobs, on_result=on_result, meanwhile=meanwhile)
    again = [i for i, result in enumerate(results) if result.failed_outside]
    for i, result in zip(again, pool.run_many([jobs[i] for i in again]) if again else [], strict=True):
        results[i] = result
    return results


def gold_results(
    examples: Sequence[Example],
    preset: Preset,
    pool: ExecutionPool,
    *,
    limits: ExecLimits = DEFAULT_LIMITS,
    cache: GoldCache,
    progress: Progress | None = None,
    backend_db: str | None = None,
    schema_of: Callable[[str], Schema] | None = None,
    types_of: Callable[[str], TypedColumns] | None = None,
) -> list[tuple[ExecResult, ...]]:
    """The gold results of each example under ``preset`` (all its gold queries), running each distinct
    (database content, SQL) once in one batch and serving repeats from ``cache``. With ``backend_db``
    the queries run on the example's database in that ported collection, transpiled to its dialect
    (``schema_of(db_path)`` resolves SQLite's double-quoted tokens, ``types_of(db_path)`` gives the
    column types the affinity conversions need)."""
    described = describe(preset)
    contents: dict[str, str] = {}  # each database's content identity, read once for the batch
    keyed: list[list[tuple[str, str, str]]] = []  # per example: (key, location, sql)
    for example in examples:
        location = locate(backend_db, example.db_id, example.db_path)
        engine = engine_of(location)
        dialect = engine.dialect
        schema = schema_of(example.db_path) if schema_of is not None and dialect != DEFAULT_DIALECT else None
        types = types_of(example.db_path) if types_of is not None and dialect != DEFAULT_DIALECT else None
        queries = [engine_sql(sql, dialect, schema, types) for sql in preset.gold_queries(example.gold_sql)]
        if location not in contents:
            contents[location] = engine.content_identity(location)
        content = contents[location]
        keyed.append([(cache_key(location, sql, described, limits, content=content), location, sql) for sql in queries])
    found: dict[str, ExecResult] = {}
    missing: dict[str, ExecJob] = {}
    for entries in keyed:
        for key, db_path, sql in entries:
            if key in found or key in missing:
                continue
            hit = cache.get(key)
            if hit is None:
                missing[key] = ExecJob(db_path, sql, limits)
            else:
                found[key] = hit
    keys = list(missing)
    ran = run_with_rerun(pool, [missing[k] for k in keys], (lambda _i, _r: progress(1)) if progress else None)
    for key, result in zip(keys, ran, strict=True):
        cache.put(key, result)
        found[key] = result
    return [tuple(found[key] for key, _, _ in entries) for entries in keyed]


@cache
def _analysis_code_digest() -> str:
    """SHA-256 of the source of everything a gold's analysis depends on (the ``sql`` and ``odt``
    packages) and sqlglot's version: a changed parser or ODT never reads an older run's analysis."""
    import progress_sql.odt
    import progress_sql.sql

    digest = hashlib.sha256(version("sqlglot").encode())
    for package in (progress_sql.sql, progress_sql.odt):
        for path in sorted(Path(package.__path__[0]).glob("*.py")):
            digest.update(path.name.encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


def reference_key(db_path: str, sql: str, config: OdtConfig) -> str:
    """The on-disk key of a gold's analysis: the database's content (its schema qualifies columns),
    the exact gold SQL, the ODT config and the analysis code (:func:`_analysis_code_digest`)."""
    payload = json.dumps(
        {
            "db": file_digest(db_path),
            "sql": sql,
            "odt": json.dumps(asdict(config), sort_keys=True, default=str),
            "code": _analysis_code_digest(),
        },
        sort_keys=True,
    )
    return hashlib.sha256(payload.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class SuiteVerdict:
    """An answer judged on the suite databases of its gold: ``match`` on every one of the ``databases``
    on which the gold runs."""

    match: bool
    databases: int


@dataclass(frozen=True, slots=True)
class Judgement:
    """An answer judged against its example's gold: what running it gave, its verdict on the example's
    database, the checks it passed of how many (write tasks), and its suite verdict (None: not checked,
    or no suite for the example). It counts as correct when it matches on the database and, with a
    suite verdict, on the suite."""

    result: ExecResult
    verdict: Verdict
    checks: tuple[int, int] | None = None
    suite: SuiteVerdict | None = None

    @property
    def match(self) -> bool:
        return self.verdict.match and (self.suite is None or self.suite.match)


class GoldStore(Closing):
    """Per-process, thread-safe store of per-example and per-database preparation, shared by every
    environment, evaluator and trainer adapter of a process. Each (database, gold SQL) is prepared
    once; each database's schema once, and its rendered DDL once per schema profile.

    Without ``pool`` the store starts (and :meth:`close` stops) a one-worker pool of its own. With
    ``analysis`` the golds' ODT references of a batch (:meth:`prepare_many`) are built in its processes
    while their queries run in the pool; the caller can diagnose answers there too (``eval`` does).
    """

    def __init__(
        self,
        preset: Preset,
        *,
        pool: ExecutionPool | None = None,
        limits: ExecLimits = DEFAULT_LIMITS,
        cache: GoldCache | None = None,
        odt: OdtConfig | None = None,
        suite: SuiteLookup | None = None,
        backend_db: str | None = None,
        analysis: AnalysisPool | None = None,
    ) -> None:
        if backend_db is not None and suite is not None:
            raise ConfigError("test suites are SQLite databases: a suite cannot be used with a backend database")
        self.preset = preset
        #: The ported collection the queries run on (None: each example's SQLite file); the dialect
        #: the model writes and the ODT parses is its engine's.
        self.backend_db = backend_db
        self._own_pool = pool is None
        self.pool = pool if pool is not None else ExecutionPool(workers=1)
        self.limits = limits
        self.cache = cache if cache is not None else GoldCache()
        self.odt = odt if odt is not None else OdtConfig()
        self.suite = suite
        self.analysis = analysis
        self._golds: _Once[tuple[str, str], PreparedGold] = _Once()
        self._schemas: _Once[str, Schema] = _Once()
        self._types: _Once[str, TypedColumns] = _Once()
        self._details: _Once[tuple[str, SchemaProfile], str] = _Once()
        self._diagnoses: OrderedDict[tuple[str, str, str], Diagnosis] = OrderedDict()
        self._diagnoses_lock = threading.Lock()

    # -- gold ----------------------------------------------------------------------------------
    def prepare(self, example: Example) -> PreparedGold:
        """The example's prepared gold; never raises for a bad gold (``error`` says why it is one).
        A missing or unreadable database raises :class:`~progress_sql.errors.DatasetError`."""
        return self._golds.get(_gold_key(example), partial(self._build, example, None), keep=_decided)

    def prepare_many(self, examples: Sequence[Example], progress: Progress | None = None) -> list[PreparedGold]:
        """:meth:`prepare` for many examples, with the golds not prepared yet run in one batch through
        the pool (``progress`` advances once per execution); with :attr:`analysis` their references
        are built there meanwhile."""
        by_key = {_gold_key(e): e for e in examples}
        claimed = self._golds.claim(list(by_key))  # golds another batch is preparing now: waited for below
        todo = [by_key[key] for key in claimed]
        built: dict[tuple[str, str], PreparedGold] = {}
        try:
            for example in todo:
                self.schema(example.db_path)  # a missing database fails here, before anything runs
            references = self._references_beside(todo)
            results = self.gold_results(todo, progress) if todo else []
            for example, result, reference in zip(todo, results, references(), strict=True):
                key = _gold_key(example)
                built[key] = self._golds.finish(key, self._build(example, result, reference), keep=_decided)
        finally:
            for key in claimed:
                if key not in built:
                    self._golds.release(key)
        return [built.get(_gold_key(example)) or self.prepare(example) for example in examples]

    def _references_beside(
        self, examples: Sequence[Example]
    ) -> Callable[[], list[tuple[GoldReference, Hardness | None] | None]]:
        """The golds' references, built in :attr:`analysis` (those the cache's directory does not hold)
        while the caller goes on; without an analysis pool, None for each (built on demand)."""
        if self.analysis is None or not examples:
            return lambda: [None] * len(examples)
        wanted = [(e.db_path, self.gold_sql(e), self.schema(e.db_path)) for e in examples]
        found = [self._stored_reference(db_path, sql, schema) for db_path, sql, schema in wanted]
        missing = [i for i, reference in enumerate(found) if reference is None]
        later = self.analysis.references([(wanted[i][1], wanted[i][2]) for i in missing], self.odt)

        def collect() -> list[tuple[GoldReference, Hardness | None] | None]:
            for i, built in zip(missing, later(), strict=True):
                db_path, sql, schema = wanted[i]
                reference, level = built
                reference = reference.with_schema(schema)  # this store's schema
                self._store_reference(db_path, sql, reference, level)
                found[i] = (reference, level)
            return list(found)

        return collect

    def require(self, example: Example) -> PreparedGold:
        """:meth:`prepare`, raising :class:`GoldQueryError` when the gold cannot be used (what an
        environment's ``reset`` does)."""
        prepared = self.prepare(example)
        if prepared.error is not None:
            raise GoldQueryError(f"example {example.index} ({example.db_id}): {prepared.error}")
        return prepared

    def gold_results(
        self, examples: Sequence[Example], progress: Progress | None = None
    ) -> list[tuple[ExecResult, ...]]:
        """Only the gold results (no ODT reference), in one batch: for suite databases. A write
        task's gold result is its reference script's outcome (execution/write.py), run on a copy."""
        reads = [e for e in examples if not kind_rules(e).scripted]
        read = iter(
            gold_results(
                reads,
                self.preset,
                self.pool,
                limits=self.limits,
                cache=self.cache,
                progress=progress,
                backend_db=self.backend_db,
                schema_of=self.schema,
                types_of=self.column_types,
            )
        )
        # a scripted gold (a write task's reference script) runs on a copy, as its answers do
        jobs = [self.answer_job(e, e.gold_sql) for e in examples if kind_rules(e).scripted]
        tick = (lambda _i, _r: progress(1)) if progress and jobs else None
        written = iter(run_with_rerun(self.pool, jobs, tick))
        return [(next(written),) if kind_rules(e).scripted else next(read) for e in examples]

    def _build(
        self,
        example: Example,
        results: tuple[ExecResult, ...] | None,
        built: tuple[GoldReference, Hardness | None] | None = None,
    ) -> PreparedGold:
        schema = self.schema(example.db_path)  # first: a missing database is a DatasetError, not a run
        if results is None:
            results = self.gold_results([example])[0]
        reference, level = built or self._reference(example.db_path, self.gold_sql(example), schema)
        if self.odt.dialect != DEFAULT_DIALECT:  # hardness follows the official evaluator: the SQLite gold
            from progress_sql.sql.hardness import hardness

            level = hardness(example.gold_sql)
        problem = kind_rules(example).gold_problem(example, results)
        return PreparedGold(results, reference, level, problem)

    def gold_sql(self, example: Example) -> str:
        """The example's gold query in the dialect of the engine it runs on (the ODT reference's SQL)."""
        dialect = engine_of(self.location(example)).dialect
        if dialect == DEFAULT_DIALECT:
            return example.gold_sql
        return engine_sql(example.gold_sql, dialect, self.schema(example.db_path), self.column_types(example.db_path))

    def location(self, example: Example) -> str:
        """Where the example's queries run: its SQLite file, or its database in :attr:`backend_db`."""
        return locate(self.backend_db, example.db_id, example.db_path)

    def _reference(self, db_path: str, sql: str, schema: Schema) -> tuple[GoldReference, Hardness | None]:
        """:func:`prepare_reference` of the gold ``sql`` (in its engine's dialect), read from the cache's
        directory when an earlier run stored it (``eval --cache-dir``): the tree, bigrams and hardness
        are kept, the schema is this store's."""
        stored = self._stored_reference(db_path, sql, schema)
        if stored is not None:
            return stored
        reference, level = prepare_reference(sql, schema, self.odt)
        self._store_reference(db_path, sql, reference, level)
        return reference, level

    def _stored_reference(self, db_path: str, sql: str, schema: Schema) -> tuple[GoldReference, Hardness | None] | None:
        if self.cache.directory is None:
            return None
        stored = self.cache.get_reference(reference_key(db_path, sql, self.odt))
        if stored is None:
            return None
        tree, grams, level = stored
        return GoldReference(sql, tree, grams, schema), level

    def _store_reference(self, db_path: str, sql: str, reference: GoldReference, level: Hardness | None) -> None:
        if self.cache.directory is not None:
            self.cache.put_reference(
                reference_key(db_path, sql, self.odt), (reference.packed(), reference.grams, level)
            )

    # -- databases -----------------------------------------------------------------------------
    def diagnosis(self, example: Example, sql: str, gold: PreparedGold) -> Diagnosis:
        """The ODT diagnosis of ``sql`` against the example's prepared ``gold`` under the store's ODT
        config. An answer diagnosed before against the same gold is not diagnosed again (the last
        :data:`DIAGNOSES_KEPT` are kept): the same record, which nobody changes."""
        key = (*_gold_key(example), sql)
        with self._diagnoses_lock:
            kept = self._diagnoses.get(key)
            if kept is not None:
                self._diagnoses.move_to_end(key)
                return kept
        from progress_sql.odt.diagnosis import diagnose  # the parser: where an answer is diagnosed

        made = diagnose(sql, gold.reference, config=self.odt)
        with self._diagnoses_lock:
            self._diagnoses[key] = made
            while len(self._diagnoses) > DIAGNOSES_KEPT:
                self._diagnoses.popitem(last=False)
        return made

    def forget_diagnoses(self) -> None:
        """Drop the kept diagnoses (a benchmark that times new answers on prepared golds)."""
        with self._diagnoses_lock:
            self._diagnoses.clear()

    def schema(self, db_path: str) -> Schema:
        """The database's tables and columns, read once."""
        self._need_sqlite_file(db_path)
        return self._schemas.get(db_path, lambda: read_schema(db_path))

    def _need_sqlite_file(self, db_path: str) -> None:
        """With a backend database, the schema, DDL and column types still come from the SQLite file
        the port copied (no per-engine introspection): say so when it is absent."""
        if self.backend_db is not None and not Path(db_path).is_file():
            raise DatasetError(
                f"database file not found: {db_path} (with a backend database the schema and DDL shown to "
                "the model and the column types of transpiled golds are read from the SQLite file it was ported from)"
            )

    def column_types(self, db_path: str) -> TypedColumns:
        """The database's column affinities and ported classes (for transpiled golds), read once."""
        from progress_sql.execution.port import column_types  # with sqlglot: only transpiled golds need it

        return self._types.get(db_path, lambda: column_types(db_path))

    def details(self, db_path: str, profile: SchemaProfile) -> str:
        """The database's DDL as the prompt shows it under ``profile``, rendered once."""
        self._need_sqlite_file(db_path)
        return self._details.get((db_path, profile), lambda: db_details(db_path, profile))

    # -- predictions ---------------------------------------------------------------------------
    # The one place an answer becomes a job and a job's result a verdict: the environment, the
    # evaluation harness, training's EX measurement and R-VES timing all judge through these.
    def answer_job(self, example: Example, sql: str) -> ExecJob:
        """The job that runs an answer: a write task's script on a copy of its SQLite file with the
        task's probes (execution/write.py), else the preset's rewrite of the SQL where the example's
        queries run (:meth:`location`)."""
        return kind_rules(example).answer_job(example, sql, self.location(example), self.preset, self.limits)

    def gold_job(self, example: Example) -> ExecJob:
        """The job that runs the example's gold query where its answers run (R-VES times it beside them)."""
        return ExecJob(self.location(example), self.gold_sql(example), self.limits)

    def run_pred(self, example: Example, sql: str, meanwhile: Callable[[], object] | None = None) -> ExecResult:
        """Run one answer in the isolated pool (:meth:`answer_job`); ``meanwhile()`` while it runs."""
        return run_with_rerun(self.pool, [self.answer_job(example, sql)], meanwhile=meanwhile)[0]

    def run_answers(
        self,
        answers: Sequence[tuple[Example, str]],
        progress: Progress | None = None,
        on_result: Callable[[int, ExecResult], None] | None = None,
        meanwhile: Callable[[], object] | None = None,
    ) -> list[ExecResult]:
        """Run many answers in one batch through the pool, each distinct job once (``progress``
        advances once per execution); results in the order of ``answers``. ``on_result(i, result)``
        hears of answer i's result as soon as it is final (from the pool's threads; a result failed
        from outside is run again first), so that a slow query holds up no other answer's caller.
        ``meanwhile()`` runs once in the calling thread while the queries run."""
        jobs = [self.answer_job(example, sql) for example, sql in answers]
        unique = list(dict.fromkeys(jobs))
        sharing: dict[ExecJob, list[int]] = {}
        for i, job in enumerate(jobs):
            sharing.setdefault(job, []).append(i)

        def finished(k: int, result: ExecResult) -> None:
            if progress is not None:
                progress(1)
            if on_result is not None and not result.failed_outside:
                for i in sharing[unique[k]]:
                    on_result(i, result)

        # A job rerun after an outside failure is not heard of here: the caller reads it in the return.
        ran = run_with_rerun(self.pool, unique, finished if progress or on_result else None, meanwhile)
        by_job = dict(zip(unique, ran, strict=True))
        return [by_job[job] for job in jobs]

    def judgement(self, example: Example, gold: Sequence[ExecResult], result: ExecResult) -> Judgement:
        """Judge an answer's ``result`` against the example's ``gold`` results: under the store's preset,
        or for a write task by its checks (match = every check passed). No suite check."""
        verdict, checks = kind_rules(example).verdict(example, self.preset, gold, result)
        return Judgement(result, verdict, checks)

    def judge_many(
        self, examples: Sequence[Example], answers: Sequence[str | None], progress: Progress | None = None
    ) -> list[Judgement | None]:
        """Every answer judged against its example's gold (None where there is no SQL to run): golds
        prepared in one batch, answers run in one batch, each match re-judged on the example's suite
        databases (:meth:`suite_verdicts`). A missing database raises
        :class:`~progress_sql.errors.DatasetError` before anything runs."""
        if len(examples) != len(answers):
            raise ValueError(f"{len(answers)} answers for {len(examples)} examples")
        golds = self.prepare_many(examples, progress)
        given = [i for i, sql in enumerate(answers) if sql is not None]
        results = self.run_answers([(examples[i], answers[i] or "") for i in given], progress)
        judged: dict[int, Judgement] = {
            i: self.judgement(examples[i], golds[i].results, result) for i, result in zip(given, results, strict=True)
        }
        matched = [i for i in given if judged[i].verdict.match]
        suites = self.suite_verdicts([(examples[i], answers[i] or "") for i in matched], progress)
        for i, suite in zip(matched, suites, strict=True):
            judged[i] = replace(judged[i], suite=suite)
        return [judged.get(i) for i in range(len(examples))]

    def judge(self, example: Example, sql: str) -> Verdict:
        """Run one answer and judge it against the example's gold on its database (no suite check)."""
        return self.judgement(example, self.prepare(example).results, self.run_pred(example, sql)).verdict

    def suite_verdicts(
        self, answers: Sequence[tuple[Example, str]], progress: Progress | None = None
    ) -> list[SuiteVerdict | None]:
        """Each answer (one that matched on its example's database) judged on every suite database of
        the example's gold, in one batch: a match on all of them, over those on which the gold runs (a
        suite database where the gold fails says nothing about the answer and is left out). None
        without a suite for the example (:meth:`suite_databases`); an empty suite judges on nothing."""
        suites = [self.suite_databases(example) for example, _ in answers]
        runs = [
            (position, replace(example, db_path=db), sql)
            for position, ((example, sql), databases) in enumerate(zip(answers, suites, strict=True))
            for db in databases or ()
        ]
        golds = self.gold_results([moved for _, moved, _ in runs], progress) if runs else []
        results = self.run_answers([(moved, sql) for _, moved, sql in runs], progress)
        outcomes: dict[int, list[bool]] = {}
        for (position, moved, _), gold, result in zip(runs, golds, results, strict=True):
            verdict = self.judgement(moved, gold, result).verdict
            if verdict.status != "gold_invalid":
                outcomes.setdefault(position, []).append(verdict.match)
        matches = [outcomes.get(position, []) for position in range(len(answers))]
        return [None if dbs is None else SuiteVerdict(all(m), len(m)) for dbs, m in zip(suites, matches, strict=True)]

    def suite_databases(self, example: Example) -> Sequence[str] | None:
        """The suite databases of the example's gold (see :data:`SuiteLookup`); None without a suite
        and for write tasks (their checks are their test cases)."""
        return None if self.suite is None or not kind_rules(example).suite else self.suite(example)

    # -- life cycle ----------------------------------------------------------------------------
    def close(self) -> None:
        """Stop the execution pool if this store started it."""
        if self._own_pool:
            self.pool.close()


def _decided(prepared: PreparedGold) -> bool:
    """Whether a prepared gold may be kept for the process: not when a failure from outside (run twice)
    made it unusable; the next request runs it again."""
    return not any(result.failed_outside for result in prepared.results)


def _gold_key(example: Example) -> tuple[str, str]:
    return (example.db_path, example.gold_sql)


__all__ = [
    "GoldStore",
    "Judgement",
    "PreparedGold",
    "SuiteLookup",
    "SuiteVerdict",
    "engine_sql",
    "gold_problem",
    "gold_results",
    "prepare_reference",
]
