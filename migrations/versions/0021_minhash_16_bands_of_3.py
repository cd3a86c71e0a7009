"""MinHash: 16 bands of 3 values instead of 32 of 4

Revision ID: 0021
Revises: 0020
"""

from alembic import op

from dedup_pg.schema import previous_definitions
from dedup_pg.sqlfiles import read_sql

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None

#: Objects this revision takes from sql/schema/ (their definitions are in its
#: SQL file); the downgrade re-applies each one's previous definition.
OBJECTS = [
    "function:dedup_minhash_bands",
    "function:dedup_lock_stripes_of",
    "function:dedup_ingest",
]


#: Every stored document's band keys from its signature under the
#: dedup_minhash_bands in force, the indexes rebuilt in bulk after the rows.
REKEY = """
DROP INDEX document_minhash_bands_keys_idx;
DROP INDEX document_minhash_bands_doc_id_idx;
CREATE TEMP TABLE dedup_0021_rows ON COMMIT DROP AS
SELECT b.doc_id, b.seen_at, dedup_minhash_bands(d.minhash) AS band_keys
  FROM document_minhash_bands b
  JOIN documents d ON d.doc_id = b.doc_id AND d.seen_at = b.seen_at;
TRUNCATE document_minhash_bands;
INSERT INTO document_minhash_bands (doc_id, seen_at, band_keys)
SELECT doc_id, seen_at, band_keys FROM dedup_0021_rows ORDER BY doc_id;
CREATE INDEX document_minhash_bands_keys_idx ON document_minhash_bands
    USING gin (band_keys) WITH (fastupdate = off);
CREATE INDEX document_minhash_bands_doc_id_idx ON document_minhash_bands USING brin (doc_id);
"""


def upgrade() -> None:
    op.execute(read_sql("0021_minhash_16_bands_of_3.sql"))
    op.execute(REKEY)


def downgrade() -> None:
    op.execute(previous_definitions(revision, OBJECTS))
    op.execute(REKEY)
    op.execute(
        "COMMENT ON TABLE document_minhash_bands IS 'MinHash band values of stored documents"
        " (one row a document with a signature: its 32 band keys, dedup_minhash_bands, under a"
        " GIN index): the MinHash layer''s candidate lookup; partitioned by ISO week'"
    )
