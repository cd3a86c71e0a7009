"""Facts stored as keys: documents.facts (and candidates', items') integer[], each fact's
SHA-256 cut to 4 bytes, where the facts were text[]; the stored ones converted in SQL.
sina2018: 4,647 -> 4,463 bytes a document beside the text, its 11,377 verdicts unchanged.

Revision ID: 0027
Revises: 0026
"""

from alembic import op

from dedup_pg.schema import execute_each, previous_definitions
from dedup_pg.sqlfiles import read_sql

revision = "0027"
down_revision = "0026"
branch_labels = None
depends_on = None

#: Objects this revision takes from sql/schema/ (their definitions are in its
#: SQL file); the downgrade re-applies each one's previous definition.
OBJECTS = [
    "function:dedup_facts_disagree",
    "function:dedup_facts_verdict",
    "function:dedup_ingest",
    "function:dedup_refingerprint",
]


def upgrade() -> None:
    # one statement a call (execute_each): a Citus coordinator refuses DDL on a
    # distributed table sent with other statements in one string
    execute_each(op, read_sql("0027_facts_stored_as_keys.sql"))


def downgrade() -> None:
    # The facts' text is gone: the stored ones are dropped (a text without facts
    # is not fact-checked), and with the engine of before this revision
    # installed, `dedup-pg rebuild --refingerprint --force` reads them again
    # from the texts.
    op.execute("ALTER TYPE dedup_item ALTER ATTRIBUTE facts TYPE text[]")
    op.execute(
        "DROP FUNCTION dedup_facts_verdict(integer[], integer[], double precision,"
        " double precision, text, text, integer, integer, integer, jsonb)"
    )
    op.execute(
        "DROP FUNCTION dedup_facts_disagree(integer[], integer[], double precision,"
        " double precision)"
    )
    op.execute("ALTER TABLE documents ALTER COLUMN facts TYPE text[] USING NULL")
    op.execute("ALTER TABLE duplicate_candidates ALTER COLUMN facts TYPE text[] USING NULL")
    op.execute(
        "COMMENT ON COLUMN documents.facts IS 'numbers, proper names and titles of the text,"
        " for verifying near-duplicate matches'"
    )
    execute_each(op, previous_definitions(revision, OBJECTS))
