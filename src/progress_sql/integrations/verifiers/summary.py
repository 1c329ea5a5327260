"""What one hosted episode leaves on a verifiers trace, as pure functions with no verifiers import: the
summary stored under ``trace.info[INFO_KEY]`` while the episode runs, and the rubric's numbers read
back from it (the weighted reward and the unweighted metrics that ``vf-eval`` averages)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from progress_sql.integrations.hosted import HostedStep

#: The key of ``trace.info`` holding the episode's summary (:func:`episode_summary`).
INFO_KEY = "progress_sql"
#: The prefix of the metrics that carry the components of the episode's reward.
COMPONENT_PREFIX = "reward_"


def episode_summary(
    steps: Sequence[HostedStep],
    metrics: Mapping[str, Any],
    marks: Mapping[str, str],
    step_times: Sequence[tuple[float, float]] = (),
) -> dict[str, Any]:
    """The plain (JSON) summary of an episode so far: its reward (the sum of the step rewards: the
    episode's reward at its end, also with ``step_rewards``), whether it ended, why it is unscored
    (``marks``, ``stop``), the hosted metrics, each turn's record (feedback, verdict, F, ...) and when
    each step ran (``step_times``: wall-clock start and end in seconds, where scoring time went).

    >>> from progress_sql.integrations.hosted import HostedStep
    >>> steps = [HostedStep(None, 0.0, True, {"stop": "gold_invalid", "gold_error": "no such table"})]
    >>> summary = episode_summary(steps, {"turns": 0, "match": False}, {"gold_error": "no such table"})
    >>> summary["reward"], summary["done"], summary["stop"], summary["unscored"]
    (0.0, True, 'gold_invalid', True)
    """
    done = bool(steps) and steps[-1].done
    stop = str(steps[-1].metadata.get("stop") or "") if steps else ""
    return {
        "reward": float(sum(step.reward for step in steps)),
        "done": done,
        "stop": stop,
        "unscored": any(marks.values()),
        "marks": dict(marks),
        "metrics": dict(metrics),
        "turns": [dict(step.metadata) for step in steps if "stop" not in step.metadata],
        "step_times": [[start, end] for start, end in step_times],
    }


def summary_reward(summary: Mapping[str, Any] | None) -> float:
    """The episode's reward (0 for an episode that never stepped, e.g. one whose model call failed).

    >>> summary_reward({"reward": 0.75}), summary_reward(None)
    (0.75, 0.0)
    """
    return float(summary["reward"]) if summary else 0.0


def summary_metrics(summary: Mapping[str, Any] | None) -> dict[str, float]:
    """The unweighted metrics of an episode: whether the last answer matched, k* (0 without a match),
    answers and clarifying questions, whether it is unscored, the last answer's format check and F
    (with its structural and lexical parts), and each component of the reward as ``reward_<name>``.

    >>> turn = {"format_ok": True, "f": 0.5, "f_struct": 0.4, "f_lex": 0.6,
    ...         "reward": {"total": 0.9, "components": {"align": 0.3, "exec": 0.6}}}
    >>> summary = {"reward": 0.9, "unscored": False, "turns": [turn],
    ...            "metrics": {"match": True, "k_star": 1, "turns": 1, "asks": 0}}
    >>> summary_metrics(summary)["reward_exec"], summary_metrics(summary)["match"]
    (0.6, 1.0)
    """
    summary = summary or {}
    hosted = summary.get("metrics", {})
    turns = summary.get("turns", [])
    last: Mapping[str, Any] = turns[-1] if turns else {}
    values = {
        "match": float(bool(hosted.get("match", False))),
        "k_star": float(hosted.get("k_star", 0)),
        "turns": float(hosted.get("turns", 0)),
        "asks": float(hosted.get("asks", 0)),
        "unscored": float(bool(summary.get("unscored", False))),
        "format_ok": float(bool(last.get("format_ok", False))),
        "f": float(last.get("f", 0.0)),
        "f_struct": float(last.get("f_struct", 0.0)),
        "f_lex": float(last.get("f_lex", 0.0)),
    }
    breakdown = last.get("reward") or {}
    for name, value in dict(breakdown.get("components", {})).items():
        values[COMPONENT_PREFIX + str(name)] = float(value)
    return values
