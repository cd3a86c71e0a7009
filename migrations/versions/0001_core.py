"""Core schema: documents, digests, clauses, sightings, candidates, whitelist,
settings, errors; the ingest function and the daily stats view.

Revision ID: 0001
Revises:
"""

from alembic import op

from dedup_pg.sqlfiles import read_sql

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(read_sql("0001_schema.sql"))
    op.execute(read_sql("0001_functions.sql"))
    op.execute(read_sql("0001_views.sql"))


def downgrade() -> None:
    op.execute(
        """
        DROP VIEW IF EXISTS dedup_daily_stats;
        DROP FUNCTION IF EXISTS dedup_ingest(jsonb, boolean, jsonb);
        DROP FUNCTION IF EXISTS dedup_record_candidate(dedup_item, text, text, bigint, bigint,
            timestamptz, text, double precision, integer, jsonb);
        DROP FUNCTION IF EXISTS dedup_store_document(dedup_item, bigint);
        DROP TYPE IF EXISTS dedup_item;
        DROP FUNCTION IF EXISTS dedup_pair_whitelisted(bytea, bytea);
        DROP FUNCTION IF EXISTS dedup_simhash_distances(integer, jsonb);
        DROP FUNCTION IF EXISTS dedup_band_neighbours(integer, integer);
        DROP FUNCTION IF EXISTS dedup_ensure_partitions(date, date);
        DROP TABLE IF EXISTS ingest_errors, dedup_whitelist, duplicate_candidates,
            document_sightings, document_clauses, document_digests, documents,
            dedup_lock_stripes, dedup_settings;
        """
    )
