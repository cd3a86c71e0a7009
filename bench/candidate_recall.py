"""Candidate recall of smaller MinHash band layouts (issue 19's recall study).

Why
---
The MinHash layer finds candidates by band: a text's 128-value signature was
cut into 32 bands of 4 values when this study was made (revision 0021 then
adopted 16 bands of 3, from it), each band one key of a GIN index
(``document_minhash_bands``), and two texts sharing any key are compared on
the whole signature (estimated Jaccard >= ``minhash_review_threshold`` 0.4:
review, >= ``minhash_threshold`` 0.5: duplicate, after the fact check). The
keys cost 1,248 index bytes a kept document on sina2018 (bench/results/bytes.md),
a third of the index bytes issue 19 must cut to 1,000 in all. Fewer keys cost
less, and find fewer pairs: this measures how many fewer, on real pairs, before
any layout changes.

What is measured
----------------
Every layout bands a prefix of the same signature (``b`` bands of ``r``
values: the first ``b * r`` of the 128 minimums) and keeps the verification on
all 128, so a pair it finds gets the verdict it gets today; only whether the
pair is found changes. For each layout:

- **recall on labelled pairs**: of the pairs whose signatures agree on at
  least 0.4 of 128 positions (the pairs the MinHash layer decides today, if
  found), the share that share a band. Pairs: the tuning set
  (``bench/labels/sina2018_ngram_pairs_*.jsonl``) and the validation set
  (``bench/labels/validation_pairs.jsonl``), every label, each set apart.
- **recall on generated edits**: bench/quality.py's copy types of seeded
  sina2018 originals (ad paragraph, new title, shuffled, a fifth deleted, lead
  rewrite), same rule.
- **candidates a probe reads**: over all of sina2018 (11,377 articles) as one
  stored set, the mean number of other articles a text shares a band with,
  and how many of those are below 0.4 (work spent on pairs that lead to
  nothing).
- **keys a document**: ``b``; the GIN index's bytes a kept document scale with
  it (1,248 for the 32 keys of revisions 0008-0020, ~39 a key).

The theoretical chance that a pair at Jaccard ``s`` shares a band,
``1 - (1 - s^r)^b``, is printed beside each.

    python bench/candidate_recall.py [--copies N] [--output PATH]

Results: ``bench/results/candidate_recall.md``.
"""

from __future__ import annotations

import argparse
import collections
import time
from pathlib import Path

import numpy as np
import quality  # bench/quality.py's copy generators
import validation
from common import DATA, ROOT, Report, engine_revision, log, read_jsonl

from dedup_pg import minhash
from dedup_pg.fingerprint import fingerprint
from dedup_pg.normalize import NormalizeOptions

RESULTS = ROOT / "bench" / "results" / "candidate_recall.md"


#: A layout is a tuple of (bands, rows) groups, cut from the signature in turn:
#: ((10, 3), (2, 2)) is 10 bands of 3 values (values 1-30) then 2 of 2 (31-34).
Layout = tuple[tuple[int, int], ...]
#: the layout dedup_minhash_bands cuts (dedup_pg.minhash's constants)
IN_FORCE: Layout = ((minhash.BANDS, minhash.BAND_ROWS),)


def label(layout: Layout) -> str:
    """``16x3`` or ``10x3+2x2``, marked when it is the layout in force."""
    return "+".join(f"{b}x{r}" for b, r in layout) + (" (in force)" if layout == IN_FORCE else "")


def keys_of(layout: Layout) -> int:
    return sum(b for b, _ in layout)


def spans(layout: Layout) -> list[tuple[int, int]]:
    """(start, stop) of each band's values in the signature."""
    out, at = [], 0
    for bands, rows in layout:
        for _ in range(bands):
            out.append((at, at + rows))
            at += rows
    return out


#: the layout of revisions 0008 to 0020 first (the GIN bytes below scale its
#: measured 1,248); the one in force is IN_FORCE
LAYOUTS: list[Layout] = [
    ((32, 4),),
    ((24, 4),),
    ((16, 4),),
    ((21, 3),),
    ((16, 3),),
    ((12, 3),),
    ((10, 3), (2, 2)),
    ((11, 3), (1, 2)),
    ((9, 3), (3, 2)),
    ((8, 3), (2, 2)),
    ((10, 3),),
    ((16, 2),),
    ((8, 2),),
    ((8, 4),),
]
REVIEW = 0.4
OPTIONS = NormalizeOptions()


def signature(article: dict) -> np.ndarray | None:
    fp = fingerprint(article["body"], article.get("title"), OPTIONS)
    return None if fp.minhash is None else np.array(fp.minhash, dtype=np.int32)


def band_keys(sig: np.ndarray, layout: Layout) -> list[bytes]:
    # a band key is its position and its values (as the engine's key is)
    return [bytes([b]) + sig[lo:hi].tobytes() for b, (lo, hi) in enumerate(spans(layout))]


def shares_band(a: np.ndarray, b: np.ndarray, layout: Layout) -> bool:
    eq = a == b
    return any(bool(eq[lo:hi].all()) for lo, hi in spans(layout))


def estimate(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.mean(a == b))


def theory(s: float, layout: Layout) -> float:
    miss = 1.0
    for bands, rows in layout:
        miss *= (1 - s**rows) ** bands
    return 1 - miss


def labelled(pairs: list[tuple[dict, dict, dict]]) -> list[tuple[str, np.ndarray, np.ndarray]]:
    out = []
    for p, a, b in pairs:
        sa, sb = signature(a), signature(b)
        if sa is not None and sb is not None:
            out.append((p["label"], sa, sb))
    return out


def generated(copies: int, seed: int) -> list[tuple[str, np.ndarray, np.ndarray]]:
    articles = read_jsonl(DATA / "news" / "sina2018.jsonl")
    signatures: dict[str, np.ndarray | None] = {}

    def signed(a: dict) -> bool:  # originals without a signature get no copies
        signatures[a["id"]] = signature(a)
        return signatures[a["id"]] is not None

    out = []
    for name, a, b in quality.study_edits(articles, copies, seed, keep=signed):
        sb = signature(b)
        if sb is not None:
            out.append((name, signatures[a["id"]], sb))
    return out


def probe_load(sigs: list[np.ndarray]) -> dict[Layout, tuple[float, float]]:
    """layout -> (mean candidates a text, mean of those below REVIEW)."""
    out = {}
    for layout in LAYOUTS:
        index: dict[bytes, list[int]] = collections.defaultdict(list)
        for i, s in enumerate(sigs):
            for key in band_keys(s, layout):
                index[key].append(i)
        found = low = 0
        for i, s in enumerate(sigs):
            cands = {j for key in band_keys(s, layout) for j in index[key] if j != i}
            found += len(cands)
            low += sum(1 for j in cands if estimate(s, sigs[j]) < REVIEW)
        out[layout] = (found / len(sigs), low / len(sigs))
    return out


def recall_rows(pairs: list[tuple[str, np.ndarray, np.ndarray]]) -> dict[str, dict]:
    """group -> {'n': pairs at >= REVIEW, layout: found}."""
    groups: dict[str, dict] = collections.defaultdict(lambda: collections.Counter())
    for group, a, b in pairs:
        if estimate(a, b) < REVIEW:
            continue
        for name in (group, "all"):
            groups[name]["n"] += 1
            for layout in LAYOUTS:
                groups[name][layout] += shares_band(a, b, layout)
    return groups


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--copies", type=int, default=300, help="originals per generated edit type")
    ap.add_argument("--seed", type=int, default=20181120)
    ap.add_argument("--output", type=Path, default=RESULTS)
    args = ap.parse_args(argv)
    started = time.perf_counter()

    log("signatures of the labelled pairs")
    sets = {
        name: recall_rows(labelled(pairs)) for name, pairs in validation.labelled_sets().items()
    }
    log("generated edits")
    sets["generated edits"] = recall_rows(generated(args.copies, args.seed))
    log("probe load over sina2018")
    articles = read_jsonl(DATA / "news" / "sina2018.jsonl")
    sigs = [s for a in articles if (s := signature(a)) is not None]
    load = probe_load(sigs)

    out = Report()
    out(
        f"# Candidate recall of MinHash band layouts ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())})"
    )
    out("")
    out(
        f"`python bench/candidate_recall.py --copies {args.copies}`, engine at {engine_revision()}; "
        f"{time.perf_counter() - started:.0f} s. Each layout bands a prefix of the same 128-value "
        "signature; the verification stays on all 128, so a pair a layout finds gets today's "
        f"verdict. Recall: of the pairs whose signatures agree on >= {REVIEW} of their positions "
        "(the pairs the MinHash layer decides today), the share that share a band."
    )
    out("")
    header = "| set | group | pairs | " + " | ".join(map(label, LAYOUTS)) + " |"
    out(header)
    out("|---|---|---:|" + "---:|" * len(LAYOUTS))
    for set_name, groups in sets.items():
        for group in sorted(groups, key=lambda g: (g == "all", g)):
            c = groups[group]
            cells = " | ".join(
                f"{100 * c[layout] / c['n']:.1f}%"
                + (f" (-{c['n'] - c[layout]})" if c[layout] < c["n"] else "")
                for layout in LAYOUTS
            )
            out(f"| {set_name} | {group} | {c['n']} | {cells} |")
    out("")
    out(f"Probe load over all {len(sigs):,} sina2018 articles with a signature, as one stored set:")
    out("")
    out(
        "| layout | keys a document | est. GIN bytes a kept document | candidates a text (mean) "
        "| of them below 0.4 | below 0.4, scaled to 1M / 10M stored texts "
        "| P(band) at J 0.4 / 0.5 / 0.6 |"
    )
    out("|---|---:|---:|---:|---:|---:|---|")
    for layout in LAYOUTS:
        found, low = load[layout]
        bands = keys_of(layout)
        probs = " / ".join(f"{theory(s, layout):.2f}" for s in (0.4, 0.5, 0.6))
        # a probe meets each stored text below 0.4 with the rate seen here
        rate = low / (len(sigs) - 1)
        out(
            f"| {label(layout)} | {bands} | {round(1248 * bands / 32):,} | {found:.3f} | "
            f"{low:.3f} | {rate * 1e6:.1f} / {rate * 1e7:.0f} | {probs} |"
        )
    out("")
    out(
        "GIN bytes scale the 1,248 measured for 32 keys (bench/results/bytes.md) by the key count: "
        "an estimate, to be measured by bench/bytes.py on the layout chosen. The scaled "
        "columns assume a week of a crawl meets unrelated texts at the rate these 11,146 "
        "articles crawled around November 2018 meet each other: a linear extrapolation, not a run."
    )
    out.write(args.output)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
