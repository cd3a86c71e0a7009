"""SQL that ships with the package (the top-level ``sql/`` folder).

``queries.sql`` holds the runtime queries as named blocks (``-- name: NAME``),
parsed once. ``schema/`` is the current schema, each object defined once
(dedup_pg.schema builds a database from it); ``migrations/`` holds the numbered
files the Alembic revisions apply: frozen history, never the place to read what
an object looks like today.
"""

from __future__ import annotations

import re
from functools import lru_cache
from importlib.resources import files
from pathlib import Path
from typing import Any

_SOURCE_TREE = Path(__file__).resolve().parent.parent


def packaged_dir(name: str) -> Any:
    """``sql`` or ``migrations``: the top-level folder of the source checkout
    this package was imported from, when it was (so a second checkout's code,
    put first on ``sys.path``, reads its own SQL, not an editable install's);
    else inside the installed package (``dedup_pg.sql``)."""
    if (_SOURCE_TREE / "pyproject.toml").is_file() and (_SOURCE_TREE / name).is_dir():
        return _SOURCE_TREE / name
    return files(f"dedup_pg.{name}")


def read_sql(filename: str) -> str:
    """A file of ``sql/``; a numbered one (``0008_minhash.sql``) is a revision's,
    in ``sql/migrations/``."""
    if re.match(r"\d{4}_", filename):
        filename = f"migrations/{filename}"
    return packaged_dir("sql").joinpath(filename).read_text(encoding="utf-8")


@lru_cache(maxsize=1)
def queries() -> dict[str, str]:
    """Named queries from ``sql/queries.sql``."""
    text = read_sql("queries.sql")
    blocks: dict[str, str] = {}
    for match in re.finditer(r"^-- name: (\w+)\n(.*?)(?=^-- name: |\Z)", text, re.S | re.M):
        body = "\n".join(
            line for line in match.group(2).splitlines() if not line.startswith("--")
        ).strip()
        blocks[match.group(1)] = body.rstrip(";")
    return blocks


def sql_function(filename: str, name: str) -> str:
    """One ``CREATE FUNCTION name(...)`` statement of a numbered file (plpgsql
    or SQL language): a downgrade re-applies the definition the revision
    before it made."""
    text = read_sql(filename)
    match = re.search(
        rf"^CREATE (?:OR REPLACE )?FUNCTION {re.escape(name)}\(.*?^(?:END )?\$\$;$",
        text,
        re.S | re.M,
    )
    if match is None:
        raise LookupError(f"no function {name} in {filename}")
    return re.sub(r"^CREATE (?:OR REPLACE )?", "CREATE OR REPLACE ", match.group(0))


def sql_view(filename: str, name: str, *, with_comment: bool = False) -> str:
    """One ``CREATE [OR REPLACE] VIEW name`` statement of a numbered file, as
    written there (a downgrade re-applies the view the revision before it
    made); ``with_comment`` adds the ``COMMENT ON VIEW`` that follows it."""
    comment = rf"\s*^COMMENT ON VIEW {re.escape(name)} IS\n.*?;$" if with_comment else ""
    match = re.search(
        rf"^CREATE (?:OR REPLACE )?VIEW {re.escape(name)} AS.*?;${comment}",
        read_sql(filename),
        re.S | re.M,
    )
    if match is None:
        raise LookupError(f"no view {name} in {filename}")
    return match.group(0)
