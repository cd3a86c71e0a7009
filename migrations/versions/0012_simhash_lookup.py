"""SimHash bands in a week-partitioned lookup table (document_simhash_bands,
replacing the four band indexes of documents), and candidates' document rows
read by key: a check's cost no longer grows with the number of day partitions
its window covers.

Revision ID: 0012
Revises: 0011
"""

from alembic import op

from dedup_pg.sqlfiles import read_sql, sql_function, sql_view

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(read_sql("0012_simhash_lookup.sql"))


def downgrade() -> None:
    op.execute(sql_view("0010_lookup_weeks.sql", "dedup_partitions", with_comment=True))
    op.execute(sql_function("0010_lookup_weeks.sql", "dedup_ensure_partitions"))
    op.execute(sql_function("0008_minhash.sql", "dedup_store_document"))
    op.execute(sql_function("0008_minhash.sql", "dedup_remove_document"))
    op.execute(sql_function("0009_rebuild_minhash.sql", "dedup_refingerprint"))
    op.execute(sql_function("0008_minhash.sql", "dedup_ingest"))
    op.execute(
        "ALTER FUNCTION dedup_ingest(jsonb, boolean, jsonb) SET plan_cache_mode = force_generic_plan"
    )
    op.execute("DROP TABLE document_simhash_bands")
    op.execute("DROP FUNCTION dedup_simhash_band_keys(bigint, integer)")
    for band in range(4):
        op.execute(
            f"CREATE INDEX documents_simhash_band{band}_idx ON documents (simhash_band{band})"
            " INCLUDE (simhash, seen_at, doc_id)"
        )
