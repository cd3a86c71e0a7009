"""``templates``: learned template noise (learn, list, enable, disable)."""

from __future__ import annotations

import json

import click

from .common import database_options, open_deduper, text_table


@click.group()
def templates() -> None:
    """Learned template noise: lines a source repeats on most of its pages,
    stripped before fingerprinting (the source_templates table)."""


@templates.command("learn")
@click.option("--source", help="Only this source (default: every source).")
@click.option(
    "--min-share",
    type=click.FloatRange(0, 1, min_open=True),
    help="Share of a source's documents a line must be in (default: setting template_min_share).",
)
@click.option(
    "--min-docs",
    type=click.IntRange(2),
    help="Documents to see before judging a line (default: setting template_min_docs).",
)
@click.option(
    "--days",
    default=30,
    show_default=True,
    type=click.IntRange(1),
    help="Read documents seen within this many days.",
)
@database_options
def templates_learn(
    source: str | None,
    min_share: float | None,
    min_docs: int | None,
    days: int,
    dsn: str | None,
    home: str | None,
) -> None:
    """Count the lines of documents stored since the last run, per source, and
    add the recurring ones as patterns (incremental: run it as often as you like)."""
    from ..templates import learn

    with open_deduper(dsn, home) as dd:
        results = learn(dd.conn, source, min_share=min_share, min_docs=min_docs, days=days)
    rows = [[r.source, r.documents, r.docs_counted, r.new_patterns, r.version] for r in results]
    click.echo(
        text_table(["source", "documents read", "counted so far", "new patterns", "version"], rows)
        if rows
        else "no new documents"
    )


@templates.command("list")
@click.option("--source", help="Only this source.")
@click.option(
    "--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True
)
@database_options
def templates_list(source: str | None, fmt: str, dsn: str | None, home: str | None) -> None:
    """Patterns per source, most frequent first (id, kind, enabled, share, text)."""
    from ..templates import list_patterns

    with open_deduper(dsn, home) as dd:
        rows = list_patterns(dd.conn, source)
    names = ["id", "source", "kind", "enabled", "share", "docs", "version", "text"]
    if fmt == "json":
        items = [dict(zip(names, row, strict=True)) for row in rows]
        click.echo(json.dumps(items, ensure_ascii=False, indent=2, default=str))
        return
    shown = [[*r[:7], r[7].replace("\n", " / ")[:60]] for r in rows]
    click.echo(text_table(names, shown) if rows else "no patterns")


def _switch(enabled: bool) -> None:
    """Add ``templates enable|disable ID...``."""
    verb = "enable" if enabled else "disable"

    @templates.command(
        verb,
        help=f"{verb.capitalize()} patterns by id (see: dedup-pg templates list); "
        "bumps the source's template version.",
    )
    @click.argument("pattern_ids", nargs=-1, required=True, type=int)
    @database_options
    def command(pattern_ids: tuple[int, ...], dsn: str | None, home: str | None) -> None:
        from ..templates import set_enabled

        with open_deduper(dsn, home) as dd:
            count = set_enabled(dd.conn, pattern_ids, enabled)
        click.echo(f"{count} patterns {verb}d")


_switch(True)


_switch(False)
