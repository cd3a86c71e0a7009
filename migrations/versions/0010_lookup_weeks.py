"""Week partitions for the lookup tables: document_clauses and
document_minhash_bands move from day to ISO-week partitions (a check descends
one or two btrees a key instead of one a day); dedup_partitions gains
last_day; dedup_ensure_partitions creates both kinds; dedup_ingest runs
with generic plans (planning over the day partitions cost more than running).

Revision ID: 0010
Revises: 0009
"""

from alembic import op

from dedup_pg.sqlfiles import read_sql, sql_function, sql_view

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

LOOKUP_TABLES = {
    # table: key column, key index suffix, its columns before 0010, BRIN options
    "document_clauses": ("clause_hash", "hash_idx", "(clause_hash)", "WITH (pages_per_range = 8)"),
    "document_minhash_bands": ("band_key", "key_idx", "(band_key) INCLUDE (seen_at, doc_id)", ""),
}


def upgrade() -> None:
    op.execute(read_sql("0010_lookup_weeks.sql"))


def downgrade() -> None:
    op.execute("ALTER FUNCTION dedup_ingest(jsonb, boolean, jsonb) RESET plan_cache_mode")
    # back to day partitions: the week tables are renamed aside, the day ones
    # created (0008's view and partition function) and filled
    for table, (_key, suffix, _columns, _brin) in LOOKUP_TABLES.items():
        op.execute(
            f"""
            ALTER TABLE {table} RENAME TO {table}_by_week;
            ALTER INDEX {table}_{suffix} RENAME TO {table}_by_week_{suffix};
            ALTER INDEX {table}_doc_id_idx RENAME TO {table}_by_week_doc_id_idx;
            """
        )
    op.execute("DROP VIEW dedup_partitions")
    op.execute(sql_view("0008_minhash.sql", "dedup_partitions"))
    op.execute(sql_function("0008_minhash.sql", "dedup_ensure_partitions"))
    for table, (key, suffix, columns, brin) in LOOKUP_TABLES.items():
        op.execute(
            f"""
            CREATE TABLE {table} ({key} bigint NOT NULL, doc_id bigint NOT NULL,
                                  seen_at timestamptz NOT NULL) PARTITION BY RANGE (seen_at);
            CREATE INDEX {table}_{suffix} ON {table} {columns};
            CREATE INDEX {table}_doc_id_idx ON {table} USING brin (doc_id) {brin};
            """
        )
    op.execute(
        "SELECT dedup_ensure_partitions(min(day), max(day)) FROM dedup_partitions HAVING count(*) > 0"
    )
    for table, (key, *_rest) in LOOKUP_TABLES.items():
        op.execute(
            f"""
            INSERT INTO {table} ({key}, doc_id, seen_at) SELECT {key}, doc_id, seen_at FROM {table}_by_week;
            DROP TABLE {table}_by_week;
            """
        )
