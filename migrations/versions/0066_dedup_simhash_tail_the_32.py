"""dedup_simhash_tail: the 32 bits after a SimHash band

The function revision 0067 fills document_simhash_bands.tail with. See
sql/migrations/0066_dedup_simhash_tail_the_32.sql.

Revision ID: 0066
Revises: 0065
"""

from alembic import op

from dedup_pg.schema import previous_definitions
from dedup_pg.sqlfiles import read_sql

revision = "0066"
down_revision = "0065"
branch_labels = None
depends_on = None

#: Objects this revision takes from sql/schema/ (their definitions are in its
#: SQL file); the downgrade re-applies each one's previous definition.
OBJECTS = ["function:dedup_simhash_tail"]


def upgrade() -> None:
    op.execute(read_sql("0066_dedup_simhash_tail_the_32.sql"))


def downgrade() -> None:
    op.execute(previous_definitions(revision, OBJECTS))
