"""SimHash band partitions vacuumed every 20,000 rows

The week partitions of document_simhash_bands, those that exist and those
dedup_ensure_partitions creates, are vacuumed by autovacuum after every 20,000
rows inserted, so that the SimHash probe's index-only scan finds their pages
all-visible. See sql/migrations/0068_simhash_band_partitions_vacuumed_every.sql.

Revision ID: 0068
Revises: 0067
"""

from alembic import op

from dedup_pg.schema import execute_each, previous_definitions
from dedup_pg.sqlfiles import read_sql

revision = "0068"
down_revision = "0067"
branch_labels = None
depends_on = None

#: Objects this revision takes from sql/schema/ (their definitions are in its
#: SQL file); the downgrade re-applies each one's previous definition.
OBJECTS = ["function:dedup_ensure_partitions"]


def upgrade() -> None:
    # one statement a call: a Citus coordinator refuses DDL on a distributed
    # table sent with other statements in one string
    execute_each(op, read_sql("0068_simhash_band_partitions_vacuumed_every.sql"))


def downgrade() -> None:
    op.execute(previous_definitions(revision, OBJECTS))
    op.execute(
        """DO $$
        DECLARE
            r record;
        BEGIN
            FOR r IN SELECT i.inhrelid::regclass AS part FROM pg_inherits i
                      WHERE i.inhparent = 'document_simhash_bands'::regclass LOOP
                EXECUTE format('ALTER TABLE %s RESET (autovacuum_vacuum_insert_threshold,'
                               ' autovacuum_vacuum_insert_scale_factor)', r.part);
            END LOOP;
        END $$"""
    )
