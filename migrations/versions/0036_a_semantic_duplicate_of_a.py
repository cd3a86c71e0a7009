"""A semantic duplicate of a hash review keeps its text: the semantic layer took the hash layers' review of the same item, recorded a statement before against the same document, for an earlier delivery, and deleted the item's document and review (the text was lost).

Revision ID: 0036
Revises: 0035
"""

from alembic import op

from dedup_pg.schema import previous_definitions
from dedup_pg.sqlfiles import read_sql

revision = "0036"
down_revision = "0035"
branch_labels = None
depends_on = None

#: Objects this revision takes from sql/schema/ (their definitions are in its
#: SQL file); the downgrade re-applies each one's previous definition.
OBJECTS = ["function:dedup_ingest_semantic"]


def upgrade() -> None:
    op.execute(read_sql("0036_a_semantic_duplicate_of_a.sql"))


def downgrade() -> None:
    op.execute(previous_definitions(revision, OBJECTS))
