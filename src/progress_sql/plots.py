"""Plots for people to read; matplotlib is imported lazily (the ``[plot]`` extra)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
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


def _finish(plt: Any, figure: Any, path: Path) -> Path:
    """Hide every panel's top and right frame, lay out, write ``path`` and release the figure."""
    for axis in figure.axes:
        axis.spines[["top", "right"]].set_visible(False)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path)
    plt.close(figure)
    return path


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
    return _finish(plt, figure, path)


def training_curves(
    runs: Mapping[str, Sequence[Mapping[str, Any]]], keys: Sequence[tuple[str, str]], path: Path, title: str
) -> Path:
    """One panel per ``(metric key, label)``, one line per run (label -> per-step records with ``step``)."""
    plt = _pyplot()
    figure, axes = plt.subplots(1, len(keys), figsize=(4.2 * len(keys), 3.3), dpi=110, squeeze=False)
    for axis, (key, label) in zip(axes[0], keys, strict=True):
        for run, records in runs.items():
            points = [(r["step"], r[key]) for r in records if key in r]
            if points:
                xs, ys = [p[0] for p in points], [p[1] for p in points]
                line = axis.plot(xs, ys, marker=".", linewidth=0.8, alpha=0.45, label=run)[0]
                window = 5  # per-step RL statistics are noisy: the moving average shows the trend
                if len(ys) >= window:
                    smooth = [sum(ys[i - window + 1 : i + 1]) / window for i in range(window - 1, len(ys))]
                    axis.plot(xs[window - 1 :], smooth, color=line.get_color(), linewidth=2.0)
        axis.set_title(label, fontsize=10)
        axis.set_xlabel("step")
    if len(runs) > 1:
        axes[0][0].legend(fontsize=8)
    figure.suptitle(title, fontsize=11)
    return _finish(plt, figure, path)


def accuracy_bars(groups: dict[str, dict[str, tuple[float, float, int]]], path: Path, title: str) -> Path:
    """Grouped bars with error bars: ``{set: {label: (accuracy, standard error, n)}}`` in percent."""
    plt = _pyplot()
    sets = list(groups)
    labels = list(next(iter(groups.values()))) if groups else []
    figure, axis = plt.subplots(figsize=(1.9 * max(2, len(sets)) + 1.5, 3.5), dpi=110)
    width = 0.8 / max(1, len(labels))
    for offset, label in enumerate(labels):
        xs = [i + offset * width for i in range(len(sets))]
        values = [100 * groups[s][label][0] for s in sets]
        errors = [100 * groups[s][label][1] for s in sets]
        bars = axis.bar(xs, values, width, yerr=errors, capsize=3, label=label)
        axis.bar_label(bars, fmt="%.1f", padding=2, fontsize=8)
    axis.set_xticks([i + width * (len(labels) - 1) / 2 for i in range(len(sets))])
    axis.set_xticklabels([f"{s}\n(n={next(iter(groups[s].values()))[2]})" for s in sets], fontsize=8)
    axis.set_ylabel("execution accuracy (%)")
    axis.set_ylim(0, 110)
    axis.legend(fontsize=8)
    axis.set_title(title, fontsize=10)
    return _finish(plt, figure, path)


def accuracy_by_level_plot(
    levels: dict[str, dict[str, float | None]], counts: dict[str, int], path: Path, title: str
) -> Path:
    """Bars of accuracy (percent) per difficulty level: ``{level: {"EX": acc, "TS": acc or None, ...}}``
    (one bar per metric that has a value, in the order given)."""
    plt = _pyplot()
    names = list(levels)
    given = dict.fromkeys(m for n in names for m in levels[n])
    metrics = [m for m in given if any(levels[n].get(m) is not None for n in names)]
    figure, axis = plt.subplots(figsize=(1.2 * max(3, len(names)) + 2, 3.5), dpi=110)
    width = 0.8 / max(1, len(metrics))
    for offset, metric in enumerate(metrics):
        xs = [i + offset * width for i in range(len(names))]
        values = [100 * (levels[n].get(metric) or 0.0) for n in names]
        bars = axis.bar(xs, values, width, label=metric)
        axis.bar_label(bars, fmt="%.1f", padding=2, fontsize=8)
    axis.set_xticks([i + width * (len(metrics) - 1) / 2 for i in range(len(names))])
    axis.set_xticklabels([f"{n}\n(n={counts.get(n, 0)})" for n in names], fontsize=8)
    axis.set_ylabel("accuracy (%)")
    highest = max((100 * (levels[n].get(m) or 0.0) for n in names for m in metrics), default=0.0)
    axis.set_ylim(0, max(110.0, highest + 10))  # R-VES reaches 111.8
    if len(metrics) > 1:
        axis.legend(fontsize=8)
    axis.set_title(title, fontsize=10)
    return _finish(plt, figure, path)


def odt_categories_plot(rates: dict[str, float | None], path: Path, title: str) -> Path:
    """Horizontal bars: the share (percent) of examples with a mismatch in each ODT category."""
    plt = _pyplot()
    names = list(rates)
    values = [100 * (rates[n] or 0.0) for n in names]
    figure, axis = plt.subplots(figsize=(6.5, 0.45 * len(names) + 1.5), dpi=110)
    bars = axis.barh(names[::-1], values[::-1], color="#b5543c")
    axis.bar_label(bars, fmt="%.1f", padding=2, fontsize=8)
    axis.set_xlabel("examples with a mismatch (%)")
    axis.set_xlim(0, max([*values, 1.0]) * 1.2)
    axis.set_title(title, fontsize=10)
    return _finish(plt, figure, path)


def vote_share_histogram(shares: Sequence[float], path: Path, title: str) -> Path:
    """Histogram of the winning group's share of the samples, one value per example."""
    plt = _pyplot()
    figure, axis = plt.subplots(figsize=(5.5, 3.3), dpi=110)
    axis.hist(list(shares), bins=[i / 10 for i in range(11)], color="#2a6f97", edgecolor="white")
    axis.set_xlabel("share of samples in the winning result group")
    axis.set_ylabel("examples")
    axis.set_xlim(0, 1)
    axis.set_title(title, fontsize=10)
    return _finish(plt, figure, path)


def audit_counts_plot(counts: Sequence[tuple[str, int]], path: Path, title: str) -> Path:
    """Horizontal bars: how many examples each audit check fired on (``(label, count)`` pairs)."""
    plt = _pyplot()
    labels = [label for label, _ in counts]
    values = [value for _, value in counts]
    figure, axis = plt.subplots(figsize=(6.5, 0.3 * len(labels) + 1.5), dpi=110)
    bars = axis.barh(labels[::-1], values[::-1], color="#2a6f97")
    axis.bar_label(bars, padding=2, fontsize=8)
    axis.set_xlabel("examples on which the check fired")
    axis.set_xlim(0, max([*values, 1]) * 1.15)
    axis.set_title(title, fontsize=10)
    return _finish(plt, figure, path)


def labelled_bars(
    bars: Sequence[tuple[str, float, float]], path: Path, title: str, *, baseline: tuple[str, float] | None = None
) -> Path:
    """Horizontal bars with error bars, one per ``(label, accuracy, standard error)`` (percent shown),
    and an optional dashed ``(label, accuracy)`` reference line (a warm start, a baseline)."""
    plt = _pyplot()
    labels = [label for label, _, _ in bars][::-1]
    values = [100 * value for _, value, _ in bars][::-1]
    errors = [100 * se for _, _, se in bars][::-1]
    figure, axis = plt.subplots(figsize=(6.5, 0.42 * len(bars) + 1.4), dpi=110)
    drawn = axis.barh(labels, values, xerr=errors, capsize=3, color="#2a6f97")
    axis.bar_label(drawn, fmt="%.1f", padding=4, fontsize=8)
    if baseline is not None:
        axis.axvline(100 * baseline[1], color="#a4a4a4", linestyle="--", linewidth=1.2)
        axis.text(100 * baseline[1], len(bars) - 0.4, f" {baseline[0]} {100 * baseline[1]:.1f}", fontsize=8,
                  color="#555555")  # fmt: skip
    axis.set_xlabel("execution accuracy (%)")
    axis.set_xlim(0, min(110.0, max([*values, 1.0]) * 1.25))
    axis.set_title(title, fontsize=10)
    axis.spines[["top", "right"]].set_visible(False)
    return _finish(plt, figure, path)
