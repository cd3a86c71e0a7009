"""The incoming body folded once a check: whole-text containment compared it, folded again,
with every candidate (dedup_body_within); now dedup_folded_body once and dedup_folded_within
a pair. The same answers.

Revision ID: 0042
Revises: 0041
"""

from alembic import op

from dedup_pg.schema import previous_definitions
from dedup_pg.sqlfiles import read_sql

revision = "0042"
down_revision = "0041"
branch_labels = None
depends_on = None

#: Objects this revision takes from sql/schema/ (their definitions are in its
#: SQL file); the downgrade re-applies each one's previous definition.
OBJECTS = [
    "function:dedup_folded_body",
    "function:dedup_folded_within",
    "function:dedup_body_within",
    "function:dedup_ingest",
]


def upgrade() -> None:
    op.execute(read_sql("0042_the_incoming_body_folded_once.sql"))


def downgrade() -> None:
    # Undo the hand-written part of the SQL file here (before or after the
    # definitions, as the dependencies need).
    op.execute(previous_definitions(revision, OBJECTS))
