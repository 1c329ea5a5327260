"""Conformance checks that any refinement environment must pass: ``check_env(make_env, example,
responses)`` drives fresh environments through one scripted episode and reports every broken rule
(docs/environment.md#sqlrefineenv)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from progress_sql.env.core import SQLRefineEnv, StepResult
from progress_sql.env.protocols import get_protocol
from progress_sql.types import Example


@dataclass(frozen=True, slots=True)
class CheckReport:
    """Which rules held and which did not (with the reason)."""

    checked: tuple[str, ...]
    failures: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return not self.failures


def _episode(env: SQLRefineEnv, example: Example, responses: Sequence[str]) -> tuple[list[str], list[StepResult]]:
    roles = [message["role"] for message in env.reset(example)]
    steps: list[StepResult] = []
    for response in responses:
        step = env.step(response)
        steps.append(step)
        if step.terminated or step.truncated:
            break
    return roles, steps


def check_env(make_env: Callable[[], SQLRefineEnv], example: Example, responses: Sequence[str]) -> CheckReport:
    """Run the conformance rules on one example with scripted ``responses`` (at least max_turns of them
    unless one matches earlier)."""
    failures: list[str] = []
    checked: list[str] = []

    def rule(name: str, holds: bool, why: str) -> None:
        checked.append(name)
        if not holds:
            failures.append(f"{name}: {why}")

    fresh = make_env()
    try:
        fresh.step(responses[0] if responses else "")
        rule("step before reset raises", False, "step() before reset() returned instead of raising")
    except RuntimeError:
        rule("step before reset raises", True, "")

    first, second = make_env(), make_env()
    roles, steps = _episode(first, example, responses)
    _, replay = _episode(second, example, responses)
    budget = first.config.max_turns
    # Under a protocol whose first answer ends the episode (SkyRL-SQL's), any answer terminates it.
    answer_ends = get_protocol(first.config.protocol).answer_ends_episode
    rule("reset gives system and user messages", roles == ["system", "user"], f"roles were {roles}")
    rule(
        "deterministic for the same actions",
        [(s.reward, s.terminated, s.truncated, s.info) for s in steps]
        == [(s.reward, s.terminated, s.truncated, s.info) for s in replay],
        "two episodes with the same responses differ",
    )
    ended = steps[-1].terminated or steps[-1].truncated if steps else False
    rule("the episode ends", ended or len(responses) < budget, f"no end after {len(steps)} steps (T = {budget})")
    for index, step in enumerate(steps, start=1):
        last = index == len(steps) and ended
        rule(f"turn {index}: not both terminated and truncated", not (step.terminated and step.truncated), "both set")
        ends = step.info.match or (answer_ends and step.info.action == "sql")
        rule(f"turn {index}: terminated iff matched", step.terminated == ends, "terminated != match")
        rule(
            f"turn {index}: truncated only at the budget without a match",
            step.truncated == (not ends and index == budget),
            f"truncated={step.truncated} at turn {index} of {budget}",
        )
        rule(f"turn {index}: no observation after the end", (step.observation is None) == last, "observation mismatch")
        if not last:
            rule(f"turn {index}: reward 0 before the last turn", step.reward == 0.0, f"reward {step.reward}")
        else:
            low, high = first.config.value_range
            rule(
                f"turn {index}: final reward finite and in range",
                math.isfinite(step.reward) and low - 1e-9 <= step.reward <= high + 1e-9,
                f"reward {step.reward} outside [{low}, {high}]",
            )
    if ended:
        try:
            first.step(responses[0])
            rule("step after the end raises", False, "step() after the end returned")
        except RuntimeError:
            rule("step after the end raises", True, "")
    for env in (fresh, first, second):
        env.close()
    return CheckReport(tuple(checked), tuple(failures))
