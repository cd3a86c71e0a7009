"""MinHash bands one row a document under a GIN index (document_minhash_bands:
doc_id, seen_at, band_keys[]), replacing a row a band value: ~1,650 bytes a
document less, same candidates.

Revision ID: 0019
Revises: 0018
"""

from alembic import op

from dedup_pg.schema import previous_definitions
from dedup_pg.sqlfiles import read_sql

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None

#: Objects this revision takes from sql/schema/ (their definitions are in its
#: SQL file); the downgrade re-applies each one's previous definition.
OBJECTS = [
    "function:dedup_store_document_bands",
    "function:dedup_ingest",
    "function:dedup_refingerprint",
    "function:dedup_rebuild_pairs",
]

#: The layout before this revision, a row a band value, rebuilt from the arrays.
DOWNGRADE_TABLE = """
CREATE TEMP TABLE dedup_0019_parts ON COMMIT DROP AS
SELECT c.relname AS name, pg_get_expr(c.relpartbound, c.oid) AS bound
  FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
 WHERE i.inhparent = 'document_minhash_bands'::regclass;
CREATE TEMP TABLE dedup_0019_rows ON COMMIT DROP AS
SELECT DISTINCT k AS band_key, b.doc_id, b.seen_at FROM document_minhash_bands b, unnest(b.band_keys) k;
DROP TABLE document_minhash_bands;
CREATE TABLE document_minhash_bands (
    band_key bigint NOT NULL,
    doc_id   bigint NOT NULL,
    seen_at  timestamptz NOT NULL
) PARTITION BY RANGE (seen_at);
CREATE INDEX document_minhash_bands_key_idx ON document_minhash_bands (band_key) INCLUDE (seen_at, doc_id);
CREATE INDEX document_minhash_bands_doc_id_idx ON document_minhash_bands USING brin (doc_id);
COMMENT ON TABLE document_minhash_bands IS
    'MinHash band values of stored documents (32 per document with a signature): the MinHash layer''s candidate lookup; partitioned by ISO week';
DO $$
DECLARE
    p record;
BEGIN
    FOR p IN SELECT name, bound FROM dedup_0019_parts ORDER BY name LOOP
        EXECUTE format('CREATE TABLE %I PARTITION OF document_minhash_bands %s', p.name, p.bound);
    END LOOP;
END $$;
INSERT INTO document_minhash_bands SELECT band_key, doc_id, seen_at FROM dedup_0019_rows ORDER BY doc_id;
"""


def upgrade() -> None:
    op.execute(read_sql("0019_minhash_bands_one_row_a.sql"))


def downgrade() -> None:
    op.execute(DOWNGRADE_TABLE)
    op.execute(previous_definitions(revision, OBJECTS))
