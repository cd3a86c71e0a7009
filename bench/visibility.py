"""The SimHash probe's heap reads while a store grows: autovacuum's default against revision 0068's.

Why
---
The SimHash probe is an index-only scan of ``document_simhash_bands``'s week
partitions (revision 0067). An index-only scan reads the heap page of every
entry whose page the visibility map does not mark all-visible, and only
VACUUM marks pages. By default autovacuum vacuums a table that only grows
once its rows grew by a fifth, so up to a sixth of a week partition's band
rows cost the probe a heap read for each of their entries it meets; revision
0068 has the partitions vacuumed after every 20,000 rows instead.

What is measured
----------------
``--documents`` documents of ``bench/growth.py``'s stream (recombined real
sina2018 articles, 5% reposts) are ingested with default settings into a
fresh embedded server, twice: once with the band partitions' settings reset
to PostgreSQL's defaults ("default"), once as the engine makes them
("0068"). ``autovacuum_naptime`` is ``--naptime`` (1 s): a crawl of 10M
documents a week writes ~66 band rows a second, so 20,000 rows take ~5
minutes against the default 60-second naptime; this ingest writes ~3,000 a
second, and a 1-second naptime keeps that ratio. After every ``--every``
documents: the band partitions' pages not all-visible
(``pg_visibility_map``), and ``--probes`` probes of random simhashes as
``dedup_ingest`` runs them (EXPLAIN ANALYZE of the index-only scan): the
entries each reads and the heap rows it fetches. Also the autovacuum runs on
the band partitions and their time (PostgreSQL 18's
``total_autovacuum_time``).

    python bench/visibility.py [--documents N] [--every N] [--output PATH]

Results: ``bench/results/visibility.md``.
"""

from __future__ import annotations

import argparse
import random
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import growth
import psycopg
from common import ROOT, Report, cpu_model, engine_revision, log, scratch_dir

from dedup_pg import Deduper, database

RESULTS = ROOT / "bench" / "results" / "visibility.md"
SETTINGS = ("autovacuum_vacuum_insert_threshold", "autovacuum_vacuum_insert_scale_factor")
PARTITIONS = "SELECT inhrelid::regclass::text FROM pg_inherits WHERE inhparent = 'document_simhash_bands'::regclass"
UNMARKED = """
SELECT count(*) FILTER (WHERE NOT v.all_visible), count(*)
  FROM pg_inherits i, pg_visibility_map(i.inhrelid) v
 WHERE i.inhparent = 'document_simhash_bands'::regclass"""
VACUUMS = """
SELECT coalesce(sum(s.autovacuum_count), 0), coalesce(sum(s.total_autovacuum_time), 0)
  FROM pg_stat_user_tables s JOIN pg_inherits i ON i.inhrelid = s.relid
 WHERE i.inhparent = 'document_simhash_bands'::regclass"""
# the engine's probe (sql/schema/60_ingest.sql, radius 0 at the default distances)
PROBE = """EXPLAIN (ANALYZE, FORMAT JSON)
SELECT b.band_key, b.tail FROM document_simhash_bands b
 WHERE b.band_key = ANY (dedup_simhash_bands(%(s)s))
   AND b.seen_at BETWEEN now() - interval '8 days' AND now() + interval '1 day'
   AND bit_count((b.tail # (ARRAY[dedup_simhash_tail(%(s)s, 0), dedup_simhash_tail(%(s)s, 1),
                                  dedup_simhash_tail(%(s)s, 2), dedup_simhash_tail(%(s)s, 3)])
                           [(b.band_key >> 16) + 1])::bit(32)) <= 3"""


def probes(conn: psycopg.Connection, n: int, rng: random.Random) -> tuple[float, float]:
    """(entries read, heap rows fetched) a probe, over ``n`` random simhashes."""
    entries = fetched = 0
    for _ in range(n):
        plan = conn.execute(PROBE, {"s": rng.getrandbits(64) - 2**63}).fetchone()[0][0]["Plan"]
        stack = [plan]
        while stack:
            node = stack.pop()
            stack += node.get("Plans", [])
            if "Heap Fetches" in node:
                fetched += node["Heap Fetches"]
                entries += node["Actual Rows"] + node.get("Rows Removed by Filter", 0)
    return entries / n, fetched / n


def run(mode: str, args: argparse.Namespace, home: Path, corpus: growth.Corpus) -> list[dict]:
    dsn = database.start_embedded(home)
    rows = []
    with Deduper(dsn) as dd, psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS pg_visibility")
        conn.execute(f"ALTER SYSTEM SET autovacuum_naptime = '{args.naptime}'")
        conn.execute("SELECT pg_reload_conf()")
        now = datetime.now(timezone.utc)
        conn.execute(
            "SELECT dedup_ensure_partitions(%s, %s)",
            [(now - timedelta(days=9)).date(), (now + timedelta(days=2)).date()],
        )
        if mode == "default":
            for (part,) in conn.execute(PARTITIONS).fetchall():
                conn.execute(f"ALTER TABLE {part} RESET ({', '.join(SETTINGS)})")
        end = now.replace(microsecond=0) + timedelta(hours=12)
        stream = growth.Stream(corpus, args.documents, end, 0.05, growth.SEED)
        rng = random.Random(7)
        started = time.perf_counter()
        done = 0
        while done < args.documents:
            for _ in dd.ingest_many(stream.items(args.every, 200)):
                pass
            done += args.every
            unmarked, pages = conn.execute(UNMARKED).fetchone()
            entries, fetched = probes(conn, args.probes, rng)
            runs, ms = conn.execute(VACUUMS).fetchone()
            rows.append(
                {
                    "documents": done,
                    "stored": conn.execute("SELECT count(*) FROM documents").fetchone()[0],
                    "unmarked": unmarked,
                    "pages": pages,
                    "entries": entries,
                    "fetched": fetched,
                    "vacuums": runs,
                    "vacuum_ms": float(ms),
                    "seconds": time.perf_counter() - started,
                }
            )
            log(f"{mode}: {rows[-1]}")
    database.stop_embedded(home)
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--documents", type=int, default=150_000)
    ap.add_argument("--every", type=int, default=15_000)
    ap.add_argument("--probes", type=int, default=60)
    ap.add_argument("--naptime", default="1s")
    ap.add_argument("--output", type=Path, default=RESULTS)
    args = ap.parse_args(argv)
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    scratch = scratch_dir("dedup-visibility-")
    # read and cut into sentences once: both runs replay the same stream from it
    corpus = growth.Corpus(growth.DATA / "sina2018.jsonl", growth.SEED, 0.9)
    results = {mode: run(mode, args, scratch / mode, corpus) for mode in ("default", "0068")}

    out = Report()
    out(f"# The SimHash probe's heap reads while a store grows ({started})")
    out()
    out(
        f"`python bench/visibility.py --documents {args.documents} --every {args.every}`, "
        f"engine at {engine_revision()}, {cpu_model()}. `bench/growth.py`'s stream into a "
        f"fresh embedded server, default settings but `autovacuum_naptime = {args.naptime}`, "
        "once with the SimHash band partitions' autovacuum settings reset to PostgreSQL's "
        "defaults and once as revision 0068 makes them (vacuumed every 20,000 rows). Pages: "
        "the band partitions' pages the visibility map does not mark all-visible. Probe: "
        f"{args.probes} random simhashes, the engine's index-only scan; entries read and heap "
        "rows fetched, a probe."
    )
    out()
    out(
        "| documents | default: pages not all-visible | default: heap fetches / entries "
        "| 0068: pages not all-visible | 0068: heap fetches / entries |"
    )
    out("|---:|---|---|---|---|")
    for a, b in zip(results["default"], results["0068"], strict=True):
        cells = [
            f"{r['unmarked']:,} of {r['pages']:,} ({100 * r['unmarked'] / max(r['pages'], 1):.1f}%)"
            f" | {r['fetched']:.2f} / {r['entries']:.1f}"
            for r in (a, b)
        ]
        out(f"| {a['documents']:,} | {cells[0]} | {cells[1]} |")
    out()
    for mode, rows in results.items():
        last = rows[-1]
        out(
            f"- {mode}: {last['stored']:,} documents stored in {last['seconds']:.0f} s; "
            f"autovacuum ran {last['vacuums']} times on the band partitions, "
            f"{last['vacuum_ms'] / 1000:.1f} s in all."
        )
    out.write(args.output)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
