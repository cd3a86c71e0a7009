"""dedup_ingest reads the SimHash distances once a source (dedup_simhash_distance_steps)

A check of one text is a batch of one: dedup_ingest called
dedup_simhash_distances for it, and cached the result in a jsonb for the next
texts of the batch. The rule is now a set-returning function of one row a
length step, read into arrays once a source; dedup_simhash_distances reads it
too (one definition). See sql/migrations/0048_dedup_ingest_reads_the_simhash.sql.

Revision ID: 0048
Revises: 0047
"""

from alembic import op

from dedup_pg.schema import previous_definitions
from dedup_pg.sqlfiles import read_sql

revision = "0048"
down_revision = "0047"
branch_labels = None
depends_on = None

#: Objects this revision takes from sql/schema/ (their definitions are in its
#: SQL file); the downgrade re-applies each one's previous definition.
OBJECTS = [
    "function:dedup_simhash_distance_steps",
    "function:dedup_simhash_distances",
    "function:dedup_ingest",
]


def upgrade() -> None:
    op.execute(read_sql("0048_dedup_ingest_reads_the_simhash.sql"))


def downgrade() -> None:
    op.execute(previous_definitions(revision, OBJECTS))
