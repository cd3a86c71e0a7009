"""The review page: queue keyset index, undo and the decision log

Revision ID: 0015
Revises: 0014
"""

from alembic import op

from dedup_pg.schema import previous_definitions
from dedup_pg.sqlfiles import read_sql

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None

#: Objects this revision takes from sql/schema/ (their definitions are in its
#: SQL file); the downgrade re-applies each one's previous definition.
OBJECTS = [
    "index:duplicate_candidates_queue_idx",
    "index:duplicate_candidates_counts_idx",
    "function:reopen_candidate",
    "function:dedup_review_decide",
    "function:dedup_review_undo",
]


def upgrade() -> None:
    op.execute(read_sql("0015_the_review_page_queue_keyset.sql"))


def downgrade() -> None:
    op.execute(previous_definitions(revision, OBJECTS))
    # the log goes with the page's decisions' trail; the decisions stay
    op.execute("DROP TABLE dedup_review_log")
