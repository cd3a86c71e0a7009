"""Day partitions as an operation: list them, create days ahead, drop old days, pack ended weeks.

documents, document_sightings, duplicate_candidates and document_embeddings
have one partition a day; the lookup tables (document_clauses,
document_minhash_bands, document_simhash_bands) one an ISO week, so that a
check descends one or two btrees a lookup key instead of one a day. Dropping a
day is a partition drop, not a DELETE: each table's partition is detached with
``DETACH PARTITION ... CONCURRENTLY`` (which does not block ingest into other
days) and then dropped. Days inside the look-back window are refused: they are
still being compared against. A week partition goes once all seven of its days
are older than the cutoff. ``document_digests`` (the exact layer, one table
across all days) loses the digests of the dropped days in the same run: they
are older than any window and would otherwise stay until a new arrival of the
same text took one over, so the table would grow without bound. Before any day
goes, an exact copy kept in a later day whose text is a dropped document's
(its body is NULL: the text was that document's) gets the text.

A closed week can also be compacted (:func:`compact_closed_weeks`): the btree
indexes of its lookup partitions, which ingest filled at random keys (pages
about 70% full), are rebuilt packed (``REINDEX INDEX CONCURRENTLY`` at
fillfactor 100: a week that has ended takes only the odd late text). They are
the indexes a check descends at random keys, so what shared_buffers must hold
shrinks for every closed week: both indexes by a quarter to a third, all the
lookup indexes by 11-14% (bench/compaction.py, 185k and 956k documents). The
MinHash GIN index is left as it grew: one built in a pass is larger
(BENCHMARKS.md, revision 0069).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import date, datetime, timedelta, timezone

import psycopg
from psycopg import sql
from psycopg.rows import dict_row

from . import database
from .sqlfiles import queries

TABLES = (
    "documents",
    "document_clauses",
    "document_sightings",
    "duplicate_candidates",
    "document_embeddings",
    "document_minhash_bands",
    "document_simhash_bands",
)


@dataclass(frozen=True)
class Partition:
    table: str
    day: date
    name: str
    approx_rows: int
    bytes: int
    last_day: date  # == day, or the Sunday of a week partition


def list_partitions(conn: psycopg.Connection) -> list[Partition]:
    return [Partition(*row) for row in conn.execute(queries()["partitions"])]


def ensure(conn: psycopg.Connection, days_ahead: int, today: date | None = None) -> int:
    """Create the partitions from today through ``days_ahead`` days ahead; returns
    how many were missing."""
    if days_ahead < 0:
        raise ValueError("days_ahead must be >= 0")
    start = today or datetime.now(timezone.utc).date()
    row = conn.execute(
        queries()["ensure_partitions"], {"from": start, "to": start + timedelta(days_ahead)}
    )
    return int(row.fetchone()[0])  # type: ignore[index]


def drop_older_than(
    conn: psycopg.Connection, days: int, *, today: date | None = None, force: bool = False
) -> list[str]:
    """Drop every partition whose days are all older than ``days`` days (UTC);
    returns the partitions dropped. Refuses days inside the look-back window unless ``force``."""
    if days < 1:
        raise ValueError("--older-than must be at least 1 day")
    window = int(conn.execute(queries()["window_days"]).fetchone()[0])  # type: ignore[index]
    if not force and (window == 0 or days <= window):
        what = "all history (window_days = 0)" if window == 0 else f"the last {window} days"
        raise ValueError(
            f"refusing to drop days the checks still look back over ({what}); "
            "use an older cutoff, lower window_days, or force"
        )
    cutoff = (today or datetime.now(timezone.utc).date()) - timedelta(days)
    # Citus refuses DETACH ... CONCURRENTLY ("currently unsupported"): there the
    # detach is a plain one, on every shard in one distributed transaction,
    # which blocks ingest into the table for the moment it takes
    detach = (
        "ALTER TABLE {} DETACH PARTITION {}"
        if database.is_citus(conn)
        else "ALTER TABLE {} DETACH PARTITION {} CONCURRENTLY"
    )
    # (the cutoff as a UTC midnight, not a date: a date compared with seen_at is
    # cast in the session's time zone, a STABLE cast Citus refuses in a DELETE)
    midnight = datetime.combine(cutoff, datetime.min.time(), tzinfo=timezone.utc)
    # exact copies kept in later days whose text is a dropped document's get it
    conn.execute(queries()["keep_texts_of_days"], {"cutoff": midnight})
    dropped = []
    for part in sorted(list_partitions(conn), key=lambda p: (p.day, p.table)):
        if part.last_day >= cutoff:
            continue
        conn.execute("SET lock_timeout = '10s'")
        conn.execute(sql.SQL(detach).format(sql.Identifier(part.table), sql.Identifier(part.name)))
        conn.execute(sql.SQL("DROP TABLE {}").format(sql.Identifier(part.name)))
        dropped.append(part.name)
    # every day before the cutoff is gone now: so are their documents' digests
    # (one statement, one scan; a digest taken over since is younger and stays)
    conn.execute(queries()["drop_old_digests"], {"cutoff": midnight})
    return dropped


#: The lookup tables whose closed weeks :func:`compact_closed_weeks` packs (their
#: btree indexes; document_minhash_bands has a GIN index and a BRIN one only).
COMPACTED_TABLES = ("document_clauses", "document_simhash_bands")


@dataclass(frozen=True)
class Compaction:
    """A closed week partition's btree index, packed (or, in a dry run, to be)."""

    table: str
    partition: str
    index: str
    bytes_before: int
    bytes_after: int | None  # None in a dry run


def compact_closed_weeks(
    conn: psycopg.Connection,
    *,
    today: date | None = None,
    dry_run: bool = False,
    force: bool = False,
) -> list[Compaction]:
    """Pack the btree indexes of the lookup tables' week partitions that ended
    before ``today`` (UTC) and were not packed yet: each gets fillfactor 100
    and is rebuilt by ``REINDEX INDEX CONCURRENTLY``, which does not block
    ingest or checks (one index at a time; ``conn`` must be in autocommit
    mode). Returns what was packed, with each index's size before and after.
    Run it after a week ends (with ``partitions drop``, say); a second run
    finds nothing to do. A late text stored into a packed week splits the
    pages it lands on, as it would have anyway. ``force`` packs the packed
    ones again: after ``dedup-pg rebuild --refingerprint``, which rewrites
    the rows of old weeks."""
    day = today or datetime.now(timezone.utc).date()
    with conn.cursor(row_factory=dict_row) as cur:
        rows = cur.execute(
            queries()["closed_week_btrees"], {"tables": list(COMPACTED_TABLES), "today": day}
        ).fetchall()
    citus = bool(rows) and database.is_citus(conn)
    todo = [
        Compaction(
            r["table_name"],
            r["partition_name"],
            r["index_name"],
            _size(conn, r["index_name"], citus),
            None,
        )
        for r in rows
        if force or not r["compacted"]
    ]
    if dry_run or not todo:
        return todo
    if citus:
        # Citus rebuilds an index's shards on a worker side by side, and their
        # names are cut to fit: the new indexes' names (<name>_ccnew) collide.
        # One connection a worker rebuilds them one after another.
        conn.execute("SET citus.multi_shard_modify_mode = 'sequential'")
    try:
        return [replace(c, bytes_after=_pack(conn, c.index, citus)) for c in todo]
    finally:
        if citus:
            conn.execute("RESET citus.multi_shard_modify_mode")


def _size(conn: psycopg.Connection, index: str, citus: bool) -> int:
    """An index's bytes; on Citus its shards' (the coordinator's is empty)."""
    size = "citus_relation_size" if citus else "pg_relation_size"
    query = sql.SQL("SELECT {}(%s::regclass)").format(sql.Identifier(size))
    return int(conn.execute(query, [index]).fetchone()[0])  # type: ignore[index]


def _pack(conn: psycopg.Connection, index: str, citus: bool) -> int:
    """Rebuild ``index`` at fillfactor 100; its size after."""
    name = sql.Identifier(index)
    conn.execute(sql.SQL("ALTER INDEX {} SET (fillfactor = 100)").format(name))
    try:
        conn.execute(sql.SQL("REINDEX INDEX CONCURRENTLY {}").format(name))
    except BaseException:
        # not packed: a later run tries it again. A REINDEX CONCURRENTLY that
        # stopped leaves its new index behind, invalid but kept up to date by
        # every insert: dropped here.
        conn.execute(sql.SQL("ALTER INDEX {} RESET (fillfactor)").format(name))
        for (left,) in conn.execute(queries()["invalid_rebuilds"], {"index": index}):
            conn.execute(
                sql.SQL("DROP INDEX CONCURRENTLY IF EXISTS {}").format(sql.Identifier(left))
            )
        raise
    return _size(conn, index, citus)
