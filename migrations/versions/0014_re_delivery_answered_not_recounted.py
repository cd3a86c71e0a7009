"""Re-delivery answered, not recounted; the seen_at window settings

Revision ID: 0014
Revises: 0013
"""

from alembic import op

from dedup_pg.schema import previous_definitions
from dedup_pg.sqlfiles import read_sql

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

#: Objects this revision takes from sql/schema/ (their definitions are in its
#: SQL file); the downgrade re-applies each one's previous definition.
OBJECTS = ["function:dedup_redelivered", "function:dedup_ingest", "function:dedup_ingest_semantic"]


def upgrade() -> None:
    op.execute(read_sql("0014_re_delivery_answered_not_recounted.sql"))


def downgrade() -> None:
    op.execute(previous_definitions(revision, OBJECTS))
    op.execute(
        "DELETE FROM dedup_settings WHERE name IN ('seen_at_future_hours', 'seen_at_past_days')"
    )
