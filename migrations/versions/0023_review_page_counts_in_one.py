"""Review page counts in one statement

Revision ID: 0023
Revises: 0022
"""

from alembic import op

from dedup_pg.schema import previous_definitions
from dedup_pg.sqlfiles import read_sql

revision = "0023"
down_revision = "0022"
branch_labels = None
depends_on = None

#: Objects this revision takes from sql/schema/ (their definitions are in its
#: SQL file); the downgrade re-applies each one's previous definition.
OBJECTS = ["function:review_layer_counts"]


def upgrade() -> None:
    op.execute(read_sql("0023_review_page_counts_in_one.sql"))


def downgrade() -> None:
    op.execute(previous_definitions(revision, OBJECTS))
