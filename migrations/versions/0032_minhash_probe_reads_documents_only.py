"""The MinHash probe reads documents only for band candidates: a statement over documents locks every day partition kept (generic plan), so the join it ran for every text made a check cost more with each day of history (two years kept: ~1.0 -> ~0.73 ms a dry-run check of a new text).

Revision ID: 0032
Revises: 0031
"""

from alembic import op

from dedup_pg.schema import previous_definitions
from dedup_pg.sqlfiles import read_sql

revision = "0032"
down_revision = "0031"
branch_labels = None
depends_on = None

#: Objects this revision takes from sql/schema/ (their definitions are in its
#: SQL file); the downgrade re-applies each one's previous definition.
OBJECTS = ["function:dedup_ingest"]


def upgrade() -> None:
    op.execute(read_sql("0032_minhash_probe_reads_documents_only.sql"))


def downgrade() -> None:
    op.execute(previous_definitions(revision, OBJECTS))
