"""dedup_summarize_lookups walks back from the last range: a batch summarizes the BRIN
ranges it filled at a cost that does not grow with the week partition (it read every
range's entry), and finds the partitions' indexes through pg_index's index on indrelid.

Revision ID: 0045
Revises: 0044
"""

from alembic import op

from dedup_pg.schema import previous_definitions
from dedup_pg.sqlfiles import read_sql

revision = "0045"
down_revision = "0044"
branch_labels = None
depends_on = None

#: Objects this revision takes from sql/schema/ (their definitions are in its
#: SQL file); the downgrade re-applies each one's previous definition.
OBJECTS = ["function:dedup_summarize_lookups"]


def upgrade() -> None:
    op.execute(read_sql("0045_dedup_summarize_lookups_walks_back.sql"))


def downgrade() -> None:
    op.execute(previous_definitions(revision, OBJECTS))
