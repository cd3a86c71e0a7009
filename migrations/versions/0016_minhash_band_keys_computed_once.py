"""MinHash band keys computed once per item

Revision ID: 0016
Revises: 0015
"""

from alembic import op

from dedup_pg.schema import previous_definitions
from dedup_pg.sqlfiles import read_sql

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None

#: Objects this revision takes from sql/schema/ (their definitions are in its
#: SQL file); the downgrade re-applies each one's previous definition.
OBJECTS = [
    "function:dedup_store_document_bands",
    "function:dedup_store_document",
    "function:dedup_ingest",
]


def upgrade() -> None:
    op.execute(read_sql("0016_minhash_band_keys_computed_once.sql"))


def downgrade() -> None:
    op.execute(previous_definitions(revision, OBJECTS))
