"""``stats``: verdicts per day and source, as a table, JSON or Prometheus text."""

from __future__ import annotations

import json

import click

from ..metrics import prometheus_text
from ..sqlfiles import queries
from .common import database_options, open_deduper, text_table


@click.command()
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "json", "prometheus"]),
    default="table",
    show_default=True,
    help="prometheus: the Prometheus text format, to scrape or push.",
)
@database_options
def stats(fmt: str, dsn: str | None, home: str | None) -> None:
    """Verdicts per day and source (ingested, new, duplicates by layer, reviews, restored, errors)."""
    with open_deduper(dsn, home) as dd:
        if fmt == "prometheus":
            click.echo(prometheus_text(dd.conn), nl=False)
            return
        cur = dd.conn.execute(queries()["stats"])
        names = [c.name for c in cur.description or []]
        rows = cur.fetchall()
        tcur = dd.conn.execute(queries()["totals"])
        totals = dict(
            zip([c.name for c in tcur.description or []], tcur.fetchone() or (), strict=True)
        )
    if fmt == "json":
        daily = [dict(zip(names, [str(r[0]), *r[1:]], strict=True)) for r in rows]
        click.echo(json.dumps({"totals": totals, "daily": daily}, ensure_ascii=False, indent=2))
        return
    click.echo("  ".join(f"{k} {v}" for k, v in totals.items()))
    click.echo(text_table(names, [[str(r[0]), r[1] or "(none)", *r[2:]] for r in rows]))
