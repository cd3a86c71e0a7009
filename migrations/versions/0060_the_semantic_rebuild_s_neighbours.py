"""The semantic rebuild's neighbours and documents through two functions

dedup_rebuild_vector_pairs reads its nearest neighbours through
dedup_rebuild_neighbours (which has a Citus form) and its documents through
dedup_documents_by_id, so its Citus copy is gone. See
sql/migrations/0060_the_semantic_rebuild_s_neighbours.sql.

Revision ID: 0060
Revises: 0059
"""

from alembic import op

from dedup_pg.schema import previous_definitions
from dedup_pg.sqlfiles import read_sql

revision = "0060"
down_revision = "0059"
branch_labels = None
depends_on = None

#: Objects this revision takes from sql/schema/ (their definitions are in its
#: SQL file); the downgrade re-applies each one's previous definition.
OBJECTS = [
    "function:dedup_rebuild_neighbours",
    "function:dedup_documents_by_id",
    "function:dedup_rebuild_vector_pairs",
]


def upgrade() -> None:
    op.execute(read_sql("0060_the_semantic_rebuild_s_neighbours.sql"))


def downgrade() -> None:
    op.execute(previous_definitions(revision, OBJECTS))
