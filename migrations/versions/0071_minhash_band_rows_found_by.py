"""MinHash band rows found by doc_id in 8-page BRIN ranges

The BRIN index on document_minhash_bands.doc_id is rebuilt with pages_per_range
= 8 (128 before), so a row read by doc_id reads 8 pages. See
sql/migrations/0071_minhash_band_rows_found_by.sql.

Revision ID: 0071
Revises: 0070
"""

from alembic import op

from dedup_pg.schema import execute_each, previous_definitions
from dedup_pg.sqlfiles import read_sql

revision = "0071"
down_revision = "0070"
branch_labels = None
depends_on = None

#: Objects this revision takes from sql/schema/ (their definitions are in its
#: SQL file); the downgrade re-applies each one's previous definition.
OBJECTS = ["index:document_minhash_bands_doc_id_idx"]


def upgrade() -> None:
    # one statement a call (execute_each): a Citus coordinator refuses DDL on a
    # distributed table sent with other statements in one string
    execute_each(op, read_sql("0071_minhash_band_rows_found_by.sql"))


def downgrade() -> None:
    # the shards written one connection at a time, as the upgrade's SQL file
    # sets it (the Citus forms applied after it in the transaction need it)
    op.execute("SET LOCAL citus.multi_shard_modify_mode = 'sequential'")
    execute_each(op, previous_definitions(revision, OBJECTS))
