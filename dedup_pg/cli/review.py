"""``review``: the review queue, and the reviewer's verbs as in psql."""

from __future__ import annotations

import json

import click
import psycopg

from ..candidates import read_candidate
from ..sqlfiles import queries
from .common import database_options, open_deduper, text_table


@click.group()
def review() -> None:
    """Work the review queue (the same functions a reviewer calls from psql)."""


@review.command("list")
@click.option("--limit", default=50, show_default=True, type=click.IntRange(1, 10_000))
@click.option(
    "--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True
)
@database_options
def review_list(limit: int, fmt: str, dsn: str | None, home: str | None) -> None:
    """Pending reviews, oldest first."""
    with open_deduper(dsn, home) as dd:
        cur = dd.conn.execute(queries()["review_list"], {"limit": limit})
        names = [c.name for c in cur.description or []]
        rows = cur.fetchall()
    if fmt == "json":
        items = [dict(zip(names, row, strict=True)) for row in rows]
        click.echo(json.dumps(items, ensure_ascii=False, indent=2, default=str))
        return
    shown = [
        [*r[:4], r[4] or "", r[5] or "", (r[6] or "")[:30], r[7], (r[8] or "")[:30]] for r in rows
    ]
    click.echo(text_table(names, shown) if rows else "nothing to review")


@review.command("show")
@click.argument("candidate_id", type=int)
@database_options
def review_show(candidate_id: int, dsn: str | None, home: str | None) -> None:
    """One decision with both texts in full."""
    with open_deduper(dsn, home) as dd:
        c = read_candidate(dd.conn, candidate_id)
        if c is None:
            raise click.ClickException(f"duplicate candidate {candidate_id} does not exist")
    score = f"score {c['score']:.3f}" + (
        f", distance {c['distance']}" if c["distance"] is not None else ""
    )
    click.echo(
        f"candidate {c['candidate_id']}: {c['status']}, {c['layer']}, {score}, at {c['created_at']:%Y-%m-%d %H:%M}"
    )
    if c["decided_at"]:
        click.echo(
            f"decided by {c['decided_by']} at {c['decided_at']:%Y-%m-%d %H:%M}: {c['note'] or ''}"
        )
    for side, prefix in (("incoming", ""), ("matched", "matched_")):
        ident = c[f"{prefix}external_id"] or "-"
        doc = c["doc_id"] if side == "incoming" else c["matched_doc_id"]
        click.echo(
            f"\n--- {side}: {ident} (doc_id {doc or '-'}; {c[f'{prefix}source'] or '-'} {c[f'{prefix}url'] or ''})"
        )
        click.echo(f"title: {c[f'{prefix}title'] or ''}")
        click.echo(c[f"{prefix}body"] or "(gone)")


def _decide(
    verb: str,
    candidate_id: int,
    note: str | None,
    by: str | None,
    dsn: str | None,
    home: str | None,
) -> None:
    with open_deduper(dsn, home) as dd:
        try:
            row = dd.conn.execute(
                queries()[verb], {"id": candidate_id, "note": note, "by": by or _whoami()}
            ).fetchone()
        except (psycopg.errors.RaiseException, psycopg.errors.NoDataFound) as exc:
            hint = f" ({exc.diag.message_hint})" if exc.diag.message_hint else ""
            raise click.ClickException(f"{exc.diag.message_primary}{hint}") from exc
    assert row is not None
    kept = f", document {row[2]}" if row[2] else ""
    click.echo(f"candidate {row[0]}: {row[1]}{kept}")


def _whoami() -> str:
    import getpass

    return getpass.getuser()


_NOTE = click.option("--note", help="Why (kept with the decision).")


_BY = click.option("--by", help="Who decides (default: the login name).")


def _decision(verb: str, summary: str) -> None:
    """Add ``review VERB ID``: one of the reviewer's verbs, as in psql."""

    @review.command(verb, help=summary)
    @click.argument("candidate_id", type=int)
    @_NOTE
    @_BY
    @database_options
    def command(
        candidate_id: int, note: str | None, by: str | None, dsn: str | None, home: str | None
    ) -> None:
        _decide(verb, candidate_id, note, by, dsn, home)


_decision("restore", "Not a duplicate: store it as a document and whitelist it.")


_decision("confirm", "A duplicate: drop its kept document, if any.")


_decision("dismiss", "A review that is not a duplicate: keep the document, whitelist the pair.")
