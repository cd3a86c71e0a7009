"""The rebuild learns the MinHash layer and the fact check: dedup_rebuild_pairs
forms MinHash pairs (shared band values) and fact-checks near-duplicate
matches; dedup_refingerprint rewrites documents.minhash / facts and
document_minhash_bands (and fills them for documents stored before 0008).

Revision ID: 0009
Revises: 0008
"""

from alembic import op

from dedup_pg.sqlfiles import read_sql, sql_function

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(read_sql("0009_rebuild_minhash.sql"))


def downgrade() -> None:
    for name in ("dedup_refingerprint", "dedup_rebuild_pairs"):
        op.execute(sql_function("0007_rebuild.sql", name))
    op.execute(
        """
        COMMENT ON FUNCTION dedup_refingerprint(jsonb) IS
            'Rewrite the fingerprints of stored documents (documents, document_clauses, document_digests) with values computed under the current normalization; returns how many changed. Called by dedup-pg rebuild --refingerprint.';
        COMMENT ON FUNCTION dedup_rebuild_pairs(timestamptz, jsonb) IS
            'Candidate pairs of a rebuild (exact, SimHash band self-joins, shared clauses) with each layer''s verdict under dedup_ingest''s rules. Called by dedup-pg rebuild.';
        """
    )
