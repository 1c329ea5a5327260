"""The three-turn case study of the paper's Appendix G, rebuilt from its SQL."""

from __future__ import annotations

from progress_sql.data import case_study
from progress_sql.odt import diagnose, prepare_gold
from progress_sql.odt.config import PROFILES

TURN_1_TAGS = {
    "SELECT_ERROR",
    "FROM_OR_JOIN_TABLE_MISMATCH",
    "JOIN_REDUNDANT",
    "JOIN_KEY_MISMATCH",
    "GROUP_BY_ERROR",
    "HAVING_ERROR",
}
TURN_2_TAGS = {"FROM_OR_JOIN_TABLE_MISMATCH", "JOIN_REDUNDANT", "JOIN_KEY_MISMATCH", "HAVING_MISSING"}

# Turn 3 as the gold with other aliases, swapped equality operands and other whitespace.
TURN_3_REWRITTEN = """
select SUP.supplier_name,   avg(LENS.price) as mean_price
from contact_lenses as LENS
  join suppliers as SUP on LENS.supplier_id = SUP.supplier_id
  join feedback as FB on FB.lens_id = LENS.lens_id
where FB.rating >= 4
group by SUP.supplier_name
having count(LENS.lens_id) > 0
"""


def test_case_study_tags_and_rising_alignment() -> None:
    gold = prepare_gold(case_study.GOLD_SQL)
    turn_1, turn_2, turn_3 = (diagnose(sql, gold) for sql in case_study.TURNS)
    assert set(turn_1.tags) == TURN_1_TAGS
    assert set(turn_2.tags) == TURN_2_TAGS
    assert turn_3.tags == ()
    assert turn_3.f_struct == 1.0
    assert turn_1.f < turn_2.f < turn_3.f
    assert turn_1.f_struct < turn_2.f_struct < turn_3.f_struct


def test_turn_3_rewritten_scores_full_structure() -> None:
    diagnosis = diagnose(TURN_3_REWRITTEN, prepare_gold(case_study.GOLD_SQL))
    assert diagnosis.f_struct == 1.0
    assert diagnosis.tags == ()
    assert "structural issues" not in diagnosis.feedback


def test_feedback_names_tags_in_the_paper_template_without_the_gold() -> None:
    diagnosis = diagnose(case_study.TURNS[0], case_study.GOLD_SQL)
    assert diagnosis.feedback.startswith("Feedback: your previous SQL has structural issues: SELECT_ERROR, ")
    assert "GROUP BY columns are not aligned with reference." in diagnosis.feedback
    assert diagnosis.feedback.endswith("Do not output any text outside those tags.")
    for gold_fragment in ("supplier_name", "lens_id", "COUNT(cl.lens_id)", "rating >= 4"):
        assert gold_fragment not in diagnosis.feedback


#: The tag sets the paper prints in Appendix G (its order: JOIN_KEY_MISMATCH first; ours is the catalogue's).
PAPER_TURN_1 = {"JOIN_KEY_MISMATCH", "FROM_OR_JOIN_TABLE_MISMATCH", "SELECT_ERROR", "GROUP_BY_ERROR"}
PAPER_TURN_2 = {"JOIN_KEY_MISMATCH", "FROM_OR_JOIN_TABLE_MISMATCH"}


def test_paper_case_study_profile_reproduces_the_printed_tag_sets() -> None:
    config = PROFILES["paper-case-study"]
    gold = prepare_gold(case_study.GOLD_SQL, config=config)
    turn_1, turn_2, turn_3 = (diagnose(sql, gold, config=config) for sql in case_study.TURNS)
    assert set(turn_1.tags) == PAPER_TURN_1
    assert set(turn_2.tags) == PAPER_TURN_2
    assert turn_3.tags == ()
    default = prepare_gold(case_study.GOLD_SQL)
    assert [diagnose(sql, gold, config=config).f_struct for sql in case_study.TURNS] == [
        diagnose(sql, default).f_struct for sql in case_study.TURNS
    ]
