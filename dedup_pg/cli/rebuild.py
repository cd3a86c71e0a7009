"""``rebuild``: re-run de-duplication over everything stored, in batch."""

from __future__ import annotations

import contextlib
import json
from typing import Any

import click

from ..sqlfiles import queries
from .common import batch_size_option, database_options, open_deduper, utc
from .ingest import input_items


@click.command()
@click.option("--since", type=click.DateTime(), help="Only documents seen from this time on (UTC).")
@click.option(
    "--input",
    "input_path",
    type=click.Path(exists=True, dir_okay=False, allow_dash=True),
    help="Load this JSONL corpus first (stored without checks; the rebuild decides).",
)
@click.option(
    "--refingerprint",
    is_flag=True,
    help="First recompute stored fingerprints under the current normalization (resumable).",
)
@click.option(
    "--force", is_flag=True, help="With --refingerprint: redo it even if the rules did not change."
)
@click.option("--dry-run", is_flag=True, help="Print what would be done; write nothing.")
@click.option("--no-semantic", is_flag=True, help="Leave the embedding neighbours out.")
@batch_size_option
@click.option(
    "--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True
)
@database_options
def rebuild(
    since: Any,
    input_path: str | None,
    refingerprint: bool,
    force: bool,
    dry_run: bool,
    no_semantic: bool,
    batch_size: int,
    fmt: str,
    dsn: str | None,
    home: str | None,
) -> None:
    """Re-run de-duplication over everything stored, in batch: candidate pairs by
    set-based SQL, duplicate links unioned into clusters (the earliest document
    kept), the rest demoted to restorable candidates, reviews queued."""
    from .. import rebuild as rb
    from ..deduper import prepare_batch

    def say(message: str) -> None:
        click.echo(message, err=True)

    with open_deduper(dsn, home, batch_size=batch_size) as dd, contextlib.ExitStack() as stack:
        loaded = 0
        if input_path is not None:
            if dry_run:
                raise click.UsageError("--input stores the corpus: it cannot be a dry run")
            items, _ = input_items(input_path, stack)
            batch: list[Any] = []
            for item in [*items, None]:
                if item is not None:
                    batch.append(item)
                if len(batch) >= batch_size or (item is None and batch):
                    prepared = prepare_batch(batch, **dd._prepare_args())
                    if prepared.errors:
                        with dd.conn.transaction(), dd.conn.cursor() as cur:
                            cur.executemany(
                                queries()["record_error"], [e[3] for e in prepared.errors]
                            )
                    loaded += len(rb.load_rows(dd.conn, prepared.rows))
                    batch = []
                    say(f"loaded {loaded:,} documents")
        result = None
        with dd.conn.transaction(force_rollback=dry_run) if dry_run else contextlib.nullcontext():
            if refingerprint:
                result = rb.refingerprint(
                    dd.conn,
                    options=dd.options,
                    templates=dd.templates.current(),
                    batch_size=batch_size,
                    force=force,
                    dry_run=dry_run,
                    progress=lambda done, total, changed: say(
                        f"refingerprint: {done:,}/{total:,} documents, {changed:,} changed"
                    ),
                )
            report = rb.rebuild(
                dd.conn,
                options=dd.options,
                templates=dd.templates.current(),
                since=utc(since),
                dry_run=dry_run,
                semantic=not no_semantic,
                chunk=batch_size,
                progress=say,
            )
        report.refingerprint = result
    data = report.to_json() | {"loaded": loaded}
    if fmt == "json":
        click.echo(json.dumps(data, ensure_ascii=False, indent=2, default=str))
        return
    verb = "would demote" if dry_run else "demoted"
    click.echo(
        f"{data['documents']:,} documents read, {data['pairs']:,} judged pairs, "
        f"{data['clusters']:,} clusters (largest {data['largest_cluster']})"
    )
    for layer, n in sorted(report.duplicates.items()):
        click.echo(f"  {verb} {n:,} {layer} duplicates")
    for layer, n in sorted(report.reviews.items()):
        click.echo(f"  {'would queue' if dry_run else 'queued'} {n:,} {layer} reviews")
    if result is not None:
        click.echo(
            f"refingerprint: {result.done:,} documents, {result.changed:,} changed"
            + (" (resumed)" if result.resumed else "")
        )
    click.echo(
        f"{data['rounds']} rounds, {data['seconds']:.1f} s" + (", dry run" if dry_run else "")
    )
