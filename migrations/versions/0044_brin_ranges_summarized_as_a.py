"""BRIN ranges summarized as a batch stores them: dedup_ingest calls
dedup_summarize_lookups for the weeks of its items, so a lookup by doc_id (a stored text's clause
rows) no longer reads every page stored since the partition's last vacuum.

Revision ID: 0044
Revises: 0043
"""

from alembic import op

from dedup_pg.schema import previous_definitions
from dedup_pg.sqlfiles import read_sql

revision = "0044"
down_revision = "0043"
branch_labels = None
depends_on = None

#: Objects this revision takes from sql/schema/ (their definitions are in its
#: SQL file); the downgrade re-applies each one's previous definition.
OBJECTS = ["function:dedup_summarize_lookups", "function:dedup_ingest"]


def upgrade() -> None:
    op.execute(read_sql("0044_brin_ranges_summarized_as_a.sql"))


def downgrade() -> None:
    op.execute(previous_definitions(revision, OBJECTS))
