"""MinHash band keys computed by the GIN index from the signature

document_minhash_bands loses its band_keys column (152 bytes a document): its GIN
index is over dedup_minhash_bands(signature), whose keys are the bands' values
themselves. dedup_store_document_bands folds into dedup_store_document. See
sql/migrations/0049_minhash_band_keys_computed_by.sql.

Revision ID: 0049
Revises: 0048
"""

from alembic import op

from dedup_pg.schema import execute_each, previous_definitions
from dedup_pg.sqlfiles import read_sql

revision = "0049"
down_revision = "0048"
branch_labels = None
depends_on = None

#: Objects this revision takes from sql/schema/ (their definitions are in its
#: SQL file); the downgrade re-applies each one's previous definition.
OBJECTS = [
    "function:dedup_minhash_bands",
    "function:dedup_store_document",
    "function:dedup_ingest",
    "function:dedup_refingerprint",
    "function:dedup_rebuild_pairs",
    "index:document_minhash_bands_keys_idx",
]


def upgrade() -> None:
    # one statement a call (execute_each): a Citus coordinator refuses DDL on a
    # distributed table sent with other statements in one string
    execute_each(op, read_sql("0049_minhash_band_keys_computed_by.sql"))


def downgrade() -> None:
    # the column back in its place (before signature) and filled with the
    # keys of revision 0048 (hashes of the values' text), after the functions
    # of 0048 (one of which writes it) and before its index
    op.execute("SET LOCAL citus.multi_shard_modify_mode = 'sequential'")
    op.execute("DROP INDEX document_minhash_bands_keys_idx")
    op.execute("DROP FUNCTION dedup_minhash_bands(bit varying)")
    op.execute("DROP FUNCTION dedup_store_document(dedup_item, bigint, bigint[])")
    op.execute("ALTER TABLE document_minhash_bands RENAME COLUMN signature TO signature_0049")
    op.execute("ALTER TABLE document_minhash_bands ADD COLUMN band_keys bigint[]")
    op.execute("ALTER TABLE document_minhash_bands ADD COLUMN signature bit varying")
    execute_each(
        op,
        previous_definitions(
            revision,
            [
                "function:dedup_minhash_bands",
                "function:dedup_store_document_bands",
                *(
                    o
                    for o in OBJECTS
                    if o.startswith("function:") and o != "function:dedup_minhash_bands"
                ),
            ],
        ),
    )
    op.execute(
        "UPDATE document_minhash_bands SET signature = signature_0049,"
        " band_keys = dedup_minhash_bands(dedup_minhash_values(signature_0049))"
    )
    op.execute("ALTER TABLE document_minhash_bands DROP COLUMN signature_0049")
    op.execute("ALTER TABLE document_minhash_bands ALTER COLUMN band_keys SET NOT NULL")
    op.execute("ALTER TABLE document_minhash_bands ALTER COLUMN signature SET NOT NULL")
    op.execute(
        "COMMENT ON COLUMN document_minhash_bands.signature IS 'MinHash signature over character"
        " 5-grams of the normalized text as 2,048 bits: 128 values of 16 bits (the low bits of"
        " each minimum, dedup_pg/minhash.py), value i in bits 16i to 16i+15;"
        " dedup_minhash_values(signature) gives them as smallint[]'"
    )
    op.execute(
        "COMMENT ON TABLE document_minhash_bands IS 'MinHash signatures of stored documents and"
        " their band values (one row a document with a signature: its 16 band keys,"
        " dedup_minhash_bands, under a GIN index): the MinHash layer''s candidate lookup and"
        " comparison; partitioned by ISO week'"
    )
    execute_each(op, previous_definitions(revision, ["index:document_minhash_bands_keys_idx"]))
