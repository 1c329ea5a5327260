"""Schema-derived question/SQL templates over SQLite databases, and the splits of the default run.

A from-scratch model cannot learn English from the ~50 real questions a Spider database has, so the
``train`` command teaches it with questions generated from the schema alone: table and column names,
keys and values sampled from the database (:mod:`progress_sql.data.introspect`, read-only).
Eleven families (:data:`FAMILIES`, :mod:`.families`: one table entry per family with its SQL and
paraphrase templates), two or three English paraphrases each, written in Spider's SQL style
(upper-case keywords, lower-case identifiers, ``a , b`` projections, ``T1`` / ``T2`` aliases).
Every generated SQL is run through the safe executor and kept only when it runs without error and
returns at least one row (an empty result would let a wrong prediction "match" it).

Splits (:func:`build_dataset`, :mod:`.splits`):

* ``heldout_new_combo``: a fifth of the *combinations* (family, table, columns) of each family, held
  out entirely: no training pair has that combination.
* ``heldout_new_value``: pairs whose combination is seen in training but whose SQL (value, operator,
  sort direction or aggregate) never is; all paraphrases of such a SQL are held out together.
* ``train``: the remaining pairs, **balanced across families**: each family contributes the same
  number of training pairs (``per_family``), sampled round-robin over its combinations when it has
  more, and repeated (whole passes in a fixed shuffled order) when its schema offers fewer distinct
  pairs (e.g. ``count`` has one SQL per table). :meth:`TemplateDataset.family_counts` reports both.
* ``real_train`` / ``real_test``: the real questions split 60/40 by normalized SQL, so paraphrase
  pairs of one query never straddle the split.

The family of a template example is recorded in ``Example.difficulty`` (e.g. ``"fk_join"``), so the
evaluation harness's difficulty breakdown gives a per-family breakdown; real examples keep theirs.

>>> from progress_sql.data.embedded import embedded_databases
>>> data = build_dataset(embedded_databases(), seed=0)
>>> sorted({example.difficulty for example in data.train}) == sorted(FAMILIES)
True
>>> len(data.heldout_new_combo), len(data.heldout_new_value)
(150, 150)
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
