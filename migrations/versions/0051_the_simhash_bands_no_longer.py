"""The SimHash bands no longer stored on documents

documents loses its generated columns simhash_band0..3 (16 bytes a row, and
their expressions built for every INSERT); the rebuild computes the bands from
simhash. See sql/migrations/0051_the_simhash_bands_no_longer.sql.

Revision ID: 0051
Revises: 0050
"""

from alembic import op

from dedup_pg.schema import execute_each, previous_definitions
from dedup_pg.sqlfiles import read_sql

revision = "0051"
down_revision = "0050"
branch_labels = None
depends_on = None

#: Objects this revision takes from sql/schema/ (their definitions are in its
#: SQL file); the downgrade re-applies each one's previous definition.
OBJECTS = ["function:dedup_rebuild_pairs"]


def upgrade() -> None:
    # one statement a call (execute_each): a Citus coordinator refuses DDL on a
    # distributed table sent with other statements in one string
    execute_each(op, read_sql("0051_the_simhash_bands_no_longer.sql"))


#: documents' columns after the bands as revision 0050 has them (name, type,
#: NOT NULL, default): the downgrade makes each again after the bands (renamed,
#: added, copied, dropped), so every column is back in its place
_AFTER_BANDS = [
    ("text_length", "integer", True, None),
    ("clause_count", "integer", True, None),
    ("norm_version", "smallint", True, None),
    ("ingested_at", "timestamptz", True, "now()"),
    ("facts", "integer[]", False, None),
    ("clauses", "bigint[]", False, None),
]


def downgrade() -> None:
    op.execute("SET LOCAL citus.multi_shard_modify_mode = 'sequential'")
    for name, *_ in _AFTER_BANDS:
        op.execute(f"ALTER TABLE documents RENAME COLUMN {name} TO {name}_0051")
    for band in range(4):
        shifted = "simhash" if band == 0 else f"(simhash >> {16 * band})"
        op.execute(
            f"ALTER TABLE documents ADD COLUMN simhash_band{band} integer"
            f" GENERATED ALWAYS AS (({shifted} & 65535)::integer) STORED"
        )
    for name, sql_type, _, _ in _AFTER_BANDS:
        op.execute(f"ALTER TABLE documents ADD COLUMN {name} {sql_type}")
    op.execute(
        "UPDATE documents SET " + ", ".join(f"{name} = {name}_0051" for name, *_ in _AFTER_BANDS)
    )
    for name, _, not_null, default in _AFTER_BANDS:
        if not_null:
            op.execute(f"ALTER TABLE documents ALTER COLUMN {name} SET NOT NULL")
        if default is not None:
            op.execute(f"ALTER TABLE documents ALTER COLUMN {name} SET DEFAULT {default}")
        op.execute(f"ALTER TABLE documents DROP COLUMN {name}_0051")
    op.execute(
        "COMMENT ON COLUMN documents.facts IS 'keys of the numbers, proper names and titles of"
        " the text (each one''s SHA-256, first 4 bytes, signed: dedup_pg.facts.fact_key), for"
        " verifying near-duplicate matches'"
    )
    execute_each(op, previous_definitions(revision, OBJECTS))
