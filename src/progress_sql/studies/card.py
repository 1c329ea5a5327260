"""The Hugging Face model card ``train`` writes into the saved model folder (docs/training.md#the-model-card).

:func:`model_card_facts` (pure) reads a run's ``summary.json`` content into a :class:`ModelCardFacts`:
the base model and its licence, the training data and theirs, the leakage guard's verdict, the settings,
and the held-out figures of the saved weights with their decoding, n, standard error, comparison preset
and checkpoint-selection rule. :func:`model_card_text` (pure) writes them in the Hub's format, the
YAML front matter through ``huggingface_hub``'s ``ModelCardData`` (``eval_results`` become the
``model-index`` the Hub reads), and :func:`write_model_card` is the I/O edge.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from progress_sql.data.tasks import CC_BY_SA, task_licence
from progress_sql.models import ModelOrigin, model_origin

#: The comparison preset of every EX figure ``train`` measures (``training.evaluate.ex_store``'s default).
EX_PRESET = "strict"
#: How ``train`` decodes its held-out measurements.
EX_DECODING = "greedy"
#: The embedded default's data: template questions over two Spider dev databases shipped in the package.
EMBEDDED_DATA = "progress-sql embedded templates (Spider's concert_singer and pets_1)"
#: What ``training.recipe``'s guard says when it keeps the supervised checkpoint in ``final/``.
SUPERVISED_KEPT = "the supervised checkpoint is kept"


@dataclass(frozen=True, slots=True)
class HeldOutFigure:
    """One held-out EX figure of the saved weights: the set, its dataset, n, EX and its standard error."""

    set: str
    dataset: str
    n: int
    correct: int
    ex: float
    se: float


@dataclass(frozen=True, slots=True)
class ModelCardFacts:
    """Everything a trained model's card states, read from the run's summary."""

    model: str
    base: ModelOrigin | None  # None: trained from scratch (the embedded default)
    data: str
    data_licence: str
    stage: str  # which weights the folder holds: "after RL", or the warm start the guard kept
    figures: tuple[HeldOutFigure, ...]
    change: Mapping[str, Any] | None  # summary.json's ``heldout``: the paired change and its SE
    leakage: Mapping[str, Any]
    selection: str
    rl_temperature: float | None
    turns: int | None
    settings: Mapping[str, Any]
    guard: str
    versions: Mapping[str, str]


def model_card_facts(
    summary: Mapping[str, Any], base: ModelOrigin | None, *, data: str, data_licence: str
) -> ModelCardFacts:
    """The facts of a ``train`` run's ``summary.json`` content (``summary``), the saved weights' base
    model (None: trained from scratch) and the training data with its licence."""
    settings = summary.get("settings") or {}
    guard = str(summary.get("guard") or "")
    supervised = SUPERVISED_KEPT in guard
    measured = summary.get("ex_before" if supervised else "ex_after") or {}
    heldout = settings.get("heldout") or {}
    task = str(heldout.get("task") or settings.get("task") or "")
    figures = tuple(
        HeldOutFigure(
            set=name,
            dataset=_dataset_of(name, task),
            n=int(value["n"]),
            correct=int(value["correct"]),
            ex=float(value["ex"]),
            se=float(value["se"]),
        )
        for name, value in measured.items()
    )
    reward = settings.get("reward")
    chosen = (summary.get("rl_selection") or {}).get(reward) or {}
    rule = chosen.get("rule") or settings.get("rl_select") or "last"
    selection = (
        f"the best of the validation checks every {chosen.get('every')} steps (kept: step {chosen.get('chosen_step')} "
        f"of {chosen.get('last_step')}; a later check must be strictly better)"
        if rule == "validation" and chosen
        else "the last RL step"
    )
    return ModelCardFacts(
        model=str(settings.get("model") or summary.get("model") or ""),
        base=base,
        data=data,
        data_licence=data_licence,
        stage="the warm start (RL lowered held-out EX; the guard kept the supervised checkpoint)"
        if supervised
        else "after RL",
        figures=figures,
        change=None if supervised else summary.get("heldout"),
        leakage=summary.get("leakage") or {},
        selection=selection,
        rl_temperature=settings.get("temperature"),
        turns=settings.get("turns"),
        settings={k: v for k, v in settings.items() if v is not None and not isinstance(v, dict | list)},
        guard=guard,
        versions=summary.get("versions") or {},
    )


def _dataset_of(name: str, task: str) -> str:
    """The dataset a held-out set is drawn from: the run's held-out task, Spider dev for the embedded
    default's real questions, the embedded templates otherwise."""
    if task:
        return task
    return "spider-dev" if name == "real_test" else "progress-sql-embedded-templates"


def metric_name(figure: HeldOutFigure) -> str:
    """The metric's name on the card: what was measured, how it was decoded, under which preset, on how many."""
    return f"EX ({EX_DECODING}, single turn, preset {EX_PRESET}, n={figure.n})"


def model_card_text(facts: ModelCardFacts) -> str:
    """The ``README.md`` of a trained model folder: YAML front matter (licence, base model, datasets,
    tags, held-out EX as ``eval_results``) built by ``huggingface_hub.ModelCardData``, then the text."""
    from huggingface_hub import EvalResult, ModelCard, ModelCardData

    results = [
        EvalResult(
            task_type="text-to-sql",
            task_name="Text-to-SQL",
            dataset_type=figure.dataset,
            dataset_name=f"{figure.dataset} held-out set {figure.set}",
            dataset_split=figure.set,
            metric_type="execution_accuracy",
            metric_value=figure.ex,
            metric_name=metric_name(figure),
            metric_config=EX_PRESET,
            metric_args={
                "decoding": EX_DECODING,
                "temperature": 0.0,
                "samples": 1,
                "turns": 1,
                "n": figure.n,
                "correct": figure.correct,
                "se": figure.se,
                "preset": EX_PRESET,
                "selection": facts.selection,
            },
        )
        for figure in facts.figures
    ]
    name = f"progress-sql {facts.model}"
    data = ModelCardData(
        model_name=name,
        license=facts.base.licence if facts.base is not None else "unknown",
        base_model=facts.base.hub_id if facts.base is not None else None,
        datasets=sorted({figure.dataset for figure in facts.figures}) or None,
        language=["en"],
        library_name="transformers",
        pipeline_tag="text-generation",
        tags=["text-to-sql", "sql", "reinforcement-learning", "grpo", "progress-sql"],
        metrics=["execution_accuracy"],
        eval_results=results or None,
        progress_sql={
            "leakage": str(facts.leakage.get("decision", "not recorded")),
            "training_data": facts.data,
            "training_data_licence": facts.data_licence,
            "selection": facts.selection,
            "preset": EX_PRESET,
        },
    )
    return str(ModelCard(f"---\n{data.to_yaml()}\n---\n\n{_body(facts, name)}"))


def _body(facts: ModelCardFacts, name: str) -> str:
    lines = [
        f"# {name}",
        "",
        f"A Text-to-SQL policy trained with `progress-sql train` (multi-turn GRPO with ODT feedback and the "
        f"progressive reward); this folder holds the weights {facts.stage}.",
        "",
        "## Base model and licences",
        "",
        _base_text(facts),
        "",
        f"Training data: {facts.data}, licence {facts.data_licence}"
        + (
            " (Spider and BIRD are CC BY-SA 4.0, <https://creativecommons.org/licenses/by-sa/4.0/>)."
            if facts.data_licence == "cc-by-sa-4.0"
            else " (progress-sql records no licence for it: check the source's own terms)."
            if facts.data_licence == "unknown"
            else "."
        ),
        "",
        "## Held-out execution accuracy",
        "",
        *_figure_lines(facts),
        "",
        "## Leakage guard",
        "",
        _leakage_text(facts.leakage),
        "",
        "## Settings",
        "",
        "| setting | value |",
        "|---|---|",
        *(f"| {key} | {value} |" for key, value in sorted(facts.settings.items())),
        "",
        "Written with " + ", ".join(f"{k} {v}" for k, v in sorted(facts.versions.items())) + ". The run folder's "
        "`summary.json` and `report.md` hold every figure (docs/training.md).",
        "",
    ]
    return "\n".join(lines)


def _base_text(facts: ModelCardFacts) -> str:
    if facts.base is None:
        return (
            f"Base model: none, `{facts.model}` was built from a config and trained from scratch by this run; no "
            "base model's licence applies, and none is stated for these weights (`license: unknown`)."
        )
    base = facts.base
    where = f"`{base.hub_id}`" if base.hub_id else f"`{base.name}`"
    licence = (
        f"licence {base.licence} (from {base.licence_source}), which these weights keep"
        if base.licence != "unknown"
        else f"licence unknown ({base.licence_source}): check the base model's own terms"
    )
    return f"Base model: {where}, {licence}."


def _figure_lines(facts: ModelCardFacts) -> Sequence[str]:
    if not facts.figures:
        return ["Not measured in this run (several training processes: measure the folder with `progress-sql eval`)."]
    lines = [
        f"Decoding {EX_DECODING} (temperature 0, one sample, one turn), comparison preset `{EX_PRESET}`, checkpoint "
        f"selection: {facts.selection}. RL sampled at temperature {facts.rl_temperature} with at most "
        f"{facts.turns} turns.",
        "",
        "| set | dataset | n | EX | SE |",
        "|---|---|---|---|---|",
        *(
            f"| {f.set} | {f.dataset} | {f.n} | {100 * f.ex:.1f}% ({f.correct}) | {100 * f.se:.1f} |"
            for f in facts.figures
        ),
    ]
    change = facts.change
    if change:
        lines += [
            "",
            f"Paired change by RL on the pooled held-out sets ({', '.join(change.get('sets') or [])}; n = "
            f"{change.get('n')}): {100 * float(change['ex_before']):.1f}% -> {100 * float(change['ex_after']):.1f}%, "
            f"{100 * float(change['diff']):+.1f} points, paired SE {100 * float(change['se_diff']):.1f} "
            f"({'above' if change.get('significant') else 'not above'} 2 SE).",
        ]
    if facts.guard:
        lines += ["", f"Guard: {facts.guard}."]
    return lines


def _leakage_text(leakage: Mapping[str, Any]) -> str:
    decision = leakage.get("decision", "not recorded")
    if decision == "not applied":
        return f"Not applied: {leakage.get('reason', '')}"
    files = len(leakage.get("evaluation_files") or ())
    if decision == "clean" and not files:
        return (
            "Clean against nothing: no evaluation questions file was found beside the training data (give "
            "`--eval-data-dir`), so no evaluation set was checked."
        )
    if decision == "clean":
        return f"Clean: no training database is an evaluation database ({files} evaluation files read)."
    if decision == "allowed":
        return (
            f"**Allowed** with `--allow-eval-overlap`: {len(leakage.get('overlaps') or ())} overlaps with "
            "evaluation databases; do not score this model on the overlapping evaluation sets."
        )
    return str(decision)


def model_folder(out: Path) -> Path | None:
    """The folder a run saved its model in: ``final/`` (the embedded default's guard) or ``rl/final/``."""
    saved = (folder for folder in (out / "final", out / "rl" / "final") if (folder / "config.json").is_file())
    return next(saved, None)


def write_model_card(folder: Path, facts: ModelCardFacts) -> Path:
    """Write ``facts``' card to ``README.md`` in ``folder`` (the model folder is the run's own: written each run)."""
    card = folder / "README.md"
    card.write_text(model_card_text(facts), encoding="utf-8")
    return card


def write_run_card(out: Path, summary: Mapping[str, Any], *, embedded: bool) -> Path | None:
    """Write the card of the model the run in ``out`` saved (``summary``: its ``summary.json`` content);
    None when the run saved no model folder (several processes: the main one writes, if any)."""
    folder = model_folder(out)
    if folder is None:
        return None
    settings = summary.get("settings") or {}
    model = str(settings.get("model") or summary.get("model") or "")
    task = str(settings.get("task") or "")
    if embedded:
        facts = model_card_facts(summary, None, data=EMBEDDED_DATA, data_licence=CC_BY_SA)
    else:
        questions = settings.get("questions")
        data = (task + (f" (questions file {questions})" if questions else "")) if task else "not recorded"
        facts = model_card_facts(summary, model_origin(model), data=data, data_licence=task_licence(task))
    return write_model_card(folder, facts)
