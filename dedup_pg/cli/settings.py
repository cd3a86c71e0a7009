"""``settings``: show or change the dedup_settings table."""

from __future__ import annotations

import json

import click

from .common import database_options, open_deduper, text_table


@click.group()
def settings() -> None:
    """Show or change per-database settings (the dedup_settings table)."""


@settings.command("show")
@database_options
def settings_show(dsn: str | None, home: str | None) -> None:
    """List every setting with its value."""
    with open_deduper(dsn, home) as dd:
        rows = dd.conn.execute(
            "SELECT name, value::text, description FROM dedup_settings ORDER BY name"
        ).fetchall()
    click.echo(
        text_table(["name", "value", "description"], [[r[0], r[1], r[2][:70]] for r in rows])
    )


@settings.command("set")
@click.argument("name")
@click.argument("value")
@database_options
def settings_set(name: str, value: str, dsn: str | None, home: str | None) -> None:
    """Set NAME to VALUE (JSON: 5, true, "text", [..]; bare words are taken as text)."""
    try:
        parsed = json.loads(value)
    except json.JSONDecodeError:
        parsed = value
    with open_deduper(dsn, home) as dd:
        dd.set_setting(name, parsed)
    click.echo(f"{name} = {json.dumps(parsed, ensure_ascii=False)}")
