"""Gated semantic check by key: dedup_ingest_semantic looks the hash layers'
candidates up in document_embeddings by doc_id (= ANY of an array) and their
document rows one at a time, instead of joins the planner ran as scans of every
stored vector and every document.

Revision ID: 0011
Revises: 0010
"""

from alembic import op

from dedup_pg.sqlfiles import read_sql, sql_function

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(read_sql("0011_gated_lookup.sql"))


def downgrade() -> None:
    op.execute(sql_function("0004_semantic.sql", "dedup_ingest_semantic"))
