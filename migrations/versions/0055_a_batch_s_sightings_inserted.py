"""A batch's sightings inserted in one statement

dedup_ingest collects its items' sightings (dedup_sighting) and inserts them
after the loop in one statement; a candidate row is stored by
dedup_store_candidate. See sql/migrations/0055_a_batch_s_sightings_inserted.sql.

Revision ID: 0055
Revises: 0054
"""

from alembic import op

from dedup_pg.schema import previous_definitions
from dedup_pg.sqlfiles import read_sql

revision = "0055"
down_revision = "0054"
branch_labels = None
depends_on = None

#: Objects this revision takes from sql/schema/ (their definitions are in its
#: SQL file); the downgrade re-applies each one's previous definition.
OBJECTS = [
    "function:dedup_store_candidate",
    "function:dedup_sighting",
    "function:dedup_record_candidate",
    "function:dedup_ingest",
]


def upgrade() -> None:
    op.execute(read_sql("0055_a_batch_s_sightings_inserted.sql"))


def downgrade() -> None:
    op.execute(previous_definitions(revision, OBJECTS))
