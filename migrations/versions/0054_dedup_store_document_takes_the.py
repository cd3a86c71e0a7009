"""dedup_store_document takes the clauses held from every caller

Its third argument no longer defaults to NULL (which stood for the item's lead);
the review verbs and the rebuild's load pass the lead. See
sql/migrations/0054_dedup_store_document_takes_the.sql.

Revision ID: 0054
Revises: 0053
"""

from alembic import op

from dedup_pg.schema import execute_each, previous_definitions
from dedup_pg.sqlfiles import read_sql

revision = "0054"
down_revision = "0053"
branch_labels = None
depends_on = None

#: Objects this revision takes from sql/schema/ (their definitions are in its
#: SQL file); the downgrade re-applies each one's previous definition.
OBJECTS = [
    "function:dedup_store_document",
    "function:dedup_keep_candidate",
    "function:reopen_candidate",
    "function:dedup_rebuild_load",
]


def upgrade() -> None:
    # one statement a call (execute_each), as a Citus coordinator wants DDL
    execute_each(op, read_sql("0054_dedup_store_document_takes_the.sql"))


def downgrade() -> None:
    # 0053's definitions: CREATE OR REPLACE may add the default back (it may
    # not remove one, hence the DROP of the upgrade)
    op.execute(previous_definitions(revision, OBJECTS))
