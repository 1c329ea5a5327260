"""The progress of long jobs in a batch log: plain lines (start, one per interval, end) on a fake clock,
the display chosen by the stream and PROGRESS_SQL_PROGRESS, Hugging Face's bars turned off."""

from __future__ import annotations

import io
import os
import sys
import time
import types
from collections.abc import Iterator

import pytest
from rich.console import Console
from rich.progress import Progress

from progress_sql.errors import ConfigError
from progress_sql.progress import (
    HF_BARS_ENV,
    INTERVAL_ENV,
    MODE_ENV,
    PlainProgress,
    phases,
    progress_bar,
    progress_interval,
    progress_mode,
    quiet_third_party_bars,
)


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def plain(label: str, interval: float, clock: FakeClock) -> tuple[PlainProgress, io.StringIO]:
    out = io.StringIO()
    console = Console(file=out, width=40)  # narrower than the lines: they must not wrap
    noon = 12 * 3600.0
    progress = PlainProgress(
        label, console=console, interval_s=interval, clock=clock, wall=lambda: noon + clock.now, ticker=False
    )
    return progress, out


@pytest.fixture(autouse=True)
def _utc(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Lines start with the local time of day: the tests read it in UTC."""
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def test_a_phase_writes_its_start_a_line_per_interval_and_its_end() -> None:
    clock = FakeClock()
    progress, out = plain("{task.description}", 10.0, clock)
    with progress:
        advance = phases(progress)("supervised warm start (steps)", 100)
        for _ in range(25):
            clock.now += 1.0
            advance(1)
        clock.now += 25.0
        advance(25)
        clock.now += 50.0
        advance(50)
    assert out.getvalue().splitlines() == [
        "[12:00:00] supervised warm start (steps): started, 0/100",
        "[12:00:10] supervised warm start (steps): 10/100 (10%), 1.0/s, ETA 0:01:30, 0:00:10 elapsed",
        "[12:00:20] supervised warm start (steps): 20/100 (20%), 1.0/s, ETA 0:01:20, 0:00:20 elapsed",
        "[12:00:50] supervised warm start (steps): 50/100 (50%), 1.0/s, ETA 0:00:50, 0:00:50 elapsed",
        "[12:01:40] supervised warm start (steps): done, 100/100 in 0:01:40 (1.0/s)",
    ]


def test_the_running_phase_writes_a_line_each_interval_without_steps() -> None:
    """A measurement of total 1 or a slow RL step: the ticker's line says the job is alive; a phase that
    stopped short of its total is no longer the running one and ends, timed to its last step, at close."""
    clock = FakeClock()
    progress, out = plain("[bold]train[/] {task.description}", 30.0, clock)
    with progress:
        phase = phases(progress)
        warm = phase("warm start", 10)
        clock.now += 40.0
        warm(4)  # the validation target reached: no more steps
        measure = phase("EX before RL", 1)
        for _ in range(7):
            clock.now += 10.0
            progress.tick()
        measure(1)
        clock.now += 100.0
        progress.tick()  # between phases: nothing runs, nothing is written
    lines = [line.split("] ", 1)[1] for line in out.getvalue().splitlines()]
    assert lines == [
        "train warm start: started, 0/10",
        "train warm start: 4/10 (40%), 10.0 s each, ETA 0:01:00, 0:00:40 elapsed",
        "train EX before RL: started, 0/1",
        "train EX before RL: 0/1 (0%), 0:00:30 elapsed",
        "train EX before RL: 0/1 (0%), 0:01:00 elapsed",
        "train EX before RL: done, 1/1 in 0:01:10 (70.0 s each)",
        "train warm start: ended at 4/10 after 0:00:40",
    ]


def test_interval_zero_writes_every_step_and_labels_without_the_description_name_the_task() -> None:
    clock = FakeClock()
    progress, out = plain("rollout", 0.0, clock)
    with progress:
        job = progress.add_task("episodes", total=3)
        for _ in range(3):
            clock.now += 2.0
            progress.update(job, advance=1)
        empty = progress.add_task("nothing to do", total=0)
        del empty
    lines = [line.split("] ", 1)[1] for line in out.getvalue().splitlines()]
    assert lines == [
        "rollout: episodes: started, 0/3",
        "rollout: episodes: 1/3 (33%), 2.0 s each, ETA 0:00:04, 0:00:02 elapsed",
        "rollout: episodes: 2/3 (67%), 2.0 s each, ETA 0:00:02, 0:00:04 elapsed",
        "rollout: episodes: done, 3/3 in 0:00:06 (2.0 s each)",
        "rollout: nothing to do: started, 0/0",
        "rollout: nothing to do: done, 0/0 in 0:00:00",
    ]


def test_an_outer_count_writes_when_it_advances_not_on_the_ticker() -> None:
    clock = FakeClock()
    progress, out = plain("{task.description}", 5.0, clock)
    with progress:
        phase = phases(progress)
        arms = phase("ablation arms", 2)
        for arm in range(2):
            inner = phase(f"arm {arm} (RL steps)", 1)
            clock.now += 20.0
            inner(1)
            progress.tick()  # the arm's phase is done: the outer count waits for its own step
            arms(1)
    lines = [line.split("] ", 1)[1] for line in out.getvalue().splitlines()]
    assert lines == [
        "ablation arms: started, 0/2",
        "arm 0 (RL steps): started, 0/1",
        "arm 0 (RL steps): done, 1/1 in 0:00:20 (20.0 s each)",
        "ablation arms: 1/2 (50%), 20.0 s each, ETA 0:00:20, 0:00:20 elapsed",
        "arm 1 (RL steps): started, 0/1",
        "arm 1 (RL steps): done, 1/1 in 0:00:20 (20.0 s each)",
        "ablation arms: done, 2/2 in 0:00:40 (20.0 s each)",
    ]


def test_the_ticker_thread_writes_while_a_phase_runs() -> None:
    out = io.StringIO()
    progress = PlainProgress("{task.description}", console=Console(file=out), interval_s=0.01)
    with progress:
        progress.add_task("waiting", total=1)
        deadline = time.monotonic() + 5
        while out.getvalue().count("waiting: 0/1") < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
    assert out.getvalue().count("waiting: 0/1") >= 2
    assert out.getvalue().splitlines()[-1].endswith("waiting: ended at 0/1 after 0:00:00")


def test_the_display_follows_the_stream_and_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(MODE_ENV, raising=False)
    monkeypatch.delenv(INTERVAL_ENV, raising=False)
    monkeypatch.setenv(HF_BARS_ENV, "0")  # keep this process's Hugging Face bars as they are
    monkeypatch.delenv("TERM", raising=False)
    file_console = Console(file=io.StringIO())
    terminal = Console(file=io.StringIO(), force_terminal=True)
    assert progress_mode(file_console) == "plain"
    assert progress_mode(terminal) == "rich"
    assert isinstance(progress_bar("x", console=file_console), PlainProgress)
    rich_bar = progress_bar("x", console=terminal)
    assert not isinstance(rich_bar, PlainProgress)
    assert not rich_bar.disable
    assert progress_bar("x", console=file_console, quiet=True).disable  # --json: nothing at all
    monkeypatch.setenv(MODE_ENV, "rich")
    assert progress_mode(file_console) == "rich"
    monkeypatch.setenv(MODE_ENV, "OFF")
    bar: Progress = progress_bar("x", console=terminal)
    assert bar.disable
    monkeypatch.setenv(MODE_ENV, "plain")
    assert progress_mode(terminal) == "plain"
    monkeypatch.setenv(MODE_ENV, "lines")
    with pytest.raises(ConfigError, match="PROGRESS_SQL_PROGRESS must be one of auto, rich, plain, off"):
        progress_mode(terminal)
    assert progress_interval() == 30.0
    monkeypatch.setenv(INTERVAL_ENV, "2.5")
    assert progress_interval() == 2.5
    for bad in ("soon", "-1", "nan"):
        monkeypatch.setenv(INTERVAL_ENV, bad)
        with pytest.raises(ConfigError, match="PROGRESS_SQL_PROGRESS_INTERVAL"):
            progress_interval()


def test_hugging_face_bars_are_turned_off_through_their_own_switches(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    hub = types.SimpleNamespace(disable_progress_bars=lambda: calls.append("hub"))
    hf_logging = types.SimpleNamespace(disable_progress_bar=lambda: calls.append("transformers"))
    monkeypatch.setitem(sys.modules, "huggingface_hub.utils", hub)
    monkeypatch.setitem(sys.modules, "transformers.utils.logging", hf_logging)
    monkeypatch.delenv(HF_BARS_ENV, raising=False)
    quiet_third_party_bars()
    assert calls == ["hub", "transformers"]
    assert os.environ[HF_BARS_ENV] == "1"  # for a hub imported later in the process
    calls.clear()
    monkeypatch.setenv(HF_BARS_ENV, "0")  # the user's own choice wins
    quiet_third_party_bars()
    assert calls == []
