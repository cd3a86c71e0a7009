"""SimHash band entries carry 32 more bits, not the document

document_simhash_bands gains tail (the 32 bits of the simhash after the band's,
filled for every stored row), and its index is (band_key, tail) INCLUDE
(seen_at) in place of (band_key) INCLUDE (simhash, seen_at, doc_id). See
sql/migrations/0067_simhash_band_entries_carry_32.sql.

Revision ID: 0067
Revises: 0066
"""

from alembic import op

from dedup_pg.schema import execute_each, previous_definitions
from dedup_pg.sqlfiles import read_sql

revision = "0067"
down_revision = "0066"
branch_labels = None
depends_on = None

#: Objects this revision takes from sql/schema/ (their definitions are in its
#: SQL file); the downgrade re-applies each one's previous definition.
OBJECTS = [
    "function:dedup_store_document",
    "function:dedup_ingest",
    "function:dedup_refingerprint",
    "index:document_simhash_bands_key_idx",
]


def upgrade() -> None:
    # one statement a call (execute_each): a Citus coordinator refuses DDL on a
    # distributed table sent with other statements in one string
    execute_each(op, read_sql("0067_simhash_band_entries_carry_32.sql"))


def downgrade() -> None:
    op.execute("SET LOCAL citus.multi_shard_modify_mode = 'sequential'")
    # the old index (simhash, seen_at, doc_id carried) first: it is over
    # columns that stay; then the functions, and the column they no longer write
    execute_each(op, previous_definitions(revision, OBJECTS))
    op.execute("ALTER TABLE document_simhash_bands DROP COLUMN tail")
    op.execute(
        "COMMENT ON TABLE document_simhash_bands IS 'SimHash bands of stored documents (4 per"
        " document: band_key = band number << 16 | its 16 bits, see dedup_simhash_band_keys):"
        " the SimHash layer''s candidate lookup; partitioned by ISO week'"
    )
