"""Majority voting by execution result (Vote@N, OmniSQL's rule) and the unbiased pass@k estimator; the
rule and the grouping: docs/evaluation.md#answers-greedy-voten-passk.

>>> from progress_sql.judge.compare import get_preset
>>> from progress_sql.types import ExecResult
>>> ok = lambda *rows: ExecResult("ok", columns=("a",), rows=tuple((r,) for r in rows))
>>> vote = majority_vote("SELECT a FROM t", [ok(1), ok(2), ok(2), None], get_preset("spider"))
>>> vote.chosen, vote.sizes, vote.share
(1, (1, 2), 0.5)
>>> round(pass_at_k(8, 2, 4), 4)
0.7857
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from math import comb
from typing import Literal

from progress_sql.judge.compare import Preset
from progress_sql.types import ExecResult

GroupingRule = Literal["key", "representative"]


@dataclass(frozen=True, slots=True)
class Vote:
    """The outcome of one vote over ``n`` samples.

    ``groups`` hold sample indices, in the order their first member appears; ``chosen`` is the
    earliest sample of the largest group (None when no sample is valid). ``rule`` says how the groups
    were formed: by vote key, or by comparing with each group's first result where a result has no
    key; fewer than two valid samples need neither (``key``).
    """

    n: int
    groups: tuple[tuple[int, ...], ...]
    chosen: int | None
    rule: GroupingRule

    @property
    def sizes(self) -> tuple[int, ...]:
        return tuple(len(group) for group in self.groups)

    @property
    def valid(self) -> int:
        return sum(self.sizes)

    @property
    def share(self) -> float:
        """The winning group's share of all samples (0 when no sample is valid)."""
        return max(self.sizes, default=0) / self.n if self.n else 0.0


def is_valid(result: ExecResult | None) -> bool:
    """A sample takes part in the vote when its SQL ran to an untruncated result."""
    return result is not None and result.status == "ok" and not result.truncated


def majority_vote(gold_sql: str, results: Sequence[ExecResult | None], preset: Preset) -> Vote:
    """Group ``results`` (None: no SQL could be extracted) and pick the majority answer."""
    valid = [i for i, result in enumerate(results) if is_valid(result)]
    if len(valid) < 2:  # nothing to group: a greedy answer costs no vote key
        return Vote(len(results), tuple((i,) for i in valid), valid[0] if valid else None, "key")
    keys: list[Hashable | None] = []
    for i in valid:
        result = results[i]
        assert result is not None
        keys.append(preset.vote_key(gold_sql, result))
    groups: list[list[int]] = []
    rule: GroupingRule
    if all(key is not None for key in keys):
        rule = "key"
        by_key: dict[Hashable, list[int]] = {}
        for i, key in zip(valid, keys, strict=True):
            assert key is not None
            if key not in by_key:
                by_key[key] = []
                groups.append(by_key[key])
            by_key[key].append(i)
    else:
        rule = "representative"
        for i in valid:
            result = results[i]
            assert result is not None
            for group in groups:
                representative = results[group[0]]
                assert representative is not None
                if preset.equal(gold_sql, (representative,), result).equal:
                    group.append(i)
                    break
            else:
                groups.append([i])
    chosen = None
    if groups:
        # max() keeps the first of equal sizes: groups are in order of their earliest member.
        chosen = max(groups, key=len)[0]
    return Vote(len(results), tuple(tuple(g) for g in groups), chosen, rule)


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased estimate of the chance that at least one of ``k`` samples drawn from ``n``, of
    which ``c`` are correct, is correct: 1 - C(n - c, k) / C(n, k)."""
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"pass@k needs 0 <= c <= n and 1 <= k <= n (n={n}, c={c}, k={k})")
    if n - c < k:
        return 1.0
    return 1.0 - comb(n - c, k) / comb(n, k)


def k_values(n: int) -> tuple[int, ...]:
    """The k reported for ``n`` samples: the powers of two below n, and n."""
    ks = {1, n}
    k = 2
    while k < n:
        ks.add(k)
        k *= 2
    return tuple(sorted(ks))
