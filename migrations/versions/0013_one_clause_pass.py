"""One pass over the clause index per check: the holders read to tell
boilerplate apart are the containment layer's candidates too.

Revision ID: 0013
Revises: 0012
"""

from alembic import op

from dedup_pg.sqlfiles import read_sql, sql_function

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(read_sql("0013_one_clause_pass.sql"))


def downgrade() -> None:
    op.execute(sql_function("0012_simhash_lookup.sql", "dedup_ingest"))
    op.execute(
        "ALTER FUNCTION dedup_ingest(jsonb, boolean, jsonb) SET plan_cache_mode = force_generic_plan"
    )
