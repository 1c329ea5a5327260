"""``progress-sql demo``: the ODT end to end on the paper's three-turn case study (Appendix G)."""

from __future__ import annotations

import json

import typer
from rich.panel import Panel

from progress_sql.cli._common import add_command, json_option, stdout, table
from progress_sql.cli.diagnose import diagnosis_record, print_diagnosis
from progress_sql.data import case_study
from progress_sql.odt import diagnose, prepare_gold


def demo_command(
    as_json: bool = json_option(),
) -> None:
    """Diagnose each turn of the paper's case study against its gold query and show F rising."""
    gold = prepare_gold(case_study.GOLD_SQL)  # parsed and profiled once, reused for every turn
    diagnoses = [diagnose(sql, gold) for sql in case_study.TURNS]
    if as_json:
        records = [
            {"turn": i, "sql": sql, **diagnosis_record(d)}
            for i, (sql, d) in enumerate(zip(case_study.TURNS, diagnoses, strict=True), start=1)
        ]
        typer.echo(json.dumps(records, indent=2))
        return
    stdout.print(Panel(case_study.QUESTION, title="question (Progress-SQL, Appendix G)", expand=False))
    stdout.print(Panel(case_study.GOLD_SQL, title="gold SQL (never shown to the policy)", expand=False))
    for turn, (sql, diagnosis) in enumerate(zip(case_study.TURNS, diagnoses, strict=True), start=1):
        stdout.rule(f"turn {turn}")
        stdout.print(Panel(sql, title=f"predicted SQL, turn {turn}", expand=False))
        print_diagnosis(diagnosis, title=f"turn {turn}")
    summary = table("alignment over the trajectory", ["turn", "F_struct", "F_lex", "F", "tags"])
    for turn, diagnosis in enumerate(diagnoses, start=1):
        summary.add_row(
            str(turn),
            f"{diagnosis.f_struct:.3f}",
            f"{diagnosis.f_lex:.3f}",
            f"{diagnosis.f:.3f}",
            str(len(diagnosis.tags)),
        )
    stdout.print(summary)
    delta = diagnoses[-1].f - diagnoses[0].f
    stdout.print(f"alignment improvement Delta = F(turn {len(diagnoses)}) - F(turn 1) = {delta:+.3f}")


def register(app: typer.Typer) -> None:
    add_command(app, "demo", demo_command)
