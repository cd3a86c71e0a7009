"""The rebuild's HNSW search settings through dedup_hnsw_search_settings

dedup_rebuild_vector_pairs calls dedup_hnsw_search_settings instead of its own
copy of the settings block. See sql/migrations/0059_the_rebuild_s_hnsw_search.sql.

Revision ID: 0059
Revises: 0058
"""

from alembic import op

from dedup_pg.schema import previous_definitions
from dedup_pg.sqlfiles import read_sql

revision = "0059"
down_revision = "0058"
branch_labels = None
depends_on = None

#: Objects this revision takes from sql/schema/ (their definitions are in its
#: SQL file); the downgrade re-applies each one's previous definition.
OBJECTS = ["function:dedup_rebuild_vector_pairs"]


def upgrade() -> None:
    op.execute(read_sql("0059_the_rebuild_s_hnsw_search.sql"))


def downgrade() -> None:
    op.execute(previous_definitions(revision, OBJECTS))
