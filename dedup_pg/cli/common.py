"""What every command shares: the --dsn/--home options with their error
wrapping (library errors become one-line messages, not tracebacks), opening
the :class:`~dedup_pg.Deduper`, aligned tables, and dates given on the command
line read as UTC."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import click
import psycopg

from .. import database
from ..deduper import DEFAULT_BATCH_SIZE, Deduper
from ..documents import InputError
from ..errors import first_line

F = TypeVar("F", bound=Callable[..., Any])


#: --home: the embedded server's folder (every database command, and ``stop``).
home_option = click.option(
    "--home",
    envvar="DEDUP_PG_HOME",
    show_envvar=True,
    type=click.Path(file_okay=False),
    help="Folder of the embedded server (default: the per-user data folder).",
)
#: --batch-size: documents per transaction (``ingest``, ``rebuild``).
batch_size_option = click.option(
    "--batch-size",
    default=DEFAULT_BATCH_SIZE,
    show_default=True,
    type=click.IntRange(1, 100_000),
    envvar="DEDUP_PG_BATCH_SIZE",
    show_envvar=True,
    help="Documents per transaction.",
)


def database_options(func: F) -> F:
    """--dsn / --home, shared by every command that talks to the database."""

    @click.option(
        "--dsn",
        envvar="DEDUP_PG_DSN",
        show_envvar=True,
        help="PostgreSQL (>= 15, with pgvector) to use. Unset: the embedded server.",
    )
    @home_option
    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except (database.DatabaseError, InputError, KeyError, ValueError) as exc:
            raise click.ClickException(str(exc).strip("'\"")) from exc
        except psycopg.Error as exc:  # one line, not a traceback
            first = first_line(exc)
            raise click.ClickException(f"database error: {first}") from exc

    return wrapper  # type: ignore[return-value]


def open_deduper(dsn: str | None, home: str | None, **kwargs: Any) -> Deduper:
    return Deduper(dsn, home=home, **kwargs)


def text_table(header: list[str], rows: list[list[Any]], max_cell: int = 40) -> str:
    """Rows as aligned text; a cell longer than ``max_cell`` characters (a
    crawled source name can be anything) is cut with an ellipsis."""
    cells = [header] + [[_cut(str(c), max_cell) for c in row] for row in rows]
    widths = [max(_width(row[i]) for row in cells) for i in range(len(header))]
    lines = [
        "  ".join(c + " " * (w - _width(c)) for c, w in zip(row, widths, strict=True)).rstrip()
        for row in cells
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _width(text: str) -> int:
    import unicodedata

    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def utc(value: Any) -> Any:
    """A ``click.DateTime`` value (naive) as UTC; None stays None."""
    from datetime import timezone

    return value if value is None or value.tzinfo else value.replace(tzinfo=timezone.utc)
