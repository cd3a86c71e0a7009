"""Response time of the review page's queue with 100,000 candidates.

A fresh embedded database gets real candidates first (Sina articles and near
copies of them: an appended line, a dropped paragraph, two paragraphs swapped,
ingested through the engine), then 100,000 more rows made from those by SQL
(each a real candidate's text, layer, score and matched document, spread over
30 days; a fifth pending, a few decided, the rest automatic duplicates). Then
``dedup-pg serve`` on it, a reviewer logged in, and each page requested
repeatedly: p50 and p95 of the whole HTTP round trip (loopback).

Run: python bench/review_queue.py [--candidates 100000] [--repeat 40]
"""

from __future__ import annotations

import argparse
import os
import re
import socket
import statistics
import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import httpx
import psycopg
from common import DATA, read_jsonl, scratch_dir

from dedup_pg import Deduper, database
from dedup_pg.web.review import encode_cursor

OUT = Path(__file__).resolve().parent / "results" / "review_queue.md"


def _copies(articles: list[dict], now: datetime) -> list[dict]:
    docs = []
    for k, a in enumerate(articles):
        seen = now - timedelta(hours=6, minutes=k)
        docs.append({**a, "id": f"o-{a['id']}", "source": "sina", "seen_at": seen})
        paras = [p for p in a["body"].split("\n") if p.strip()]
        if k % 3 == 0:
            body = a["body"] + "\n欢迎关注本网官方账号，获取更多一手资讯和深度解读。"
        elif k % 3 == 1 and len(paras) > 3:
            body = "\n".join(paras[:-1])
        else:
            body = (
                "\n".join(paras[1:2] + paras[:1] + paras[2:])
                if len(paras) > 2
                else a["body"] + "。"
            )
        docs.append(
            {
                "id": f"c-{a['id']}",
                "title": a["title"],
                "body": body,
                "source": f"site-{k % 12}",
                "url": f"https://site-{k % 12}.example/{a['id']}.html",
                "seen_at": seen + timedelta(minutes=30),
            }
        )
    return docs


BULK = """
WITH t AS (
    SELECT row_number() OVER (ORDER BY candidate_id) - 1 AS k, c.*, count(*) OVER () AS n
      FROM duplicate_candidates c
)
INSERT INTO duplicate_candidates (seen_at, created_at, external_id, title, body, url, source, published_at,
    content_sha1, title_sha1, simhash, text_length, clauses, norm_version, matched_doc_id, matched_seen_at,
    layer, score, distance, thresholds, status, decided_by, decided_at, minhash, facts)
SELECT s.seen_at, s.seen_at + interval '2 seconds', 'bulk-' || g, t.title, t.body, t.url,
       'site-' || (g %% 40), t.published_at, t.content_sha1, t.title_sha1, t.simhash, t.text_length, t.clauses,
       t.norm_version, t.matched_doc_id, t.matched_seen_at, t.layer,
       least(1.0, t.score - (g %% 17) * 0.01 + 0.08), t.distance, t.thresholds,
       CASE WHEN g %% 5 = 0 THEN 'pending' WHEN g %% 97 = 1 THEN 'confirmed'
            WHEN g %% 97 = 2 THEN 'restored' WHEN g %% 97 = 3 THEN 'dismissed' ELSE 'auto' END,
       CASE WHEN g %% 97 IN (1, 2, 3) THEN 'bench' END,
       CASE WHEN g %% 97 IN (1, 2, 3) THEN s.seen_at + interval '1 hour' END,
       t.minhash, t.facts
  FROM generate_series(1, %(n)s) g
  CROSS JOIN LATERAL (SELECT now() - (%(n)s - g) * (interval '30 days' / %(n)s) AS seen_at) s
  JOIN t ON t.k = g %% t.n
"""


def _timed(client: httpx.Client, path: str, repeat: int) -> tuple[float, float, int]:
    times = []
    size = 0
    for _ in range(repeat):
        started = time.perf_counter()
        r = client.get(path)
        times.append((time.perf_counter() - started) * 1000)
        assert r.status_code == 200, (path, r.status_code, r.text[:300])
        size = len(r.content)
    times.sort()
    return statistics.median(times), times[int(0.95 * (len(times) - 1))], size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--candidates", type=int, default=100_000)
    parser.add_argument("--articles", type=int, default=300, help="real articles copied first")
    parser.add_argument("--repeat", type=int, default=40)
    args = parser.parse_args()
    home = str(scratch_dir("dedup-pg-review-bench-"))
    dsn = database.start_embedded(home)
    database.migrate(dsn)
    server = None
    try:
        now = datetime.now(timezone.utc).replace(microsecond=0)
        articles = [
            a for a in read_jsonl(DATA / "news" / "sina2018.jsonl", 3000) if len(a["body"]) > 300
        ]
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("UPDATE dedup_settings SET value = '0' WHERE name = 'seen_at_past_days'")
        with Deduper(dsn) as dd:
            verdicts = list(dd.ingest_many(_copies(articles[: args.articles], now)))
        real = sum(v.candidate_id is not None for v in verdicts)
        started = time.perf_counter()
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("SELECT dedup_ensure_partitions(current_date - 31, current_date + 1)")
            conn.execute(BULK, {"n": args.candidates})
            # what autovacuum does after a bulk insert: the counts read the index alone
            conn.execute("VACUUM ANALYZE duplicate_candidates")
            by_status = dict(
                conn.execute(
                    "SELECT status, count(*) FROM duplicate_candidates GROUP BY 1"
                ).fetchall()
            )

            def key_at(status: str, offset: int, descending: bool) -> str:
                order = "DESC" if descending else ""
                row = conn.execute(
                    f"SELECT created_at, candidate_id FROM duplicate_candidates WHERE status = %s"
                    f" ORDER BY created_at {order}, candidate_id {order} OFFSET %s LIMIT 1",
                    [status, offset],
                ).fetchone()
                return encode_cursor(*row)

            deep_pending = key_at("pending", by_status["pending"] * 3 // 4, False)
            deep_auto = key_at("auto", by_status["auto"] * 3 // 4, True)
            some = conn.execute(
                "SELECT candidate_id, (seen_at AT TIME ZONE 'UTC')::date FROM duplicate_candidates"
                " WHERE status = 'pending' ORDER BY candidate_id DESC LIMIT 1"
            ).fetchone()
        generated = time.perf_counter() - started
        total = sum(by_status.values())
        print(
            f"{total:,} candidates ({real} ingested, the rest generated in {generated:.1f} s): {by_status}"
        )
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        server = subprocess.Popen(
            [sys.executable, "-m", "dedup_pg.cli", "serve", "--dsn", dsn, "--port", str(port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env={**os.environ},
        )
        url = f"http://127.0.0.1:{port}"
        for _ in range(600):
            try:
                if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.1)
        client = httpx.Client(base_url=url, timeout=60)
        nonce = re.search(r'name="nonce" value="([^"]+)"', client.get("/review/login").text).group(
            1
        )
        client.post("/review/login", data={"nonce": nonce, "name": "bench", "next": "/review"})
        cases = [
            ("pending, first page (HTML)", "/review"),
            ("pending, 3/4 down (keyset)", f"/review?after={deep_pending}"),
            ("auto, first page", "/review?status=auto"),
            ("auto, 3/4 down (keyset)", f"/review?status=auto&after={deep_auto}"),
            ("auto, one layer and one day", f"/review?status=auto&layer=containment&day={some[1]}"),
            (
                "auto, one source, score 0.9-1",
                "/review?status=auto&source=site-7&min_score=0.9&max_score=1",
            ),
            ("auto, 3/4 down, JSON", f"/review/api/queue?status=auto&after={deep_auto}"),
            ("a candidate page", f"/review/{some[0]}"),
        ]
        rows = []
        for label, path in cases:
            p50, p95, size = _timed(client, path, args.repeat)
            rows.append((label, p50, p95, size))
            print(f"{label:<34} p50 {p50:6.1f} ms  p95 {p95:6.1f} ms  {size / 1024:5.0f} KiB")
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=30)
        database.stop_embedded(Path(home))
    lines = [
        "## Review queue",
        "",
        f"`python bench/review_queue.py`, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}: "
        f"{total:,} candidates ({by_status.get('pending', 0):,} pending, {by_status.get('auto', 0):,} automatic, "
        "the rest decided) over 30 days, made from real ones; `dedup-pg serve` on loopback, "
        f"{args.repeat} requests each, whole HTTP round trip, on this 2-core machine.",
        "",
        "| page | p50 ms | p95 ms | size KiB |",
        "|---|---|---|---|",
    ]
    for label, p50, p95, size in rows:
        lines.append(f"| {label} | {p50:.1f} | {p95:.1f} | {size / 1024:.0f} |")
    OUT.parent.mkdir(exist_ok=True)
    OUT.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"written to {OUT}")


if __name__ == "__main__":
    main()
