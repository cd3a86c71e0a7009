"""MinHash signatures on their band rows: document_minhash_bands.signature (moved from
documents.minhash, the same bits), so the MinHash probe ranks its candidates where it finds
them and reads the documents row of the best one only.

Revision ID: 0041
Revises: 0040
"""

from alembic import op

from dedup_pg.schema import execute_each, previous_definitions
from dedup_pg.sqlfiles import read_sql

revision = "0041"
down_revision = "0040"
branch_labels = None
depends_on = None

#: Objects this revision takes from sql/schema/ (their definitions are in its
#: SQL file); the downgrade re-applies each one's previous definition.
OBJECTS = [
    "function:dedup_store_document_bands",
    "function:dedup_document_item",
    "function:dedup_ingest",
    "function:dedup_refingerprint",
    "function:dedup_rebuild_pairs",
]


def upgrade() -> None:
    # one statement a call (execute_each): a Citus coordinator refuses DDL on a
    # distributed table sent with other statements in one string
    execute_each(op, read_sql("0041_minhash_signatures_on_their_band.sql"))


def downgrade() -> None:
    # the signatures back on documents (the previous definitions read them
    # there), in their place before facts and clauses (which are made again
    # after it), the band rows without bands gone, then the functions as
    # revision 0040 left them
    # on Citus the functions after the copy (a statement over every shard) are
    # refused in the transaction unless the shards were written one connection
    # at a time (a setting of no effect on one node)
    op.execute("SET LOCAL citus.multi_shard_modify_mode = 'sequential'")
    op.execute("ALTER TABLE documents RENAME COLUMN facts TO facts_0041")
    op.execute("ALTER TABLE documents RENAME COLUMN clauses TO clauses_0041")
    for column in ("minhash bit varying", "facts integer[]", "clauses bigint[]"):
        op.execute(f"ALTER TABLE documents ADD COLUMN {column}")
    op.execute("UPDATE documents SET facts = facts_0041, clauses = clauses_0041")
    op.execute(
        "UPDATE documents d SET minhash = b.signature FROM document_minhash_bands b"
        " WHERE b.doc_id = d.doc_id AND b.seen_at = d.seen_at"
    )
    op.execute("ALTER TABLE documents DROP COLUMN facts_0041")
    op.execute("ALTER TABLE documents DROP COLUMN clauses_0041")
    op.execute(
        "COMMENT ON COLUMN documents.facts IS 'keys of the numbers, proper names and titles of"
        " the text (each one''s SHA-256, first 4 bytes, signed: dedup_pg.facts.fact_key), for"
        " verifying near-duplicate matches'"
    )
    op.execute(
        "COMMENT ON COLUMN documents.minhash IS 'MinHash signature over character 5-grams of the"
        " normalized text as 2,048 bits: 128 values of 16 bits (the low bits of each minimum,"
        " dedup_pg/minhash.py), value i in bits 16i to 16i+15; dedup_minhash_values(minhash) gives"
        " them as smallint[]; null for texts too short'"
    )
    op.execute("DELETE FROM document_minhash_bands WHERE cardinality(band_keys) = 0")
    op.execute("ALTER TABLE document_minhash_bands DROP COLUMN signature")
    op.execute(
        "COMMENT ON TABLE document_minhash_bands IS 'MinHash band values of stored documents (one"
        " row a document with a signature: its 16 band keys, dedup_minhash_bands, under a GIN"
        " index): the MinHash layer''s candidate lookup; partitioned by ISO week'"
    )
    execute_each(op, previous_definitions(revision, OBJECTS))
