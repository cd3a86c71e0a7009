"""dedup_ingest one definition for one node and Citus

The statements Citus plans differently are functions of their own
(dedup_clause_holders, dedup_containment_candidates; their Citus forms in
sql/citus/), and sightings are inserted by dedup_store_sightings. See
sql/migrations/0056_dedup_ingest_one_definition_for.sql.

Revision ID: 0056
Revises: 0055
"""

from alembic import op

from dedup_pg.schema import previous_definitions
from dedup_pg.sqlfiles import read_sql

revision = "0056"
down_revision = "0055"
branch_labels = None
depends_on = None

#: Objects this revision takes from sql/schema/ (their definitions are in its
#: SQL file); the downgrade re-applies each one's previous definition.
OBJECTS = [
    "function:dedup_clause_holders",
    "function:dedup_containment_candidates",
    "function:dedup_store_sightings",
    "function:dedup_record_candidate",
    "function:dedup_ingest",
]


def upgrade() -> None:
    op.execute(read_sql("0056_dedup_ingest_one_definition_for.sql"))


def downgrade() -> None:
    op.execute(previous_definitions(revision, OBJECTS))
