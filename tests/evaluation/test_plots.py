"""The evaluation plots hold data; a blank canvas is told apart (no shared data needed)."""

from __future__ import annotations

from pathlib import Path

from progress_sql.plots import accuracy_by_level_plot, odt_categories_plot, vote_share_histogram


def axes_hold_data(path: Path) -> bool:
    """A PNG whose central area (inside the axes) is not a blank canvas."""
    import matplotlib.image as mpimg
    import numpy as np

    image = np.asarray(mpimg.imread(path))
    assert image.ndim == 3
    height, width = image.shape[:2]
    # Rows inside the axes, columns from just right of the y axis to the edge: a one-sample run's vote
    # histogram is a single bar in the last bin, at the right end of the axes.
    inner = image[height // 5 : 4 * height // 5, width // 6 :, :3]
    return bool(inner.std() > 0.05) and bool((inner.mean(axis=2) < 0.9).mean() > 0.05)


def test_plots_hold_data(tmp_path: Path) -> None:
    paths = [
        accuracy_by_level_plot({"easy": {"EX": 0.8, "TS": 0.7}, "hard": {"EX": 0.4, "TS": None}},
                               {"easy": 10, "hard": 5}, tmp_path / "a.png", "levels"),
        odt_categories_plot({"SELECT": 0.3, "JOIN": 0.5, "WHERE": 0.2, "GROUP": 0.1}, tmp_path / "b.png", "odt"),
        vote_share_histogram([1.0, 0.5, 0.75, 0.25, 1.0], tmp_path / "c.png", "votes"),
    ]  # fmt: skip
    for path in paths:
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert axes_hold_data(path), path.name


def test_blank_canvas_is_detected(tmp_path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, _ = plt.subplots(figsize=(5, 3))
    figure.savefig(tmp_path / "blank.png")
    plt.close(figure)
    assert not axes_hold_data(tmp_path / "blank.png")
