"""ODT analysis in processes: the gold references and the answers' diagnoses of a batch, the CPU-bound
half of judging it, computed beside the SQL workers instead of after them in the caller's thread
(a thread would hold the GIL that the pool's threads need to feed the workers):
docs/semantics.md#odt-analysis-beside-the-queries.

The processes are forked from the execution workers' fork server, which preloads the ODT and sqlglot
(``FORKSERVER_PRELOAD`` in execution/pool.py): they start in milliseconds. This module imports neither:
the caller only carries references and diagnoses (odt/records.py), so ``eval``'s parent never loads the
parser. Every result is what the same call in the caller gives; a batch whose process died is computed
in the caller instead (nothing is lost). The processes end with the caller, whatever ends it
(execution/lifetime.py).
"""

from __future__ import annotations

import gc
import multiprocessing
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from concurrent.futures.process import BrokenProcessPool
from typing import TYPE_CHECKING, TypeVar

from progress_sql.data.schema import Schema
from progress_sql.execution.lifetime import BoundProcessPool, abort_pool_processes, interruption
from progress_sql.execution.pool import DEFAULT_START_METHOD, start_worker_server
from progress_sql.odt.config import OdtConfig
from progress_sql.odt.records import Diagnosis, GoldReference
from progress_sql.sql.parse import DEFAULT_DIALECT, ParseFailure
from progress_sql.types import Closing

if TYPE_CHECKING:
    from progress_sql.types import Hardness

_T = TypeVar("_T")
_A = TypeVar("_A")
Later = Callable[[], list[_T]]
"""A batch being computed: calling it waits for every result, in input order."""

#: Items per task sent to a process: small enough to balance the processes, large enough that a
#: task's pickling and round trip stay a small part of it.
CHUNK = 64


def prepare_reference(sql: str, schema: Schema | None, config: OdtConfig) -> tuple[GoldReference, Hardness | None]:
    """The ODT reference of a gold query, built with ``schema``, and its Spider hardness, from one parse."""
    from progress_sql.odt.build import odt_of
    from progress_sql.odt.diagnosis import tree_switches
    from progress_sql.sql.hardness import hardness, hardness_of
    from progress_sql.sql.lexical import bigrams
    from progress_sql.sql.normalize import parse_for_odt

    statement = parse_for_odt(sql, schema, dialect=config.dialect)
    tree = (
        statement if isinstance(statement, ParseFailure) else odt_of(statement, schema, switches=tree_switches(config))
    )
    if config.dialect != DEFAULT_DIALECT:  # hardness follows the official evaluator, which reads SQLite
        level = hardness(sql)
    else:
        level = None if isinstance(statement, ParseFailure) else hardness_of(statement)
    return GoldReference(sql, tree, bigrams(sql), schema), level


def _references(
    golds: Sequence[tuple[str, Schema | None]], config: OdtConfig
) -> list[tuple[GoldReference, Hardness | None]]:
    return [prepare_reference(sql, schema, config) for sql, schema in golds]


def _levels(golds: Sequence[str], _config: OdtConfig) -> list[Hardness | None]:
    from progress_sql.sql.hardness import hardness

    return [hardness(sql) for sql in golds]


def _diagnoses(answers: Sequence[tuple[str, GoldReference]], config: OdtConfig) -> list[Diagnosis]:
    from progress_sql.odt.diagnosis import diagnose

    return [diagnose(sql, reference, config=config) for sql, reference in answers]


class AnalysisPool(Closing):
    """``processes`` processes that build gold references and diagnose answers, a batch at a time.

    Usage::

        with AnalysisPool(2) as analysis:
            later = analysis.diagnoses([(sql, reference), ...], config)
            ...  # run the queries meanwhile
            diagnoses = later()
    """

    def __init__(self, processes: int) -> None:
        if processes < 1:
            raise ValueError(f"processes must be >= 1, got {processes}")
        start_worker_server()  # forks from the workers' server, with this module preloaded
        context = multiprocessing.get_context(DEFAULT_START_METHOD)
        # gc.freeze: what the fork server imported lives as long as each process; no collection walks it.
        self._executor = BoundProcessPool(processes, context, initializer=gc.freeze)
        self.processes = processes

    def references(
        self, golds: Sequence[tuple[str, Schema | None]], config: OdtConfig
    ) -> Later[tuple[GoldReference, Hardness | None]]:
        """:func:`prepare_reference` of each (gold SQL, schema)."""
        return self._map(_references, golds, config)

    def levels(self, golds: Sequence[str]) -> Later[Hardness | None]:
        """The Spider hardness of each (SQLite) gold query."""
        return self._map(_levels, golds, OdtConfig())

    def diagnoses(self, answers: Sequence[tuple[str, GoldReference]], config: OdtConfig) -> Later[Diagnosis]:
        """:func:`~progress_sql.odt.diagnose` of each (answer SQL, gold reference)."""
        return self._map(_diagnoses, answers, config)

    def _map(
        self, work: Callable[[Sequence[_A], OdtConfig], list[_T]], items: Sequence[_A], config: OdtConfig
    ) -> Later[_T]:
        chunks = [items[at : at + CHUNK] for at in range(0, len(items), CHUNK)]
        futures: list[Future[list[_T]] | None] = []
        for chunk in chunks:
            try:
                futures.append(self._executor.submit(work, chunk, config))
            except (BrokenProcessPool, RuntimeError):  # a dead or closed pool: computed in the caller
                futures.append(None)

        def in_caller(chunk: Sequence[_A]) -> list[_T]:
            if (stop := interruption()) is not None:  # the processes were ended by an interrupt: stop too
                raise stop
            return work(chunk, config)

        def wait() -> list[_T]:
            out: list[_T] = []
            for chunk, future in zip(chunks, futures, strict=True):
                try:
                    out.extend(in_caller(chunk) if future is None else future.result())
                except BrokenProcessPool:  # a process died (killed from outside, out of memory)
                    out.extend(in_caller(chunk))
            return out

        return wait

    def close(self) -> None:
        self._executor.shutdown(wait=True, cancel_futures=True)

    def __exit__(self, *exc: object) -> None:
        if any(isinstance(item, KeyboardInterrupt) for item in exc):  # interrupted: do not wait
            abort_pool_processes(self._executor)
        self.close()
