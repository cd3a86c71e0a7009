"""The database and the embedded server: ``init``, ``dsn``, ``psql``, ``stop``."""

from __future__ import annotations

import os
import subprocess
import sys

import click

from .. import database
from .common import database_options, home_option, open_deduper


@click.command()
@click.option(
    "--citus",
    is_flag=True,
    envvar="DEDUP_PG_CITUS",
    show_envvar=True,
    help="The DSN is a Citus coordinator: distribute the schema over its workers "
    "(also done when the database has the citus extension).",
)
@database_options
def init(dsn: str | None, home: str | None, citus: bool) -> None:
    """Create or migrate the database (starting the embedded server if needed),
    and keep jieba's tables in the term cache folder for later processes."""
    if citus:
        if not (dsn or os.environ.get("DEDUP_PG_DSN")):
            raise click.ClickException("--citus needs --dsn (the coordinator)")
        target = database.resolve_dsn(dsn, home)
        with database.connect(target, autocommit=True) as conn:
            database.check_citus(conn)
    with open_deduper(dsn, home) as dd:
        revision = database.current_revision(dd.dsn)
        click.echo(f"database ready at revision {revision}: {_redact(dd.dsn)}")
    # once per machine, as the server: jieba's IDF table and dictionary names
    # read and hashed (~0.8 s of CPU) and kept, so that no ingest or check
    # pays for them
    from .. import term_cache
    from ..tokenize import JiebaFiles, JiebaTables

    if term_cache.jieba_path() is not None and term_cache.load_jieba() is None:
        term_cache.save_jieba(JiebaTables.of(JiebaFiles.read()))


@click.command()
@database_options
def dsn(dsn: str | None, home: str | None) -> None:
    """Print the connection string (starting the embedded server if needed)."""
    click.echo(database.resolve_dsn(dsn, home))


@click.command(context_settings={"ignore_unknown_options": True})
@click.argument("psql_args", nargs=-1, type=click.UNPROCESSED)
@database_options
def psql(psql_args: tuple[str, ...], dsn: str | None, home: str | None) -> None:
    """Open psql on the database (the embedded server ships its own psql)."""
    target = database.resolve_dsn(dsn, home)
    database.migrate(target)
    binary = database.psql_binary()
    sys.exit(subprocess.call([binary, target, *psql_args]))


@click.command()
@home_option
def stop(home: str | None) -> None:
    """Stop the embedded server (it is otherwise left running for the next command)."""
    click.echo("stopped" if database.stop_embedded(home) else "not running")


def _redact(dsn: str) -> str:
    import re

    return re.sub(r"(://[^:/@]+:)[^@]+@", r"\1***@", dsn)
