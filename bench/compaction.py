"""What ``dedup-pg partitions compact`` does to a week that has ended.

A store of the growth corpus (bench/growth.py's ``Corpus`` and ``Stream``:
recombined sina2018 articles, 5% reposts) ingested with default settings into a
fresh embedded server, every ``seen_at`` inside the last ISO week that has
ended, so all of its lookup rows are in partitions ``compact`` packs. Then,
before and after ``partitions.compact_closed_weeks``:

- the size of every lookup table's index (bytes a kept document), and
- the installed ``dedup_ingest`` as a dry run on new texts of that week
  (bench/growth.py's ``layer_latency``: every layer, and each alone), with
  their verdicts, which must not change.

Usage::

    python bench/compaction.py --docs 200000
"""

from __future__ import annotations

import argparse
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import growth  # noqa: E402  (bench/ is the script's folder)
from common import (  # noqa: E402
    LAYER_RUNS,
    ROOT,
    allow_backfill,
    cpu_model,
    engine_revision,
    log,
    scratch_dir,
)

from dedup_pg import Deduper, database  # noqa: E402
from dedup_pg.partitions import COMPACTED_TABLES, compact_closed_weeks  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "compaction.md"
LOOKUPS = ("document_clauses", "document_minhash_bands", "document_simhash_bands")
INDEXES_SQL = """
SELECT t.relname, i.relname, a.amname, pg_relation_size(i.oid)
  FROM pg_inherits h
  JOIN pg_class t ON t.oid = h.inhparent
  JOIN pg_index x ON x.indrelid = h.inhrelid
  JOIN pg_class i ON i.oid = x.indexrelid
  JOIN pg_am a ON a.oid = i.relam
 WHERE t.relname = ANY (%s)
"""


def index_bytes(dd: Deduper) -> dict[tuple[str, str], int]:
    """(table, index method) -> bytes, over every partition."""
    out: dict[tuple[str, str], int] = {}
    for table, _, method, size in dd.conn.execute(INDEXES_SQL, [list(LOOKUPS)]):
        out[(table, method)] = out.get((table, method), 0) + int(size)
    return out


def last_ended_week(now: datetime) -> datetime:
    """Monday 00:00 UTC of the last ISO week that has ended."""
    monday = (now - timedelta(days=now.weekday() + 7)).date()
    return datetime.combine(monday, datetime.min.time(), tzinfo=timezone.utc)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--docs", type=int, default=200_000, help="distinct documents")
    ap.add_argument("--checks", type=int, default=500, help="new texts checked before and after")
    ap.add_argument("--output", type=Path, default=RESULTS)
    args = ap.parse_args()

    week = last_ended_week(datetime.now(timezone.utc))
    corpus = growth.Corpus(growth.DATA / "sina2018.jsonl", growth.SEED, 0.0)
    stream = growth.Stream(corpus, args.docs, week + growth.SPAN, 0.05, growth.SEED)
    # new texts of that week's last hour (never ingested: indices past the stream's)
    misses = []
    for k in range(args.checks):
        doc = stream.doc(growth.MISS_BASE + k)
        doc["seen_at"] = (week + growth.SPAN - timedelta(minutes=30)).timestamp()
        misses.append(doc)

    home = scratch_dir("compaction-")
    started = time.perf_counter()
    dsn = database.start_embedded(str(home))
    try:
        with Deduper(dsn) as dd:
            allow_backfill(dd)
            log(f"ingesting {args.docs:,} documents into the week of {week.date()}")
            t0 = time.perf_counter()
            for _ in dd.ingest_many(stream.items(args.docs, 500), batch_size=500):
                pass
            ingest_s = time.perf_counter() - t0
            dd.conn.execute("VACUUM ANALYZE")
            kept = int(dd.conn.execute("SELECT count(*) FROM documents").fetchone()[0])
            before = index_bytes(dd)
            lat_before = growth.layer_latency(dd, misses, count_bands=False)
            log("compacting")
            t0 = time.perf_counter()
            done = compact_closed_weeks(dd.conn)
            compact_s = time.perf_counter() - t0
            after = index_bytes(dd)
            lat_after = growth.layer_latency(dd, misses, count_bands=False)
            # the same texts once more, before-order effects aside
            lat_again = growth.layer_latency(dd, misses, count_bands=False)
    finally:
        database.stop_embedded(str(home))

    rows = []
    for key in sorted(before):
        b, a = before[key], after.get(key, 0)
        rows.append(
            f"| `{key[0]}` {key[1]} | {b / kept:,.1f} | {a / kept:,.1f} | {a / b:.2f} |"
            + (" packed |" if key[0] in COMPACTED_TABLES and key[1] == "btree" else " left |")
        )
    tb, ta = sum(before.values()), sum(after.values())
    rows.append(f"| all lookup indexes | {tb / kept:,.1f} | {ta / kept:,.1f} | {ta / tb:.2f} | |")
    lat = [
        f"| {key} | {1000 * lat_before[key]['p50']:.3f} | {1000 * lat_after[key]['p50']:.3f}"
        f" | {1000 * lat_again[key]['p50']:.3f} |"
        for key, _, _, _ in LAYER_RUNS
    ]
    same = lat_before["verdicts"] == lat_after["verdicts"] == lat_again["verdicts"]
    text = "\n".join(
        [
            "# `partitions compact` on a week that has ended",
            "",
            f"`python bench/compaction.py --docs {args.docs}` at {engine_revision()},"
            f" {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, {cpu_model()}: {kept:,} documents"
            f" kept of the growth corpus, every one in the ISO week of {week.date()},"
            f" ingested in {ingest_s:.0f} s; {len(done)} indexes packed in {compact_s:.1f} s;"
            f" whole run {time.perf_counter() - started:.0f} s.",
            "",
            "| index (all partitions) | bytes a kept document before | after | ratio | |",
            "|---|---:|---:|---:|---|",
            *rows,
            "",
            f"Dry-run `dedup_ingest` on {lat_before['n']} new texts of that week, p50 ms (before;"
            " after; after, a second pass):",
            "",
            "| layers | before | after | after again |",
            "|---|---:|---:|---:|",
            *lat,
            "",
            f"Verdicts of those checks: {lat_before['verdicts']}; the same after both passes: {same}.",
            "",
        ]
    )
    args.output.write_text(text, encoding="utf-8")
    print(text)
    if not same:
        sys.exit("verdicts changed")


if __name__ == "__main__":
    main()
