"""``partitions``: list, create ahead, drop old days (retention), pack ended weeks."""

from __future__ import annotations

import click

from .common import database_options, open_deduper, text_table


@click.group()
def partitions() -> None:
    """Day partitions: list them, create days ahead, drop old days (retention)."""


@partitions.command("list")
@database_options
def partitions_list(dsn: str | None, home: str | None) -> None:
    """Every partition of the per-document tables (a day, or a week for the
    lookup tables), with rows and size."""
    from ..partitions import list_partitions

    with open_deduper(dsn, home) as dd:
        parts = list_partitions(dd.conn)
    rows = [
        [
            str(p.day) if p.last_day == p.day else f"{p.day} .. {p.last_day}",
            p.table,
            p.name,
            p.approx_rows,
            f"{p.bytes / 1048576:.1f} MB",
        ]
        for p in parts
    ]
    click.echo(
        text_table(["day", "table", "partition", "rows (approx)", "size"], rows)
        if rows
        else "no partitions"
    )


@partitions.command("ensure")
@click.option(
    "--days-ahead",
    default=3,
    show_default=True,
    type=click.IntRange(0, 3650),
    help="Create partitions from today (UTC) through this many days ahead.",
)
@database_options
def partitions_ensure(days_ahead: int, dsn: str | None, home: str | None) -> None:
    """Create the missing day and week partitions ahead of time (ingest also creates them on demand)."""
    from ..partitions import ensure

    with open_deduper(dsn, home) as dd:
        created = ensure(dd.conn, days_ahead)
    click.echo(f"{created} partitions created")


@partitions.command("drop")
@click.option(
    "--older-than",
    "older_than",
    required=True,
    type=click.IntRange(1),
    help="Drop the days older than this many days (UTC).",
)
@click.option("--force", is_flag=True, help="Also drop days inside the look-back window.")
@database_options
def partitions_drop(older_than: int, force: bool, dsn: str | None, home: str | None) -> None:
    """Drop old days: documents, sightings, candidates and embeddings together,
    and the week partitions of the lookup tables whose seven days are all old (a
    partition detach and drop, not a DELETE; safe while ingest runs)."""
    from ..partitions import drop_older_than

    with open_deduper(dsn, home) as dd:
        dropped = drop_older_than(dd.conn, older_than, force=force)
    click.echo(dropped_summary(dropped))


@partitions.command("compact")
@click.option("--dry-run", is_flag=True, help="List the indexes it would pack, and change nothing.")
@click.option(
    "--force",
    is_flag=True,
    help="Pack the packed ones again (after `rebuild --refingerprint` rewrote old weeks).",
)
@database_options
def partitions_compact(dry_run: bool, force: bool, dsn: str | None, home: str | None) -> None:
    """Pack the btree indexes of the lookup tables' weeks that have ended (a
    REINDEX CONCURRENTLY each, at fillfactor 100; safe while ingest runs):
    they come out a quarter to a third smaller, and checks read them at random keys.
    Run it once a week."""
    from ..partitions import compact_closed_weeks

    with open_deduper(dsn, home) as dd:
        done = compact_closed_weeks(dd.conn, dry_run=dry_run, force=force)
    if not done:
        click.echo("nothing to compact: every ended week's indexes are packed")
        return
    mb = 1048576
    rows = [
        [
            c.index,
            f"{c.bytes_before / mb:.1f} MB",
            "-" if c.bytes_after is None else f"{c.bytes_after / mb:.1f} MB",
        ]
        for c in done
    ]
    click.echo(text_table(["index", "before", "after"], rows))
    before = sum(c.bytes_before for c in done)
    if dry_run:
        click.echo(
            f"{len(done)} indexes to pack ({before / mb:.1f} MB); nothing changed (--dry-run)"
        )
    else:
        after = sum(c.bytes_after or 0 for c in done)
        click.echo(f"{len(done)} indexes packed: {before / mb:.1f} -> {after / mb:.1f} MB")


def dropped_summary(dropped: list[str]) -> str:
    """What ``partitions drop`` prints: the count, then a line a table with
    its count and its first and last partition (names end in their first day,
    ``_pYYYYMMDD`` or ``_wYYYYMMDD``, so they sort by day). Two years of days
    dropped is ~3,300 partitions: a line each would bury the count."""
    by_table: dict[str, list[str]] = {}
    for name in dropped:
        by_table.setdefault(name.rsplit("_", 1)[0], []).append(name)
    lines = [f"dropped {len(dropped)} partitions"]
    for table, names in sorted(by_table.items()):
        names.sort(key=lambda n: n.rsplit("_", 1)[1][1:])
        span = names[0] if len(names) == 1 else f"{names[0]} .. {names[-1]}"
        lines.append(f"  {table}: {len(names)} ({span})")
    return "\n".join(lines)
