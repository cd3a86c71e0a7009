"""MinHash candidates below the review band read no document

dedup_ingest's MinHash loop leaves before reading a documents row when the
best remaining candidate is below the review threshold (gated mode still reads
it). See sql/migrations/0064_minhash_candidates_below_the_review.sql.

Revision ID: 0064
Revises: 0063
"""

from alembic import op

from dedup_pg.schema import previous_definitions
from dedup_pg.sqlfiles import read_sql

revision = "0064"
down_revision = "0063"
branch_labels = None
depends_on = None

#: Objects this revision takes from sql/schema/ (their definitions are in its
#: SQL file); the downgrade re-applies each one's previous definition.
OBJECTS = ["function:dedup_ingest"]


def upgrade() -> None:
    op.execute(read_sql("0064_minhash_candidates_below_the_review.sql"))


def downgrade() -> None:
    op.execute(previous_definitions(revision, OBJECTS))
