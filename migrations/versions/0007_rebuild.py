"""Full-history rebuild: dedup_rebuild_runs (progress of rebuild and
re-fingerprint runs), dedup_refingerprint, dedup_rebuild_load,
dedup_rebuild_pairs, dedup_rebuild_vector_pairs, dedup_rebuild_demote,
dedup_rebuild_review.

Revision ID: 0007
Revises: 0006
"""

from alembic import op

from dedup_pg.sqlfiles import read_sql

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(read_sql("0007_rebuild.sql"))


def downgrade() -> None:
    op.execute(
        """
        DROP FUNCTION dedup_rebuild_review(jsonb);
        DROP FUNCTION dedup_rebuild_demote(jsonb);
        DROP FUNCTION dedup_rebuild_vector_pairs(timestamptz, jsonb);
        DROP FUNCTION dedup_rebuild_pairs(timestamptz, jsonb);
        DROP FUNCTION dedup_rebuild_load(jsonb);
        DROP FUNCTION dedup_refingerprint(jsonb);
        DROP TABLE dedup_rebuild_runs;
        """
    )
