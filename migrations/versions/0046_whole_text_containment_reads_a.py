"""Whole-text containment reads a stored body's opening first: a pair's shared-clause
count is asked before its bodies are compared, and a stored body whose folded opening is
not in the incoming body is not folded whole when only it can be the shorter.

Revision ID: 0046
Revises: 0045
"""

from alembic import op

from dedup_pg.schema import previous_definitions
from dedup_pg.sqlfiles import read_sql

revision = "0046"
down_revision = "0045"
branch_labels = None
depends_on = None

#: Objects this revision takes from sql/schema/ (their definitions are in its
#: SQL file); the downgrade re-applies each one's previous definition.
OBJECTS = ["function:dedup_head_within", "function:dedup_whole_within", "function:dedup_ingest"]


def upgrade() -> None:
    op.execute(read_sql("0046_whole_text_containment_reads_a.sql"))


def downgrade() -> None:
    op.execute(previous_definitions(revision, OBJECTS))
