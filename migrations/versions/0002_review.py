"""Review queue worked from psql: restore/confirm/dismiss functions, the
review_queue and document_clusters views, a fuller dedup_daily_stats.

Revision ID: 0002
Revises: 0001
"""

from alembic import op

from dedup_pg.sqlfiles import read_sql

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(read_sql("0002_review.sql"))


def downgrade() -> None:
    op.execute(
        """
        DROP VIEW IF EXISTS dedup_daily_stats, document_clusters, review_queue;
        DROP FUNCTION IF EXISTS restore_candidate(bigint, text, text);
        DROP FUNCTION IF EXISTS confirm_candidate(bigint, text, text);
        DROP FUNCTION IF EXISTS dismiss_candidate(bigint, text, text);
        DROP FUNCTION IF EXISTS dedup_keep_candidate(duplicate_candidates, text, text, text);
        DROP FUNCTION IF EXISTS dedup_lock_candidate(bigint);
        DROP FUNCTION IF EXISTS dedup_candidate_item(duplicate_candidates);
        """
    )
    op.execute(read_sql("0001_views.sql"))  # the revision-0001 dedup_daily_stats
