"""Ingest reads its items once: dedup_lock_stripes_of takes the typed items (dedup_item[]) instead of the batch's JSON, and dedup_ingest reads the JSON with one jsonb_populate_recordset; an item's arrays may be PostgreSQL array literals, which dedup_pg now sends.

Revision ID: 0029
Revises: 0028
"""

from alembic import op

from dedup_pg.schema import previous_definitions
from dedup_pg.sqlfiles import read_sql

revision = "0029"
down_revision = "0028"
branch_labels = None
depends_on = None

#: Objects this revision takes from sql/schema/ (their definitions are in its
#: SQL file); the downgrade re-applies each one's previous definition.
OBJECTS = ["function:dedup_lock_stripes_of", "function:dedup_ingest"]


def upgrade() -> None:
    op.execute(read_sql("0029_ingest_reads_the_items_once.sql"))


def downgrade() -> None:
    op.execute(previous_definitions(revision, OBJECTS))
    # the stripes of typed items (the jsonb form is back above)
    op.execute("DROP FUNCTION dedup_lock_stripes_of(dedup_item[])")
