"""Fact check: months and days read with their unit too (dedup_text_numbers: "24日" beside 24), so another day's bulletin with unchanged figures holds a date the other lacks. Validation set: templated pairs merged 31 -> 17 of 846, same-story pairs found unchanged.

Revision ID: 0030
Revises: 0029
"""

from alembic import op

from dedup_pg.schema import previous_definitions
from dedup_pg.sqlfiles import read_sql

revision = "0030"
down_revision = "0029"
branch_labels = None
depends_on = None

#: Objects this revision takes from sql/schema/ (their definitions are in its
#: SQL file); the downgrade re-applies each one's previous definition.
OBJECTS = ["function:dedup_text_numbers"]


def upgrade() -> None:
    op.execute(read_sql("0030_numbers_read_with_their_date.sql"))


def downgrade() -> None:
    # Undo the hand-written part of the SQL file here (before or after the
    # definitions, as the dependencies need).
    op.execute(previous_definitions(revision, OBJECTS))
