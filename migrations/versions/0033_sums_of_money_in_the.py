"""Sums of money in the fact check: a near-duplicate match goes to review when both texts name sums of money (¥N, N元, N万元, N亿元) and none is in both (facts_money_amounts): another price for one product, another amount over one template.

Revision ID: 0033
Revises: 0032
"""

from alembic import op

from dedup_pg.schema import previous_definitions
from dedup_pg.sqlfiles import read_sql

revision = "0033"
down_revision = "0032"
branch_labels = None
depends_on = None

#: Objects this revision takes from sql/schema/ (their definitions are in its
#: SQL file); the downgrade re-applies each one's previous definition.
OBJECTS = ["function:dedup_text_amounts", "function:dedup_facts_verdict"]


def upgrade() -> None:
    op.execute(read_sql("0033_sums_of_money_in_the.sql"))


def downgrade() -> None:
    op.execute(previous_definitions(revision, OBJECTS))
    op.execute("DELETE FROM dedup_settings WHERE name = 'facts_money_amounts'")
