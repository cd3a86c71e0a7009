"""Four store functions one definition for one node and Citus

dedup_remove_document, dedup_document_item, dedup_redelivered and
dedup_document_clauses take their PL/pgSQL (Citus) forms on one node too. See
sql/migrations/0058_four_store_functions_one_definition.sql.

Revision ID: 0058
Revises: 0057
"""

from alembic import op

from dedup_pg.schema import previous_definitions
from dedup_pg.sqlfiles import read_sql

revision = "0058"
down_revision = "0057"
branch_labels = None
depends_on = None

#: Objects this revision takes from sql/schema/ (their definitions are in its
#: SQL file); the downgrade re-applies each one's previous definition.
OBJECTS = [
    "function:dedup_remove_document",
    "function:dedup_document_item",
    "function:dedup_redelivered",
    "function:dedup_document_clauses",
]


def upgrade() -> None:
    op.execute(read_sql("0058_four_store_functions_one_definition.sql"))


def downgrade() -> None:
    op.execute(previous_definitions(revision, OBJECTS))
