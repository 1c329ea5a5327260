"""A run folder as the page's data: the header (settings, versions, headline metrics with n and
standard errors), the table's items with their filter values and example views, and the plots.

One reader per command that writes a run folder (:data:`READERS`); each reads only files of the
folder, so the page never shows what the run did not record. A folder that lacks a file a reader
needs, or whose ``summary.json`` predates the run-folder layout, is a :class:`DatasetError` naming
what is missing."""

from __future__ import annotations

import base64
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from progress_sql.data.context import CONTEXT_FILE
from progress_sql.errors import DatasetError
from progress_sql.evaluation.stats import Accuracy
from progress_sql.runfolder import RECORDS_FILE, REPORT_FILE, SUMMARY_FILE
from progress_sql.runs.read import read_jsonl, read_summary, run_profile

#: The page data's layout version (the page's script checks it).
DATA_VERSION = 1
FacetKind = Literal["set", "range"]


@dataclass(frozen=True, slots=True)
class Metric:
    """One headline number; ``percent`` numbers are shares shown times 100."""

    label: str
    value: float | None
    n: int | None = None
    se: float | None = None
    percent: bool = True


@dataclass(frozen=True, slots=True)
class Facet:
    """A filter of the table: ``set`` picks values (an item with a list matches any of them),
    ``range`` a numeric interval."""

    key: str
    label: str
    kind: FacetKind = "set"


@dataclass(frozen=True, slots=True)
class ListColumn:
    key: str
    label: str
    wide: bool = False


@dataclass(frozen=True, slots=True)
class Item:
    """One row of the table: ``values`` feed the columns and facets, ``text`` the free-text search
    beyond the page's ``searched`` columns, ``detail`` the example view."""

    id: str
    values: Mapping[str, Any]
    text: str
    detail: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Page:
    """Everything the page shows, as embedded JSON."""

    kind: str
    title: str
    runs: Sequence[Mapping[str, Any]]
    metrics: Sequence[Metric]
    columns: Sequence[ListColumn]
    facets: Sequence[Facet]
    items: Sequence[Item]
    tables: Sequence[Mapping[str, Any]] = ()
    plots: Sequence[Mapping[str, str]] = ()
    notes: Sequence[str] = ()
    version: int = DATA_VERSION
    item_label: str = "examples"
    extra: Mapping[str, Any] = field(default_factory=dict)
    #: The columns of each table the example views name, once per database (``schemas[db][table]``):
    #: an example's context lists only its tables' names.
    schemas: Mapping[str, Mapping[str, Sequence[str]]] = field(default_factory=dict)
    #: The columns the free-text search reads besides each item's ``text`` (not repeated in it).
    searched: Sequence[str] = ("question", "sql")


# ---- reading files -------------------------------------------------------------------------------


def _require(summary: Mapping[str, Any], run: Path, *keys: str) -> None:
    missing = [key for key in keys if key not in summary]
    if missing:
        raise DatasetError(
            f"{run / SUMMARY_FILE} of this {summary['command']} run lacks {', '.join(missing)} "
            "(written by an older progress-sql); run the command again"
        )


def plots_of(run: Path) -> list[dict[str, str]]:
    """The run's PNG plots (top level of the folder) as data URIs, by file name."""
    return [
        {"name": path.name, "src": "data:image/png;base64," + base64.b64encode(path.read_bytes()).decode("ascii")}
        for path in sorted(run.glob("*.png"))
    ]


def _run_header(run: Path, summary: Mapping[str, Any]) -> dict[str, Any]:
    report = run / REPORT_FILE
    return {
        "path": str(run),
        "command": summary["command"],
        "profile": run_profile(summary),
        "settings": summary["settings"],
        "versions": summary["versions"],
        "report": report.read_text(encoding="utf-8") if report.is_file() else None,
    }


def proportion(label: str, value: Any, n: Any) -> Metric:
    """A share over ``n`` with its binomial standard error (:class:`Accuracy`'s)."""
    if not isinstance(value, (int, float)) or not isinstance(n, int) or n <= 0:
        return Metric(label, None if value is None else float(value), n if isinstance(n, int) else None)
    return Metric(label, float(value), n, Accuracy(n, round(value * n)).standard_error)


def mean_metric(label: str, values: Sequence[float]) -> Metric:
    """A mean with its standard error (sample standard deviation over sqrt(n))."""
    n = len(values)
    if not n:
        return Metric(label, None, 0, None, percent=False)
    mean = math.fsum(values) / n
    se = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (n - 1) / n) if n > 1 else None
    return Metric(label, mean, n, se, percent=False)


def _search_text(*parts: Any) -> str:
    return " ".join(str(p) for p in parts if p).lower()


def _contexts(run: Path, notes: list[str], schemas: dict[str, dict[str, Any]]) -> dict[int, dict[str, Any]]:
    """The example contexts by index, each with its schema excerpt as table names (the columns go
    into ``schemas`` once per database) and without what its record holds (index, predicted SQL)."""
    rows = read_jsonl(run / CONTEXT_FILE, required=False)
    if rows is None:
        notes.append(
            f"{CONTEXT_FILE} is missing (a run without the page, or from an older progress-sql): the questions, "
            "gold SQL, schema excerpts and result rows are not in this run folder, so the page does not show them."
        )
        return {}
    contexts = {}
    for row in rows:
        schema = row.get("schema") or {}
        schemas.setdefault(str(row.get("db_id")), {}).update(schema)
        kept = {k: v for k, v in row.items() if k not in ("index", "predicted_sql", "schema") and v is not None}
        contexts[int(row["index"])] = kept | {"tables": list(schema)}
    return contexts


# ---- one reader per command ------------------------------------------------------------------------


def _eval_page(run: Path, summary: dict[str, Any]) -> Page:
    _require(summary, run, "metrics")
    metrics = summary["metrics"]
    records = read_jsonl(run / RECORDS_FILE) or []
    notes: list[str] = list(summary.get("notes") or [])
    schemas: dict[str, dict[str, Any]] = {}
    contexts = _contexts(run, notes, schemas)
    scored = metrics.get("scored")
    headline = [
        proportion("EX", metrics.get("execution_accuracy"), scored),
        Metric("scored", scored, None, None, percent=False),
        Metric("examples", metrics.get("examples"), None, None, percent=False),
    ]
    if metrics.get("ts_scored"):
        headline.append(proportion("TS", metrics.get("test_suite_accuracy"), metrics["ts_scored"]))
    for k, value in (metrics.get("pass_at_k") or {}).items():
        if k != "1":
            headline.append(Metric(f"pass@{k}", value, scored))
    headline.append(proportion("valid SQL", metrics.get("valid_sql_rate"), scored))
    if metrics.get("format_rate") is not None:
        headline.append(proportion("format", metrics["format_rate"], scored))
    levels = [
        {"level": level, "scored": block.get("scored"), "matched": block.get("matched"),
         "EX": block.get("execution_accuracy"),
         "SE": proportion("", block.get("execution_accuracy"), block.get("scored")).se}
        for level, block in (metrics.get("by_level") or {}).items()
    ]  # fmt: skip
    items = []
    for record in records:
        index = int(record["index"])
        context = contexts.get(index, {})
        values = {
            "index": index, "db_id": record.get("db_id"), "level": record.get("level"),
            "verdict": record.get("verdict") or record.get("status"), "tags": record.get("tags") or [],
            "suite": _suite(record), "question": context.get("question"), "sql": record.get("sql"),
            "vote_share": record.get("vote_share"),
        }  # fmt: skip
        items.append(
            Item(
                f"#{index}",
                values,
                _search_text(context.get("gold_sql"), record.get("db_id")),
                {"record": record, "context": context or None},  # the page reads the answer's turn from the record
            )
        )
    return Page(
        "eval", f"Evaluation: {_task_name(summary)}", [_run_header(run, summary)], headline,
        [ListColumn("index", "#"), ListColumn("db_id", "database"), ListColumn("level", "level"),
         ListColumn("verdict", "verdict"),
         ListColumn("tags", "ODT tags"), ListColumn("question", "question", True),
         ListColumn("sql", "predicted SQL", True)],
        [Facet("verdict", "verdict"), Facet("level", "hardness / difficulty"), Facet("db_id", "database"),
         Facet("tags", "ODT tag"), Facet("suite", "suite verdict"), Facet("vote_share", "vote share", "range")],
        items, [{"title": "EX by level", "rows": levels}] if levels else [], plots_of(run), notes, schemas=schemas,
    )  # fmt: skip


def _suite(record: Mapping[str, Any]) -> str:
    if record.get("ts_match") is None:
        return "no suite"
    return "suite match" if record["ts_match"] else "suite mismatch"


def _task_name(summary: Mapping[str, Any]) -> str:
    task = summary["settings"].get("task")
    if isinstance(task, Mapping):
        return str(task.get("name"))
    return str(task)


def _rollout_page(run: Path, summary: dict[str, Any]) -> Page:
    _require(summary, run, "metrics")
    metrics = summary["metrics"]
    records = read_jsonl(run / RECORDS_FILE) or []
    notes: list[str] = []
    schemas: dict[str, dict[str, Any]] = {}
    contexts = _contexts(run, notes, schemas)
    scored = metrics.get("scored")
    headline = [proportion("first-turn EX", metrics.get("first_turn_accuracy"), scored)]
    headline += [
        proportion(f"success within {k} turn{'s' if k != '1' else ''}", share, scored)
        for k, share in (metrics.get("success_by_turn") or {}).items()
    ]
    rewards = [float(r["reward"]["total"]) for r in records if isinstance(r.get("reward"), Mapping)]
    headline += [
        mean_metric("mean reward", rewards),
        Metric("mean turns", metrics.get("mean_turns"), scored, None, percent=False),
        proportion("format", metrics.get("format_rate"), scored),
        Metric("scored", scored, None, None, percent=False),
    ]
    items = []
    for record in records:
        index = int(record["index"])
        context = contexts.get(index, {})
        turns = record.get("turns") or []
        last = turns[-1] if turns else {}
        tags = sorted({tag for turn in turns for tag in turn.get("tags") or []})
        reward = record.get("reward") or {}
        k_star = record.get("k_star")
        values = {
            "index": index, "db_id": record.get("db_id"), "status": record.get("status"),
            "verdict": last.get("verdict") or record.get("status"), "tags": tags,
            "first_match": "never" if k_star is None else f"turn {k_star}", "turns": len(turns),
            "reward": reward.get("total"), "question": context.get("question"), "sql": last.get("sql"),
        }  # fmt: skip
        text = _search_text(context.get("gold_sql"), record.get("db_id"), *(turn.get("sql") for turn in turns[:-1]))
        # the example view reads the turns from the record; the last turn's copy of the trajectory's reward is left out
        record = record | {"turns": [_without_reward_copy(turn, reward) for turn in turns]}
        items.append(Item(f"#{index}", values, text, {"record": record, "context": context or None}))
    return Page(
        "rollout", f"Rollout: {_task_name(summary)}", [_run_header(run, summary)], headline,
        [ListColumn("index", "#"), ListColumn("db_id", "database"), ListColumn("first_match", "first match"),
         ListColumn("turns", "turns"), ListColumn("reward", "reward"), ListColumn("tags", "ODT tags (any turn)"),
         ListColumn("question", "question", True), ListColumn("sql", "last SQL", True)],
        [Facet("verdict", "final verdict"), Facet("first_match", "turn of first match"), Facet("db_id", "database"),
         Facet("tags", "ODT tag"), Facet("status", "status"), Facet("reward", "reward", "range")],
        items, (), plots_of(run), notes, schemas=schemas,
    )  # fmt: skip


def _without_reward_copy(turn: Mapping[str, Any], reward: Mapping[str, Any]) -> Mapping[str, Any]:
    return {k: v for k, v in turn.items() if k != "reward"} if turn.get("reward") == reward else turn


def _train_page(run: Path, summary: dict[str, Any]) -> Page:
    records = read_jsonl(run / RECORDS_FILE) or []
    heldout = summary.get("heldout") or {}
    headline: list[Metric] = []
    if heldout:
        n = heldout.get("n")
        headline += [
            Metric("held-out EX before RL", heldout.get("ex_before"), n, heldout.get("se_before")),
            Metric("held-out EX after RL", heldout.get("ex_after"), n, heldout.get("se_after")),
            Metric("paired change", heldout.get("diff"), n, heldout.get("se_diff")),
        ]
    last = summary.get("heldout_last_step")
    if last:  # the kept weights are another step's: the last step's EX beside them
        headline.append(Metric("held-out EX, last RL step", last.get("ex_after"), last.get("n"), last.get("se_after")))
    sets = []
    for name, before in (summary.get("ex_before") or {}).items():
        after = (summary.get("ex_after") or {}).get(name) or {}
        sets.append({"set": name, "n": before.get("n"), "EX before": before.get("ex"), "SE before": before.get("se"),
                     "EX after": after.get("ex"), "SE after": after.get("se")})  # fmt: skip
    tables = [{"title": "held-out EX by set (greedy, single turn)", "rows": sets}] if sets else []
    for reward, selection in (summary.get("rl_selection") or {}).items():
        rows = [{"step": c.get("step"), "validation EX": c.get("validation_ex"),
                 "kept": "kept" if c.get("step") == selection.get("chosen_step") else ""}
                for c in selection.get("checks") or []]  # fmt: skip
        tables.append({"title": f"RL checkpoint selection ({reward}, --rl-select {selection.get('rule')})",
                       "rows": rows})  # fmt: skip
    items = []
    for number, record in enumerate(records):
        components = {k.split("/")[1]: v for k, v in record.items() if k.startswith("rewards/") and k.endswith("/mean")}
        values = {
            "step": record.get("step"), "run_reward": record.get("run_reward"), "reward": record.get("reward"),
            "components": ", ".join(f"{k} {_short(v)}" for k, v in components.items()),
            "success": record.get("trajectory/success"), "loss": record.get("loss"),
        }  # fmt: skip
        items.append(
            Item(
                f"step {record.get('step', number)}",
                values,
                _search_text(record.get("run_reward"), record.get("step")),
                {"record": record, "reward": {"components": components, "total": record.get("reward")}},
            )
        )
    return Page(
        "train", f"Training: {summary['settings'].get('model')}", [_run_header(run, summary)], headline,
        [ListColumn("step", "step"), ListColumn("run_reward", "reward function"), ListColumn("reward", "mean reward"),
         ListColumn("success", "success"), ListColumn("loss", "loss"),
         ListColumn("components", "components (mean)", True)],
        [Facet("run_reward", "reward function"), Facet("reward", "mean reward", "range")],
        items, tables, plots_of(run),
        [] if records else ["samples.jsonl has no RL steps (the run logged none)."], item_label="RL steps",
        searched=(),
    )  # fmt: skip


def _short(value: Any) -> str:
    return f"{value:.3g}" if isinstance(value, float) else str(value)


def _audit_page(run: Path, summary: dict[str, Any]) -> Page:
    _require(summary, run, "examples", "checks")
    records = read_jsonl(run / RECORDS_FILE) or []
    checks: Mapping[str, Any] = summary["checks"]
    n = summary.get("examples")
    headline = [
        Metric("examples", n, None, None, percent=False),
        proportion("with findings", (summary.get("with_findings") or 0) / n if n else None, n),
        Metric("database missing", summary.get("database_missing"), None, None, percent=False),
    ]
    table = [{"check": cid, "name": c.get("name"), "family": c.get("family"), "fired": c.get("fired")}
             for cid, c in checks.items()]  # fmt: skip
    items = []
    for record in records:
        index = int(record["index"])
        fired = [f"{cid} {checks.get(cid, {}).get('name', '')}".strip() for cid in record.get("fired") or []]
        values = {
            "index": index, "db_id": record.get("db_id"), "flags": fired or ["none"],
            "gold_status": record.get("gold_status"), "gold_rows": record.get("gold_rows"),
            "question": record.get("question"), "sql": record.get("gold_sql"),
        }  # fmt: skip
        context = {"question": record.get("question"), "gold_sql": record.get("gold_sql"), "db_id": record.get("db_id")}
        items.append(
            Item(
                f"#{index}",
                values,
                _search_text(record.get("db_id")),
                {"record": record, "context": context, "findings": record.get("findings") or []},
            )
        )
    return Page(
        "audit", f"Gold audit: {summary['settings'].get('task')}", [_run_header(run, summary)], headline,
        [ListColumn("index", "#"), ListColumn("db_id", "database"), ListColumn("flags", "audit flags"),
         ListColumn("gold_status", "gold"), ListColumn("question", "question", True),
         ListColumn("sql", "gold SQL", True)],
        [Facet("flags", "audit flag"), Facet("db_id", "database"), Facet("gold_status", "gold status")],
        items, [{"title": "checks", "rows": table}], plots_of(run), [],
    )  # fmt: skip


def _ablate_page(run: Path, summary: dict[str, Any]) -> Page:
    _require(summary, run, "arms")
    records = read_jsonl(run / RECORDS_FILE) or []
    headline = [Metric(f"EX {row.get('arm')}", row.get("ex"), row.get("n"), row.get("se")) for row in summary["arms"]]
    for seed, warm in (summary.get("warm_start") or {}).items():
        headline.append(Metric(f"warm start EX (seed {seed})", warm.get("ex"), warm.get("n"), warm.get("se")))
    items = []
    for record in records:
        values = {"arm": record.get("arm"), "seed": record.get("seed"), "ex": record.get("ex"), "n": record.get("n"),
                  "within_turns_ex": record.get("within_turns_ex"),
                  "change": (record.get("change_vs_warm") or {}).get("difference")}  # fmt: skip
        items.append(
            Item(
                f"{record.get('arm')} seed {record.get('seed')}",
                values,
                _search_text(record.get("arm")),
                {"record": record},
            )
        )
    return Page(
        "ablate", "Ablations", [_run_header(run, summary)], headline,
        [ListColumn("arm", "arm"), ListColumn("seed", "seed"), ListColumn("ex", "EX"), ListColumn("n", "n"),
         ListColumn("within_turns_ex", "EX within T turns"), ListColumn("change", "change vs warm start")],
        [Facet("arm", "arm"), Facet("seed", "seed"), Facet("ex", "EX", "range")],
        items, [{"title": "arms", "rows": list(summary["arms"])}], plots_of(run), [], item_label="arm runs",
        searched=(),
    )  # fmt: skip


#: The commands whose run folder the page reads, and their reader.
READERS: dict[str, Callable[[Path, dict[str, Any]], Page]] = {
    "eval": _eval_page,
    "rollout": _rollout_page,
    "eval-turns": _rollout_page,  # eval --turns: rollout's episodes with the evaluation's measures
    "train": _train_page,
    "audit": _audit_page,
    "ablate": _ablate_page,
}


def read_run(run: Path) -> Page:
    """The page data of one run folder (DatasetError: not a folder the page reads, or incomplete)."""
    summary = read_summary(run)
    reader = READERS.get(str(summary["command"]))
    if reader is None:
        raise DatasetError(f"{run} is a {summary['command']} run; the page reads runs of {', '.join(READERS)}")
    return reader(run, summary)


#: Labels of ``compare-runs``' headline keys.
COMPARE_LABELS = {
    "execution_accuracy": "EX",
    "test_suite_accuracy": "TS",
    "first_sample_accuracy": "first-sample EX",
    "valid_sql_rate": "valid SQL",
    "format_rate": "format",
    "odt_average": "ODT mismatch average",
}


def compare_page(run_a: Path, run_b: Path, comparison: Mapping[str, Any]) -> Page:
    """Two eval runs side by side: ``comparison`` is ``compare-runs``'s result (its headline, levels
    and changed examples); every example of both runs is an item with both answers."""
    a, b = read_run(run_a), read_run(run_b)
    for page, path in ((a, run_a), (b, run_b)):
        if page.kind != "eval":
            raise DatasetError(f"{path} is a {page.kind} run; two runs are compared when both are eval runs")
    changes = {int(c["index"]): str(c["change"]) for c in comparison["changed"]}
    by_index_b = {int(item.values["index"]): item for item in b.items}
    items = []
    for item_a in a.items:
        index = int(item_a.values["index"])
        item_b = by_index_b.get(index)
        if item_b is None:
            continue
        right_a, right_b = item_a.values["verdict"] == "match", item_b.values["verdict"] == "match"
        change = changes.get(index) or ("both right" if right_a and right_b else "both wrong")
        values = {
            "index": index, "db_id": item_a.values["db_id"], "level": item_a.values["level"], "change": change,
            "verdict_a": item_a.values["verdict"], "verdict_b": item_b.values["verdict"],
            "tags": sorted(set(item_a.values["tags"]) | set(item_b.values["tags"])),
            "question": item_a.values["question"], "sql_a": item_a.values["sql"], "sql_b": item_b.values["sql"],
        }  # fmt: skip
        detail = {"context": item_a.detail.get("context") or item_b.detail.get("context"),
                  "compare": {"a": {"record": item_a.detail.get("record")},
                              "b": {"record": item_b.detail.get("record")}}}  # fmt: skip
        items.append(Item(f"#{index}", values, item_a.text, detail))  # gold SQL and database, as in B's
    scored_a = next((m.n for m in a.metrics if m.label == "EX"), None)
    scored_b = next((m.n for m in b.metrics if m.label == "EX"), None)
    headline = []
    for key, pair in comparison["headline"].items():
        if pair.get("a") is None and pair.get("b") is None:
            continue
        label = COMPARE_LABELS.get(key, key)
        with_n = key == "execution_accuracy"  # the share over the scored examples; the others have other bases
        headline += [proportion(f"{label} A", pair["a"], scored_a if with_n else None),
                     proportion(f"{label} B", pair["b"], scored_b if with_n else None)]  # fmt: skip
    headline.append(Metric("fixed (wrong in A, right in B)", comparison["fixed"], percent=False))
    headline.append(Metric("broken (right in A, wrong in B)", comparison["broken"], percent=False))
    levels = [{"level": level, "EX A": pair["a"], "EX B": pair["b"], "B - A": pair["delta"]}
              for level, pair in comparison["by_level"].items()]  # fmt: skip
    notes = [*a.notes, *b.notes]
    if not comparison["same_task"] or not comparison["same_preset"]:
        notes.insert(0, "The runs differ in task or preset; differences mix both effects.")
    return Page(
        "compare", f"Compare: {run_a} vs {run_b}", [*a.runs, *b.runs], headline,
        [ListColumn("index", "#"), ListColumn("db_id", "database"), ListColumn("level", "level"),
         ListColumn("change", "change"),
         ListColumn("verdict_a", "verdict A"), ListColumn("verdict_b", "verdict B"),
         ListColumn("question", "question", True),
         ListColumn("sql_a", "SQL A", True), ListColumn("sql_b", "SQL B", True)],
        [Facet("change", "change"), Facet("verdict_a", "verdict A"), Facet("verdict_b", "verdict B"),
         Facet("level", "hardness / difficulty"), Facet("db_id", "database"), Facet("tags", "ODT tag (A or B)")],
        items, [{"title": "EX by level", "rows": levels}] if levels else [], [*a.plots, *b.plots], notes,
        schemas={db: {**a.schemas.get(db, {}), **b.schemas.get(db, {})} for db in {*a.schemas, *b.schemas}},
        searched=("question", "sql_a", "sql_b"),
    )  # fmt: skip
