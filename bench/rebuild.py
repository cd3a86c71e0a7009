"""Full-history rebuild vs streaming ingest on real news (a benchmark, not a test).

Input: the first ``--limit`` sina2018 articles (default 10,000), a minute apart,
plus 20 % generated copies (fixed seed): exact copies, copies with a banner line
and a new headline, truncated recrawls (the first 70 %), each placed 1-120
minutes after its original. Both runs use the embedded server in
``DEDUP_PG_HOME`` (one fresh database each):

- streaming: ``Deduper.ingest_many`` in arrival order (batch 500, one prefetch thread);
- rebuild: fingerprint + bulk load without checks (``rebuild.load_rows``), then
  ``rebuild.rebuild`` over everything (pairs, clusters, demotions, reviews).

Reports seconds per phase and whether the two end states agree (kept
documents; candidates by external id, layer, status and matched document).

    python bench/rebuild.py [--limit N] [--out bench/results/rebuild.md]
"""

from __future__ import annotations

import argparse
import random
import time
from datetime import datetime, timedelta, timezone

import psycopg
from common import DATA, Report, allow_backfill, engine_revision, log, read_jsonl, scratch_dir

from dedup_pg import Deduper
from dedup_pg import rebuild as rb
from dedup_pg.deduper import prepare_batch


def corpus(limit: int, seed: int = 7) -> list[dict]:
    rng = random.Random(seed)
    t0 = datetime(2024, 3, 1, tzinfo=timezone.utc)
    docs = []
    for i, a in enumerate(read_jsonl(DATA / "news" / "sina2018.jsonl", limit=limit)):
        docs.append(
            {
                "id": a["id"],
                "title": a["title"],
                "body": a["body"],
                "seen_at": t0 + timedelta(minutes=i),
            }
        )
    for n, a in enumerate(rng.sample(docs, len(docs) // 5)):
        kind = n % 3
        body, title = a["body"], a["title"]
        if kind == 1:
            title, body = title + "(转载)", "来源:示例网\n" + body
        elif kind == 2:
            body = body[: int(len(body) * 0.7)]
        seen = a["seen_at"] + timedelta(minutes=rng.randint(1, 120))
        docs.append({"id": f"{a['id']}-c{n}", "title": title, "body": body, "seen_at": seen})
    docs.sort(key=lambda d: d["seen_at"])
    return [d | {"seen_at": d["seen_at"].isoformat(), "source": "s"} for d in docs]


def state(conn: psycopg.Connection) -> tuple[set, set]:
    kept = {r[0] for r in conn.execute("SELECT external_id FROM documents")}
    cands = set(
        conn.execute(
            "SELECT c.external_id, c.layer, c.status, d.external_id FROM duplicate_candidates c"
            " LEFT JOIN documents d ON d.doc_id = c.matched_doc_id"
        ).fetchall()
    )
    return kept, cands


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--limit", type=int, default=10_000)
    ap.add_argument("--out")
    args = ap.parse_args()
    docs = corpus(args.limit)
    out = Report()
    home = str(scratch_dir("rebuild-bench-"))  # a server of its own, deleted at exit
    with Deduper(home=home) as dd0:
        admin = psycopg.conninfo.make_conninfo(dd0.dsn, dbname="postgres")
    dsns = {}
    for name in ("bench_stream", "bench_rebuild"):
        with psycopg.connect(admin, autocommit=True) as c:
            c.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
            c.execute(f"CREATE DATABASE {name}")
        dsns[name] = psycopg.conninfo.make_conninfo(dd0.dsn, dbname=name)

    log("streaming")
    with Deduper(dsns["bench_stream"]) as dd:
        allow_backfill(dd)
        t = time.perf_counter()
        verdicts = list(dd.ingest_many(docs))
        stream_s = time.perf_counter() - t
        stream_state = state(dd.conn)
    log("rebuild")
    with Deduper(dsns["bench_rebuild"]) as dd:
        allow_backfill(dd)
        t = time.perf_counter()
        rows = []
        for start in range(0, len(docs), 500):
            rows += prepare_batch(
                docs[start : start + 500],
                options=dd.options,
                max_chars=dd.max_chars,
                window=dd.window,
            ).rows
        fp_s = time.perf_counter() - t
        t = time.perf_counter()
        for start in range(0, len(rows), 2000):
            rb.load_rows(dd.conn, rows[start : start + 2000])
        load_s = time.perf_counter() - t
        t = time.perf_counter()
        report = rb.rebuild(dd.conn, options=dd.options, progress=log)
        rebuild_s = time.perf_counter() - t
        t = time.perf_counter()
        again = rb.rebuild(dd.conn, options=dd.options)
        again_s = time.perf_counter() - t
        rebuild_state = state(dd.conn)
    with psycopg.connect(admin, autocommit=True) as c:
        for name in dsns:
            c.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")

    kept_diff = stream_state[0] ^ rebuild_state[0]
    cand_diff = stream_state[1] ^ rebuild_state[1]
    out(f"# Rebuild vs streaming ingest ({engine_revision()})")
    out()
    out(
        f"{len(docs):,} documents ({args.limit:,} sina2018 articles + {len(docs) - args.limit:,} generated copies), one embedded PostgreSQL 18, 2-core machine shared with other jobs."
    )
    out()
    out("| path | seconds | docs/s |")
    out("|---|---|---|")
    out(f"| streaming `ingest_many` (batch 500) | {stream_s:.1f} | {len(docs) / stream_s:.0f} |")
    total = fp_s + load_s + rebuild_s
    out(f"| rebuild: fingerprint | {fp_s:.1f} | |")
    out(f"| rebuild: bulk load (no checks) | {load_s:.1f} | |")
    out(f"| rebuild: pairs + clusters + writes ({report.rounds} rounds) | {rebuild_s:.1f} | |")
    out(f"| rebuild: total | {total:.1f} | {len(docs) / total:.0f} |")
    out(f"| second rebuild (nothing to change) | {again_s:.1f} | |")
    out()
    dup = sum(v.verdict == "duplicate" for v in verdicts)
    out(
        f"Streaming: {dup:,} duplicates. Rebuild: {sum(report.duplicates.values()):,} duplicates {report.duplicates}, reviews {report.reviews}, {report.pairs:,} judged pairs, {len(report.clusters):,} clusters."
    )
    out(f"Second rebuild: duplicates {again.duplicates}, reviews {again.reviews}.")
    out(
        f"End states: kept documents differ in {len(kept_diff)}, candidate rows (id, layer, status, matched) differ in {len(cand_diff)}."
    )
    for row in sorted(cand_diff, key=str)[:10]:
        out(f"    {row}")
    if args.out:
        out.write(__import__("pathlib").Path(args.out))


if __name__ == "__main__":
    main()
