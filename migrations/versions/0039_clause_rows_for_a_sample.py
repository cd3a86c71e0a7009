"""Clause rows for a sample from 16 clauses, and for every clause stored texts already hold: a text of 16-31 clauses keeps rows for its sample (hash & 3 = 0), its first three clauses and the clauses stored texts held when it came (a site template's lines keep reaching the boilerplate count), not for each clause (issue 19: on sina2018 343 bytes a document less, 200 index bytes a kept document less).

Revision ID: 0039
Revises: 0038
"""

from alembic import op

from dedup_pg.schema import previous_definitions
from dedup_pg.sqlfiles import read_sql

revision = "0039"
down_revision = "0038"
branch_labels = None
depends_on = None

#: Objects this revision takes from sql/schema/ (their definitions are in its
#: SQL file); the downgrade re-applies each one's previous definition.
OBJECTS = [
    "function:dedup_clause_rows_whole",
    "function:dedup_clause_rows",
    "function:dedup_store_document_bands",
    "function:dedup_store_document",
    "function:dedup_ingest",
]


def upgrade() -> None:
    op.execute(read_sql("0039_clause_rows_for_a_sample.sql"))


def downgrade() -> None:
    # the forms with the new parameter go first: the previous ones take their
    # place (a call would else be ambiguous)
    op.execute(
        "DROP FUNCTION dedup_clause_rows(bigint[], bigint[], bigint[]);"
        " DROP FUNCTION dedup_store_document_bands(dedup_item, bigint, bigint[], bigint[]);"
    )
    op.execute(previous_definitions(revision, OBJECTS))
