"""The stored text another layer sent to review compared on its MinHash signature

dedup_ingest compares the SimHash or containment layer's review candidate on
the whole MinHash signature, band shared or not: at minhash_threshold or above
it is a MinHash duplicate. See
sql/migrations/0070_stored_text_another_layer_sent.sql.

Revision ID: 0070
Revises: 0069
"""

from alembic import op

from dedup_pg.schema import previous_definitions
from dedup_pg.sqlfiles import read_sql

revision = "0070"
down_revision = "0069"
branch_labels = None
depends_on = None

#: Objects this revision takes from sql/schema/ (their definitions are in its
#: SQL file); the downgrade re-applies each one's previous definition.
OBJECTS = ["function:dedup_ingest"]


def upgrade() -> None:
    op.execute(read_sql("0070_stored_text_another_layer_sent.sql"))


def downgrade() -> None:
    # Undo the hand-written part of the SQL file here (before or after the
    # definitions, as the dependencies need).
    op.execute(previous_definitions(revision, OBJECTS))
