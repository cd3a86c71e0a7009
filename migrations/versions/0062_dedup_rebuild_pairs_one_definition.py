"""dedup_rebuild_pairs one definition for one node and Citus

What Citus runs differently is dedup_rebuild_lookup_rows (temporary views over
the lookup tables on one node, copies on Citus); the pairs' bodies and facts are
read by key through dedup_document_row. See
sql/migrations/0062_dedup_rebuild_pairs_one_definition.sql.

Revision ID: 0062
Revises: 0061
"""

from alembic import op

from dedup_pg.schema import previous_definitions
from dedup_pg.sqlfiles import read_sql

revision = "0062"
down_revision = "0061"
branch_labels = None
depends_on = None

#: Objects this revision takes from sql/schema/ (their definitions are in its
#: SQL file); the downgrade re-applies each one's previous definition.
OBJECTS = [
    "function:dedup_document_row",
    "function:dedup_rebuild_lookup_rows",
    "function:dedup_rebuild_pairs",
]


def upgrade() -> None:
    op.execute(read_sql("0062_dedup_rebuild_pairs_one_definition.sql"))


def downgrade() -> None:
    op.execute(previous_definitions(revision, OBJECTS))
