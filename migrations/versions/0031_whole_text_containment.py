"""Whole-text containment: a stored text sharing a single clause is a containment duplicate when the shorter body lies whole inside the other (at least containment_whole_text_chars = 50 characters): a short item reposted under a hashtag line or cut to its first sentence.

Revision ID: 0031
Revises: 0030
"""

from alembic import op

from dedup_pg.schema import previous_definitions
from dedup_pg.sqlfiles import read_sql

revision = "0031"
down_revision = "0030"
branch_labels = None
depends_on = None

#: Objects this revision takes from sql/schema/ (their definitions are in its
#: SQL file); the downgrade re-applies each one's previous definition.
OBJECTS = ["function:dedup_body_within", "function:dedup_ingest", "function:dedup_rebuild_pairs"]


def upgrade() -> None:
    op.execute(read_sql("0031_whole_text_containment.sql"))


def downgrade() -> None:
    op.execute(previous_definitions(revision, OBJECTS))
    op.execute("DELETE FROM dedup_settings WHERE name = 'containment_whole_text_chars'")
