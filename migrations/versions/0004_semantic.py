"""The semantic layer: embedding models, document_embeddings (halfvec, HNSW per
model), per-source settings, dedup_ingest_semantic; dedup_ingest gains the
semantic gate and the lead rule, and its SimHash band probe reads covering
indexes only.

Revision ID: 0004
Revises: 0003
"""

from alembic import op

from dedup_pg.sqlfiles import read_sql, sql_function

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(read_sql("0004_semantic.sql"))


def downgrade() -> None:
    op.execute(
        """
        DROP FUNCTION dedup_ingest_semantic(jsonb, jsonb, smallint, boolean, jsonb);
        DROP FUNCTION dedup_model_index_sql(smallint, regclass, text, boolean, boolean);
        DROP FUNCTION dedup_model_index_name(smallint);
        DROP FUNCTION dedup_number_overlap(text[], text[]);
        DROP FUNCTION dedup_numbers(text);
        DROP FUNCTION dedup_demote_document(bigint, timestamptz, bigint, bigint, timestamptz, text,
                                            double precision, jsonb);
        DROP FUNCTION dedup_document_item(bigint, timestamptz);
        DROP FUNCTION dedup_ingest(jsonb, boolean, jsonb);
        DROP FUNCTION dedup_effective_settings(text, jsonb);
        DROP TABLE document_embeddings, embedding_models, dedup_sources;
        DELETE FROM dedup_settings WHERE name IN ('semantic_mode', 'semantic_gate_distance',
            'semantic_neighbours', 'semantic_ef_search', 'semantic_duplicate', 'semantic_review',
            'semantic_min_number_overlap', 'content_type');
        """
    )
    op.execute(
        """
        DROP INDEX document_clauses_doc_id_idx;
        DROP INDEX documents_simhash_band0_idx, documents_simhash_band1_idx,
                   documents_simhash_band2_idx, documents_simhash_band3_idx;
        CREATE INDEX documents_simhash_band0_idx ON documents (simhash_band0);
        CREATE INDEX documents_simhash_band1_idx ON documents (simhash_band1);
        CREATE INDEX documents_simhash_band2_idx ON documents (simhash_band2);
        CREATE INDEX documents_simhash_band3_idx ON documents (simhash_band3);
        """
    )
    op.execute(sql_function("0001_functions.sql", "dedup_ingest"))
    op.execute(sql_function("0001_functions.sql", "dedup_ensure_partitions"))
    op.execute(read_sql("0003_partitions.sql").replace("CREATE VIEW", "CREATE OR REPLACE VIEW"))
