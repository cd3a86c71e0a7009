"""The rebuild reads the MinHash pairs' signatures in one pass (a temporary table), and a
refingerprint batch's in one UPDATE: since 0041 each was a BRIN lookup of a band row. The
same results.

Revision ID: 0043
Revises: 0042
"""

from alembic import op

from dedup_pg.schema import previous_definitions
from dedup_pg.sqlfiles import read_sql

revision = "0043"
down_revision = "0042"
branch_labels = None
depends_on = None

#: Objects this revision takes from sql/schema/ (their definitions are in its
#: SQL file); the downgrade re-applies each one's previous definition.
OBJECTS = ["function:dedup_rebuild_pairs", "function:dedup_refingerprint"]


def upgrade() -> None:
    op.execute(read_sql("0043_the_rebuild_reads_the_minhash.sql"))


def downgrade() -> None:
    op.execute(previous_definitions(revision, OBJECTS))
