"""What the ODT hands out: a gold's prepared reference and a prediction's diagnosis. Neither module
nor record needs the parser, so a process that only carries them (``eval``'s parent, which has them
built and diagnosed in analysis processes) never imports sqlglot: a reference that crossed a process
keeps its tree pickled until something reads it.
"""

from __future__ import annotations

import pickle
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from progress_sql.data.schema import Schema
from progress_sql.odt.config import OdtConfig
from progress_sql.odt.tags import Finding

if TYPE_CHECKING:
    from progress_sql.odt.build import OdtNode
    from progress_sql.sql.parse import ParseFailure

DiagnosisStatus = Literal["ok", "pred_unparsable", "gold_unparsable"]
_DEFAULT = OdtConfig()


@dataclass(frozen=True, slots=True, eq=False)
class GoldReference:
    """The gold query, parsed, profiled and tokenized once.

    ``packed_tree`` is the tree (an ``OdtNode``, or the ``ParseFailure`` of a gold that does not parse)
    or its pickled bytes: :attr:`tree` unpickles it on first use. Pickling a reference pickles its tree
    once, as bytes, so that a process it passes through on its way to another never unpickles it.
    """

    sql: str
    packed_tree: OdtNode | ParseFailure | bytes
    grams: frozenset[tuple[str, ...]]
    schema: Schema | None = None

    @property
    def tree(self) -> OdtNode | ParseFailure:
        tree = self.packed_tree
        if isinstance(tree, bytes):
            tree = pickle.loads(tree)
            object.__setattr__(self, "packed_tree", tree)  # a cache, not state: frozen otherwise
        assert not isinstance(tree, bytes)
        return tree

    def packed(self) -> bytes:
        """The tree as pickled bytes (what a copy of this reference in another process carries)."""
        tree = self.packed_tree
        return tree if isinstance(tree, bytes) else pickle.dumps(tree, protocol=pickle.HIGHEST_PROTOCOL)

    def with_schema(self, schema: Schema | None) -> GoldReference:
        """The same reference judged against ``schema`` (the tree is left as it is, packed or not)."""
        return GoldReference(self.sql, self.packed_tree, self.grams, schema)

    def __eq__(self, other: object) -> bool:  # the tree's value, packed or not
        if not isinstance(other, GoldReference):
            return NotImplemented
        same = (self.sql, self.grams, self.schema) == (other.sql, other.grams, other.schema)
        return same and self.tree == other.tree

    def __hash__(self) -> int:
        return hash((self.sql, self.grams))

    def __reduce__(self) -> tuple[type[GoldReference], tuple[object, ...]]:
        return (GoldReference, (self.sql, self.packed(), self.grams, self.schema))


@dataclass(frozen=True, slots=True)
class Diagnosis:
    """Everything the ODT says about one prediction.

    ``f_struct`` and ``features`` are for rewards and analysis; the policy only sees ``feedback``.
    """

    status: DiagnosisStatus
    f_struct: float
    f_lex: float
    tags: tuple[str, ...]
    features: Mapping[str, float] = field(default_factory=dict)
    reason: str | None = None
    #: Every tag with where it was found (``tags`` holds the distinct codes).
    findings: tuple[Finding, ...] = ()
    #: The config whose messages :attr:`feedback` uses.
    config: OdtConfig = field(default=_DEFAULT, repr=False)
    _feedback: str | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def feedback(self) -> str:
        """The next user turn (:func:`~progress_sql.odt.feedback.feedback_text` of the findings), built
        on first use: a reward loop that writes its own feedback (the environment's levels) never pays
        for it."""
        from progress_sql.odt.feedback import feedback_text

        text = self._feedback
        if text is None:
            text = feedback_text(self.findings, self.status, self.config)
            object.__setattr__(self, "_feedback", text)  # a cache, not state: frozen otherwise
        return text

    @property
    def f(self) -> float:
        """The combined alignment F = (F_struct + F_lex) / 2."""
        return (self.f_struct + self.f_lex) / 2
