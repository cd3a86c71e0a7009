"""document_sightings without a primary key

The (sighting_id, seen_at) primary key is dropped: nothing reads by it, and
sighting_id is unique by construction. See
sql/migrations/0072_document_sightings_without_a_primary.sql.

Revision ID: 0072
Revises: 0071
"""

from alembic import op

from dedup_pg.schema import execute_each
from dedup_pg.sqlfiles import read_sql

revision = "0072"
down_revision = "0071"
branch_labels = None
depends_on = None

#: Objects this revision takes from sql/schema/ (their definitions are in its
#: SQL file); the downgrade re-applies each one's previous definition.
OBJECTS = []


def upgrade() -> None:
    # one statement a call (execute_each): a Citus coordinator refuses DDL on a
    # distributed table sent with other statements in one string
    execute_each(op, read_sql("0072_document_sightings_without_a_primary.sql"))


def downgrade() -> None:
    # the key as revision 0001 made it; building it reads every partition once
    op.execute("SET LOCAL citus.multi_shard_modify_mode = 'sequential'")
    op.execute(
        "ALTER TABLE document_sightings"
        " ADD CONSTRAINT document_sightings_pkey PRIMARY KEY (sighting_id, seen_at)"
    )
