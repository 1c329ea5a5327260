"""Measure the bad-first-turn route on the paper's Appendix G case study (issue 14, review finding 1).

Turn 2 is either the case study's correct SQL (turn 3, F = 0.968, a match) or its turn 2 (F = 0.682, no
match); turn 1 is either the honest wrong first try (turn 1, F = 0.475) or garbage: unformatted prose,
an empty answer, or formatted SQL that does not execute. A decoy (``SELECT 1``: formatted, executable,
F = 0.053) shows the route the guard leaves open. F comes from the ODT scorer, as in the environment.
Run it to print the table recorded in docs/environment.md:

    PYTHONPATH=src python -m tests.rewards.bad_first_turn
"""

from __future__ import annotations

from progress_sql.data import case_study
from progress_sql.odt import diagnose, prepare_gold
from progress_sql.rewards.progressive import ProgressiveConfig, progressive_reward
from progress_sql.types import Trajectory, Turn


def _alignment(sql: str) -> float:
    return diagnose(sql, prepare_gold(case_study.GOLD_SQL)).f


HONEST_FIRST, WRONG_SECOND, CORRECT = case_study.TURNS
SYNTAX_ERROR = "SELEC supplier_name FROM suppliers"
DECOY = "SELECT 1"

#: The first turns: the honest wrong try, three kinds of garbage and a decoy (sql, format_ok, executable, F).
FIRST_TURNS: dict[str, Turn] = {
    "honest": Turn(HONEST_FIRST, True, True, False, _alignment(HONEST_FIRST)),
    "unformatted": Turn(None, False, False, False, 0.0, "I am not sure."),
    "empty": Turn("", True, False, False, 0.0, "<think></think><sql></sql>"),
    "non-executable": Turn(SYNTAX_ERROR, True, False, False, _alignment(SYNTAX_ERROR)),
    "decoy": Turn(DECOY, True, True, False, _alignment(DECOY)),
}

#: The later turn: the answer reached at turn 2, or never reached (the case study's turn 2).
SECOND_TURNS: dict[str, Turn] = {
    "reached": Turn(CORRECT, True, True, True, _alignment(CORRECT)),
    "never": Turn(WRONG_SECOND, True, True, False, _alignment(WRONG_SECOND)),
}


def measure(config: ProgressiveConfig | None = None) -> dict[tuple[str, str], float]:
    """The reward of every (first turn, second turn) pair, rounded to 3 decimals."""
    return {
        (first_name, second_name): round(progressive_reward(Trajectory((first, second)), config).total, 3)
        for first_name, first in FIRST_TURNS.items()
        for second_name, second in SECOND_TURNS.items()
    }


def main() -> None:
    for label, config in (("paper formula", ProgressiveConfig(formula="paper")), ("default", ProgressiveConfig())):
        values = measure(config)
        print(f"{label} ({config.version})")
        for first_name in FIRST_TURNS:
            row = "  ".join(f"{second}: {values[first_name, second]:.3f}" for second in SECOND_TURNS)
            print(f"  {first_name:15s} {row}")


if __name__ == "__main__":
    main()
