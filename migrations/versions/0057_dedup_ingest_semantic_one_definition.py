"""dedup_ingest_semantic one definition for one node and Citus

What Citus runs differently are functions of their own (dedup_hnsw_search_settings,
dedup_gate_candidates, dedup_nearest_candidates; their Citus forms in sql/citus/). See
sql/migrations/0057_dedup_ingest_semantic_one_definition.sql.

Revision ID: 0057
Revises: 0056
"""

from alembic import op

from dedup_pg.schema import previous_definitions
from dedup_pg.sqlfiles import read_sql

revision = "0057"
down_revision = "0056"
branch_labels = None
depends_on = None

#: Objects this revision takes from sql/schema/ (their definitions are in its
#: SQL file); the downgrade re-applies each one's previous definition.
OBJECTS = [
    "function:dedup_hnsw_search_settings",
    "function:dedup_gate_candidates",
    "function:dedup_nearest_candidates",
    "function:dedup_ingest_semantic",
]


def upgrade() -> None:
    op.execute(read_sql("0057_dedup_ingest_semantic_one_definition.sql"))


def downgrade() -> None:
    op.execute(previous_definitions(revision, OBJECTS))
