"""A semantic duplicate passes the fact check: a match at or above the duplicate cosine is a duplicate only when dedup_semantic_agrees says so, the numbers check (semantic_min_number_overlap) as before and the hash layers' fact check (dedup_facts_verdict: two stories on one template, other sums of money), in streaming (dedup_ingest_semantic) and in the rebuild (dedup_rebuild_vector_pairs).

Revision ID: 0037
Revises: 0036
"""

from alembic import op

from dedup_pg.schema import previous_definitions
from dedup_pg.sqlfiles import read_sql

revision = "0037"
down_revision = "0036"
branch_labels = None
depends_on = None

#: Objects this revision takes from sql/schema/ (their definitions are in its
#: SQL file); the downgrade re-applies each one's previous definition.
OBJECTS = [
    "function:dedup_semantic_agrees",
    "function:dedup_ingest_semantic",
    "function:dedup_rebuild_vector_pairs",
]


def upgrade() -> None:
    op.execute(read_sql("0037_a_semantic_duplicate_passes_the.sql"))


def downgrade() -> None:
    op.execute(previous_definitions(revision, OBJECTS))
    op.execute(
        "UPDATE dedup_settings SET description = replace(description, ', semantic)', ')')"
        " WHERE name = 'facts_disagreement_share'"
    )
    op.execute(
        "UPDATE dedup_settings SET description = replace(description,"
        " '; a semantic duplicate must also pass the fact check (facts_disagreement_share)', '')"
        " WHERE name = 'semantic_min_number_overlap'"
    )
