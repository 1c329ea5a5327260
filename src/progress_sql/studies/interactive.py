"""Interactive evaluation (``eval --turns T``): a model answers each question in the environment for
up to T turns, under a feedback kind (``execution`` uses no gold) and a turn protocol (``probe`` and
``skyrl`` let it run exploratory queries), and the run reports what a single-turn evaluation cannot:
EX within T turns, the turns used, the probes per question, beside the single-turn EX of the same run
(docs/evaluation.md#interactive-evaluation). The episodes are ``rollout``'s (``env/rollout.py``).

>>> from progress_sql.env.records import TurnRecord
>>> probe = TurnRecord(1, "", "SELECT 1", True, None, "ok", None, False, "probe", 0, 0, 0, (), action="probe")
>>> right = TurnRecord(2, "", "SELECT 2", True, None, "ok", None, True, "match", 1, 1, 1, ())
>>> record = EpisodeRecord(0, "db", "ok", turns=(probe, right), k_star=1)
>>> measures = interactive_metrics([record], 3)["interactive"]
>>> measures["ex_within_turns"]["ex"], measures["single_turn_ex"]["ex"], measures["first_answer_ex"]["ex"]
(1.0, 0.0, 1.0)
>>> measures["probes_per_question"], measures["turns_used"]
(1.0, 2.0)
"""

from __future__ import annotations

from collections.abc import Sequence
from statistics import fmean
from typing import Any

from progress_sql.env.rollout import EpisodeRecord, RolloutRequest, RolloutRun, run_rollout, summarize_rollouts
from progress_sql.errors import ConfigError
from progress_sql.evaluation.stats import Accuracy
from progress_sql.progress import Phase

#: The ``command`` of an interactive evaluation's summary.json.
COMMAND = "eval-turns"


def _single_turn(record: EpisodeRecord) -> bool:
    """Whether the first turn was an answer that matched: what a one-turn budget would have scored."""
    return bool(record.turns) and record.turns[0].action == "sql" and record.turns[0].match


def interactive_metrics(records: Sequence[EpisodeRecord], turns: int) -> dict[str, Any]:
    """``rollout``'s metrics and, under ``interactive``, the evaluation's: EX within ``turns`` turns (an
    answer matched), single-turn EX (the first turn was a matching answer), first-answer EX (the first
    answer matched, after any probes), each with its n and binomial SE; the mean turns used, probes and
    answers per question."""
    scored = [r for r in records if r.status == "ok"]

    def mean(values: Sequence[float]) -> float:
        return round(fmean(values), 6) if values else 0.0

    return summarize_rollouts(records, turns) | {
        "interactive": {
            "turns": turns,
            "ex_within_turns": Accuracy.of([r.k_star is not None for r in scored]).as_dict(),
            "single_turn_ex": Accuracy.of([_single_turn(r) for r in scored]).as_dict(),
            "first_answer_ex": Accuracy.of([r.k_star == 1 for r in scored]).as_dict(),
            "turns_used": mean([len(r.turns) for r in scored]),
            "probes_per_question": mean([sum(t.action == "probe" for t in r.turns) for r in scored]),
            "answers_per_question": mean([sum(t.action == "sql" for t in r.turns) for r in scored]),
        }
    }


def check_interactive(*, predictions: object, n: int, ray: object, ves_repeats: int, resume: bool = False) -> None:
    """Refuse the single-turn options an interactive evaluation cannot honour (one clear line, exit 2)."""
    if predictions is not None:
        raise ConfigError("eval --turns needs a model: a prediction file has no turns (replay scripted turns "
                          "with --backend replay --replay FILE)")  # fmt: skip
    if n != 1:
        raise ConfigError(f"eval --turns samples one response per turn: --n must be 1, got {n}")
    if ray is not None:
        raise ConfigError("eval --turns runs on this machine: --ray is for single-turn evaluations")
    if ves_repeats:
        raise ConfigError("eval --turns does not time answers: --ves-repeats is for single-turn evaluations")
    if resume:
        raise ConfigError("eval --turns starts its episodes anew: --resume is for single-turn evaluations")


def run_interactive_eval(request: RolloutRequest, phase: Phase) -> RolloutRun:
    """Every question's episode with the backend in ``request.env`` (its turn budget, feedback kind and
    protocol), written as a run folder whose summary's command is :data:`COMMAND`."""
    return run_rollout(request, phase, command=COMMAND, metrics=interactive_metrics)
