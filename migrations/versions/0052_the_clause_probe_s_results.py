"""The clause probe's results read in one pass

dedup_ingest reads the holders of an item's clauses with one aggregate where it
ran three subqueries (and the candidates' arrays as one row). See
sql/migrations/0052_the_clause_probe_s_results.sql.

Revision ID: 0052
Revises: 0051
"""

from alembic import op

from dedup_pg.schema import previous_definitions
from dedup_pg.sqlfiles import read_sql

revision = "0052"
down_revision = "0051"
branch_labels = None
depends_on = None

#: Objects this revision takes from sql/schema/ (their definitions are in its
#: SQL file); the downgrade re-applies each one's previous definition.
OBJECTS = ["function:dedup_ingest"]


def upgrade() -> None:
    op.execute(read_sql("0052_the_clause_probe_s_results.sql"))


def downgrade() -> None:
    op.execute(previous_definitions(revision, OBJECTS))
