"""Containment duplicate threshold 0.8 -> 0.7 (a database that changed it keeps its value): on the tuning set one more same-story pair found, no template merged; bench/quality.py lead rewrites 95.67% -> 96.00%, no new false duplicate.

Revision ID: 0034
Revises: 0033
"""

from alembic import op

from dedup_pg.schema import previous_definitions
from dedup_pg.sqlfiles import read_sql

revision = "0034"
down_revision = "0033"
branch_labels = None
depends_on = None

#: Objects this revision takes from sql/schema/ (their definitions are in its
#: SQL file); the downgrade re-applies each one's previous definition.
OBJECTS = []


def upgrade() -> None:
    op.execute(read_sql("0034_containment_duplicate_threshold_0_8.sql"))


def downgrade() -> None:
    op.execute(previous_definitions(revision, OBJECTS))
    op.execute(
        "UPDATE dedup_settings SET value = '0.8', updated_at = now()"
        " WHERE name = 'containment_threshold' AND value = '0.7'::jsonb"
    )
