"""Three layouts of the SimHash lookup on the same real SimHashes (issue 19's bytes).

Why
---
Until revision 0067 ``document_simhash_bands`` held a row a band of every stored
document (4 a document: ``band_key`` = band number << 16 | the band's 16 bits) under a
btree on ``band_key`` that carried ``simhash``, ``seen_at`` and ``doc_id``, so that a
probe was an index-only scan. One other layout keeps one row a document under a GIN
index of its four band keys (``dedup_simhash_bands(simhash)``), as
``document_minhash_bands`` is kept: a key's posting list holds every document sharing
it, and the probe reads the rows it finds for their distance. Fewer bytes, and a heap
row read for every document sharing a key (BENCHMARKS.md: tried, not kept). The third,
revision 0067's, keeps the row a band and indexes ``(band_key, tail) INCLUDE
(seen_at)``: ``tail`` is the next 32 bits of the simhash (``dedup_simhash_tail``), so
the index alone tells which entries are within distance by 48 of the 64 bits (a lower
bound), and a second statement reads the rows of those few for the whole simhash.

What is measured
----------------
The growth corpus (``bench/growth.py``'s recombined sina2018 articles, 5% reposts,
``seen_at`` over the 7 days before the run) is ingested with default settings into a
fresh embedded server. From its ``documents`` three scratch tables are made, each with
its index in place before the rows come (as ingest fills them), in batches of 500
documents by ``INSERT ... SELECT``: ``rows_a_band`` (the layout before revision 0067),
``row_a_document`` (GIN) and ``rows_a_band_tail`` (revision 0067's, its columns in the
order of a table made fresh). For each: heap and index bytes a document, and the
backend CPU of the inserts.
Then probes, as ``dedup_ingest`` makes them (a generic plan, the window's ``seen_at``
filter), for the SimHashes of texts never stored and of stored ones, with the four band
keys (radius 0, the default) and with each band's 16 one-bit neighbours too (radius 1,
what a review distance of 4-7 asks for: many more documents a probe): the documents
sharing a key (candidates), the documents within distance 6 (every layout must find
the same), and the backend CPU a probe (``/proc/PID/schedstat``), the layouts
alternating three times.

Run from the repository root:  python bench/simhash_layout.py [--docs N] [--probes N]
Writes bench/results/simhash_layout.md (or --output) and prints it.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import growth  # noqa: E402
from common import (  # noqa: E402
    ROOT,
    allow_backfill,
    backend_cpu,
    engine_revision,
    log,
    scratch_dir,
)

from dedup_pg import Deduper, simhash  # noqa: E402
from dedup_pg.database import start_embedded  # noqa: E402
from dedup_pg.fingerprint import fingerprint  # noqa: E402
from dedup_pg.normalize import NormalizeOptions  # noqa: E402
from dedup_pg.simhash import to_signed  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "simhash_layout.md"

LAYOUTS = """
CREATE TABLE rows_a_band (band_key integer NOT NULL, simhash bigint NOT NULL,
                          doc_id bigint NOT NULL, seen_at timestamptz NOT NULL);
CREATE INDEX rows_a_band_key_idx ON rows_a_band (band_key) INCLUDE (simhash, seen_at, doc_id);
CREATE TABLE row_a_document (simhash bigint NOT NULL, doc_id bigint NOT NULL,
                             seen_at timestamptz NOT NULL);
CREATE INDEX row_a_document_keys_idx ON row_a_document
    USING gin (dedup_simhash_bands(simhash)) WITH (fastupdate = off);
CREATE TABLE rows_a_band_tail (band_key integer NOT NULL, tail integer NOT NULL,
                               simhash bigint NOT NULL, doc_id bigint NOT NULL,
                               seen_at timestamptz NOT NULL);
CREATE INDEX rows_a_band_tail_key_idx ON rows_a_band_tail (band_key, tail) INCLUDE (seen_at);
"""
FILL = {
    "rows_a_band": "INSERT INTO rows_a_band SELECT k, d.simhash, d.doc_id, d.seen_at"
    " FROM documents d, unnest(dedup_simhash_bands(d.simhash)) k"
    " WHERE d.doc_id BETWEEN %s AND %s ORDER BY d.doc_id",
    "row_a_document": "INSERT INTO row_a_document SELECT d.simhash, d.doc_id, d.seen_at"
    " FROM documents d WHERE d.doc_id BETWEEN %s AND %s ORDER BY d.doc_id",
    "rows_a_band_tail": "INSERT INTO rows_a_band_tail SELECT k, dedup_simhash_tail(d.simhash, k >> 16),"
    " d.simhash, d.doc_id, d.seen_at"
    " FROM documents d, unnest(dedup_simhash_bands(d.simhash)) k"
    " WHERE d.doc_id BETWEEN %s AND %s ORDER BY d.doc_id",
}
# the probe as dedup_ingest makes it (60_ingest.sql), and the same for the other
# layout; KEYS as dedup_ingest computes them: radius 0 by the inlined
# dedup_simhash_bands, another radius by dedup_simhash_band_keys
KEYS = {
    0: "dedup_simhash_bands(%(h)s::bigint)",
    1: "dedup_simhash_band_keys(%(h)s::bigint, 1)",
}
PROBE = {
    "rows_a_band": "SELECT count(*) FROM (SELECT DISTINCT b.doc_id, b.seen_at,"
    " bit_count((b.simhash # %(h)s::bigint)::bit(64))::integer AS dist FROM rows_a_band b"
    " WHERE b.band_key = ANY ({keys})"
    " AND b.seen_at BETWEEN %(lo)s::timestamptz AND %(hi)s::timestamptz) c WHERE c.dist <= 6",
    "row_a_document": "SELECT count(*) FROM (SELECT b.doc_id, b.seen_at,"
    " bit_count((b.simhash # %(h)s::bigint)::bit(64))::integer AS dist FROM row_a_document b"
    " WHERE dedup_simhash_bands(b.simhash) && {keys}"
    " AND b.seen_at BETWEEN %(lo)s::timestamptz AND %(hi)s::timestamptz) c WHERE c.dist <= 6",
    # two statements: the index alone finds the entries whose band key and 32
    # more bits are within distance (a lower bound; the text's four tails
    # computed once, as dedup_ingest does), then the rows of those few are read
    # for the whole simhash
    "rows_a_band_tail": (
        "SELECT array_agg(c.band_key), array_agg(c.tail) FROM rows_a_band_tail c"
        " WHERE c.band_key = ANY ({keys})"
        " AND c.seen_at BETWEEN %(lo)s::timestamptz AND %(hi)s::timestamptz"
        " AND bit_count((c.tail # (%(tails)s::integer[])[(c.band_key >> 16) + 1])::bit(32))"
        " <= 6",
        "SELECT count(*) FROM (SELECT DISTINCT b.doc_id, b.seen_at,"
        " bit_count((b.simhash # %(h)s::bigint)::bit(64))::integer AS dist FROM rows_a_band_tail b"
        " WHERE b.band_key = ANY (%(keys)s::integer[]) AND b.tail = ANY (%(tails)s::integer[])"
        " AND b.seen_at BETWEEN %(lo)s::timestamptz AND %(hi)s::timestamptz) c WHERE c.dist <= 6",
    ),
}
CANDIDATES = "SELECT count(*) FROM row_a_document b WHERE dedup_simhash_bands(b.simhash) && {keys}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--docs", type=int, default=100_000, help="distinct documents ingested")
    ap.add_argument("--probes", type=int, default=1000, help="texts probed of each kind")
    ap.add_argument("--output", type=Path, default=RESULTS)
    args = ap.parse_args()

    home = scratch_dir("dedup-simhash-layout-")
    dsn = start_embedded(home)
    corpus = growth.Corpus(growth.DATA / "sina2018.jsonl", growth.SEED, 0.9)
    now = datetime.now(timezone.utc).replace(microsecond=0)
    stream = growth.Stream(corpus, args.docs, now + timedelta(hours=12), 0.05, growth.SEED)
    log(f"ingesting {args.docs:,} growth-corpus documents + reposts")
    with Deduper(dsn) as dd:
        allow_backfill(dd, future_hours=24)
        for _ in dd.ingest_many(stream.items(args.docs, 500), batch_size=500):
            pass
        c = dd.conn
        n = c.execute("SELECT count(*) FROM documents").fetchone()[0]
        hi_id = c.execute("SELECT max(doc_id) FROM documents").fetchone()[0]
        pid = c.execute("SELECT pg_backend_pid()").fetchone()[0]

        c.execute(LAYOUTS)
        insert = {}
        for table, sql in FILL.items():
            started = backend_cpu(pid)
            for lo in range(0, hi_id + 1, 500):
                c.execute(sql, (lo, lo + 499))
            insert[table] = backend_cpu(pid) - started
        for table in FILL:
            c.execute(f"VACUUM ANALYZE {table}")

        def size(rel: str) -> float:
            return c.execute("SELECT pg_relation_size(%s)", [rel]).fetchone()[0] / n

        sizes = {
            rel: size(rel)
            for rel in (
                "rows_a_band",
                "rows_a_band_key_idx",
                "row_a_document",
                "row_a_document_keys_idx",
                "rows_a_band_tail",
                "rows_a_band_tail_key_idx",
            )
        }
        new = [
            to_signed(fingerprint(d["body"], d["title"], NormalizeOptions()).simhash)
            for d in (stream.doc(10 * args.docs + i) for i in range(args.probes))
        ]
        stored = [
            r[0]
            for r in c.execute(
                "SELECT simhash FROM documents ORDER BY random() LIMIT %s", [args.probes]
            )
        ]
        window = {"lo": now - timedelta(days=30), "hi": now + timedelta(days=30)}
        c.execute("SET plan_cache_mode = force_generic_plan")

        def run(probe: str | tuple[str, str], radius: int, p: dict) -> int:
            if isinstance(probe, str):
                return c.execute(probe.format(keys=KEYS[radius]), p, prepare=True).fetchone()[0]
            own = [simhash.tail(p["h"] % 2**64, b) for b in range(simhash.BANDS)]
            keys, tails = c.execute(
                probe[0].format(keys=KEYS[radius]), {**p, "tails": own}, prepare=True
            ).fetchone()
            if keys is None:
                return 0
            return c.execute(
                probe[1], {**p, "keys": keys, "tails": tails}, prepare=True
            ).fetchone()[0]

        probes = []
        for label, values in (("never stored", new), ("stored", stored)):
            for radius in (0, 1):
                params = [{"h": h, **window} for h in values]
                count = CANDIDATES.format(keys=KEYS[radius])
                cands = [c.execute(count, p, prepare=True).fetchone()[0] for p in params]
                us: dict[str, list[float]] = {t: [] for t in PROBE}
                hits: dict[str, int] = {}
                for _ in range(3):
                    for table, probe in PROBE.items():
                        for p in params[:50]:  # plans made and cached
                            run(probe, radius, p)
                        started = backend_cpu(pid)
                        hits[table] = sum(run(probe, radius, p) for p in params)
                        us[table].append((backend_cpu(pid) - started) / len(params) * 1e6)
                assert hits["rows_a_band"] == hits["row_a_document"] == hits["rows_a_band_tail"], (
                    hits
                )
                probes.append((label, radius, statistics.mean(cands), max(cands), hits, us))
                log(f"{label}, radius {radius}: {us}")

    lines = [
        "# The SimHash lookup: three layouts",
        "",
        f"`python bench/simhash_layout.py --docs {args.docs}` at {engine_revision()}: "
        f"{n:,} documents of the growth corpus kept, their SimHashes in three scratch tables "
        "(indexes in place before the rows, batches of 500).",
        "",
        "| layout | heap bytes a document | index bytes a document | insert, backend CPU a document |",
        "|---|---:|---:|---:|",
        f"| a row a band, btree `(band_key) INCLUDE (simhash, seen_at, doc_id)` (until revision 0067) "
        f"| {sizes['rows_a_band']:,.0f} | {sizes['rows_a_band_key_idx']:,.0f} "
        f"| {insert['rows_a_band'] / n * 1e6:.1f} us |",
        f"| a row a document, GIN over `dedup_simhash_bands(simhash)` (tried) "
        f"| {sizes['row_a_document']:,.0f} | {sizes['row_a_document_keys_idx']:,.0f} "
        f"| {insert['row_a_document'] / n * 1e6:.1f} us |",
        f"| a row a band, btree `(band_key, tail) INCLUDE (seen_at)`, 32 more bits as `tail` (revision 0067) "
        f"| {sizes['rows_a_band_tail']:,.0f} | {sizes['rows_a_band_tail_key_idx']:,.0f} "
        f"| {insert['rows_a_band_tail'] / n * 1e6:.1f} us |",
        "",
        f"Probes, {args.probes:,} texts of each kind, as `dedup_ingest` makes them (generic "
        "plans); backend CPU a probe, three alternating passes:",
        "",
        "| texts | keys | documents sharing a key, mean (max) | within distance 6 (all) "
        "| a row a band, us | a row a document, us | a row a band with tail, us |",
        "|---|---|---:|---:|---|---|---|",
    ]
    for label, radius, mean_c, max_c, hits, us in probes:
        keys = "4 (radius 0)" if radius == 0 else "68 (radius 1)"
        lines.append(
            f"| {label} | {keys} | {mean_c:.1f} ({max_c}) | {hits['rows_a_band']:,} | "
            + " | ".join(", ".join(f"{x:.0f}" for x in us[t]) for t in PROBE)
            + " |"
        )
    text = "\n".join(lines) + "\n"
    args.output.write_text(text, encoding="utf-8")
    print(text)
    log(f"wrote {args.output}")


if __name__ == "__main__":
    main()
