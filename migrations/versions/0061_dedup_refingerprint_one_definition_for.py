"""dedup_refingerprint one definition for one node and Citus

dedup_refingerprint takes the form its Citus copy had (stored rows read by
doc_id into temporary tables, per-row writes), which is also faster on one
node. See sql/migrations/0061_dedup_refingerprint_one_definition_for.sql.

Revision ID: 0061
Revises: 0060
"""

from alembic import op

from dedup_pg.schema import previous_definitions
from dedup_pg.sqlfiles import read_sql

revision = "0061"
down_revision = "0060"
branch_labels = None
depends_on = None

#: Objects this revision takes from sql/schema/ (their definitions are in its
#: SQL file); the downgrade re-applies each one's previous definition.
OBJECTS = ["function:dedup_refingerprint"]


def upgrade() -> None:
    op.execute(read_sql("0061_dedup_refingerprint_one_definition_for.sql"))


def downgrade() -> None:
    op.execute(previous_definitions(revision, OBJECTS))
