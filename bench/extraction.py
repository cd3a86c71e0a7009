"""Main-content extraction on realistic Chinese news pages, and its effect on dedup.

What it measures, and why
-------------------------
Crawlers hand over pages. The engine must find the article in them, or
templates decide the verdicts: navigation and footers make different articles
of one site look alike, and the same article on two sites look different.

1. decoding: every page (four site templates, two of them GBK/GB18030 with a
   wrong ``<meta charset>``; see bench/html_pages.py) is decoded by
   ``dedup_pg.pages.decode_bytes``; a page counts as decoded when the text
   equals the page as rendered before encoding.
2. extraction, per extractor (trafilatura, readability-lxml, gne) and for the
   baseline "no extraction" (the page as body; the normalizer drops tags and
   scripts): character-level F1 of the extracted text against the article's
   paragraphs (multisets of non-space characters after NFKC), per site and
   overall; title exact-match rate; pages per second (extraction only, after a
   warm-up, one process).
3. end to end, one fresh database per mode: 30 warm-up pages per site of other
   articles (what template learning reads), then the originals (each article on
   one site), then reposts of a sample of them on another site (a different
   template, ads and related headlines). A repost is *found* when its verdict is
   'duplicate' of its original; an original that is not 'new' is a false merge
   (or a review). Modes: the page as body, each extractor, and the page as body
   and the default extractor with learned template lines stripped
   (``dedup-pg templates learn`` after the warm-up).

Run from the repository root:  python bench/extraction.py [--articles N] [--reposts N]
Writes bench/results/extraction.md.
"""

from __future__ import annotations

import argparse
import collections
import re
import time
import unicodedata

import psycopg
from common import ROOT, Report, engine_revision, log, scratch_dir
from html_pages import load_articles, make_sites, paragraphs, render

from dedup_pg import Deduper, database, pages, templates

SPACE = re.compile(r"\s+")


def chars(text: str) -> collections.Counter[str]:
    return collections.Counter(SPACE.sub("", unicodedata.normalize("NFKC", text)))


def char_f1(got: str, want: str) -> tuple[float, float, float]:
    """Precision, recall, F1 of the extracted characters (as multisets)."""
    g, w = chars(got), chars(want)
    hit = sum((g & w).values())
    if not hit:
        return 0.0, 0.0, 0.0
    p, r = hit / sum(g.values()), hit / sum(w.values())
    return p, r, 2 * p * r / (p + r)


def build(
    n_articles: int, n_reposts: int, seed: int
) -> tuple[list, list[dict], list[dict], list[dict]]:
    """Pages: warm-up (per site), originals, reposts (another site's template)."""
    import random

    rng = random.Random(seed)
    n_warm = 30 * 4
    articles, headlines = load_articles(n_articles + n_warm)
    sites = make_sites(headlines, rng)

    def page(a: dict, site_no: int, role: str, k: int, paras: list[str]) -> dict:
        site = sites[site_no % 4]
        return {
            "id": f"{role}-{a['id']}",
            "article": a["id"],
            "site": site.name,
            "title": a["title"],
            "paragraphs": paras,
            "bytes": render(site, a["title"], paras, seed * 100_003 + k),
            "text": None,
        }

    warm = [
        page(a, i, "warm", i, paragraphs(a["body"], rng))
        for i, a in enumerate(articles[n_articles:])
    ]
    originals, reposts = [], []
    for i, a in enumerate(articles[:n_articles]):
        paras = paragraphs(a["body"], rng)
        originals.append(page(a, i, "orig", 10_000 + i, paras))
    for i in rng.sample(range(n_articles), n_reposts):
        a = articles[i]
        # another site, and its own paragraphing of the same text
        reposts.append(
            page(a, i + rng.randint(1, 3), "copy", 20_000 + i, paragraphs(a["body"], rng))
        )
    return sites, warm, originals, reposts


def measure_decoding(all_pages: list[dict], sites: dict[str, tuple[str, str]]) -> list[str]:
    ok: collections.Counter[str] = collections.Counter()
    total: collections.Counter[str] = collections.Counter()
    for p in all_pages:
        total[p["site"]] += 1
        enc = sites[p["site"]][0]
        expected = p["bytes"].decode(enc)
        p["text"] = expected  # for the page-as-body mode, even if decoding fails
        try:
            got = pages.decode_bytes(p["bytes"])
        except Exception:
            continue
        ok[p["site"]] += got == expected
        p["text"] = got
    return [f"| {s} | {sites[s][0]} | {sites[s][1]} | {ok[s]}/{total[s]} |" for s in sorted(total)]


def measure_extraction(docs: list[dict], report: Report) -> dict[str, float]:
    names = ["none (page as body)", *pages.EXTRACTORS]
    overall: dict[str, float] = {}
    rows = []
    for name in names:
        per_site: dict[str, list[tuple[float, float, float]]] = collections.defaultdict(list)
        titles = 0
        if name in pages.EXTRACTORS:
            ex = pages.get_extractor(name)
            for d in docs[:5]:  # warm-up: imports, lazy tables
                ex.extract(d["text"])
        started = time.perf_counter()
        for d in docs:
            if name in pages.EXTRACTORS:
                try:
                    result = pages.Extracted(None, "")
                    result = pages.page_text(d["text"], extractor=name)
                except Exception:
                    pass
                text, title = result.text, result.title
            else:
                from dedup_pg.normalize import clean

                text, title = clean(d["text"]), None
            titles += title == d["title"]
            per_site[d["site"]].append(char_f1(text, "".join(d["paragraphs"])))
        seconds = time.perf_counter() - started
        scores = [s for v in per_site.values() for s in v]
        mean = [sum(x[i] for x in scores) / len(scores) for i in range(3)]
        overall[name] = mean[2]
        site_f1 = " | ".join(
            f"{sum(x[2] for x in per_site[s]) / len(per_site[s]):.3f}" for s in sorted(per_site)
        )
        rows.append(
            f"| {name} | {mean[0]:.3f} | {mean[1]:.3f} | **{mean[2]:.3f}** | {site_f1} | "
            f"{titles / len(docs):.2f} | {len(docs) / seconds:,.0f} |"
        )
        log(f"extraction {name}: F1 {mean[2]:.3f}, {len(docs) / seconds:.0f} pages/s")
    sites = sorted({d["site"] for d in docs})
    report(
        "| extractor | precision | recall | F1 | "
        + " | ".join(f"F1 {s}" for s in sites)
        + " | title exact | pages/s |"
    )
    report("|" + "---|" * (7 + len(sites)))
    for row in rows:
        report(row)
    return overall


def run_dedup(
    admin_dsn: str, mode: str, warm: list[dict], originals: list[dict], reposts: list[dict]
) -> dict[str, int]:
    name = "bench_extract_" + re.sub(r"\W", "_", mode)
    admin = psycopg.conninfo.make_conninfo(admin_dsn, dbname="postgres")
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    dsn = psycopg.conninfo.make_conninfo(admin_dsn, dbname=name)
    extractor = None if mode.startswith("none") else mode.split("+")[0]
    learn = mode.endswith("+templates")

    def item(p: dict) -> dict:
        base = {"id": p["id"], "source": p["site"]}
        if extractor is None:
            return base | {"body": p["text"]}
        return base | {"html": p["bytes"]}

    counts: collections.Counter[str] = collections.Counter()
    merged: list[str] = []
    try:
        with Deduper(dsn, batch_size=100) as dd:
            if extractor:
                dd.set_setting("html_extractor", extractor)
            list(dd.ingest_many(item(p) for p in warm))
            if learn:
                templates.learn(dd.conn)
                dd.reload_settings()
                counts["patterns"] = len(templates.list_patterns(dd.conn))
            for p, v in zip(originals, dd.ingest_many(item(p) for p in originals), strict=True):
                counts[f"orig {v.verdict}"] += 1
                if v.verdict != "new":
                    merged.append(
                        f"{p['id']} {v.verdict} of {v.matched_id} ({v.layer} {v.score or 0:.2f}{v.error or ''})"
                    )
            orig_ids = {p["article"]: p["id"] for p in originals}
            for p, v in zip(reposts, dd.ingest_many(item(p) for p in reposts), strict=True):
                if v.verdict == "duplicate" and v.matched_id == orig_ids[p["article"]]:
                    counts["copy found"] += 1
                elif (
                    v.verdict in ("duplicate", "review") and v.matched_id != orig_ids[p["article"]]
                ):
                    counts["copy wrong match"] += 1
                else:
                    counts[f"copy {v.verdict}"] += 1
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    if merged:
        log(f"{mode}: originals not new: " + "; ".join(merged))
    counts["merged"] = merged  # type: ignore[assignment]
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--articles", type=int, default=400, help="originals (one page each)")
    parser.add_argument("--reposts", type=int, default=200, help="originals reposted elsewhere")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    report = Report()
    sites, warm, originals, reposts = build(args.articles, args.reposts, args.seed)
    all_pages = warm + originals + reposts
    site_info = {s.name: (s.encoding, s.declared) for s in sites}
    report("# Main-content extraction and dedup of raw pages")
    report()
    report(
        f"Revision {engine_revision()}; {len(all_pages)} pages built by bench/html_pages.py from "
        f"real sina2018 articles: {len(warm)} warm-up, {len(originals)} originals, "
        f"{len(reposts)} reposts on another site's template. One process, 2-core shared machine."
    )
    report()
    report("## Decoding (pages as bytes, meta charset often wrong)")
    report()
    report("| site | bytes | declared | decoded exactly |")
    report("|---|---|---|---|")
    for row in measure_decoding(all_pages, site_info):
        report(row)
    report()
    report("## Extraction accuracy (character F1 against the article) and speed")
    report()
    measure_extraction(originals, report)
    report()
    report("## End to end: duplicates across templates, distinct articles in one template")
    report()
    report(
        f"{len(originals)} originals (each must stay 'new'), then {len(reposts)} reposts "
        "(each must be a 'duplicate' of its original)."
    )
    report()
    report(
        "| mode | originals new | false merges | originals review | reposts found | "
        "reposts review | reposts new | wrong match | patterns learned | seconds |"
    )
    report("|---|---|---|---|---|---|---|---|---|---|")
    home = scratch_dir("dedup-bench-extract-")
    dsn = database.start_embedded(home)
    try:
        modes = [
            "none (page as body)",
            *pages.EXTRACTORS,
            "none (page as body)+templates",
            f"{pages.DEFAULT_EXTRACTOR}+templates",
        ]
        notes: list[str] = []
        for mode in modes:
            started = time.perf_counter()
            c = run_dedup(dsn, mode, warm, originals, reposts)
            log(f"dedup {mode}: {dict(c)}")
            report(
                f"| {mode} | {c['orig new']} | {c['orig duplicate']} | {c['orig review']} | "
                f"**{c['copy found']}**/{len(reposts)} | {c['copy review']} | {c['copy new']} | "
                f"{c['copy wrong match']} | {c.get('patterns', '-')} | "
                f"{time.perf_counter() - started:.0f} |"
            )
            notes.extend(f"- {mode}: {m}" for m in c["merged"])
    finally:
        database.stop_embedded(home)
    if notes:
        report()
        report("Originals that were not 'new' (matched id, layer, score):")
        report()
        for note in notes:
            report(note)
    report.write(ROOT / "bench" / "results" / "extraction.md")


if __name__ == "__main__":
    main()
