"""Schema-derived question/SQL templates over SQLite databases (eleven families, :mod:`.families`),
and the splits of the default run (:func:`build_dataset`, :mod:`.splits`): a from-scratch model cannot
learn English from the ~50 real questions a database has. Families, fields and splits:
docs/architecture.md#the-template-dataset-trainingtemplates.
"""

from __future__ import annotations

from progress_sql.training.templates.families import FAMILIES, Draft, FamilySpec, Shape
from progress_sql.training.templates.splits import (
    TEMPLATE_SAMPLE,
    TemplateDataset,
    TemplatePair,
    build_dataset,
    folded_sql,
    generate_pairs,
    read_template_database,
    split_real,
)
from progress_sql.training.templates.wording import identifier, literal, spoken, words

__all__ = [
    "FAMILIES",
    "TEMPLATE_SAMPLE",
    "Draft",
    "FamilySpec",
    "Shape",
    "TemplateDataset",
    "TemplatePair",
    "build_dataset",
    "folded_sql",
    "generate_pairs",
    "identifier",
    "literal",
    "read_template_database",
    "split_real",
    "spoken",
    "words",
]
