"""Run folders read back, one typed reader per kind beside the writers (:mod:`progress_sql.runfolder`,
``evaluation.run.write_eval_run``, ``studies.report.write_train_run``): :func:`read_summary` and
:func:`read_jsonl` for any run (``view``), :func:`read_eval` (an eval run's typed summary and samples:
``compare-runs``), and the scored episodes of a rollout, eval or train run (:func:`read_episodes`:
``inspect``). A folder that is not what it should be is a DatasetError or ConfigError that says why; so
is one whose last run was interrupted (``interrupted.json``), whatever files it holds."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from progress_sql import jsonio
from progress_sql.data.tasks import resolve_task
from progress_sql.errors import ConfigError, DatasetError
from progress_sql.evaluation.run import EvalSummary
from progress_sql.runfolder import ROLLOUTS_FILE, RUN_FILES, RUN_KINDS, SUMMARY_FILE, RunFolder, RunKind
from progress_sql.types import Example


def read_json(path: Path) -> Any:
    """A run file's JSON; DatasetError says what is missing or broken."""
    if not path.exists():
        raise DatasetError(f"{path.parent} is not a complete run folder: {path.name} is missing")
    return jsonio.read_json(path, "run file")


def read_jsonl(path: Path, *, required: bool = True) -> list[dict[str, Any]] | None:
    """A run file's JSON lines (objects, split on ``\\n`` alone); DatasetError when it cannot be read
    (None: absent and not ``required``)."""
    if not path.exists():
        if not required:
            return None
        raise DatasetError(f"{path.parent} is not a complete run folder: {path.name} is missing")
    records: list[dict[str, Any]] = jsonio.read_json_lines(path, "run file", objects=True)
    return records


def read_summary(run: Path) -> dict[str, Any]:
    """``summary.json`` of a run folder; DatasetError when it is absent or older than the layout."""
    if not run.is_dir():
        raise DatasetError(f"run folder not found: {run}")
    RunFolder(run).check_complete()
    data = read_json(run / SUMMARY_FILE)
    if not isinstance(data, dict):
        raise DatasetError(f"{run / SUMMARY_FILE} is not a JSON object")
    missing = [key for key in ("command", "settings", "versions") if key not in data]
    if missing:
        raise DatasetError(
            f"{run / SUMMARY_FILE} lacks {', '.join(missing)}: the folder was written by an older progress-sql "
            "(before every command wrote summary.json with command, settings and versions); run the command again"
        )
    return data


@dataclass(frozen=True, slots=True)
class EvalRun:
    """An eval run folder read back: its summary and its ``samples.jsonl`` records by example index."""

    path: Path
    summary: EvalSummary
    samples: Mapping[int, Mapping[str, Any]]


def read_eval(path: Path) -> EvalRun:
    """Read a folder written by :func:`~progress_sql.evaluation.run.write_eval_run`; DatasetError says
    what is missing or broken."""
    folder = RunFolder(path)
    folder.check_complete()
    try:
        summary = EvalSummary.from_dict(folder.read_summary())
        samples = {int(s["index"]): s for s in folder.read_records()}
    except FileNotFoundError as error:
        raise DatasetError(f"{path} is not an eval run folder (missing {Path(error.filename).name})") from error
    except KeyError as error:
        raise DatasetError(f"{path} is not an eval run folder (summary.json lacks {error})") from error
    except DatasetError:
        raise
    except (OSError, ValueError, TypeError) as error:
        raise DatasetError(f"cannot read the run in {path}: {error}") from error
    return EvalRun(path, summary, samples)


@dataclass(frozen=True, slots=True)
class RunEpisode:
    """One scored episode of a run, whatever its kind: its example, its turns (``TurnRecord`` dicts),
    its reward, the reward that scored it and the run's own test-suite verdict when it recorded one;
    ``label`` says where it came from (a training run's step and reward run)."""

    example: Example
    turns: tuple[Mapping[str, Any], ...]
    reward: float
    reward_name: str
    recorded_suite_match: bool | None = None
    label: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class LoadedRun:
    """A run folder read for inspection: its kind, its episodes, and the settings its gold store needs."""

    kind: RunKind
    episodes: list[RunEpisode]
    total: int  # records in the run (scored or not)
    task: str | None
    data_dir: Path | None
    preset: str
    timeout_s: float
    suite: str | None  # the suite the run itself judged with
    recorded_suite: bool = False  # the episodes carry the run's own suite verdicts
    profile: str | None = None  # the profile it ran under (:func:`run_profile`)


def _lines(path: Path) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = jsonio.read_json_lines(path, "run file", objects=True)
    return records


def _task_examples(task: str | None, data_dir: Path | None, db_root: str | None = None) -> dict[int, Example]:
    if task is None:
        raise ConfigError("the run names no task: give --task (and --data-dir)")
    return {e.index: e for e in resolve_task(task, data_dir, db_root=db_root)[1]}


def _reward_total(record: Mapping[str, Any]) -> float:
    return float((record.get("reward") or {}).get("total", 0.0))


def read_rollout(folder: Path, records: list[dict[str, Any]], run: Mapping[str, Any], task: str | None,
                  data_dir: Path | None) -> LoadedRun:  # fmt: skip
    """``progress-sql rollout --out`` and ``eval --turns`` (its episodes are a rollout's): episode records
    with turns; the examples from the run's task."""
    kind: RunKind = "eval-turns" if run.get("command") == "eval-turns" else "rollout"
    if records and "turns" not in records[0]:
        raise ConfigError(f"{folder} holds no episode records (turns): not a {kind} run")
    settings = run.get("settings", {})
    task = task or settings.get("task")
    data_dir = data_dir or (Path(settings["data_dir"]) if settings.get("data_dir") else None)
    examples = _task_examples(task, data_dir)
    reward_name = (settings.get("reward") or {}).get("name", "progressive")
    episodes = [RunEpisode(examples[int(r["index"])], tuple(r["turns"]), _reward_total(r), reward_name)
                for r in records if r.get("status") == "ok" and int(r["index"]) in examples]  # fmt: skip
    return LoadedRun(kind, episodes, len(records), task, data_dir, settings.get("preset", "strict"),
                     float(settings.get("timeout_s", 30.0)), settings.get("suite"))  # fmt: skip


def read_eval_episodes(folder: Path, records: list[dict[str, Any]], run: Mapping[str, Any], task: str | None,
               data_dir: Path | None) -> LoadedRun:  # fmt: skip
    """``progress-sql eval --out``: one answer per example (the only sample or the vote's choice); its
    matched answers are inspected, as one-turn episodes of reward 1, with the eval's own suite verdict."""
    settings = run.get("settings", {})
    spec = settings.get("task") or {}
    task = task or spec.get("name")
    data_dir = data_dir or (Path(settings["data_dir"]) if settings.get("data_dir") else None)
    examples = _task_examples(task, data_dir, spec.get("db_root"))
    episodes = []
    for record in records:
        if record.get("status") != "scored" or not record.get("match") or int(record["index"]) not in examples:
            continue
        turn = {"turn": 1, "sql": record.get("sql"), "format_ok": True, "exec_status": "ok", "match": True,
                "verdict": record.get("verdict"), "f": record.get("f_struct") or 0.0, "response": ""}  # fmt: skip
        recorded = record.get("ts_match") if int(record.get("ts_databases") or 0) > 0 else None
        episodes.append(RunEpisode(examples[int(record["index"])], (turn,), 1.0, "progressive", recorded))
    limits, preset = settings.get("limits") or {}, (settings.get("preset") or {}).get("name", "strict")
    return LoadedRun("eval", episodes, len(records), task, data_dir, preset, float(limits.get("timeout_s", 30.0)),
                     settings.get("suite"), recorded_suite=bool(settings.get("suite")))  # fmt: skip


def read_train(folder: Path, records: list[dict[str, Any]], run: Mapping[str, Any], task: str | None,
                data_dir: Path | None) -> LoadedRun:  # fmt: skip
    """``progress-sql train --out``: the RL phases' episode logs (``rl/rollouts.jsonl``, and
    ``rl-<reward>/`` of a compared reward); each episode carries its example."""
    from progress_sql.export.formats import example_from_fields  # the environment's records: not for the page

    settings = run.get("settings", {})
    logs = sorted(folder.glob(f"rl*/{ROLLOUTS_FILE.removesuffix('.jsonl')}*.jsonl"))
    if not logs:
        raise ConfigError(f"{folder} is a train run without an episode log (rl/{ROLLOUTS_FILE}): train it again "
                          "with this version to inspect its rollouts")  # fmt: skip
    episodes, total = [], 0
    for log in logs:
        run_reward = log.parent.name.removeprefix("rl-") if log.parent.name != "rl" else settings.get("reward")
        for record in _lines(log):
            total += 1
            if record.get("status") != "ok":
                continue
            example = example_from_fields(record["example"], where=str(log))
            episodes.append(RunEpisode(example, tuple(record["turns"]), _reward_total(record),
                                       str(run_reward or "progressive"),
                                       label={"step": record.get("step"), "run_reward": run_reward}))  # fmt: skip
    return LoadedRun("train", episodes, total, task or settings.get("task"), data_dir, "strict",
                     float(settings.get("rollout_timeout") or 30.0), settings.get("suite"))  # fmt: skip


Reader = Callable[[Path, list[dict[str, Any]], Mapping[str, Any], str | None, Path | None], LoadedRun]
#: How each run kind is read (by the ``command`` of its summary.json).
READERS: dict[RunKind, Reader] = {
    "rollout": read_rollout,
    "eval": read_eval_episodes,
    "eval-turns": read_rollout,
    "train": read_train,
}


def read_episodes(source: Path, task: str | None = None, data_dir: Path | None = None) -> LoadedRun:
    """A run folder (or its ``samples.jsonl``) of any kind in :data:`READERS`; a ConfigError for a
    folder of another kind or none."""
    folder = source if source.is_dir() else source.parent
    run_folder = RunFolder(folder)
    run_folder.check_complete()
    if not run_folder.summary_path.is_file():
        raise ConfigError(f"no {RUN_FILES[0]} in {folder}: give the run folder of progress-sql "
                          f"{', '.join(RUN_KINDS)} (--out)")  # fmt: skip
    run = run_folder.read_summary()
    kind = run.get("command")
    if kind not in READERS:
        raise ConfigError(f"{folder} is a run folder of progress-sql {kind}: inspect reads the runs of "
                          f"{', '.join(RUN_KINDS)}")  # fmt: skip
    records_path = source if source.is_file() else run_folder.records_path
    records = _lines(records_path) if records_path.is_file() else []
    return replace(READERS[kind](folder, records, run, task, data_dir), profile=run_profile(run))


def run_profile(summary: Mapping[str, Any]) -> str | None:
    """The name of the profile a run ran under (its settings' ``profile``, docs/profiles.md); None: the
    run records none (a command without a profile, or a run written before profiles)."""
    recorded = (summary.get("settings") or {}).get("profile")
    return str(recorded["name"]) if isinstance(recorded, Mapping) and "name" in recorded else None
