"""Named profiles: everything a run decides about the environment, the ODT and the reward, defined once
per profile and read by every entry point. ``progress-sql`` is the project's default; ``paper`` sets what
the Progress-SQL paper states and states the choice it makes where the paper is silent. Each value says
whether it is the paper's (with where) or ours (and why); docs/profiles.md's table is printed from the
two definitions (``python -m progress_sql.profiles table``) and a test keeps it the same.

>>> PROFILES["paper"].odt_config().verdict, PROFILES["progress-sql"].odt_config().verdict
('syntax', 'engine')
>>> PROFILES["paper"].env_fields()["schema_profile"]
'ddl'
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from progress_sql.data.ddl import SCHEMA_PROFILES
from progress_sql.errors import ConfigError
from progress_sql.judge.compare import get_preset
from progress_sql.odt.config import PAPER_TAGS, OdtConfig, Verdict
from progress_sql.prompts import prompt_style
from progress_sql.registry import lookup
from progress_sql.rewards.progressive import ProgressiveConfig
from progress_sql.rewards.tasks import TaskTermsConfig
from progress_sql.sourced import Sourced, ours, paper, sourced_fields

#: The ODT refinements the paper's ODT does not have, by their :class:`OdtConfig` switch: four features
#: its profile p = (c, b, T, S, W, J, G, H, O) lacks (each has its own tag and weighs through its clause;
#: docs/odt.md step 5), CTEs scored where they are read (Appendix D matches them by name), implicit
#: joins read as joins, and nested queries found in every clause (Appendix D names four).
REFINEMENTS: tuple[str, ...] = (
    "select_order", "join_type", "nulls_order", "limit_values", "inline_ctes", "implicit_joins", "nested_everywhere",
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class Profile:
    """One named profile: each field a :class:`Sourced` value (whose it is, and why)."""

    name: str
    summary: str
    max_turns: Sourced[int]
    reward: Sourced[str]
    gamma: Sourced[float]
    prompt: Sourced[str]
    schema_profile: Sourced[str]
    feedback: Sourced[str]
    offer_ask: Sourced[bool]
    #: The comparison preset that decides a match during training (``judge/compare.py``).
    preset: Sourced[str]
    #: The trainer setting (``integrations/trainer_setting.py`` ``SETTINGS``) its recipes run with.
    trainer_setting: Sourced[str]
    odt_verdict: Sourced[Verdict]
    #: The :data:`REFINEMENTS` switched on.
    odt_refinements: Sourced[tuple[str, ...]]
    odt_alpha: Sourced[float]
    odt_set_op_weight: Sourced[float]
    #: The tags reported, in report order (None: the whole catalogue, in catalogue order).
    odt_tags: Sourced[tuple[str, ...] | None]
    odt_threshold: Sourced[float]

    def __post_init__(self) -> None:
        unknown = sorted(set(self.odt_refinements.value) - set(REFINEMENTS))
        if unknown:
            raise ConfigError(f"profile {self.name}: unknown ODT refinements {', '.join(unknown)}")
        if self.schema_profile.value not in SCHEMA_PROFILES:
            raise ConfigError(f"profile {self.name}: unknown schema profile {self.schema_profile.value!r}")
        prompt_style(self.prompt.value)
        # The reward's name is checked where it is built (rewards.registry.get_reward) and for both profiles
        # in tests/test_profiles.py: the registry imports the baseline rewards and with them sqlglot, which
        # eval's parent process must not load (tests/judge/test_analysis.py).
        get_preset(self.preset.value)
        self.odt_config()  # its own checks (verdict, tag names, ranges)
        self.progressive_config()

    def sourced(self) -> dict[str, Sourced[Any]]:
        """Every sourced field by name, in declaration order."""
        return sourced_fields(self)

    def odt_config(self) -> OdtConfig:
        """The ODT this profile runs."""
        tags, refinements = self.odt_tags.value, self.odt_refinements.value
        return OdtConfig(
            alpha=self.odt_alpha.value,
            set_op_weight=self.odt_set_op_weight.value,
            default_threshold=self.odt_threshold.value,
            verdict=self.odt_verdict.value,
            select_order="select_order" in refinements,
            join_type="join_type" in refinements,
            nulls_order="nulls_order" in refinements,
            limit_values="limit_values" in refinements,
            inline_ctes="inline_ctes" in refinements,
            implicit_joins="implicit_joins" in refinements,
            nested_everywhere="nested_everywhere" in refinements,
            tag_set=tags,
            tag_order=tags or (),
        )

    def progressive_config(self) -> ProgressiveConfig:
        """The progressive reward's weights (the formula is the reward's: ``progressive-paper`` is Eq. 1-4)."""
        return ProgressiveConfig(gamma=self.gamma.value)

    def env_fields(self) -> dict[str, Any]:
        """The :class:`~progress_sql.env.core.EnvConfig` fields this profile sets, as keyword arguments
        (``env/settings.py`` ``env_config_from_profile`` builds the config)."""
        return {
            "max_turns": self.max_turns.value,
            "preset": self.preset.value,
            "feedback": self.feedback.value,
            "schema_profile": self.schema_profile.value,
            "reward": self.reward.value,
            "progressive": self.progressive_config(),
            "odt": self.odt_config(),
            "tasks": TaskTermsConfig(offer_ask=self.offer_ask.value),
            "prompt": self.prompt.value,
        }

    def settings(self) -> dict[str, Any]:
        """The profile as plain data (a run's ``summary.json`` records it): its name and every value."""
        values = {name: item.value for name, item in self.sourced().items()}
        return {"name": self.name} | {k: list(v) if isinstance(v, tuple) else v for k, v in values.items()}


PROGRESS_SQL = Profile(
    name="progress-sql",
    summary="the project's default: the paper's loop with our ODT refinements, reward guard and semantics",
    max_turns=paper(4, "T = 4 (Section 5.1, Appendix B)"),
    reward=ours(
        "progressive",
        "Eq. 1-4 with a first-turn guard: no progress credit from a first turn that is not a formatted, "
        "executable attempt (docs/environment.md)",
    ),
    gamma=paper(0.5, "gamma = 0.5 (Section 5.1)"),
    prompt=paper("paper", "Appendix F's system prompt, round-1 and round-2+ templates"),
    schema_profile=ours("full", "the DDL with three sample values per column (docs/data.md)"),
    feedback=paper("tags", "the codes and their descriptions, Appendix F's round-2+ template"),
    offer_ask=paper(
        False, "the paper's policy only answers; `<ask>` is accepted on ambiguous questions only (env.core.ask_offered)"
    ),
    preset=ours(
        "strict", "our reward semantics: row order where ORDER BY decides it, exact values (docs/semantics.md)"
    ),
    trainer_setting=paper("paper", "integrations/trainer_setting.py PAPER (docs/training.md)"),
    odt_verdict=ours(
        "engine",
        "SQLite compiles the prediction against the schema: an unknown table, column or function is "
        "PARSE_ERROR with the fallback message",
    ),
    odt_refinements=ours(
        REFINEMENTS,
        "column order, outer join sides, NULLs placement, LIMIT count and OFFSET change results, each with "
        "its own tag; a CTE scored where it is read, so a CTE and the same derived table, or a renamed CTE, "
        "score 1.0 (issue 16); `FROM a, b WHERE a.x = b.y` equals `FROM a JOIN b ON a.x = b.y` (the WHERE "
        "equality across two sources is a join condition); a nested query in GROUP BY, ORDER BY or an ON "
        "condition is a child like any other, with its own located tags",
    ),
    odt_alpha=paper(0.70, "alpha = 0.70 for SELECT nodes (Appendix D)"),
    odt_set_op_weight=ours(
        0.30,
        "the operator, the set operation's ORDER BY and LIMIT form a local term (UNION against INTERSECT "
        "with equal arms would score 1.0 by child matching alone)",
    ),
    odt_tags=ours(None, "the whole catalogue, in catalogue order, each located (docs/odt.md#tag-catalogue)"),
    odt_threshold=ours(1.0, "every mismatch is worth telling the policy (Table 6 is not in the paper's text)"),
)

PAPER = Profile(
    name="paper",
    summary="what the paper states (Section 4, Appendices B, D, F, G), and a stated choice where it is silent",
    max_turns=paper(4, "T = 4 (Section 5.1, Appendix B)"),
    reward=paper("progressive-paper", "Eq. 1-4 exactly as Section 4.2 prints them"),
    gamma=paper(0.5, "gamma = 0.5 (Section 5.1)"),
    prompt=paper("paper", "Appendix F's system prompt, round-1 and round-2+ templates"),
    schema_profile=paper("ddl", "Appendix F: {db_details} contains the DDL schema of the target database"),
    feedback=paper("tags", "the codes and their descriptions, Appendix F's round-2+ template"),
    offer_ask=paper(False, "the paper's policy only answers SQL (Algorithm 1)"),
    preset=ours(
        "bird",
        "the paper evaluates with OmniSQL's protocol (Appendix B) and states no training comparison; "
        "OmniSQL's BIRD script compares result sets (BIRD's rule, preset bird), its Spider scripts run "
        "the test-suite evaluator (preset spider); one preset per run: bird, the rule of the largest "
        "training sources (BIRD train, SynSQL)",
    ),
    trainer_setting=paper("paper", "G = 8, tau = 1.0, T = 4, lr 1e-6, the KL choice: integrations/trainer_setting.py"),
    odt_verdict=paper(
        "syntax",
        "JSQLParser 4.6 rejects syntax only (Appendix D); here SQLite's parser, without name resolution: "
        "an unknown column keeps its structural tags and F_struct",
    ),
    odt_refinements=paper(
        (),
        "p = (c, b, T, S, W, J, G, H, O) of Appendix D has none of the four features; CTE names are matched "
        "case-insensitively (Appendix D): a CTE reads as a table and hangs from its declaring query (where "
        "it hangs: ours); J holds join signatures and W filtering predicates, so a WHERE equality stays in W "
        "(ours: the reading of J as the explicit JOINs'); nested queries are children only in FROM, WHERE, "
        "HAVING and SELECT expressions (Appendix D; a joined derived table counts as FROM: ours)",
    ),
    odt_alpha=paper(0.70, "alpha = 0.70 for SELECT nodes (Appendix D)"),
    odt_set_op_weight=paper(0.0, "non-SELECT nodes are scored by child matching only (Appendix D)"),
    odt_tags=paper(
        PAPER_TAGS,
        "the six codes the text names (Section 4.1, Appendix G; Table 7 is not in the text), in the order "
        "Appendix G prints them",
    ),
    odt_threshold=ours(1.0, "Table 6 is not in the text; 1.0 (any mismatch) reproduces Appendix G's tags"),
)

PROFILES: dict[str, Profile] = {profile.name: profile for profile in (PROGRESS_SQL, PAPER)}
DEFAULT_PROFILE = PROGRESS_SQL.name


def get_profile(name: str) -> Profile:
    """The profile called ``name``; an unknown name is a ConfigError listing the known ones."""
    return lookup(PROFILES, name, "profile")


def _shown(value: Any) -> str:
    if value is None:
        return "all"
    if isinstance(value, tuple):
        return ", ".join(f"`{item}`" for item in value) if value else "none"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return f"`{value}`"


def markdown_table(profiles: Sequence[Profile] = (PROGRESS_SQL, PAPER)) -> str:
    """docs/profiles.md's table: one row per field, each profile's value, whose it is and why."""
    header = "| setting | " + " | ".join(f"`{profile.name}`" for profile in profiles) + " |"
    lines = [header, "|---" * (len(profiles) + 1) + "|"]
    for name in profiles[0].sourced():
        cells = []
        for profile in profiles:
            item = profile.sourced()[name]
            cells.append(f"{_shown(item.value)} ({item.source}: {item.why})")
        lines.append(f"| {name.replace('_', ' ')} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: Sequence[str]) -> int:
    """``table``: print docs/profiles.md's table."""
    if list(argv) != ["table"]:
        print("usage: python -m progress_sql.profiles table", file=sys.stderr)
        return 2
    print(markdown_table())
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
