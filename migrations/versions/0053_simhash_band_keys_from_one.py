"""SimHash band keys from one inlined function

dedup_simhash_bands gives the four band keys of a SimHash; the store, the probe
and the refingerprint read it where they spelled the keys out or called
dedup_simhash_band_keys. See sql/migrations/0053_simhash_band_keys_from_one.sql.

Revision ID: 0053
Revises: 0052
"""

from alembic import op

from dedup_pg.schema import previous_definitions
from dedup_pg.sqlfiles import read_sql

revision = "0053"
down_revision = "0052"
branch_labels = None
depends_on = None

#: Objects this revision takes from sql/schema/ (their definitions are in its
#: SQL file); the downgrade re-applies each one's previous definition.
OBJECTS = [
    "function:dedup_simhash_bands",
    "function:dedup_store_document",
    "function:dedup_ingest",
    "function:dedup_refingerprint",
]


def upgrade() -> None:
    op.execute(read_sql("0053_simhash_band_keys_from_one.sql"))


def downgrade() -> None:
    op.execute(previous_definitions(revision, OBJECTS))
