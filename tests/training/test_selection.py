"""RL checkpoint selection: the best validation check's weights are kept, ties keep the earlier."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="training needs the [trl] extra")

from progress_sql.training.selection import BestOnValidation  # noqa: E402


def scripted(model: torch.nn.Linear, scores: list[float], every: int = 50) -> BestOnValidation:
    """A selector whose k-th check scores ``scores[k]``; the model's weight is set to the step before each
    check, so the kept weights say which step they are from."""
    order = iter(scores)
    return BestOnValidation(model, lambda: next(order), every)


def run(selector: BestOnValidation, model: torch.nn.Linear, steps: int) -> None:
    with torch.no_grad():
        model.weight.fill_(0.0)
    selector.check(0)
    for step in range(1, steps + 1):
        with torch.no_grad():
            model.weight.fill_(float(step))
        selector.on_step(step)
    selector.check(steps)  # the trainer's last step: no second check when it is a multiple


def test_the_best_check_is_kept_and_restored() -> None:
    model = torch.nn.Linear(2, 1, bias=False)
    selector = scripted(model, [0.30, 0.35, 0.41, 0.38, 0.40])
    run(selector, model, 200)
    assert [c["step"] for c in selector.checks] == [0, 50, 100, 150, 200]
    assert selector.best_step == 100
    assert selector.restore() is True
    assert model.weight.flatten().tolist() == [100.0, 100.0]
    assert selector.as_dict("validation") == {
        "rule": "validation", "every": 50, "checks": selector.checks, "chosen_step": 100, "last_step": 200,
    }  # fmt: skip
    assert selector.as_dict("last")["chosen_step"] == 200


def test_a_tie_keeps_the_earlier_weights_and_the_warm_start_can_win() -> None:
    model = torch.nn.Linear(2, 1, bias=False)
    selector = scripted(model, [0.40, 0.40, 0.33])
    run(selector, model, 100)
    assert selector.best_step == 0
    assert selector.restore() is True
    assert model.weight.flatten().tolist() == [0.0, 0.0]


def test_the_last_step_best_loads_nothing_and_a_final_step_off_the_interval_is_checked() -> None:
    model = torch.nn.Linear(2, 1, bias=False)
    selector = scripted(model, [0.1, 0.2, 0.3], every=50)
    run(selector, model, 70)
    assert [c["step"] for c in selector.checks] == [0, 50, 70]
    assert selector.best_step == 70
    assert selector.restore() is False
    assert model.weight.flatten().tolist() == [70.0, 70.0]


def test_the_interval_must_be_positive() -> None:
    with pytest.raises(ValueError, match="every must be >= 1"):
        BestOnValidation(torch.nn.Linear(1, 1), lambda: 0.0, 0)
