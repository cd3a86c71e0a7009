"""MinHash signatures of 16-bit values: 128 x 16 bits (smallint[]) where 128 x 32 were,
the stored ones cut to their low 16 bits and their band keys computed again. sina2018:
4,896 -> 4,648 bytes a document beside the text, its 11,377 verdicts unchanged.

Revision ID: 0026
Revises: 0025
"""

from alembic import op

from dedup_pg.schema import execute_each, previous_definitions
from dedup_pg.sqlfiles import read_sql

revision = "0026"
down_revision = "0025"
branch_labels = None
depends_on = None

#: Objects this revision takes from sql/schema/ (their definitions are in its
#: SQL file); the downgrade re-applies each one's previous definition.
OBJECTS = [
    "function:dedup_minhash_bands",
    "function:dedup_minhash_similarity",
    "function:dedup_refingerprint",
]

# the band keys of every stored signature, cut from its values (the upgrade's
# are in its SQL file)
_BANDS = (
    "UPDATE document_minhash_bands b SET band_keys = dedup_minhash_bands(d.minhash)"
    " FROM documents d WHERE d.doc_id = b.doc_id AND d.seen_at = b.seen_at"
)


def upgrade() -> None:
    # one statement a call (execute_each): a Citus coordinator refuses DDL on a
    # distributed table sent with other statements in one string
    execute_each(op, read_sql("0026_minhash_signatures_of_16_bit.sql"))


def downgrade() -> None:
    # The 32-bit values are gone: the 16 bits kept stay, as integer[], with band
    # keys cut from them as before. An engine of before this revision computes
    # 32-bit signatures, which match none of them: with it installed,
    # `dedup-pg rebuild --refingerprint --force` computes them again from the
    # texts (until then its MinHash layer finds no stored document).
    op.execute("ALTER TYPE dedup_item ALTER ATTRIBUTE minhash TYPE integer[]")
    op.execute("DROP FUNCTION dedup_minhash_bands(smallint[])")
    op.execute("DROP FUNCTION dedup_minhash_similarity(smallint[], smallint[])")
    op.execute("ALTER TABLE documents ALTER COLUMN minhash TYPE integer[] USING minhash::integer[]")
    op.execute(
        "ALTER TABLE duplicate_candidates ALTER COLUMN minhash TYPE integer[]"
        " USING minhash::integer[]"
    )
    op.execute(
        "COMMENT ON COLUMN documents.minhash IS 'MinHash signature (128 x 32-bit) over character"
        " 5-grams of the normalized text; null for texts too short'"
    )
    execute_each(op, previous_definitions(revision, OBJECTS))
    op.execute(_BANDS)
