"""Plots for people to read; matplotlib is imported lazily (the ``[plot]`` extra)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any


class PlottingUnavailableError(RuntimeError):
    """matplotlib is not installed."""


def _pyplot() -> Any:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as error:  # pragma: no cover - depends on the environment
        raise PlottingUnavailableError("plots need matplotlib: pip install 'progress-sql[plot]'") from error
    return plt


def reward_bound_plot(points: Sequence[tuple[str, float]], path: Path, title: str) -> Path:
    """Bar chart of the reward's upper bound per first-correct turn k*."""
    plt = _pyplot()
    figure, axes = plt.subplots(figsize=(5.5, 3.5), dpi=120)
    labels = [f"k*={label}" if label != "none" else "never" for label, _ in points]
    values = [value for _, value in points]
    bars = axes.bar(labels, values, color=["#2a6f97"] * (len(values) - 1) + ["#a4a4a4"])
    axes.bar_label(bars, fmt="%.2f", padding=2)
    axes.set_ylabel("upper bound of R(Y)")
    axes.set_title(title, fontsize=10)
    axes.set_ylim(0, max(values) * 1.15)
    axes.spines[["top", "right"]].set_visible(False)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path)
    plt.close(figure)
    return path
