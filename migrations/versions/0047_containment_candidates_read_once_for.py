"""Containment candidates read once for both containment rules: dedup_ingest reads the
candidates' documents rows (external id, digest, clause count, shared clauses) into arrays
once, and containment and whole-text containment choose from them.

Revision ID: 0047
Revises: 0046
"""

from alembic import op

from dedup_pg.schema import previous_definitions
from dedup_pg.sqlfiles import read_sql

revision = "0047"
down_revision = "0046"
branch_labels = None
depends_on = None

#: Objects this revision takes from sql/schema/ (their definitions are in its
#: SQL file); the downgrade re-applies each one's previous definition.
OBJECTS = ["function:dedup_ingest"]


def upgrade() -> None:
    op.execute(read_sql("0047_containment_candidates_read_once_for.sql"))


def downgrade() -> None:
    op.execute(previous_definitions(revision, OBJECTS))
