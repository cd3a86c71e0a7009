"""Clause index on the hash alone (no INCLUDE) and no content_sha1 index on documents:
744 index bytes a kept document less on sina2018 (2,867 -> 2,123), same verdicts.

Revision ID: 0024
Revises: 0023
"""

from alembic import op

from dedup_pg.schema import execute_each, previous_definitions
from dedup_pg.sqlfiles import read_sql

revision = "0024"
down_revision = "0023"
branch_labels = None
depends_on = None

#: Objects this revision takes from sql/schema/ (their definitions are in its
#: SQL file); the downgrade re-applies each one's previous definition.
OBJECTS = ["index:document_clauses_hash_idx"]


def upgrade() -> None:
    # one statement a call (execute_each): a Citus coordinator refuses index DDL
    # sent with other statements in one string
    execute_each(op, read_sql("0024_clause_index_on_the_hash.sql"))


def downgrade() -> None:
    # on Citus the older index's names on shards are long: created in a
    # transaction after a parallel query they are refused unless sequential
    # (a setting of no effect on one node)
    op.execute("SET LOCAL citus.multi_shard_modify_mode = 'sequential'")
    op.execute("CREATE INDEX IF NOT EXISTS documents_content_sha1_idx ON documents (content_sha1)")
    execute_each(op, previous_definitions(revision, OBJECTS))
