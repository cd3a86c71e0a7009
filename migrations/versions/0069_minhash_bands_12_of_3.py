"""MinHash bands 12 of 3 instead of 16

dedup_minhash_bands makes 12 band keys of a signature (its first 12 bands), so
the GIN index of document_minhash_bands holds 12 entries a new row, not 16, and
the lock stripes follow. The index is not rebuilt: an index built under 16
holds every key of the 12. See sql/migrations/0069_minhash_bands_12_of_3.sql.

Revision ID: 0069
Revises: 0068
"""

from alembic import op

from dedup_pg.schema import execute_each, previous_definitions
from dedup_pg.sqlfiles import read_sql

revision = "0069"
down_revision = "0068"
branch_labels = None
depends_on = None

#: Objects this revision takes from sql/schema/ (their definitions are in its
#: SQL file); the downgrade re-applies each one's previous definition.
OBJECTS = ["function:dedup_minhash_bands", "function:dedup_lock_stripes_of"]


def upgrade() -> None:
    op.execute(read_sql("0069_minhash_bands_12_of_3.sql"))


def downgrade() -> None:
    # the 16 keys again, then the index rebuilt over them (revision 0049's
    # definition: DROP and CREATE, which a transaction allows where REINDEX of
    # a partitioned index does not), so that rows stored under 12 get their
    # other 4 keys; one statement a call (execute_each): a Citus coordinator
    # refuses DDL on a distributed table sent with other statements
    op.execute("SET LOCAL citus.multi_shard_modify_mode = 'sequential'")
    execute_each(
        op, previous_definitions(revision, [*OBJECTS, "index:document_minhash_bands_keys_idx"])
    )
    op.execute(
        "COMMENT ON TABLE document_minhash_bands IS 'MinHash signatures of stored documents (one"
        " row a document with a signature), their 16 band keys (dedup_minhash_bands(signature))"
        " under a GIN index: the MinHash layer''s candidate lookup and comparison; partitioned"
        " by ISO week'"
    )
