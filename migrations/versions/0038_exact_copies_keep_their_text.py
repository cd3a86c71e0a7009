"""Exact copies keep their text when the document they point to goes: confirming a review (or reopening it as automatic) removed its document and left its exact copies, whose text is the document's by reference, without one; so did dropping the document's day while the copy's day stayed.

Revision ID: 0038
Revises: 0037
"""

from alembic import op

from dedup_pg.schema import previous_definitions
from dedup_pg.sqlfiles import read_sql

revision = "0038"
down_revision = "0037"
branch_labels = None
depends_on = None

#: Objects this revision takes from sql/schema/ (their definitions are in its
#: SQL file); the downgrade re-applies each one's previous definition.
OBJECTS = ["function:dedup_remove_document", "function:dedup_keep_texts_of_days"]


def upgrade() -> None:
    op.execute(read_sql("0038_exact_copies_keep_their_text.sql"))


def downgrade() -> None:
    op.execute(previous_definitions(revision, OBJECTS))
