"""The fact check folds each body once (dedup_fact_text) for its number, masked-similarity and money rules: each folded both bodies anew (revision 0033 added a second fold, the masked similarity a third). The same answers.

Revision ID: 0035
Revises: 0034
"""

from alembic import op

from dedup_pg.schema import previous_definitions
from dedup_pg.sqlfiles import read_sql

revision = "0035"
down_revision = "0034"
branch_labels = None
depends_on = None

#: Objects this revision takes from sql/schema/ (their definitions are in its
#: SQL file); the downgrade re-applies each one's previous definition.
OBJECTS = [
    "function:dedup_folded_numbers",
    "function:dedup_text_numbers",
    "function:dedup_folded_masked_similarity",
    "function:dedup_masked_similarity",
    "function:dedup_folded_amounts",
    "function:dedup_text_amounts",
    "function:dedup_facts_verdict",
]


def upgrade() -> None:
    op.execute(read_sql("0035_the_fact_check_folds_each.sql"))


def downgrade() -> None:
    op.execute(previous_definitions(revision, OBJECTS))
