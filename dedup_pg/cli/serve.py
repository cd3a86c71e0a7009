"""``serve``: the HTTP check service (:mod:`dedup_pg.service`)."""

from __future__ import annotations

import json

import click

from .common import database_options


@click.command()
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    envvar="DEDUP_PG_HOST",
    show_envvar=True,
    help="Address to bind (loopback by default; put a proxy in front to expose it).",
)
@click.option(
    "--port",
    default=8000,
    show_default=True,
    type=click.IntRange(0, 65535),
    envvar="DEDUP_PG_PORT",
    show_envvar=True,
)
@click.option(
    "--token",
    envvar="DEDUP_PG_API_TOKEN",
    show_envvar=True,
    help="Require 'Authorization: Bearer TOKEN' on /v1 and /metrics.",
)
@click.option(
    "--pool-size",
    default=4,
    show_default=True,
    type=click.IntRange(1, 256),
    help="Database connections (requests served in parallel).",
)
@click.option(
    "--max-bytes",
    default=10 * 1024 * 1024,
    show_default=True,
    type=click.IntRange(1024),
    help="Largest request body accepted (larger: 413).",
)
@click.option("--openapi", "print_openapi", is_flag=True, help="Print the OpenAPI schema and exit.")
@database_options
def serve(
    host: str,
    port: int,
    token: str | None,
    pool_size: int,
    max_bytes: int,
    print_openapi: bool,
    dsn: str | None,
    home: str | None,
) -> None:
    """Run the HTTP check service (POST /v1/check, /v1/ingest; GET /v1/documents/ID, /healthz, /metrics)."""
    try:
        import uvicorn

        from ..service import create_app
    except ImportError as exc:
        raise click.ClickException(
            f"the service needs its extra: pip install 'pg-text-dedup[service]' (in a checkout: pip install '.[service]') ({exc})"
        ) from exc
    app = create_app(dsn, home=home, token=token, pool_size=pool_size, max_bytes=max_bytes)
    if print_openapi:
        click.echo(json.dumps(app.openapi(), ensure_ascii=False, indent=2, sort_keys=True))
        return
    uvicorn.run(app, host=host, port=port, log_level="info")
