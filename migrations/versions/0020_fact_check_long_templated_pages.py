"""Fact check: long templated pages alike but for their numbers go to review; a copied body keeps a third of the original

Revision ID: 0020
Revises: 0019
"""

from alembic import op

from dedup_pg.schema import previous_definitions
from dedup_pg.sqlfiles import read_sql

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None

#: Objects this revision takes from sql/schema/ (their definitions are in its
#: SQL file); the downgrade re-applies each one's previous definition.
OBJECTS = [
    "function:dedup_copied_body",
    "function:dedup_masked_similarity",
    "function:dedup_facts_verdict",
]


def upgrade() -> None:
    op.execute(read_sql("0020_fact_check_long_templated_pages.sql"))


def downgrade() -> None:
    op.execute(previous_definitions(revision, OBJECTS))
    op.execute(
        "DELETE FROM dedup_settings WHERE name IN ('facts_template_masked_similarity',"
        " 'facts_copied_body_matched_share')"
    )
    op.execute(
        "UPDATE dedup_settings SET description = 'a lead rewritten over a copied body is a"
        " duplicate: when both texts keep at least this share of their clauses in common (3 or"
        " more) and their openings are unlike (facts_rewritten_lead_similarity), the fact check"
        " lets the match through and containment''s review band takes it as a duplicate;"
        " null = off' WHERE name = 'facts_copied_body_share'"
    )
