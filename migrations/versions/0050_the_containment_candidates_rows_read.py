"""The containment candidates' rows read by key in a partition not yet analyzed

dedup_ingest read them as a join, which the planner made a scan of a whole day partition
that autovacuum had not analyzed yet. See
sql/migrations/0050_the_containment_candidates_rows_read.sql.

Revision ID: 0050
Revises: 0049
"""

from alembic import op

from dedup_pg.schema import previous_definitions
from dedup_pg.sqlfiles import read_sql

revision = "0050"
down_revision = "0049"
branch_labels = None
depends_on = None

#: Objects this revision takes from sql/schema/ (their definitions are in its
#: SQL file); the downgrade re-applies each one's previous definition.
OBJECTS = ["function:dedup_ingest"]


def upgrade() -> None:
    op.execute(read_sql("0050_the_containment_candidates_rows_read.sql"))


def downgrade() -> None:
    op.execute(previous_definitions(revision, OBJECTS))
