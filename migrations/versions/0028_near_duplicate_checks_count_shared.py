"""near-duplicate checks count shared clauses from the probe

Revision ID: 0028
Revises: 0027
"""

from alembic import op

from dedup_pg.schema import previous_definitions
from dedup_pg.sqlfiles import read_sql

revision = "0028"
down_revision = "0027"
branch_labels = None
depends_on = None

#: Objects this revision takes from sql/schema/ (their definitions are in its
#: SQL file); the downgrade re-applies each one's previous definition.
OBJECTS = ["function:dedup_found_shared", "function:dedup_ingest"]


def upgrade() -> None:
    op.execute(read_sql("0028_near_duplicate_checks_count_shared.sql"))


def downgrade() -> None:
    op.execute(previous_definitions(revision, OBJECTS))
