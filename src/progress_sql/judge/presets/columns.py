"""Enumerating column assignments: which predicted column plays the part of each gold column."""

from __future__ import annotations

from collections.abc import Iterator, Sequence


def assignments(candidates: Sequence[Sequence[int]]) -> Iterator[tuple[int, ...]]:
    """Injective assignments (gold column i -> one of ``candidates[i]``), lazily, most-constrained
    gold column first, so that a contradiction is found as early as possible.

    >>> list(assignments([[0, 1], [0]]))
    [(1, 0)]
    """
    order = sorted(range(len(candidates)), key=lambda i: (len(candidates[i]), i))
    chosen = [0] * len(candidates)
    used: set[int] = set()

    def extend(depth: int) -> Iterator[tuple[int, ...]]:
        if depth == len(order):
            yield tuple(chosen)
            return
        column = order[depth]
        for j in candidates[column]:
            if j in used:
                continue
            used.add(j)
            chosen[column] = j
            yield from extend(depth + 1)
            used.discard(j)

    return extend(0)
