"""Ingest throughput of dedup-pg on real Chinese news (a benchmark, not a test).

What is measured
----------------
Input: the first ``--limit`` articles (default: all 11,377) of
``../shared/data/news/sina2018.jsonl`` plus generated reposts, ~20 % extra:
for randomly chosen articles (fixed seed) an exact copy, a copy with a banner
line appended (half of the banners match the default noise patterns, half do
not), or a copy with its sentences (split after 。！？) shuffled. Each repost is
placed at a random position after its original. The data is read in place,
never copied into the repository.

1. Per-stage cost per document, in this one process, timing the library
   functions directly over every document of the stream (the fastest of
   ``--repeats`` passes per stage), after one warm-up pass of ``fingerprint``
   over all of them (it fills the term table ``dedup_pg.tokenize.TERMS`` and
   loads the rjieba dictionary, as a long-running ingester would have done):
   normalize (``normalize(body)`` + ``normalize(title)``); tokenize
   (``rjieba.cut`` of the normalized title + body); SimHash (``TERMS.weights``
   + ``simhash_arrays``; ``weights`` segments again, so the SimHash-only cost
   is the difference); SHA-1 of the exact key; the containment hashes
   (``clause_hashes(body.key)``, or ``sentence_hashes(body.text)`` in trees
   before commit 823c3fa); the whole ``fingerprint()``; and ``prepare_batch()``
   (validation + fingerprint + the JSON row).
   With ``--stages-only``, only this part, with the parts of ``fingerprint()``
   one by one (normalize, ``rjieba.cut`` and ``rjieba.tag``, the term table,
   the SimHash vote, the facts, the MinHash 5-grams and signature, the clause
   and lead hashes) and, when ``datasketch`` is installed, its MinHash +
   MinHashLSH per document for reference, fastest and median of ``--repeats``
   passes (``bench/results/fingerprint_stages.md``; pin it to one core with
   ``taskset -c 0``).
2. Pure-Python ``jieba.lcut`` vs ``rjieba.cut`` on 500 articles (jieba's
   dictionary load is done first and not timed).
3. End-to-end docs/s of ``dd.ingest_many(docs, batch_size=B, workers=W)`` for
   ``workers=0`` (one prefetch thread) and ``workers=2`` (two fingerprinting
   processes), ``--repeats`` runs each (interleaved), every run into its own
   FRESH embedded PostgreSQL (``Deduper(home=tmpdir)``; start-up and migration
   are not in the rate), with ``dd.times.sql / dd.times.documents`` (SQL wall
   time seen by the main process, including the partition check and building
   the verdicts).
4. SQL directly: one more fresh database; every batch is pre-built with
   ``prepare_batch`` (the exact ``dedup_ingest`` payload), partitions are
   created, then only ``SELECT * FROM dedup_ingest(%s, false)`` inside
   ``with dd.conn.transaction():`` is timed (JSON encoding by psycopg included;
   ``json.dumps`` of the payload is also timed on its own).
5. Verdict counts (new / duplicate by layer / review / error), per kind of
   input, for every run: all runs must agree item by item.
6. Latency of one read-only ``dd.is_duplicate(text)`` (p50/p95 over 300 calls)
   on the first loaded workers=0 database: 100 stored bodies with their
   titles, 100 stored bodies without the title, 100 texts never stored
   (THUCNews).

The machine is small (2 cores) and may be shared: the 1-minute load average at
start and end is recorded, and the runs are repeated, to judge the noise.

Results are printed and written to ``bench/results/throughput.md``.

    python bench/throughput.py [--limit N] [--batch-size B] [--repeats R] [--stages-only]
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import json
import logging
import os
import platform
import random
import re
import shutil
import statistics
import tempfile
import time
import warnings
from collections.abc import Callable, Iterable
from datetime import datetime, timezone
from pathlib import Path

warnings.filterwarnings("ignore")  # platformdirs warns when XDG_RUNTIME_DIR is unset

import rjieba  # noqa: E402
from common import (  # noqa: E402
    DATA,
    ROOT,
    cpu_model,
    engine_revision,
    log,
    pct,
    read_jsonl,
    verdict_label,
)
from psycopg.types.json import Jsonb  # noqa: E402

import dedup_pg  # noqa: E402
from dedup_pg import Deduper, database  # noqa: E402
from dedup_pg import facts as facts_mod  # noqa: E402
from dedup_pg import fingerprint as fpmod  # noqa: E402
from dedup_pg import minhash as mh  # noqa: E402
from dedup_pg.deduper import prepare_batch  # noqa: E402
from dedup_pg.fingerprint import fingerprint  # noqa: E402
from dedup_pg.normalize import NormalizeOptions, normalize  # noqa: E402
from dedup_pg.simhash import simhash_arrays  # noqa: E402
from dedup_pg.tokenize import TERMS  # noqa: E402

NEWS = DATA / "news"
RESULTS = ROOT / "bench" / "results" / "throughput.md"
STAGES_RESULTS = ROOT / "bench" / "results" / "fingerprint_stages.md"
SEED = 20181101
REPOST_SHARE = 0.20
# Banners a reposting site appends. The first two match DEFAULT_NOISE_PATTERNS
# (removed before fingerprinting), the last two do not.
BANNERS = (
    "更多精彩内容，请关注新浪科技微信公众号。",
    "（本文转载自新浪网，版权归原作者所有，如有侵权请联系删除）",
    "点击进入专题：2018年中国国际进口博览会",
    "欢迎下载新浪新闻客户端，随时随地看新闻。",
)
# The containment hashes: clauses cut from the normalized key (since commit
# 823c3fa) or, in older trees, sentences of the normalized text.
if hasattr(fpmod, "clause_hashes"):
    CONTAINMENT = "clause hashes (`clause_hashes(body.key)`)"
    containment_hashes = lambda body: fpmod.clause_hashes(body.key)  # noqa: E731
    PIECE_TABLE = "document_clauses"
else:
    CONTAINMENT = "sentence hashes (`sentence_hashes(body.text)`)"
    containment_hashes = lambda body: fpmod.sentence_hashes(body.text)  # noqa: E731
    PIECE_TABLE = "document_sentences"
_SENTENCE = re.compile(r"[^。！？]*[。！？]+|[^。！？]+$")


# -- input ---------------------------------------------------------------------
def shuffle_sentences(body: str, rng: random.Random) -> str:
    parts = [p for p in _SENTENCE.findall(body) if p.strip()]
    rng.shuffle(parts)
    return "".join(parts)


def build_stream(articles: list[dict], rng: random.Random) -> tuple[list[dict], list[str]]:
    """Articles plus reposts, each repost after its original. Returns (docs, kinds)."""
    n = len(articles)
    keyed: list[tuple[float, str, dict]] = [
        (
            float(i),
            "original",
            {"id": a["id"], "title": a["title"], "body": a["body"], "source": "sina2018"},
        )
        for i, a in enumerate(articles)
    ]
    picks = rng.sample(range(n), round(REPOST_SHARE * n))
    for j, i in enumerate(picks):
        a = articles[i]
        kind = ("exact", "banner", "shuffle")[j % 3]
        if kind == "exact":
            body = a["body"]
        elif kind == "banner":
            body = a["body"].rstrip() + "\n\n" + BANNERS[(j // 3) % len(BANNERS)]
        else:
            body = shuffle_sentences(a["body"], rng)
        doc = {
            "id": f"{a['id']}#repost-{kind}",
            "title": a["title"],
            "body": body,
            "source": "bench-repost",
        }
        keyed.append((rng.uniform(i + 0.5, n + 0.5), kind, doc))
    keyed.sort(key=lambda t: t[0])
    return [d for _, _, d in keyed], [k for _, k, _ in keyed]


# -- helpers -------------------------------------------------------------------
def timed_pass(func: Callable[[object], object], items: Iterable[object]) -> float:
    started = time.perf_counter()
    for item in items:
        func(item)
    return time.perf_counter() - started


class FreshDB:
    """A fresh embedded PostgreSQL in a temporary folder, removed afterwards."""

    def __init__(self, batch_size: int) -> None:
        self.home = tempfile.mkdtemp(prefix="dedup-bench-")
        started = time.perf_counter()
        try:
            self.dd = Deduper(home=self.home, batch_size=batch_size)
        except BaseException:
            self.cleanup()
            raise
        self.startup = time.perf_counter() - started

    def __enter__(self) -> FreshDB:
        return self

    def __exit__(self, *exc: object) -> None:
        self.cleanup()

    def cleanup(self) -> None:
        dd = getattr(self, "dd", None)
        if dd is not None:
            dd.close()
        try:
            database.stop_embedded(self.home)
        finally:
            shutil.rmtree(self.home, ignore_errors=True)


# -- measurements ----------------------------------------------------------------
def stage_times(docs: list[dict], repeats: int) -> dict[str, float]:
    """Seconds per document for each stage (single process, warm term table):
    the fastest of ``repeats`` passes, the machine being shared."""
    return {name: min(passes) for name, passes in stage_passes(docs, repeats).items()}


def stage_passes(docs: list[dict], repeats: int) -> dict[str, list[float]]:
    """Seconds per document of each of ``repeats`` passes, per stage (single
    process, warm term table). Besides the stages of the ingest table, the
    parts of ``fingerprint()`` one by one, each given what the one before made
    (written to run on older trees too: what a tree lacks is skipped)."""
    options = NormalizeOptions()
    n = len(docs)
    started = time.perf_counter()
    for d in docs:  # warm-up: term table, rjieba dictionary, regex caches
        fingerprint(d["body"], d["title"], options)
    warm = time.perf_counter() - started

    def norm(d: dict) -> tuple:
        body = normalize(d["body"], options)
        title = normalize(d["title"], options) if d["title"] and d["title"].strip() else None
        return body, title

    def passes(func: Callable[[object], object], items: list) -> list[float]:
        return [timed_pass(func, items) / n for _ in range(repeats)]

    out: dict[str, list[float]] = {"warm-up pass (fingerprint, cold)": [warm / n]}
    out["normalize (body + title)"] = passes(norm, docs)
    normed = [norm(d) for d in docs]
    texts = [b.text if t is None else f"{t.text}\n{b.text}" for b, t in normed]
    keys = [b.key if t is None else f"{t.key}\n{b.key}" for b, t in normed]
    out["tokenize (rjieba.cut)"] = passes(rjieba.cut, texts)
    out["tagging (rjieba.tag)"] = passes(rjieba.tag, texts)
    out["SimHash incl. segmentation (TERMS.weights + simhash_arrays)"] = passes(
        lambda t: simhash_arrays(*TERMS.weights(t)), texts
    )
    words = [rjieba.cut(t) for t in texts]
    if hasattr(TERMS, "lookup"):  # one lookup gives the SimHash terms and the names
        looked = [TERMS.lookup(w, t) for w, t in zip(words, texts, strict=True)]
        out["term table: hashes, TF-IDF weights, names (`TERMS.lookup`)"] = passes(
            lambda wt: TERMS.lookup(*wt), list(zip(words, texts, strict=True))
        )
        weights = [(h, w) for h, w, _ in looked]
        out["facts (`named_facts`: numbers + the names)"] = passes(
            lambda tn: facts_mod.named_facts(*tn),
            [(t, names) for t, (_, _, names) in zip(texts, looked, strict=True)],
        )
    else:
        weights = [TERMS.term_weights(w) for w in words]
        out["term table: hashes, TF-IDF weights (`TERMS.term_weights`)"] = passes(
            TERMS.term_weights, words
        )
        tags = [rjieba.tag(t) for t in texts]
        out["facts (`tagged_facts`, given the tags)"] = passes(
            lambda tt: facts_mod.tagged_facts(*tt), list(zip(texts, tags, strict=True))
        )
    out["SimHash vote (`simhash_arrays`)"] = passes(lambda hw: simhash_arrays(*hw), weights)
    out["MinHash: 5-gram hashes (`shingle_hashes`)"] = passes(mh.shingle_hashes, keys)
    out["MinHash: signature (`signature`, 5-grams included)"] = passes(mh.signature, keys)
    out["SHA-1 of the exact key"] = passes(lambda k: hashlib.sha1(k.encode("utf-8")).digest(), keys)
    out[CONTAINMENT] = passes(lambda bt: containment_hashes(bt[0]), normed)
    if hasattr(fpmod, "clause_and_lead_hashes"):
        out["clause + lead hashes (`clause_and_lead_hashes`, as fingerprint())"] = passes(
            lambda bt: fpmod.clause_and_lead_hashes(bt[0].key, bt[0].text), normed
        )
    out["fingerprint() whole"] = passes(lambda d: fingerprint(d["body"], d["title"], options), docs)
    batches = [docs[i : i + 500] for i in range(0, n, 500)]
    out["prepare_batch() (validation + fingerprint + row)"] = passes(
        lambda b: prepare_batch(b, options=options, max_chars=1_000_000), batches
    )
    try:
        from datasketch import MinHash, MinHashLSH
    except ImportError:
        return out

    def datasketch_pass(_: object) -> None:
        # as bench/semantic_quality.py runs it: char 5-grams of title + body,
        # 128 permutations, threshold 0.5, query then insert when new
        lsh = MinHashLSH(threshold=0.5, num_perm=128)
        for i, d in enumerate(docs):
            text = f"{d['title'] or ''}\n{d['body']}"
            m = MinHash(num_perm=128)
            m.update_batch([text[j : j + 5].encode("utf-8") for j in range(max(1, len(text) - 4))])
            if not lsh.query(m):
                lsh.insert(i, m)

    out["reference: datasketch MinHash + MinHashLSH query/insert (5-grams, 128 perm.)"] = passes(
        datasketch_pass, [None]
    )
    return out


def stages_report(
    docs: list[dict], passes: dict[str, list[float]], args: argparse.Namespace
) -> str:
    """The --stages-only table: fastest and median pass per stage."""
    cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else "?"
    out = [
        f"## Fingerprinting, per stage ({datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC)",
        "",
        f"`python bench/throughput.py --stages-only --repeats {args.repeats}"
        + (f" --limit {args.limit}" if args.limit else "")
        + f"`, engine at {engine_revision()}, CPUs {cpus}, load average (1 min) "
        f"{os.getloadavg()[0]:.2f} at the end. {len(docs):,} documents (sina2018 + reposts), "
        f"{args.repeats} passes per stage after a warm-up pass of `fingerprint()` (term table "
        "filled). Each stage is given what the stage before it made (the words, the normalized "
        "text), so stages below `fingerprint()` whole are its parts, and the rows in "
        "parentheses overlap others.",
        "",
        "| stage | ms/doc, fastest pass | median pass |",
        "|---|---:|---:|",
    ]
    for name, values in passes.items():
        out.append(f"| {name} | {min(values) * 1e3:.3f} | {statistics.median(values) * 1e3:.3f} |")
    return "\n".join(out) + "\n"


def jieba_compare(docs: list[dict], repeats: int, count: int = 500) -> dict[str, float]:
    import jieba

    jieba.setLogLevel(logging.WARNING)
    started = time.perf_counter()
    jieba.initialize()
    init = time.perf_counter() - started
    options = NormalizeOptions()
    texts = []
    for d in docs[:count]:
        body = normalize(d["body"], options)
        texts.append(
            f"{normalize(d['title'], options).text}\n{body.text}" if d["title"] else body.text
        )
    py = min(timed_pass(jieba.lcut, texts) for _ in range(repeats)) / len(texts)
    rs = min(timed_pass(rjieba.cut, texts) for _ in range(repeats)) / len(texts)
    same = sum(jieba.lcut(t) == rjieba.cut(t) for t in texts)
    return {
        "n": len(texts),
        "init_s": init,
        "jieba_ms": py * 1e3,
        "rjieba_ms": rs * 1e3,
        "identical": same,
        "chars": sum(map(len, texts)) / len(texts),
    }


def run_ingest(docs: list[dict], batch_size: int, workers: int) -> tuple[FreshDB, dict]:
    """Ingest into a fresh database; returns it (still running) and the numbers."""
    db = FreshDB(batch_size)
    dd = db.dd
    verdicts = []
    snaps = []  # (wall, sql) when the first verdict of each batch arrives
    started = time.perf_counter()
    for i, v in enumerate(dd.ingest_many(docs, batch_size=batch_size, workers=workers)):
        if i % batch_size == 0:
            snaps.append((time.perf_counter() - started, dd.times.sql))
        verdicts.append(v)
    wall = time.perf_counter() - started
    # a batch's verdicts all exist once its first one arrives: the time between
    # two first verdicts is what the next batch took (the first batch also
    # waits for the pipeline to fill)
    batch_walls = [b[0] - a[0] for a, b in zip(snaps, snaps[1:], strict=False)]
    return db, {
        "workers": workers,
        "wall": wall,
        "rate": len(docs) / wall,
        "startup": db.startup,
        "sql_per_doc": dd.times.sql / dd.times.documents,
        "prepare_per_doc": dd.times.prepare / dd.times.documents,
        "first_batch_s": snaps[0][0],
        "batch_wall_p50": statistics.median(batch_walls) if batch_walls else float("nan"),
        "verdicts": [verdict_label(v) for v in verdicts],
    }


def run_direct_sql(docs: list[dict], batch_size: int) -> dict:
    with FreshDB(batch_size) as db:
        dd = db.dd
        prepared = [
            prepare_batch(docs[i : i + batch_size], options=dd.options, max_chars=dd.max_chars)
            for i in range(0, len(docs), batch_size)
        ]
        errors = sum(len(p.errors) for p in prepared)
        encode = timed_pass(lambda p: json.dumps(p.rows), prepared)
        labels: list[str] = []
        per_batch: list[tuple[int, float]] = []
        for p in prepared:
            dd._ensure_partitions(p.rows)
            started = time.perf_counter()
            with dd.conn.transaction():
                rows = dd.conn.execute(
                    "SELECT * FROM dedup_ingest(%s, false)", [Jsonb(p.rows)]
                ).fetchall()
            per_batch.append((len(p.rows), time.perf_counter() - started))
            by_pos = {r[0]: (f"{r[1]}/{r[2]}" if r[2] else r[1]) for r in rows}
            labels.extend(by_pos.get(i, "error") for i in range(p.size))
        stats = dd.conn.execute(
            f"SELECT (SELECT count(*) FROM documents), (SELECT count(*) FROM {PIECE_TABLE}),"
            " pg_size_pretty(pg_database_size(current_database()))"
        ).fetchone()
    total = sum(s for _, s in per_batch)
    q = max(1, len(per_batch) // 4)
    first, last = per_batch[:q], per_batch[-q:]
    return {
        "per_doc": total / len(docs),
        "total": total,
        "errors": errors,
        "encode_per_doc": encode / len(docs),
        "first_q_per_doc": sum(s for _, s in first) / sum(n for n, _ in first),
        "last_q_per_doc": sum(s for _, s in last) / sum(n for n, _ in last),
        "batch_p50": statistics.median(s for _, s in per_batch),
        "batch_max": max(s for _, s in per_batch),
        "verdicts": labels,
        "documents": stats[0],
        "sentences": stats[1],
        "db_size": stats[2],
    }


def latency(dd: Deduper, articles: list[dict], rng: random.Random, per_group: int = 100) -> dict:
    fresh = [d for d in read_jsonl(NEWS / "thucnews_cnews.jsonl") if d.get("body")]
    stored = rng.sample(articles, 2 * per_group)
    calls = (
        [("stored, with title", a["body"], a["title"]) for a in stored[:per_group]]
        + [("stored, body only", a["body"], None) for a in stored[per_group:]]
        + [("never stored", d["body"], None) for d in rng.sample(fresh, per_group)]
    )
    rng.shuffle(calls)
    dd.is_duplicate(
        "预热：第一次调用不计时。这是一段用来预热连接的文字。"
    )  # warm the connection/plan
    times: dict[str, list[float]] = collections.defaultdict(list)
    outcome: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for group, text, title in calls:
        started = time.perf_counter()
        v = dd.is_duplicate(text) if title is None else dd.is_duplicate(text, title)
        times[group].append(time.perf_counter() - started)
        outcome[group][verdict_label(v)] += 1
    every = [t for ts in times.values() for t in ts]
    return {
        "all": (pct(every, 0.5), pct(every, 0.95), len(every)),
        "groups": {
            g: (pct(ts, 0.5), pct(ts, 0.95), len(ts), dict(outcome[g])) for g, ts in times.items()
        },
    }


def machine(dd: Deduper) -> dict[str, str]:
    cpu = cpu_model()
    commit = engine_revision()
    import numpy

    return {
        "nproc": str(os.cpu_count()),
        "CPU": cpu,
        "Python": platform.python_version(),
        "PostgreSQL (SHOW server_version)": dd.conn.execute("SHOW server_version").fetchone()[0],
        "OS": platform.platform(),
        "dedup-pg": f"{dedup_pg.__version__} (commit {commit}, working tree may hold others' edits)",
        "numpy / rjieba": f"{numpy.__version__} / {_version('rjieba')}",
    }


def _version(name: str) -> str:
    from importlib.metadata import version

    try:
        return version(name)
    except Exception:
        return "?"


# -- report --------------------------------------------------------------------
def verdict_table(kinds: list[str], runs: dict[str, list[str]]) -> list[str]:
    labels = sorted(
        {lab for v in runs.values() for lab in v},
        key=lambda s: (["new", "duplicate", "review", "error"].index(s.split("/")[0]), s),
    )
    ref_name, ref = next(iter(runs.items()))
    order = ["original", "exact", "banner", "shuffle"]
    lines = ["| input | count | " + " | ".join(labels) + " |", "|---|---:|" + "---:|" * len(labels)]
    for kind in order + ["all"]:
        idx = [i for i, k in enumerate(kinds) if kind in ("all", k)]
        c = collections.Counter(ref[i] for i in idx)
        name = f"**{kind}**" if kind == "all" else kind
        lines.append(
            f"| {name} | {len(idx)} | " + " | ".join(str(c.get(lab, 0)) for lab in labels) + " |"
        )
    same = [name for name, v in runs.items() if v == ref]
    differ = [name for name, v in runs.items() if v != ref]
    lines.append("")
    lines.append(
        f"Counts from {ref_name}. Verdict for every item identical in: {', '.join(same)}"
        + (f"; DIFFERENT in: {', '.join(differ)}" if differ else "")
        + "."
    )
    for name in differ:
        diff = sum(a != b for a, b in zip(ref, runs[name], strict=True))
        lines.append(
            f"- {name}: {diff} items differ, counts {dict(collections.Counter(runs[name]))}"
        )
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--limit", type=int, default=None, help="articles to read (default: all 11,377)"
    )
    ap.add_argument("--batch-size", type=int, default=500)
    ap.add_argument(
        "--repeats",
        type=int,
        default=2,
        help="ingest runs per configuration and timing passes per stage (default 2)",
    )
    ap.add_argument("--output", type=Path, default=None, help=f"default {RESULTS.name}")
    ap.add_argument(
        "--stages-only",
        action="store_true",
        help="only the per-stage fingerprinting timings, no database (default output: "
        f"{STAGES_RESULTS.name})",
    )
    args = ap.parse_args()
    if args.output is None:
        args.output = STAGES_RESULTS if args.stages_only else RESULTS
    t_start = time.perf_counter()
    load_start = os.getloadavg()
    rng = random.Random(SEED)

    articles = read_jsonl(NEWS / "sina2018.jsonl", args.limit)
    docs, kinds = build_stream(articles, rng)
    kind_counts = collections.Counter(kinds)
    log(f"{len(articles)} articles + {len(docs) - len(articles)} reposts = {len(docs)} documents")

    log("stage timings (single process)")
    if args.stages_only:
        text = stages_report(docs, stage_passes(docs, args.repeats), args)
        print(text)
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(text, encoding="utf-8")
        log(f"written to {args.output} (total {time.perf_counter() - t_start:.0f} s)")
        return
    stages = stage_times(docs, args.repeats)
    log("jieba vs rjieba")
    jb = jieba_compare(docs, args.repeats)

    runs: dict[str, dict] = {}
    lat = None
    facts: dict[str, str] = {}
    for rep, workers in [(r, w) for r in range(args.repeats) for w in (0, 2)]:  # interleaved
        log(f"ingest_many(workers={workers}) into a fresh database, run {rep + 1}")
        db, res = run_ingest(docs, args.batch_size, workers)
        try:
            runs[f"workers={workers} run {rep + 1}"] = res
            log(f"  {res['rate']:.0f} docs/s")
            if workers == 0 and rep == 0:
                facts = machine(db.dd)
                log("is_duplicate latency")
                lat = latency(db.dd, articles, random.Random(SEED + 1))
        finally:
            db.cleanup()
    log("direct dedup_ingest timing into a fresh database")
    direct = run_direct_sql(docs, args.batch_size)
    total = time.perf_counter() - t_start
    facts["load average (1 min) at start / end"] = f"{load_start[0]:.2f} / {os.getloadavg()[0]:.2f}"

    # -- markdown ----------------------------------------------------------------
    ms = lambda s: f"{s * 1e3:.3f}"  # noqa: E731
    B = args.batch_size
    out = [f"## Ingest throughput ({datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC)", ""]
    flags = "".join(
        f" --{name} {value}"
        for name, value, default in (
            ("limit", args.limit, None),
            ("batch-size", B, 500),
            ("repeats", args.repeats, 2),
        )
        if value != default
    )
    out.append(f"`python bench/throughput.py{flags}` — total runtime {total:.0f} s.")
    out.append("")
    out.append(
        f"Input: {len(articles):,} sina2018 articles (avg {sum(len(a['body']) for a in articles) / len(articles):,.0f}"
        f" body chars) + {len(docs) - len(articles):,} generated reposts "
        f"({kind_counts['exact']} exact, {kind_counts['banner']} banner appended, "
        f"{kind_counts['shuffle']} sentences shuffled) = **{len(docs):,} documents**, batch size {B}."
    )
    out += ["", "### Machine", "", "| | |", "|---|---|"] + [
        f"| {k} | {v} |" for k, v in facts.items()
    ]
    out += [
        "",
        f"### End to end: `dd.ingest_many(docs, batch_size={B}, workers=W)`",
        "",
        f"Every run into its own fresh embedded database ({args.repeats} runs per configuration, "
        "interleaved); rate = documents / wall time of consuming the verdict iterator (server start-up "
        "+ migration excluded, shown apart).",
        "",
        "| run | docs/s | wall s | SQL ms/doc (`times.sql`) | prepare ms/doc (`times.prepare`) "
        "| 1st batch s | median later batch s | DB start+migrate s |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, r in runs.items():
        out.append(
            f"| {name} | **{r['rate']:.0f}** | {r['wall']:.1f} | {ms(r['sql_per_doc'])} | "
            f"{ms(r['prepare_per_doc'])} | {r['first_batch_s']:.2f} | {r['batch_wall_p50']:.2f} | "
            f"{r['startup']:.1f} |"
        )
    out.append("")
    for workers in (0, 2):
        rates = [r["rate"] for r in runs.values() if r["workers"] == workers]
        out.append(
            f"- workers={workers}: best **{max(rates):.0f} docs/s**, median {statistics.median(rates):.0f} "
            f"docs/s over {len(rates)} runs"
        )
    out += [
        "",
        "`times.prepare` is the fingerprinting time summed over batches wherever it ran (prefetch "
        "thread or worker processes), so it overlaps the SQL time.",
        "",
    ]
    out += [
        "### Per stage, per document",
        "",
        f"Library functions timed directly in one process over the same {len(docs):,} documents, "
        f"fastest of {args.repeats} passes per stage, **after a warm-up pass** of `fingerprint()` over all of them (term table "
        "`TERMS` filled, rjieba dictionary loaded). SQL from the ingest runs and from a direct, "
        "separately timed `SELECT * FROM dedup_ingest(%s, false)` per pre-built batch "
        "(a separate fresh database, partitions created beforehand).",
        "",
        "| stage | ms/doc |",
        "|---|---:|",
    ]
    seg = stages["tokenize (rjieba.cut)"]
    for name, v in stages.items():
        out.append(f"| {name} | {ms(v)} |")
        if name.startswith("SimHash incl. segmentation"):
            out.append(f"| &nbsp;&nbsp;SimHash only (above minus tokenize) | {ms(v - seg)} |")
    parts = (
        stages["normalize (body + title)"]
        + stages["SimHash incl. segmentation (TERMS.weights + simhash_arrays)"]
        + stages["SHA-1 of the exact key"]
        + stages[CONTAINMENT]
    )
    out.append(
        f"| &nbsp;&nbsp;sum of normalize + SimHash incl. segm. + SHA-1 + containment hashes | {ms(parts)} |"
    )
    out.append(
        f"| SQL, direct `dedup_ingest` (batch of {B}, in a transaction) | {ms(direct['per_doc'])} |"
    )
    out.append(
        f"| &nbsp;&nbsp;first quarter of batches / last quarter | {ms(direct['first_q_per_doc'])} / "
        f"{ms(direct['last_q_per_doc'])} |"
    )
    out.append(
        f"| &nbsp;&nbsp;`json.dumps` of the payload alone (client side) | {ms(direct['encode_per_doc'])} |"
    )
    for name, r in runs.items():
        out.append(
            f"| SQL, `dd.times.sql / dd.times.documents` ({name}) | {ms(r['sql_per_doc'])} |"
        )
    out.append("")
    out.append(
        f"Direct SQL: median batch {direct['batch_p50']:.2f} s, slowest {direct['batch_max']:.2f} s; "
        f"afterwards {direct['documents']:,} documents, {direct['sentences']:,} rows in {PIECE_TABLE}, "
        f"database {direct['db_size']}. Items rejected by prepare_batch: {direct['errors']}."
    )
    out += [
        "",
        "### Segmentation: pure-Python jieba vs rjieba",
        "",
        f"{jb['n']} articles (normalized title + body, avg {jb['chars']:,.0f} chars), fastest of "
        f"{args.repeats} passes; jieba's dictionary load ({jb['init_s']:.1f} s) not timed.",
        "",
        "| segmenter | ms/article |",
        "|---|---:|",
        f"| `jieba.lcut` (pure Python) | {jb['jieba_ms']:.2f} |",
        f"| `rjieba.cut` | {jb['rjieba_ms']:.2f} |",
        "",
        f"Speed-up {jb['jieba_ms'] / jb['rjieba_ms']:.1f}x; identical token lists for "
        f"{jb['identical']}/{jb['n']} articles.",
    ]
    out += ["", "### Verdicts", ""]
    out += verdict_table(
        kinds, {**{n: r["verdicts"] for n, r in runs.items()}, "direct SQL": direct["verdicts"]}
    )
    if lat is not None:
        out += [
            "",
            "### Read-only check latency: `dd.is_duplicate(text)` after the load (database of workers=0 run 1)",
            "",
            "| texts | calls | p50 ms | p95 ms | verdicts |",
            "|---|---:|---:|---:|---|",
        ]
        p50, p95, n = lat["all"]
        out.append(f"| **all** | {n} | {p50 * 1e3:.2f} | {p95 * 1e3:.2f} | |")
        for g, (a, b, n, o) in lat["groups"].items():
            out.append(
                f"| {g} | {n} | {a * 1e3:.2f} | {b * 1e3:.2f} | "
                + ", ".join(f"{k}: {v}" for k, v in sorted(o.items()))
                + " |"
            )
        out += [
            "",
            'One warm-up call first (not timed). "Never stored" texts are THUCNews articles; '
            '"body only" omits the stored title, so the exact layer cannot match them.',
        ]
    text = "\n".join(out) + "\n"
    print(text)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text, encoding="utf-8")
    log(f"written to {args.output} (total {total:.0f} s)")


if __name__ == "__main__":
    main()
