"""Fact check: numbers read past invisible characters

Revision ID: 0022
Revises: 0021
"""

from alembic import op

from dedup_pg.schema import previous_definitions
from dedup_pg.sqlfiles import read_sql

revision = "0022"
down_revision = "0021"
branch_labels = None
depends_on = None

#: Objects this revision takes from sql/schema/ (their definitions are in its
#: SQL file); the downgrade re-applies each one's previous definition.
OBJECTS = [
    "function:dedup_fact_text",
    "function:dedup_text_numbers",
    "function:dedup_masked_similarity",
]


def upgrade() -> None:
    op.execute(read_sql("0022_fact_check_numbers_read_past.sql"))


def downgrade() -> None:
    op.execute(previous_definitions(revision, OBJECTS))
