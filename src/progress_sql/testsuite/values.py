"""Type-aware value generators: a small pool, sometimes a fresh value, then a small perturbation, so that
collisions and boundaries show up (docs/testsuite.md#how-a-suite-is-built, step 2). Every generator
takes the caller's ``random.Random``, so a seed fixes the output."""

from __future__ import annotations

import random
import string
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from progress_sql.data.introspect import Kind
from progress_sql.types import SQLValue

_CHARACTERS = string.ascii_letters + string.digits + " ()"


@dataclass(slots=True)
class ColumnGenerator:
    """Draws the values of one column. ``fresh_p``: chance of a new value instead of a pool one;
    ``cap``: how many distinct fresh values may exist (None: unlimited), so repeats happen."""

    kind: Kind
    pool: list[SQLValue]
    fresh_p: float
    cap: int | None
    date_format: str | None = None
    fresh: list[SQLValue] = field(default_factory=list)
    #: Values handed out first, unperturbed (a key column gets each of its pool values once).
    queue: list[SQLValue] = field(default_factory=list)

    def sample(self, rng: random.Random) -> SQLValue:
        if self.queue:
            return self.queue.pop()
        if self.pool and rng.random() >= self.fresh_p:
            value = rng.choice(self.pool)
        elif self.cap is not None and len(self.fresh) >= self.cap and self.fresh:
            value = rng.choice(self.fresh)
        else:
            value = GENERATORS[self.kind](self, rng)
            self.fresh.append(value)
        return PERTURB[self.kind](value, rng)


def _numbers(pool: Sequence[SQLValue]) -> list[float]:
    return [float(v) for v in pool if isinstance(v, (int, float)) and not isinstance(v, bool)]


def _fresh_integer(gen: ColumnGenerator, rng: random.Random) -> SQLValue:
    numbers = _numbers(gen.pool)
    if len(numbers) >= 2 and rng.random() > 0.2:
        low, high = int(min(numbers)), int(max(numbers))
        span = max(2, (high - low) // 2)
        return rng.randint(low - span, high + span)
    return rng.randint(-(10**4), 10**6)


def _fresh_real(gen: ColumnGenerator, rng: random.Random) -> SQLValue:
    numbers = _numbers(gen.pool)
    if len(numbers) >= 2 and rng.random() > 0.2:
        low, high = min(numbers), max(numbers)
        span = max(1.0, (high - low) / 2)
        return round(rng.uniform(low - span, high + span), 2)
    return round(rng.uniform(-1e4, 1e6), 2)


def _fresh_text(gen: ColumnGenerator, rng: random.Random) -> SQLValue:
    lengths = [len(v) for v in gen.pool if isinstance(v, str)] or [1, 12]
    length = rng.randint(max(1, min(lengths)), max(1, max(lengths)))
    return "".join(rng.choice(_CHARACTERS) for _ in range(length))


def _fresh_date(gen: ColumnGenerator, rng: random.Random) -> SQLValue:
    layout = gen.date_format or "%Y-%m-%d"
    parsed = []
    for value in gen.pool:
        if isinstance(value, str):
            try:
                parsed.append(datetime.strptime(value, layout))
            except ValueError:
                continue
    if len(parsed) >= 2 and rng.random() > 0.2:
        low, high = min(parsed), max(parsed)
    else:
        low, high = datetime(1800, 1, 1), datetime(2100, 1, 1)
    seconds = int((high - low).total_seconds())
    moment = low + timedelta(seconds=rng.randint(0, max(0, seconds)))
    if "%H" not in layout:
        moment = moment.replace(hour=0, minute=0, second=0)
    return moment.strftime(layout)


def _fresh_boolean(gen: ColumnGenerator, rng: random.Random) -> SQLValue:
    seen = sorted({v for v in gen.pool if v is not None}, key=repr)
    return rng.choice(seen) if len(seen) >= 2 else rng.choice([0, 1])


def _perturb_integer(value: SQLValue, rng: random.Random) -> SQLValue:
    if not isinstance(value, int) or isinstance(value, bool):
        return value
    return value + rng.choice((0, 0, 1, -1, 2, -2))


def _perturb_real(value: SQLValue, rng: random.Random) -> SQLValue:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return value
    return round(value + rng.choice((0.0, 0.0, 0.01, -0.01, 1.0, -1.0)), 6)


def contaminate(text: str, rng: random.Random) -> str:
    """A near miss of ``text``: extra characters around it, or one character fewer.

    >>> len(contaminate("Paris", random.Random(0))) != 5
    True
    """
    noise = "".join(rng.choice(string.ascii_letters) for _ in range(5))
    choice = rng.randrange(5)
    if choice == 0:
        return text + noise
    if choice == 1:
        return noise + text
    if choice == 2:
        return noise[:3] + text + noise[3:]
    if choice == 3:
        return text[:-1]
    return text[1:]


def _perturb_text(value: SQLValue, rng: random.Random) -> SQLValue:
    if not isinstance(value, str) or rng.random() >= 0.3:
        return value
    return contaminate(value, rng)


def _same(value: SQLValue, _rng: random.Random) -> SQLValue:
    return value


GENERATORS: dict[Kind, Callable[[ColumnGenerator, random.Random], SQLValue]] = {
    "integer": _fresh_integer,
    "real": _fresh_real,
    "text": _fresh_text,
    "date": _fresh_date,
    "boolean": _fresh_boolean,
}
PERTURB: dict[Kind, Callable[[SQLValue, random.Random], SQLValue]] = {
    "integer": _perturb_integer,
    "real": _perturb_real,
    "text": _perturb_text,
    "date": _same,
    "boolean": _same,
}


def near_misses(value: SQLValue, kind: Kind) -> list[SQLValue]:
    """Values next to a gold constant, so that a suite can tell ``<`` from ``<=``, ``=`` from
    ``LIKE``, and one literal from a slightly different one.

    >>> near_misses(30, "integer")
    [30, 29, 31]
    >>> near_misses("Paris", "text")
    ['Paris', 'paris', 'PARIS', 'Pari', 'aris', 'Paris x']
    """
    if isinstance(value, bool) or value is None:
        return [value]
    if isinstance(value, int) and kind in ("integer", "real", "boolean"):
        return [value, value - 1, value + 1]
    if isinstance(value, float):
        return [value, round(value - 0.01, 6), round(value + 0.01, 6)]
    if isinstance(value, str) and kind == "text" and value:
        found = [value, value.lower(), value.upper(), value[:-1], value[1:], value + " x"]
        return list(dict.fromkeys(v for v in found if v))
    return [value]
