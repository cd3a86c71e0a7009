"""Retention: table sizes before and after a week of days is dropped.

Every sina2018 article (11,377) is ingested over the last 15 days (seen_at
spread evenly, oldest first) into a fresh embedded server; then
``dedup-pg partitions drop --older-than 8`` drops the days (and the lookup
tables' weeks) older than 8 days, and VACUUM lets the exact layer's table
reuse what its deleted digests held. Run from the repository root:

    python bench/retention.py [--out bench/results/retention.md]
"""

from __future__ import annotations

import argparse
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

from common import (
    DATA,
    Report,
    allow_backfill,
    cpu_model,
    engine_revision,
    log,
    read_jsonl,
    scratch_dir,
)

from dedup_pg import Deduper, database
from dedup_pg.partitions import drop_older_than

TABLES = (
    "documents",
    "document_digests",
    "document_sightings",
    "duplicate_candidates",
    "document_clauses",
    "document_minhash_bands",
    "document_simhash_bands",
)
SIZES = """
SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint,
       (SELECT count(*) FROM {table})
  FROM pg_class c
 WHERE c.oid = '{table}'::regclass
    OR c.oid IN (SELECT inhrelid FROM pg_inherits WHERE inhparent = '{table}'::regclass)
"""


def sizes(dd: Deduper) -> dict[str, tuple[int, int]]:
    return {t: tuple(dd.conn.execute(SIZES.format(table=t)).fetchone()) for t in TABLES}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=int, default=15)
    parser.add_argument("--older-than", type=int, default=8)
    parser.add_argument("--out", type=Path, default=Path("bench/results/retention.md"))
    args = parser.parse_args()
    articles = read_jsonl(DATA / "news" / "sina2018.jsonl")
    home = scratch_dir("dedup-retention-")
    now = datetime.now(timezone.utc)
    start = now - timedelta(days=args.days)
    step = timedelta(days=args.days) / len(articles)
    docs = [
        {
            "id": a["id"],
            "title": a["title"],
            "body": a["body"],
            "source": "sina",
            "seen_at": (start + i * step).isoformat(),
        }
        for i, a in enumerate(articles)
    ]
    report = Report()
    with Deduper(home=home) as dd:
        allow_backfill(dd)
        t0 = time.perf_counter()
        verdicts = list(dd.ingest_many(docs))
        log(f"ingested {len(verdicts):,} in {time.perf_counter() - t0:.1f} s")
        dd.conn.execute("VACUUM ANALYZE")
        before = sizes(dd)
        t0 = time.perf_counter()
        dropped = drop_older_than(dd.conn, args.older_than)
        took = time.perf_counter() - t0
        dd.conn.execute("VACUUM ANALYZE")
        after = sizes(dd)
    database.stop_embedded(home)

    report("# Retention: what a dropped week gives back")
    report()
    report(
        f"Engine {engine_revision()}; {cpu_model()}; `python bench/retention.py` "
        f"({len(docs):,} sina2018 articles over {args.days} days, then "
        f"`partitions drop --older-than {args.older_than}`: {len(dropped)} partitions "
        f"dropped in {took:.2f} s, then VACUUM)."
    )
    report()
    report("| table | rows before | rows after | bytes before | bytes after |")
    report("|---|---|---|---|---|")
    for t in TABLES:
        (b_bytes, b_rows), (a_bytes, a_rows) = before[t], after[t]
        report(f"| `{t}` | {b_rows:,} | {a_rows:,} | {b_bytes:,} | {a_bytes:,} |")
    report()
    report(
        "Bytes: heap, TOAST and indexes of every partition (pg_total_relation_size). "
        "`document_digests` is one table across all days: after VACUUM its freed "
        "space is reused by new digests; its file does not shrink (VACUUM FULL would)."
    )
    report.write(args.out)


if __name__ == "__main__":
    main()
