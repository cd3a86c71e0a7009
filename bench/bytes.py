"""Bytes per document, per table and index, as a new user's database holds them.

Issue 19's measure: all of ``sina2018.jsonl`` (11,377 real articles) ingested with
default settings into a fresh embedded PostgreSQL, one process, dates as the file
gives none (each article a minute after the one before, from 2018-11-20: a backfill,
so the seen_at window is widened), then ``VACUUM ANALYZE``. For every table of the
schema (a partitioned table counts its partitions): heap, TOAST and each index, in
bytes and in bytes a kept document (``documents`` rows), less what the same table
holds in the freshly migrated, empty database (``dedup_lock_stripes``' 65,536 rows,
the settings, empty partitions: sizes that do not grow with documents). Two figures
the issue sets bars for, both counted that way:

* index bytes a kept document (every index of every table; bar <= 1,000);
* all bytes (heap, TOAST, indexes, free space maps included) a document, minus the
  stored text's own bytes (``pg_column_size`` of title and body as stored:
  compressed where PostgreSQL compressed them; bar <= 2,500).

Beside them, the texts of duplicates (``duplicate_candidates`` rows of texts not kept
as documents: title and body as stored, which undoing a verdict needs): stored text
too, but not a document's, so the bar's figure counts them as other bytes; a second
line takes them out as well. A review's candidate row holds its text too, beside the
document it is kept as: a second copy, counted among the other bytes (a line says how
much).

Run from the repository root:  python bench/bytes.py [--limit N] [--output FILE] [--set NAME=JSON]
Writes bench/results/bytes.md (or FILE) and prints it.
"""

from __future__ import annotations

import argparse
import json
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

from common import (
    DATA,
    ROOT,
    Report,
    add_settings_option,
    allow_backfill,
    engine_revision,
    log,
    read_jsonl,
    scratch_dir,
    settings_of,
)

from dedup_pg import Deduper, database
from dedup_pg.partitions import compact_closed_weeks

RESULTS = ROOT / "bench" / "results" / "bytes.md"
START = datetime(2018, 11, 20, tzinfo=timezone.utc)
INDEX_BAR, OTHER_BAR = 1_000, 2_500

# per table of the schema (partitions summed under their root): heap (main fork and
# its maps), TOAST (table and index), and each index by its root name
TABLES = """
SELECT coalesce(p.relname, c.relname) AS name,
       sum(pg_relation_size(c.oid) + pg_relation_size(c.oid, 'fsm') + pg_relation_size(c.oid, 'vm')) AS heap,
       sum(CASE WHEN c.reltoastrelid = 0 THEN 0 ELSE pg_total_relation_size(c.reltoastrelid) END) AS toast
  FROM pg_class c
  JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = current_schema()
  LEFT JOIN LATERAL (SELECT r.relname FROM pg_partition_ancestors(c.oid) a
                       JOIN pg_class r ON r.oid = a.relid
                      WHERE NOT EXISTS (SELECT 1 FROM pg_inherits i WHERE i.inhrelid = a.relid)) p ON true
 WHERE c.relkind = 'r'
 GROUP BY 1
"""
INDEXES = """
SELECT coalesce(p.relname, c.relname) AS name, t.name AS table_name, sum(pg_relation_size(c.oid)) AS bytes
  FROM pg_class c
  JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = current_schema()
  JOIN pg_index i ON i.indexrelid = c.oid
  JOIN LATERAL (SELECT coalesce((SELECT r.relname FROM pg_partition_ancestors(i.indrelid) a
                                   JOIN pg_class r ON r.oid = a.relid
                                  WHERE NOT EXISTS (SELECT 1 FROM pg_inherits h WHERE h.inhrelid = a.relid)),
                                (SELECT relname FROM pg_class WHERE oid = i.indrelid)) AS name) t ON true
  LEFT JOIN LATERAL (SELECT r.relname FROM pg_partition_ancestors(c.oid) a
                       JOIN pg_class r ON r.oid = a.relid
                      WHERE NOT EXISTS (SELECT 1 FROM pg_inherits h WHERE h.inhrelid = a.relid)) p ON true
 WHERE c.relkind = 'i'
 GROUP BY 1, 2
"""
TEXT_BYTES = """
SELECT count(*), coalesce(sum(coalesce(pg_column_size(title), 0) + pg_column_size(body)), 0),
       coalesce(sum(coalesce(octet_length(title), 0) + octet_length(body)), 0)
  FROM documents
"""
# the texts on candidate rows, as stored: of duplicates (not kept as documents), and
# of texts kept as documents too (reviews: a second copy)
CANDIDATE_TEXT_BYTES = """
SELECT doc_id IS NULL, count(*),
       coalesce(sum(coalesce(pg_column_size(title), 0) + coalesce(pg_column_size(body), 0)), 0)
  FROM duplicate_candidates GROUP BY 1
"""

# the columns of documents (the schema's, in order), for column_bytes()
COLUMNS = """
SELECT attname FROM pg_attribute
 WHERE attrelid = 'documents'::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum
"""


def column_bytes(conn) -> list[tuple[str, float]]:
    """Average bytes of each column of a kept document's row as stored
    (``pg_column_size``: compressed or TOASTed values at their stored size,
    NULL as 0), and the whole row's."""
    names = [r[0] for r in conn.execute(COLUMNS)]
    sizes = ", ".join(f'avg(coalesce(pg_column_size(d."{c}"), 0))' for c in names)
    row = conn.execute(f"SELECT avg(pg_column_size(d.*)), {sizes} FROM documents d").fetchone()
    return [("(whole row)", float(row[0] or 0))] + [
        (c, float(v or 0)) for c, v in zip(names, row[1:], strict=True)
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--limit", type=int, default=None, help="first N articles only")
    ap.add_argument("--output", type=Path, default=RESULTS)
    ap.add_argument(
        "--verdicts", type=Path, default=None, help="also write each verdict as a JSON line here"
    )
    ap.add_argument(
        "--compact",
        action="store_true",
        help="run `partitions compact` after the ingest (the weeks of these dates have ended)",
    )
    add_settings_option(ap, "containment_threshold=0.8")
    args = ap.parse_args()
    changed = settings_of(args.set)
    articles = read_jsonl(DATA / "news" / "sina2018.jsonl", args.limit)
    items = [
        {
            "id": a["id"],
            "title": a.get("title"),
            "body": a["body"],
            "seen_at": (START + timedelta(minutes=k)).isoformat(),
        }
        for k, a in enumerate(articles)
    ]
    packed: list = []
    home = str(scratch_dir("dedup-bytes-"))
    dsn = database.start_embedded(home)
    try:
        with Deduper(dsn) as dd:
            allow_backfill(dd)
            for name, value in changed.items():
                dd.set_setting(name, value)
            dd.conn.execute("VACUUM ANALYZE")
            empty_tables = {r[0]: (int(r[1]), int(r[2])) for r in dd.conn.execute(TABLES)}
            empty_indexes = {r[0]: int(r[2]) for r in dd.conn.execute(INDEXES)}
            log(f"ingesting {len(items):,} sina2018 articles")
            started = time.perf_counter()
            verdicts = list(dd.ingest_many(items))
            seconds = time.perf_counter() - started
            if args.verdicts:
                with args.verdicts.open("w", encoding="utf-8") as fh:
                    for v in verdicts:
                        fh.write(json.dumps(v.to_dict(), ensure_ascii=False, sort_keys=True) + "\n")
            if args.compact:
                packed = compact_closed_weeks(dd.conn)
                log(f"packed {len(packed)} indexes")
            dd.conn.execute("VACUUM ANALYZE")
            tables = {r[0]: (int(r[1]), int(r[2])) for r in dd.conn.execute(TABLES)}
            indexes = [(r[0], r[1], int(r[2])) for r in dd.conn.execute(INDEXES)]
            kept, text_stored, text_raw = (int(x) for x in dd.conn.execute(TEXT_BYTES).fetchone())
            on_candidates = {
                r[0]: (int(r[1]), int(r[2])) for r in dd.conn.execute(CANDIDATE_TEXT_BYTES)
            }
            dup_rows, dup_text = on_candidates.get(True, (0, 0))
            kept_rows, kept_text = on_candidates.get(False, (0, 0))
            revision = dd.conn.execute("SELECT version_num FROM alembic_version").fetchone()[0]
            columns = column_bytes(dd.conn)
    finally:
        database.stop_embedded(home)

    # what the documents added: less the empty database's sizes
    tables = {
        name: (h - empty_tables.get(name, (0, 0))[0], t - empty_tables.get(name, (0, 0))[1])
        for name, (h, t) in tables.items()
    }
    indexes = [(i, t, b - empty_indexes.get(i, 0)) for i, t, b in indexes]
    counts: dict[str, int] = {}
    for v in verdicts:
        counts[v.verdict] = counts.get(v.verdict, 0) + 1
    n = len(items)
    index_total = sum(b for _, _, b in indexes)
    heap_total = sum(h for h, _ in tables.values())
    toast_total = sum(t for _, t in tables.values())
    everything = index_total + heap_total + toast_total
    out = Report()
    sets = "".join(f" --set {x}" for x in args.set)
    after = ", after `partitions compact`" if args.compact else ""
    out(f"# Bytes per document: sina2018 with {'changed' if sets else 'default'} settings{after}")
    out()
    out(
        f"`python bench/bytes.py{f' --limit {args.limit}' if args.limit else ''}{sets}"
        f"{' --compact' if args.compact else ''}` at "
        f"{engine_revision()} (schema revision {revision}): {n:,} articles ingested in "
        f"{seconds:.0f} s, one process, a fresh embedded server; verdicts "
        + ", ".join(f"{k} {v:,}" for k, v in sorted(counts.items()))
        + f"; {kept:,} documents kept. "
        + (
            f"Then `dedup-pg partitions compact` ({len(packed)} indexes packed). "
            if args.compact
            else ""
        )
        + "After VACUUM ANALYZE; every size less the same "
        "relation's in the freshly migrated, empty database."
    )
    out()
    out("| | bytes | per kept document | per ingested document | bar |")
    out("|---|---:|---:|---:|---|")
    out(
        f"| indexes (all) | {index_total:,} | **{index_total / kept:,.0f}** | "
        f"{index_total / n:,.0f} | <= {INDEX_BAR:,} a kept document: "
        f"{'PASS' if index_total / kept <= INDEX_BAR else 'FAIL'} |"
    )
    out(
        f"| heap (all tables, with maps) | {heap_total:,} | {heap_total / kept:,.0f} | {heap_total / n:,.0f} | |"
    )
    out(f"| TOAST | {toast_total:,} | {toast_total / kept:,.0f} | {toast_total / n:,.0f} | |")
    out(f"| all | {everything:,} | {everything / kept:,.0f} | {everything / n:,.0f} | |")
    out(
        f"| stored text (title + body as stored; {text_raw / kept:,.0f} bytes of UTF-8 a "
        f"kept document before compression) | {text_stored:,} | {text_stored / kept:,.0f} | "
        f"{text_stored / n:,.0f} | |"
    )
    other = everything - text_stored
    out(
        f"| all minus the stored text | {other:,} | {other / kept:,.0f} | **{other / n:,.0f}** | "
        f"<= {OTHER_BAR:,} a document: {'PASS' if other / n <= OTHER_BAR else 'FAIL'} |"
    )
    out(
        f"| texts of duplicates (title + body as stored on {dup_rows:,} candidate rows of texts "
        f"not kept; NULL for byte-identical copies) | {dup_text:,} | {dup_text / kept:,.0f} | "
        f"{dup_text / n:,.0f} | |"
    )
    rest = other - dup_text
    out(
        f"| all minus every stored text (documents' and duplicates') | {rest:,} | "
        f"{rest / kept:,.0f} | {rest / n:,.0f} | |"
    )
    out(
        f"| of which texts kept twice (title + body on {kept_rows:,} candidate rows of texts "
        f"also kept as documents: reviews) | {kept_text:,} | {kept_text / kept:,.0f} | "
        f"{kept_text / n:,.0f} | |"
    )
    out()
    out("Per table (partitions summed), per kept document:")
    out()
    out("| table | heap | TOAST | indexes | index: bytes per kept document |")
    out("|---|---:|---:|---:|---|")
    for name, (heap, toast) in sorted(tables.items(), key=lambda t: -sum(t[1])):
        own = sorted(((i, b) for i, t, b in indexes if t == name), key=lambda x: -x[1])
        idx = sum(b for _, b in own)
        if heap + toast + idx == 0:
            continue
        detail = ", ".join(f"`{i}` {b / kept:,.0f}" for i, b in own if b)
        out(
            f"| `{name}` | {heap / kept:,.0f} | {toast / kept:,.0f} | {idx / kept:,.0f} | {detail} |"
        )
    out()
    out(
        "The `documents` row by column, average bytes a kept document as stored "
        "(`pg_column_size`: compressed or TOASTed values at their stored size, NULL 0):"
    )
    out()
    out("| column | bytes |")
    out("|---|---:|")
    for name, size in columns:
        out(f"| `{name}` | {size:,.1f} |")
    out.write(args.output)
    log(f"wrote {args.output}")


if __name__ == "__main__":
    main()
