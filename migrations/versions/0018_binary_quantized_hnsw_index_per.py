"""Binary-quantized HNSW index per model, re-ranked by the halfvec

Revision ID: 0018
Revises: 0017
"""

from alembic import op

from dedup_pg.schema import previous_definitions
from dedup_pg.sqlfiles import read_sql

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None

#: Objects this revision takes from sql/schema/ (their definitions are in its
#: SQL file); the downgrade re-applies each one's previous definition.
OBJECTS = [
    "function:dedup_model_index_sql",
    "function:dedup_model_knn_sql",
    "function:dedup_model_ef_search",
    "function:dedup_ingest_semantic",
    "function:dedup_rebuild_vector_pairs",
]


def upgrade() -> None:
    op.execute(read_sql("0018_binary_quantized_hnsw_index_per.sql"))


def downgrade() -> None:
    op.execute(
        "DO $$ BEGIN IF EXISTS (SELECT 1 FROM embedding_models WHERE index_kind <> 'halfvec') THEN"
        " RAISE EXCEPTION 'a model has a binary index: rebuild it first"
        " (dedup-pg models index NAME halfvec)'; END IF; END $$"
    )
    op.execute(previous_definitions(revision, OBJECTS))
    op.execute("DELETE FROM dedup_settings WHERE name = 'semantic_rerank'")
    op.execute("ALTER TABLE embedding_models DROP COLUMN index_kind")
