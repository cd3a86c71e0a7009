"""The MinHash layer and fact verification: document_minhash_bands,
documents.minhash / facts (and on duplicate_candidates), dedup_minhash_bands,
dedup_minhash_similarity, dedup_facts_disagree, dedup_remove_document; the
ingest function gains the MinHash layer and the fact check.

Revision ID: 0008
Revises: 0007
"""

from alembic import op

from dedup_pg.sqlfiles import read_sql, sql_function, sql_view

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(read_sql("0008_minhash.sql"))


def downgrade() -> None:
    # Refuse rather than lose: MinHash verdicts have no layer to go back to.
    op.execute(
        """
        DO $$
        BEGIN
            IF EXISTS (SELECT 1 FROM duplicate_candidates WHERE layer = 'minhash') THEN
                RAISE EXCEPTION 'cannot downgrade below 0008: duplicate_candidates holds MinHash verdicts'
                    USING HINT = 'restore, confirm or export them first (layer = ''minhash'')';
            END IF;
        END $$;
        UPDATE document_sightings SET layer = NULL WHERE layer = 'minhash' AND candidate_id IS NULL;
        """
    )
    op.execute(
        """
        DROP FUNCTION dedup_remove_document(bigint, timestamptz);
        DROP FUNCTION dedup_facts_disagree(text[], text[], double precision, double precision);
        DROP FUNCTION dedup_minhash_similarity(integer[], integer[]);
        DROP TABLE document_minhash_bands;
        DROP FUNCTION dedup_minhash_bands(integer[]);
        ALTER TABLE documents DROP COLUMN minhash, DROP COLUMN facts;
        ALTER TABLE duplicate_candidates DROP COLUMN minhash, DROP COLUMN facts;
        ALTER TYPE dedup_item DROP ATTRIBUTE minhash, DROP ATTRIBUTE facts;
        UPDATE dedup_settings
           SET value = '6',
               description = 'SimHash distance at or below which a text is queued for review (at most 7)'
         WHERE name = 'simhash_review_distance' AND value = '3';
        DELETE FROM dedup_settings
         WHERE name IN ('simhash_review_margin', 'minhash_threshold', 'minhash_review_threshold', 'facts_disagreement_share',
                        'facts_added_share');
        """
    )
    for filename, name in (
        ("0001_functions.sql", "dedup_store_document"),
        ("0001_functions.sql", "dedup_record_candidate"),
        ("0002_review.sql", "dedup_candidate_item"),
        ("0002_review.sql", "confirm_candidate"),
        ("0004_semantic.sql", "dedup_document_item"),
        ("0004_semantic.sql", "dedup_demote_document"),
        ("0004_semantic.sql", "dedup_ensure_partitions"),
        ("0004_semantic.sql", "dedup_ingest"),
        ("0001_functions.sql", "dedup_simhash_distances"),
    ):
        op.execute(sql_function(filename, name))
    op.execute(sql_view("0004_semantic.sql", "dedup_partitions"))
    for name in ("document_clusters", "dedup_daily_stats"):
        op.execute(f"DROP VIEW {name}")
        op.execute(sql_view("0002_review.sql", name))
    op.execute(
        """
        ALTER TABLE document_sightings DROP CONSTRAINT document_sightings_layer_check,
            ADD CONSTRAINT document_sightings_layer_check
                CHECK (layer IN ('exact', 'simhash', 'containment', 'semantic'));
        ALTER TABLE duplicate_candidates DROP CONSTRAINT duplicate_candidates_layer_check,
            ADD CONSTRAINT duplicate_candidates_layer_check
                CHECK (layer IN ('exact', 'simhash', 'containment', 'semantic'));
        """
    )
