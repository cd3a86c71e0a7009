"""dedup_ensure_partitions described as it is

Its COMMENT names the seven tables it partitions, by day or by ISO week (it
said four, by day). See sql/migrations/0065_dedup_ensure_partitions_described_as.sql.

Revision ID: 0065
Revises: 0064
"""

from alembic import op

from dedup_pg.schema import previous_definitions
from dedup_pg.sqlfiles import read_sql

revision = "0065"
down_revision = "0064"
branch_labels = None
depends_on = None

#: Objects this revision takes from sql/schema/ (their definitions are in its
#: SQL file); the downgrade re-applies each one's previous definition.
OBJECTS = ["function:dedup_ensure_partitions"]


def upgrade() -> None:
    op.execute(read_sql("0065_dedup_ensure_partitions_described_as.sql"))


def downgrade() -> None:
    op.execute(previous_definitions(revision, OBJECTS))
