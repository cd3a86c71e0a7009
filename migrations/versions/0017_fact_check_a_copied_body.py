"""Fact check: a copied body under a rewritten lead is a copy; short templated items whose numbers differ go to review

Revision ID: 0017
Revises: 0016
"""

from alembic import op

from dedup_pg.schema import previous_definitions
from dedup_pg.sqlfiles import read_sql

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None

#: Objects this revision takes from sql/schema/ (their definitions are in its
#: SQL file); the downgrade re-applies each one's previous definition.
OBJECTS = [
    "function:dedup_opening_similarity",
    "function:dedup_text_numbers",
    "function:dedup_copied_body",
    "function:dedup_facts_verdict",
    "function:dedup_ingest",
    "function:dedup_rebuild_pairs",
]


def upgrade() -> None:
    op.execute(read_sql("0017_fact_check_a_copied_body.sql"))


def downgrade() -> None:
    op.execute(previous_definitions(revision, OBJECTS))
    op.execute(
        "DELETE FROM dedup_settings WHERE name IN ('facts_copied_body_share',"
        " 'facts_rewritten_lead_similarity', 'facts_template_max_chars')"
    )
