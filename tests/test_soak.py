"""A bounded soak of the HTTP service: rounds of real articles from many
clients at once, the server's RSS read from /proc after each round. It must
level off: issue 24 saw 133 -> 386 -> 404 -> 415 -> 420 MB over four rounds.

Knobs for longer runs (BENCHMARKS.md, "HTTP service soak"):
DEDUP_PG_SOAK_ROUNDS, DEDUP_PG_SOAK_DOCS (articles a round), DEDUP_PG_SOAK_CLIENTS,
DEDUP_PG_SOAK_BATCH (articles a request). Past the 11,377 articles they are
sent again (as exact duplicates, under new ids).
"""

import json
import os
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import psycopg
import pytest
from test_service import _start

from conftest import fresh_database

ROUNDS = int(os.environ.get("DEDUP_PG_SOAK_ROUNDS", 12))
DOCS = int(os.environ.get("DEDUP_PG_SOAK_DOCS", 800))  # articles a round
CLIENTS = int(os.environ.get("DEDUP_PG_SOAK_CLIENTS", 8))
BATCH = int(os.environ.get("DEDUP_PG_SOAK_BATCH", 25))  # articles a request (+ 2 bad items)
JSON = {"content-type": "application/json"}
#: MB the server may still grow over the second half of the rounds: allocator
#: steps of 4-12 MB and new terms (the term table grows with new words, about
#: 1.5 MB a 1,000 new articles here). Anything that kept a request's body
#: (1 MB a request, 32 requests a round) would break it in one round.
MAX_LATE_GROWTH_MB = 24


def _rss_mb(pid):
    with open(f"/proc/{pid}/status", encoding="ascii") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


@pytest.mark.slow
@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="reads /proc")
def test_service_rss_levels_off_under_load(template_dsn, sina_all):
    articles = [a for a in sina_all if a.get("body")]
    with fresh_database(template_dsn) as dsn:
        proc, url = _start(dsn)  # the defaults of dedup-pg serve (pool of 4)
        try:
            rss = [_rss_mb(proc.pid)]
            with httpx.Client(timeout=120) as client, ThreadPoolExecutor(CLIENTS) as pool:

                def request(batch_no, batch):
                    docs = [
                        {
                            "id": f"{batch_no}-{a['id']}",
                            "title": a["title"],
                            "body": a["body"],
                            "source": a.get("category") or "news",
                        }
                        for a in batch
                    ]
                    # hostile items ride along: a lone surrogate, an empty body
                    docs.append({"id": f"bad\ud800{batch_no}", "body": batch[0]["body"]})
                    docs.append({"id": f"empty-{batch_no}", "body": " "})
                    # ASCII JSON: a lone surrogate travels as the escape \ud800
                    body = json.dumps({"documents": docs}, ensure_ascii=True).encode("ascii")
                    r = client.post(f"{url}/v1/ingest", content=body, headers=JSON)
                    assert r.status_code == 200, r.text[:500]
                    kinds = [v["verdict"] for v in r.json()["verdicts"]]
                    assert kinds[-2:] == ["error", "error"] and "error" not in kinds[:-2], kinds
                    r = client.post(f"{url}/v1/check", json=docs[0])
                    assert r.json()["verdict"] == "duplicate", r.text[:500]
                    assert client.get(f"{url}/metrics").status_code == 200
                    return len(batch)

                for round_no in range(ROUNDS):
                    started = time.monotonic()
                    # new articles every round, as a crawl brings them
                    chunk = [articles[(round_no * DOCS + i) % len(articles)] for i in range(DOCS)]
                    batches = [chunk[i : i + BATCH] for i in range(0, DOCS, BATCH)]
                    first = round_no * len(batches)
                    done = sum(pool.map(request, range(first, first + len(batches)), batches))
                    assert done == DOCS
                    rss.append(_rss_mb(proc.pid))
                    print(
                        f"round {round_no + 1}: {DOCS} articles in {time.monotonic() - started:.1f} s,"
                        f" RSS {rss[-1]:.0f} MB"
                    )
        finally:
            proc.terminate()
            proc.wait(timeout=30)
        with psycopg.connect(dsn) as conn:
            errors = conn.execute("SELECT count(*) FROM ingest_errors").fetchone()[0]
        assert errors == 2 * ROUNDS * len(batches)  # every bad item kept, once
    print("RSS MB by round (0: started):", " ".join(f"{m:.0f}" for m in rss))
    half = ROUNDS // 2
    late = max(rss[half:]) - rss[half]
    assert late < MAX_LATE_GROWTH_MB, f"RSS still growing: {rss}"
