"""Day partitions as an operation: the dedup_partitions view.

Revision ID: 0003
Revises: 0002
"""

from alembic import op

from dedup_pg.sqlfiles import read_sql

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(read_sql("0003_partitions.sql"))


def downgrade() -> None:
    op.execute("DROP VIEW IF EXISTS dedup_partitions")
