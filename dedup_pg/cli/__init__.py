"""The ``dedup-pg`` command: a thin layer over :class:`dedup_pg.Deduper`.

Every option has an environment fallback (shown in ``--help``); library errors
become one-line messages, not tracebacks.
"""

from __future__ import annotations

import click

from . import (
    calibrate,
    ingest,
    models,
    partitions,
    rebuild,
    review,
    serve,
    server,
    settings,
    stats,
    templates,
)
from .ingest import EXIT_ALL_INGESTED, EXIT_SOME_REJECTED, EXIT_STOPPED, verdict_line


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="pg-text-dedup")
def main() -> None:
    """De-duplicate crawled text on PostgreSQL: new, duplicate (of what, by which
    layer, with what score) or review, for every document."""


# Every command there is. Each lives in the module named after it, with its
# subcommands if it is a group; a few related ones share one: ingest (ingest,
# check, demo), models (models, reembed), server (init, dsn, psql, stop).
for command in (
    calibrate.calibrate,
    ingest.check,
    ingest.demo,
    ingest.ingest,
    models.models,
    models.reembed,
    partitions.partitions,
    rebuild.rebuild,
    review.review,
    serve.serve,
    server.dsn,
    server.init,
    server.psql,
    server.stop,
    settings.settings,
    stats.stats,
    templates.templates,
):
    main.add_command(command)

__all__ = ["EXIT_ALL_INGESTED", "EXIT_SOME_REJECTED", "EXIT_STOPPED", "verdict_line", "main"]
