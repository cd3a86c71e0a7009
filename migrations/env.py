"""Alembic environment: migrations run on the connection dedup_pg hands over.

dedup_pg.database.migrate() puts a SQLAlchemy connection in
``config.attributes["connection"]``; a lock keeps two processes from migrating
the same database at once.
"""

from alembic import context
from sqlalchemy import text

connection = context.config.attributes["connection"]
context.configure(connection=connection, transaction_per_migration=True)
connection.execute(text("SELECT pg_advisory_lock(hashtext('dedup_pg.migrate'))"))
try:
    context.run_migrations()
finally:
    connection.execute(text("SELECT pg_advisory_unlock(hashtext('dedup_pg.migrate'))"))
