"""Clause rows: a long text's sample, all its clauses on its row (documents.clauses):
a text of 32+ clauses has rows for a quarter of them and its first three; a stored text
is found through a row and compared on all its clauses. sina2018: 5,913 -> 4,896 bytes
a document beside the text.

Revision ID: 0025
Revises: 0024
"""

from alembic import op

from dedup_pg.schema import execute_each, previous_definitions
from dedup_pg.sqlfiles import read_sql

revision = "0025"
down_revision = "0024"
branch_labels = None
depends_on = None

#: Objects this revision takes from sql/schema/ (their definitions are in its
#: SQL file); the downgrade re-applies each one's previous definition.
OBJECTS = [
    "function:dedup_clause_rows_whole",
    "function:dedup_clause_array",
    "function:dedup_clause_rows",
    "function:dedup_document_clauses",
    "function:dedup_shared_clauses",
    "function:dedup_store_document_bands",
    "function:dedup_document_item",
    "function:dedup_record_candidate",
    "function:dedup_ingest",
    "function:dedup_candidate_item",
    "function:dedup_refingerprint",
    "function:dedup_rebuild_pairs",
]


def upgrade() -> None:
    # one statement a call (execute_each): a Citus coordinator refuses DDL on a
    # distributed table sent with other statements in one string
    execute_each(op, read_sql("0025_clause_rows_a_long_text.sql"))


def downgrade() -> None:
    # the type first: the previous definitions build items of its old fields
    op.execute("ALTER TYPE dedup_item DROP ATTRIBUTE lead")
    execute_each(op, previous_definitions(revision, OBJECTS))
    # a row for every clause again, as before the revision
    op.execute(
        "INSERT INTO document_clauses (clause_hash, doc_id, seen_at)"
        " SELECT h, d.doc_id, d.seen_at FROM documents d, unnest(d.clauses) h"
        " EXCEPT SELECT c.clause_hash, c.doc_id, c.seen_at FROM document_clauses c"
    )
    op.execute("ALTER TABLE documents DROP COLUMN clauses")
    op.execute("ALTER TABLE duplicate_candidates DROP COLUMN lead")
    op.execute(
        "COMMENT ON TABLE document_clauses IS 'Clause hashes of stored documents"
        " (the containment layer''s lookup); partitioned by ISO week'"
    )
