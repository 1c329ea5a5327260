"""``SQLRefineEnv``: the policy writes SQL, the environment executes it, stops at the first match and
otherwise answers with feedback (ODT tags by default; a kind of ``env/feedback.py``), for at most T
turns (paper, section 4.1 and Algorithm 1). Under a probe protocol (``env/protocols.py``) a turn may
also be a probe, run and observed but never judged. It keeps episode state only; the gold comes from a
shared :class:`GoldStore` (docs/environment.md)."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from progress_sql.data.ddl import SCHEMA_PROFILES, SchemaProfile
from progress_sql.env.feedback import FeedbackInput, feedback_kind
from progress_sql.env.protocols import (
    NEITHER_ACTION,
    PROBE_END,
    PROBE_REVISION,
    PROBE_START,
    SKYRL_FORMAT_PROBLEM,
    SOLUTION_END,
    SOLUTION_START,
    ProbeContext,
    Protocol,
    TurnAction,
    get_protocol,
    read_turn,
    skyrl_format_ok,
    solution_sql,
)
from progress_sql.env.records import TurnRecord, answers_trajectory
from progress_sql.env.user import SimulatedUser, User
from progress_sql.errors import ConfigError, DatasetError
from progress_sql.execution.engines import engine_of
from progress_sql.execution.executor import ExecLimits
from progress_sql.execution.pool import ExecutionPool
from progress_sql.judge.cache import GoldCache
from progress_sql.judge.compare import describe, get_preset
from progress_sql.judge.gold import DIAGNOSES_KEPT, GoldStore, PreparedGold
from progress_sql.odt import Diagnosis, OdtConfig
from progress_sql.prompts import (
    Message,
    PromptStyle,
    opening_messages,
    prompt_style,
    revision_instruction,
    user_answer_prompt,
)
from progress_sql.rewards.progressive import ProgressiveConfig, reward_range
from progress_sql.rewards.registry import RewardContext, get_reward
from progress_sql.rewards.tasks import ClarifyFacts, TaskTermsConfig, task_terms, with_terms
from progress_sql.sql.extract import Extracted, extract
from progress_sql.testsuite.manifest import suite_lookup
from progress_sql.types import Closing, Example, ExecResult, RewardBreakdown, Trajectory, Turn, Verdict


@dataclass(frozen=True, slots=True)
class EnvConfig:
    """Settings of the refinement loop; each field's meaning: docs/environment.md."""

    max_turns: int = 4
    preset: str = "strict"
    preset_options: Mapping[str, Any] = field(default_factory=dict)
    #: The feedback kind after a wrong answer, by name (``env/feedback.py`` ``FEEDBACK_KINDS``).
    feedback: str = "tags"
    schema_profile: SchemaProfile = "full"
    timeout_s: float = 10.0
    max_rows: int = 100_000
    preview_rows: int = 3
    reward: str = "progressive"
    progressive: ProgressiveConfig = field(default_factory=ProgressiveConfig)
    odt: OdtConfig = field(default_factory=OdtConfig)
    suite: str | None = None
    #: The ported collection every query runs on (``postgresql://...`` or ``duckdb:DIR``, see
    #: ``progress-sql port-db``); None: each example's SQLite file. With one, the ODT's dialect and the
    #: prompts' engine become that engine's (unless ``odt`` names another dialect).
    backend_db: str | None = None
    tasks: TaskTermsConfig = field(default_factory=TaskTermsConfig)
    #: How the policy is asked and must answer (``progress_sql.prompts.PROMPT_STYLES``): the system
    #: prompt, the answer format the format check expects, the closing instruction of feedback turns.
    prompt: str = "paper"
    #: What a turn may be (``env/protocols.py`` ``PROTOCOLS``): ``answer`` (every turn, the paper's loop),
    #: ``probe`` or ``skyrl`` (exploratory ``<sql>`` probes and a ``<solution>`` answer).
    protocol: str = "answer"

    def __post_init__(self) -> None:
        prompt_style(self.prompt)  # an unknown style fails here
        if self.backend_db is not None:
            engine = engine_of(self.backend_db)
            if engine.name == "sqlite":
                raise ConfigError(
                    f"EnvConfig.backend_db must be a postgresql:// connection string or a duckdb:DIR folder, "
                    f"got {self.backend_db!r}"
                )
            if self.suite is not None:
                raise ConfigError("EnvConfig.suite needs SQLite files: it cannot be combined with backend_db")
            if self.odt.dialect == "sqlite":
                object.__setattr__(
                    self, "odt", replace(self.odt, dialect=engine.dialect, db_engine=engine.display_name)
                )
        if self.suite is not None and not Path(self.suite).is_dir():
            raise ConfigError(f"EnvConfig.suite: test-suite folder not found: {self.suite}")
        if self.max_turns < 1:
            raise ConfigError(f"EnvConfig.max_turns must be >= 1, got {self.max_turns}")
        feedback_kind(self.feedback)  # an unknown kind fails here, listing the known ones
        get_protocol(self.protocol)
        if self.schema_profile not in SCHEMA_PROFILES:
            raise ConfigError(
                f"schema profile must be one of {', '.join(SCHEMA_PROFILES)}, got {self.schema_profile!r}"
            )
        get_reward(self.reward)  # unknown names fail here, not at the end of the first episode
        get_preset(self.preset, **self.preset_options)

    @property
    def value_range(self) -> tuple[float, float]:
        """The declared range of the episode reward: the configured reward's (both progressive formulas
        share one range) plus what the task terms of clarifying questions, guesses and write checks
        can add within ``max_turns`` (:meth:`TaskTermsConfig.term_range`). The ask action is accepted
        where it is offered (:func:`ask_offered`: on an ambiguous question, and on every question with
        ``tasks.offer_ask``), so an episode of either may pay for needless questions; elsewhere an
        ``<ask>`` is an answer without SQL and the terms stay 0."""
        if self.reward in ("progressive", "progressive-paper"):
            low, high = reward_range(self.progressive)
        else:
            low, high = get_reward(self.reward).value_range
        term_low, term_high = self.tasks.term_range(self.max_turns)
        return low + term_low, high + term_high


def ask_offered(example: Example, config: EnvConfig) -> bool:
    """Whether ``<ask>`` is an action on ``example`` under ``config``: the task offers it (an ambiguous
    question, whose labelled slots the user can answer) or the prompt does (``tasks.offer_ask``, which
    puts the instruction in the system prompt). Elsewhere a response that asks is an answer without
    SQL, a format failure, as the paper's environment treats any response without ``<sql>``. The one
    rule every consumer of the environment goes through (:meth:`SQLRefineEnv.step`)."""
    return config.tasks.offer_ask or example.kind == "ambiguous"


def exec_limits(config: EnvConfig) -> ExecLimits:
    """The execution limits of every query (gold and model) of an episode under ``config``."""
    return ExecLimits(timeout_s=config.timeout_s, max_rows=config.max_rows)


def make_store(config: EnvConfig, *, pool: ExecutionPool | None = None, cache: GoldCache | None = None) -> GoldStore:
    """The gold store an environment with this config needs (its preset with options, execution
    limits, ODT config and test-suite lookup). Build one per process and config and hand it to every
    environment; without ``pool`` the store starts a one-worker pool of its own."""
    return GoldStore(
        get_preset(config.preset, **config.preset_options),
        pool=pool,
        limits=exec_limits(config),
        cache=cache,
        odt=config.odt,
        suite=None if config.suite is None else suite_lookup(config.suite),
        backend_db=config.backend_db,
    )


_shared_stores: dict[tuple[str, int, int], GoldStore] = {}
_shared_stores_lock = threading.Lock()


def shared_store(config: EnvConfig, *, pool: ExecutionPool | None = None, cache: GoldCache | None = None) -> GoldStore:
    """The process's one store for this config's judging settings over ``pool`` and ``cache``: trainer
    adapters make an environment per episode, and every episode of an example (the G samples of a
    prompt, every step) reuses one preparation of its gold. A store lives as long as its pool: the
    stores of closed pools are dropped (so a new pool that happens to get a closed one's id starts afresh)."""
    key = (repr(_store_settings(config)), id(pool), id(cache))
    with _shared_stores_lock:
        for stale in [k for k, s in _shared_stores.items() if s.pool.closed]:
            del _shared_stores[stale]
        store = _shared_stores.get(key)
        if store is None:
            store = _shared_stores[key] = make_store(config, pool=pool, cache=cache)
        return store


def _store_settings(config: EnvConfig) -> dict[str, object]:
    """What a store built for ``config`` depends on (the settings :func:`_check_store` compares)."""
    return {
        "preset": describe(get_preset(config.preset, **config.preset_options)),
        "limits": exec_limits(config),
        "odt": config.odt,
        "suite": None if config.suite is None else suite_lookup(config.suite),
        "backend_db": config.backend_db,
    }


def _check_store(store: GoldStore, config: EnvConfig) -> None:
    """Refuse a store that would judge or diagnose otherwise than ``config`` says."""
    have_settings = {"preset": describe(store.preset), "limits": store.limits, "odt": store.odt, "suite": store.suite,
                     "backend_db": store.backend_db}  # fmt: skip
    for name, want in _store_settings(config).items():
        have = have_settings[name]
        if want != have:
            raise ConfigError(f"the gold store has another {name} than the EnvConfig: {have!r} instead of {want!r}")


@dataclass(frozen=True, slots=True)
class PlannedTurn:
    """A response read by :meth:`SQLRefineEnv.plan` before anything runs: the example and turn it is for, its
    action under the protocol, the answer's extraction (None for a probe or an invalid turn) and the
    SQL the turn runs (None: it runs nothing, e.g. no SQL, a clarifying question, a last-turn probe)."""

    response: str
    example: Example
    turn: int
    action: TurnAction
    extracted: Extracted | None
    sql: str | None


@dataclass(frozen=True, slots=True)
class StepResult:
    """``observation`` is the next user message (None once the episode is over); ``info`` the turn's
    record, with its feedback and, on the last turn, the trajectory's reward."""

    observation: Message | None
    reward: float
    terminated: bool
    truncated: bool
    info: TurnRecord


class _StageClock:
    """Adds the seconds since the previous lap to a named stage (cheap enough to stay always on)."""

    __slots__ = ("last", "totals")

    def __init__(self, totals: dict[str, float]) -> None:
        self.totals = totals
        self.last = time.perf_counter()

    def lap(self, stage: str) -> None:
        now = time.perf_counter()
        self.totals[stage] = self.totals.get(stage, 0.0) + now - self.last
        self.last = now

    def counted_elsewhere(self, seconds: float) -> None:
        """Leave out of the next lap ``seconds`` that another stage has counted already."""
        self.last += seconds


class SQLRefineEnv(Closing):
    """reset(example) -> initial messages; step(model text) -> StepResult. Not thread-safe: use one
    environment per concurrent episode, all sharing one :class:`GoldStore` (which is thread-safe).

    Without ``store`` the environment builds (and :meth:`close` closes) ``make_store(config)``, with a
    one-worker pool of its own: convenient for one-off use; trainers pass :func:`shared_store`.
    ``user`` answers clarifying questions (default: the deterministic
    :class:`~progress_sql.env.user.SimulatedUser` with ``config.tasks.user_seed``).
    """

    def __init__(
        self,
        config: EnvConfig | None = None,
        *,
        store: GoldStore | None = None,
        user: User | None = None,
    ) -> None:
        self.config = config or EnvConfig()
        self.user: User = user if user is not None else SimulatedUser(self.config.tasks.user_seed)
        if store is not None:
            _check_store(store, self.config)
        self._own_store = store is None
        self.store = store if store is not None else make_store(self.config)
        self._example: Example | None = None
        self._gold: PreparedGold | None = None
        self._turns: list[Turn] = []
        self._done = False
        self._turn_count = 0
        self._asks: list[str | None] = []  # per clarifying question: the open slot it addressed
        self._first_answer: tuple[bool, bool] | None = None  # (answered before asking about a slot, matched)
        self._checks_share: float | None = None
        self._last_result: ExecResult | None = None
        self._transcript: list[str] = []  # the episode's responses and observations (SkyRL-SQL's format rule)
        #: Seconds spent per stage (gold, extract, execute, compare, odt, reward, feedback) since creation.
        self.stage_seconds: dict[str, float] = {}

    # -- episode -------------------------------------------------------------------------------
    def reset(self, example: Example) -> list[Message]:
        """Start an episode; raises :class:`GoldQueryError` when the example's gold cannot be used."""
        clock = _StageClock(self.stage_seconds)
        self._gold = self.store.require(example)
        clock.lap("gold")
        self._example = example
        self._turns = []
        self._done = False
        self._turn_count = 0
        self._asks = []
        self._first_answer = None
        self._checks_share = None
        self._last_result = None
        self._transcript = []
        details = self.store.details(example.db_path, self.config.schema_profile)
        messages = opening_messages(
            example, details, db_engine=self.config.odt.db_engine, allow_ask=self.config.tasks.offer_ask,
            style=self._style,
        )  # fmt: skip
        if self._protocol.system is not None:  # a probe protocol names its tags in its own system prompt
            messages[0] = Message(role="system", content=self._protocol.system(self.config.odt.db_engine))
        return messages

    def step(self, response: str) -> StepResult:
        """Score one model turn and say what happens next."""
        return self.take(self.plan(response))

    def plan(self, response: str) -> PlannedTurn:
        """Read ``response`` under the protocol without changing the episode: its action, the answer's
        extraction and the SQL the turn will run. :func:`step_many` plans the turns of many episodes,
        runs their SQL in one batch and hands each result to :meth:`take`."""
        if self._example is None or self._gold is None:
            raise RuntimeError("step() called before reset()")
        if self._done:
            raise RuntimeError("the episode is over: call reset() first")
        clock = _StageClock(self.stage_seconds)
        protocol = self._protocol
        turn_number = self._turn_count + 1
        action = read_turn(response) if protocol.probes else TurnAction("answer")
        if action.kind == "probe" or (action.kind == "invalid" and protocol.invalid_is_action):
            # A probe on the last turn is not run: nobody would see its result.
            runs = action.sql if turn_number < self.config.max_turns else None
            return PlannedTurn(response, self._example, turn_number, action, None, runs)
        extracted = self._read_answer(response, action)
        clock.lap("extract")
        runs = extracted.sql if extracted.ask is None and extracted.sql else None
        return PlannedTurn(response, self._example, turn_number, action, extracted, runs)

    def take(self, planned: PlannedTurn, result: ExecResult | None = None) -> StepResult:
        """Play a turn :meth:`plan` read for this episode: ``result`` is what its SQL gave when it ran
        already (a batch of :func:`step_many`); without it the SQL runs here."""
        planned_here = planned.example is self._example and planned.turn == self._turn_count + 1
        if self._example is None or self._gold is None or self._done or not planned_here:
            raise RuntimeError(f"turn {planned.turn} was not planned for this episode's next turn")
        example, gold, store, protocol = self._example, self._gold, self.store, self._protocol
        clock = _StageClock(self.stage_seconds)
        if planned.sql is not None and result is None:
            odt_before = self.stage_seconds.get("odt", 0.0)  # the diagnosis made while the worker runs the SQL
            result = store.run_pred(example, planned.sql, meanwhile=lambda: self.diagnose_ahead(planned))
            clock.counted_elsewhere(self.stage_seconds.get("odt", 0.0) - odt_before)
        if planned.extracted is None:
            return self._probe(planned.response, planned.action, result)
        extracted, response = planned.extracted, planned.response
        if extracted.ask is not None:
            return self._ask(response, extracted)
        self._turn_count += 1
        if result is None:
            result = _NO_SQL
        self._last_result = result if extracted.sql else None
        clock.lap("execute")
        judged = store.judgement(example, gold.results, result)
        verdict = judged.verdict if extracted.sql else None
        checks: tuple[int, int] | None = None
        if judged.checks is not None:  # a write task: the checks passed count for its reward terms
            passed, total = judged.checks if extracted.sql else (0, judged.checks[1])
            checks = (passed, total)
            self._checks_share = passed / total if total else 0.0
        match = verdict is not None and verdict.match
        verdict_status: str = verdict.status if verdict is not None else "no_sql"
        if match and extracted.sql:
            suite = store.suite_verdicts([(example, extracted.sql)])[0]
            if suite is not None:
                match = suite.match
                verdict_status = "match" if match else "suite_mismatch"
        clock.lap("compare")
        diagnosis = store.diagnosis(example, extracted.sql or "", gold)
        clock.lap("odt")
        turn_number = self._turn_count
        if self._first_answer is None:
            self._first_answer = (not any(slot is not None for slot in self._asks), match)
        self._turns.append(Turn(extracted.sql, extracted.format_ok, result.ok, match, diagnosis.f, response))
        terminated = match or protocol.answer_ends_episode
        truncated = not terminated and turn_number >= self.config.max_turns
        self._done = terminated or truncated
        breakdown = self._score() if self._done else None
        clock.lap("reward")
        observation = None if self._done else Message(role="user", content=self._feedback(diagnosis, result, verdict))
        clock.lap("feedback")
        self._transcript += [response] if observation is None else [response, observation["content"]]
        info = TurnRecord(
            turn=turn_number,
            response=response,
            sql=extracted.sql,
            format_ok=extracted.format_ok,
            format_problem=extracted.problem,
            exec_status=result.status if extracted.sql else "no_sql",
            exec_error=result.error,
            match=match,
            verdict=verdict_status,
            f_struct=diagnosis.f_struct,
            f_lex=diagnosis.f_lex,
            f=diagnosis.f,
            tags=diagnosis.tags,
            feedback=None if observation is None else observation["content"],
            reward=breakdown,
            checks_passed=None if checks is None else checks[0],
            checks_total=None if checks is None else checks[1],
            findings=diagnosis.findings,
        )
        return StepResult(observation, breakdown.total if breakdown else 0.0, terminated, truncated, info)

    def diagnose_ahead(self, planned: PlannedTurn) -> None:
        """Diagnose a planned answer before its SQL's result is in (the diagnosis reads the SQL and the
        gold, not the result): the store keeps it, and :meth:`take` finds it there. Called while the
        workers run the turn's SQL, so that the two overlap; its seconds count to the ``odt`` stage. A turn
        that is not an answer (a probe, a clarifying question) has nothing to diagnose."""
        extracted = planned.extracted
        if extracted is None or extracted.ask is not None or self._example is None or self._gold is None:
            return
        start = time.perf_counter()
        self.store.diagnosis(self._example, extracted.sql or "", self._gold)
        self.stage_seconds["odt"] = self.stage_seconds.get("odt", 0.0) + time.perf_counter() - start

    def _read_answer(self, response: str, action: TurnAction) -> Extracted:
        """The SQL and format verdict of an answer under the configured protocol."""
        assert self._example is not None
        protocol = self._protocol
        if not protocol.probes:
            return extract(response, reasoning=self._style.reasoning, ask=ask_offered(self._example, self.config))
        if action.kind != "answer":
            return Extracted(None, False, "none", NEITHER_ACTION)
        if protocol.transcript_format:
            format_ok = skyrl_format_ok("".join([*self._transcript, response]))
            problem = None if format_ok else SKYRL_FORMAT_PROBLEM
            return Extracted(solution_sql(response) or None, format_ok, "tags", problem)
        # The answer rule of the answer protocol, read in the <solution> block.
        retagged = response.replace(SOLUTION_START, PROBE_START).replace(SOLUTION_END, PROBE_END)
        return extract(retagged, reasoning=self._style.reasoning)

    def _probe(self, response: str, action: TurnAction, result: ExecResult | None) -> StepResult:
        """A probe (or an invalid turn under a protocol that observes those) with what its SQL gave
        (None: it had none, or it is the last turn and was not run): shown to the model, never judged;
        it uses a turn and is no attempt."""
        example = self._example
        assert example is not None
        self._turn_count += 1
        self._last_result = None
        truncated = self._turn_count >= self.config.max_turns
        self._done = truncated
        observation = None
        if not truncated:
            observe = self._protocol.observe
            assert observe is not None  # every probe protocol observes
            seen = ProbeContext(result, action.sql, example.db_path, self.config.max_turns - self._turn_count,
                                self.config.preview_rows)  # fmt: skip
            observation = Message(role="user", content=observe(seen))
        self._transcript += [response] if observation is None else [response, observation["content"]]
        breakdown = self._score() if truncated else None
        not_run = "no_sql" if action.sql is None else "not_run"
        info = TurnRecord(
            turn=self._turn_count,
            response=response,
            sql=action.sql,
            format_ok=action.kind == "probe",
            format_problem=None if action.kind == "probe" else NEITHER_ACTION,
            exec_status=result.status if result is not None else not_run,
            exec_error=None if result is None else result.error,
            match=False,
            verdict=action.kind,
            f_struct=0.0,
            f_lex=0.0,
            f=0.0,
            tags=(),
            feedback=None if observation is None else observation["content"],
            reward=breakdown,
            action=action.kind,
        )
        return StepResult(observation, breakdown.total if breakdown else 0.0, False, truncated, info)

    def _ask(self, response: str, extracted: Extracted) -> StepResult:
        """A clarifying question: the user answers it; it uses a turn and answers nothing."""
        assert self._example is not None
        assert extracted.ask is not None
        self._turn_count += 1
        self._last_result = None
        reply = self.user.answer(self._example, extracted.ask)
        open_slot = reply.slot if reply.slot is not None and reply.slot not in self._asks else None
        self._asks.append(open_slot)
        truncated = self._turn_count >= self.config.max_turns
        self._done = truncated
        breakdown = self._score() if truncated else None
        engine = self.config.odt.db_engine
        content = self._style.restyle(user_answer_prompt(reply.text, db_engine=engine), engine)
        observation = None if truncated else Message(role="user", content=content)
        info = TurnRecord(
            turn=self._turn_count,
            response=response,
            sql=None,
            format_ok=extracted.format_ok,
            format_problem=extracted.problem,
            exec_status="ask",
            exec_error=None,
            match=False,
            verdict="ask",
            f_struct=0.0,
            f_lex=0.0,
            f=0.0,
            tags=(),
            feedback=None if observation is None else observation["content"],
            reward=breakdown,
            action="ask",
            question=extracted.ask,
            slot=open_slot,
        )
        return StepResult(observation, breakdown.total if breakdown else 0.0, False, truncated, info)

    def episode_reward(self) -> RewardBreakdown:
        """The reward of the episode so far (what the last turn carries once it ends)."""
        return self._score()

    @property
    def last_result(self) -> ExecResult | None:
        """What the last turn's SQL gave when it ran (None before the first turn, after a turn without
        SQL and after a clarifying question): a rollout keeps its first rows instead of running it again."""
        return self._last_result

    @property
    def trajectory(self) -> Trajectory:
        return Trajectory(tuple(self._turns))

    def close(self) -> None:
        """Close the gold store if this environment built it."""
        if self._own_store:
            self.store.close()

    # -- internals -----------------------------------------------------------------------------
    def _feedback(self, diagnosis: Diagnosis, result: ExecResult, verdict: Verdict | None) -> str:
        write = self._example is not None and self._example.write is not None
        given = FeedbackInput(diagnosis, result, verdict, write, self.config.odt, self.config.preview_rows)
        text = feedback_kind(self.config.feedback).text(given)
        engine = self.config.odt.db_engine
        if self._protocol.probes:  # the closing instruction names the protocol's tags, not <sql>
            paper = revision_instruction(engine)
            return (text[: -len(paper)] if text.endswith(paper) else text + " ") + PROBE_REVISION
        return self._style.restyle(text, engine)

    @property
    def _style(self) -> PromptStyle:
        return prompt_style(self.config.prompt)

    @property
    def _protocol(self) -> Protocol:
        return get_protocol(self.config.protocol)

    def _score(self) -> RewardBreakdown:
        example = self._example
        assert example is not None
        context = RewardContext(example.gold_sql, progressive=self.config.progressive)
        # An episode that only asked is scored as one turn without an answer.
        base = get_reward(self.config.reward).score(answers_trajectory(self._turns), context)
        clarify = None
        if example.ambiguity or self._asks:
            guessed, matched = self._first_answer if self._first_answer is not None else (False, False)
            clarify = ClarifyFacts(bool(example.ambiguity), tuple(self._asks), guessed, matched)
        checks = None if example.write is None else (self._checks_share or 0.0)
        return with_terms(base, task_terms(clarify, checks, self.config.tasks), self.config.tasks)


_NO_SQL = ExecResult("error", error="no SQL found in the response")


def prepare_golds(episodes: Sequence[tuple[SQLRefineEnv, Example]]) -> None:
    """Prepare the golds of many episodes' examples before their resets, in one batch per gold store
    (each distinct gold once), instead of one round trip per reset: a step's new prompts. A database
    that cannot be read leaves its store's batch to the resets, each of which raises for its episode."""
    by_store: dict[int, tuple[GoldStore, list[Example]]] = {}
    for env, example in episodes:
        by_store.setdefault(id(env.store), (env.store, []))[1].append(example)
    for store, examples in by_store.values():
        with contextlib.suppress(DatasetError):
            store.prepare_many(examples)


def step_many(steps: Sequence[tuple[SQLRefineEnv, str]]) -> list[StepResult]:
    """``env.step(response)`` for each pair, with the turns' SQL sent to the execution workers in one
    batch per gold store (each distinct query once: the G samples of a prompt often repeat one)
    instead of one round trip per turn; results in the order of ``steps``, each the same as a lone
    ``step`` would give (docs/environment.md#stepping-a-group). Each pair must be a different episode."""
    if len({id(env) for env, _ in steps}) != len(steps):
        raise ValueError("step_many takes each environment once (one turn per episode)")
    planned = [(env, env.plan(response)) for env, response in steps]
    results = run_turns(planned, meanwhile=lambda: diagnose_ahead(planned))
    return [env.take(turn, result) for (env, turn), result in zip(planned, results, strict=True)]


def diagnose_ahead(turns: Sequence[tuple[SQLRefineEnv, PlannedTurn]]) -> None:
    """:meth:`SQLRefineEnv.diagnose_ahead` for planned turns, while the workers run their SQL; at most
    half of what a store keeps (:data:`~progress_sql.judge.gold.DIAGNOSES_KEPT`), so that none is dropped
    before its turn is taken (the rest are diagnosed when taken)."""
    for env, turn in turns[: DIAGNOSES_KEPT // 2]:
        env.diagnose_ahead(turn)


def run_turns(
    turns: Sequence[tuple[SQLRefineEnv, PlannedTurn]],
    on_ready: Callable[[int, ExecResult], None] | None = None,
    meanwhile: Callable[[], object] | None = None,
) -> list[ExecResult | None]:
    """The SQL of planned turns run in one batch per gold store, each distinct query once; None for a
    turn that runs nothing. What :func:`step_many` and the coalescer of concurrent steps
    (env/coalesce.py) hand to :meth:`SQLRefineEnv.take`; reads only each environment's store.
    ``on_ready(position, result)`` hears of a turn's result as soon as it is final (from the pool's
    threads), before the batch's slowest query ends: the coalescer plays that turn at once.
    ``meanwhile()`` runs once in the calling thread while the first store's batch runs."""
    results: list[ExecResult | None] = [None] * len(turns)
    by_store: dict[int, list[int]] = {}
    for position, (env, turn) in enumerate(turns):
        if turn.sql is not None:
            by_store.setdefault(id(env.store), []).append(position)
    if not by_store and meanwhile is not None:
        meanwhile()
    for positions in by_store.values():
        store = turns[positions[0]][0].store
        answers = [(turns[i][1].example, turns[i][1].sql or "") for i in positions]
        ready = None if on_ready is None else (lambda k, result, at=positions: on_ready(at[k], result))
        ran = store.run_answers(answers, on_result=ready, meanwhile=meanwhile)
        meanwhile = None
        for i, result in zip(positions, ran, strict=True):
            results[i] = result
    return results
