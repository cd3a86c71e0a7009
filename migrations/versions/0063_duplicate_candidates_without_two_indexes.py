"""duplicate_candidates without two indexes that repeat others

duplicate_candidates_candidate_id_idx (the primary key serves it) and
duplicate_candidates_pending_idx (the queue index serves it) are dropped. See
sql/migrations/0063_duplicate_candidates_without_two_indexes.sql.

Revision ID: 0063
Revises: 0062
"""

from alembic import op

from dedup_pg.schema import execute_each, previous_definitions
from dedup_pg.sqlfiles import read_sql

revision = "0063"
down_revision = "0062"
branch_labels = None
depends_on = None

#: Objects this revision takes from sql/schema/ (their definitions are in its
#: SQL file); the downgrade re-applies each one's previous definition.
OBJECTS = []


def upgrade() -> None:
    # one statement a call (execute_each): a Citus coordinator refuses DDL on a
    # distributed table sent with other statements in one string
    execute_each(op, read_sql("0063_duplicate_candidates_without_two_indexes.sql"))


def downgrade() -> None:
    op.execute("SET LOCAL citus.multi_shard_modify_mode = 'sequential'")
    execute_each(
        op,
        previous_definitions(
            revision,
            [
                "index:duplicate_candidates_candidate_id_idx",
                "index:duplicate_candidates_pending_idx",
            ],
        ),
    )
