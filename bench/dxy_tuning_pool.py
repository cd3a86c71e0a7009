"""A second tuning set from dxy_covid_short, apart from the validation set (issue 21).

The first tuning set (``bench/labels/sina2018_ngram_pairs_*.jsonl``) is sina2018
only, at character 8-gram Jaccard >= 0.5: it holds no short bulletins or notices
of the kind dxy_covid_short is made of, so a rule for those could only have been
chosen on the validation set, which is never tuned on. This script takes the
dxy_covid_short candidates of ``bench/labels/validation_candidates.jsonl`` that the
validation set did not sample (``bench/mine_validation_pairs.py`` mined every pair
at Jaccard 0.2 and up; the validation set took a random 600 of those under 0.5
and every one from 0.5 up) and keeps those whose two texts are in no validation
pair at all: a rule chosen on them has read no text the validation set scores.

    python bench/dxy_tuning_pool.py --write DIR      # pairs to label, DIR/inK.jsonl
    python bench/dxy_tuning_pool.py --collect DIR    # DIR/outK.jsonl -> the label file

Labels are read by hand (helpers, in parallel) after the validation set's
definitions (``bench/labels/README.md``); ``--collect`` checks each label row
against its pair and writes ``bench/labels/dxy_tuning_pairs.jsonl`` (ids, lines,
label, reason; no text) for the batches labelled so far (all four, 2026-12-05).
"""

from __future__ import annotations

import argparse
import glob
import json
import sys
from pathlib import Path

from common import DATA, ROOT, read_jsonl

LABELS = ROOT / "bench" / "labels"
OUT = LABELS / "dxy_tuning_pairs.jsonl"
CORPUS = "dxy_covid_short"
BATCHES = 4
LABEL_SET = ("same_story", "same_event", "different_template", "different", "page_code")


def pool() -> list[dict]:
    """The unsampled dxy_covid_short candidates whose texts no validation pair holds."""
    candidates = read_jsonl(LABELS / "validation_candidates.jsonl")
    validation = read_jsonl(LABELS / "validation_pairs.jsonl")
    sampled = {v["line"] for v in validation}
    held: set[int] = set()  # corpus lines of every text the validation set names
    for v in validation:
        if v["corpus"] == CORPUS:
            held.update((v["a_line"], v["b_line"]))
    for k in sampled:
        c = candidates[k]
        if c["corpus"] == CORPUS:
            held.update((c["a_line"], c["b_line"]))
    return [
        {"line": k, **{f: c[f] for f in ("a_id", "b_id", "a_line", "b_line", "jaccard_char8")}}
        for k, c in enumerate(candidates)
        if c["corpus"] == CORPUS
        and k not in sampled
        and c["a_line"] not in held
        and c["b_line"] not in held
    ]


def write(folder: Path) -> int:
    items = read_jsonl(DATA / "news" / f"{CORPUS}.jsonl")
    pairs = pool()
    folder.mkdir(parents=True, exist_ok=True)
    for k in range(BATCHES):
        with (folder / f"in{k}.jsonl").open("w", encoding="utf-8") as fh:
            for p in pairs[k::BATCHES]:
                a, b = items[p["a_line"]], items[p["b_line"]]
                assert (a["id"], b["id"]) == (p["a_id"], p["b_id"])
                shown = {
                    side: {f: x.get(f) for f in ("outlet", "title", "body")}
                    for side, x in (("A", a), ("B", b))
                }
                fh.write(json.dumps(p | shown, ensure_ascii=False) + "\n")
    print(f"{len(pairs)} pairs in {BATCHES} batches in {folder}", file=sys.stderr)
    return 0


def collect(folder: Path) -> int:
    by_line = {p["line"]: p for p in pool()}
    rows = []
    for path in sorted(glob.glob(str(folder / "out*.jsonl"))):
        for lab in read_jsonl(Path(path)):
            p = by_line.get(lab["line"])
            if p is None or (p["a_id"], p["b_id"]) != (lab["a_id"], lab["b_id"]):
                raise SystemExit(f"{path}: label for an unknown pair: line {lab['line']}")
            if lab["label"] not in LABEL_SET or not lab.get("reason"):
                raise SystemExit(f"{path}: bad label or no reason at line {lab['line']}")
            rows.append(p | {"corpus": CORPUS, "label": lab["label"], "reason": lab["reason"]})
    if len({r["line"] for r in rows}) != len(rows):
        raise SystemExit("a pair labelled twice")
    # the batches labelled so far (they may come one at a time)
    print(f"{len(rows)} of the pool's {len(by_line)} pairs labelled", file=sys.stderr)
    rows.sort(key=lambda r: r["line"])
    with OUT.open("w", encoding="utf-8") as fh:
        for r in rows:
            fh.write(json.dumps(r, ensure_ascii=False) + "\n")
    print(f"wrote {len(rows)} pairs to {OUT.relative_to(ROOT)}", file=sys.stderr)
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    group = ap.add_mutually_exclusive_group(required=True)
    group.add_argument("--write", type=Path, metavar="DIR")
    group.add_argument("--collect", type=Path, metavar="DIR")
    args = ap.parse_args()
    return write(args.write) if args.write else collect(args.collect)


if __name__ == "__main__":
    sys.exit(main())
