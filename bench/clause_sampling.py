"""What storing a sample of each document's clauses would change (issue 19's
recall study for the containment layer's clause index).

Why
---
``document_clauses`` holds every distinct clause hash of every kept document:
on sina2018 1,581 heap and 1,620 index bytes a kept document
(bench/results/bytes.md), the largest part of what issue 19 must cut. Storing
only a sample of a long document's clauses cuts those rows by the sampling
rate; what it costs is that the containment layer then sees fewer shared
clauses, and decides on an estimate. This measures how often that estimate
changes the layer's decision, on real pairs, before any layout changes.

The scheme studied
------------------
A clause hash ``h`` is in the sample when ``h & (k - 1) = 0`` (the same
clauses in every copy of a text: a copy's sample is the original's sample of
what they share). A document with fewer than ``T`` distinct clauses keeps all
of them (its rows cost little, and its estimate would be too coarse). The
incoming text probes with all of its clauses, as today, so:

- a stored text kept whole is compared as today (exact shared count);
- a sampled stored text ``A`` against incoming ``B``: shared = clauses of
  ``B`` in ``A``'s sample, and both texts' clause counts are their samples'
  (``|S(A)|``, ``|S(B)|``), so containment = shared / min(|S(A)|, |S(B)|)
  estimates the full containment on the same scale. The other rules of the
  layer (at least ``containment_min_shared`` shared, two at least; the
  incoming share; the lead rule) read the same counts.

The decision compared is the containment layer's alone (60_ingest.sql),
without the store around the pair: ``duplicate`` (containment >=
``containment_threshold`` and incoming share >= ``containment_incoming_share``,
or the lead rule), ``band`` (a candidate at >= ``containment_review_threshold``
otherwise: review, or a duplicate when ``dedup_copied_body`` says the body is
copied) and ``none``. The pairs are judged alone, without boilerplate
(clauses held by ``containment_boilerplate_docs`` stored documents are left
out; with samples a long document's unsampled boilerplate is never counted as
held); the store run judges every sina2018 article against all earlier ones
with it. Not modelled: the SimHash layer's clause-overlap rule and
``dedup_copied_body``'s own reading of the texts. Pairs: the tuning set (``bench/labels/sina2018_ngram_pairs_*``) and the
validation set (``bench/labels/validation_pairs.jsonl``), each apart, B as the
incoming text; bench/quality.py's generated edits of seeded sina2018 originals.

A second family ("found by a sample, counted in full"): a long document's
index rows are its sample plus its first ``L`` clauses (the lead, which a
truncated recrawl keeps), and the document row keeps all its clause hashes as
an array. The rows only find candidates (one shared row is enough); the
layer's counts are then today's, read from the arrays. What changes is which
texts are found, and in a store which clauses count as boilerplate (a clause's
holders are counted among the rows). Its bytes are the rows' plus 8 bytes a
clause for the array (and its 24-byte header).

Rows a document: the mean over sina2018's articles of the clause rows each
would store; the bytes scale the measured bytes a row of
``document_clauses`` (heap and index, bench/results/bytes.md) by it.

    python bench/clause_sampling.py [--copies N] [--output PATH]

Results: ``bench/results/clause_sampling.md``.
"""

from __future__ import annotations

import argparse
import collections
import time
from dataclasses import dataclass
from pathlib import Path

import quality  # bench/quality.py's copy generators
import validation
from common import DATA, ROOT, Report, engine_revision, log, read_jsonl

from dedup_pg.fingerprint import fingerprint
from dedup_pg.normalize import NormalizeOptions

RESULTS = ROOT / "bench" / "results" / "clause_sampling.md"
OPTIONS = NormalizeOptions()

#: the layer's settings in force (sql/schema/10_settings.sql)
THRESHOLD = 0.8
REVIEW_THRESHOLD = 0.5
MIN_SHARED = 3
INCOMING_SHARE = 0.35


@dataclass(frozen=True)
class Scheme:
    """Keep clause h when h & (k - 1) == 0 (and the first ``lead`` clauses),
    all of them under ``t`` clauses; ``exact``: the rows only find candidates
    and the counts come from every clause (the second family)."""

    k: int
    t: int
    lead: int = 0
    exact: bool = False

    @property
    def name(self) -> str:
        if self.k == 1:
            return "all clauses (today)"
        lead = f" + first {self.lead}" if self.lead else ""
        how = ", counted in full" if self.exact else ""
        return f"1/{self.k}{lead}, all under {self.t}{how}"


TODAY = Scheme(1, 0)
SCHEMES = [
    TODAY,
    *(
        Scheme(k, t)
        for k, t in [(2, 8), (2, 16), (2, 32), (4, 8), (4, 16), (4, 32), (8, 16), (8, 32), (8, 64)]
    ),
    *(
        Scheme(k, t, lead, exact=True)
        for k, t, lead in [(4, 16, 0), (4, 16, 3), (4, 32, 3), (8, 16, 3), (8, 32, 3), (16, 16, 3)]
    ),
]

#: measured on sina2018 at revision 0024 (bench/results/bytes.md), a kept document
CLAUSE_HEAP_BYTES = 1_582
CLAUSE_INDEX_BYTES = 946


@dataclass(frozen=True)
class Text:
    clauses: frozenset[int]
    lead: tuple[int, ...]


def text(article: dict) -> Text:
    fp = fingerprint(article["body"], article.get("title"), OPTIONS)
    return Text(frozenset(fp.clauses), fp.lead)


def sample(clauses: frozenset[int], k: int) -> frozenset[int]:
    return frozenset(h for h in clauses if h & (k - 1) == 0)


def stored(a: Text, s: Scheme) -> tuple[frozenset[int], bool]:
    """The clause rows kept for ``a``, and whether they are a sample."""
    if s.k == 1 or len(a.clauses) < s.t:
        return a.clauses, False
    return sample(a.clauses, s.k) | frozenset(a.lead[: s.lead]), True


def decide(a: Text, b: Text, s: Scheme) -> str:
    """The containment layer's decision on incoming ``b`` against stored ``a``."""
    rows, sampled = stored(a, s)
    if s.exact:  # found by a row, then counted in full
        if not b.clauses & rows:
            return "none"
        return decide(a, b, TODAY)
    shared = len(b.clauses & rows)
    n_item = len(sample(b.clauses, s.k)) if sampled else len(b.clauses)
    return decision(shared, n_item, len(rows), rows, len(a.clauses), b)[0]


def decision(
    shared: int, n_item: int, stored_n: int, rows: frozenset[int], full_n: int, b: Text
) -> tuple[str, float, float]:
    """(decision, containment, incoming share) from the counts (60_ingest.sql)."""
    if len(b.clauses) < 2 or shared < 2 or n_item < 1:
        return "none", 0.0, 0.0
    if shared < min(MIN_SHARED, n_item, max(stored_n, shared)):
        return "none", 0.0, 0.0
    ratio = shared / min(n_item, max(stored_n, shared))
    incoming = shared / n_item
    if ratio >= THRESHOLD and incoming < INCOMING_SHARE and shared == stored_n and stored_n >= 2:
        # the lead rule: every stored clause opens the incoming text
        if rows <= set(b.lead[: full_n + 2]):
            incoming = 1.0
    if ratio >= THRESHOLD and incoming >= INCOMING_SHARE:
        return "duplicate", ratio, incoming
    if ratio >= REVIEW_THRESHOLD:
        return "band", ratio, incoming
    return "none", ratio, incoming


#: containment_boilerplate_docs: a clause this many stored texts hold is ignored
BOILERPLATE_DOCS = 5


def store_run(texts: list[Text], s: Scheme) -> list[tuple[str, int | None]]:
    """Each text's containment decision (and the text it matched) against all
    the texts before it as one store, boilerplate left out as the engine does:
    a clause ``BOILERPLATE_DOCS`` stored texts hold counts for neither side.
    Every text is stored (the engine keeps only new ones)."""
    holders: dict[int, list[int]] = collections.defaultdict(list)
    kept: list[tuple[frozenset[int], bool]] = []
    out: list[tuple[str, int | None]] = []
    for b in texts:
        boiler = {h for h in b.clauses if len(holders.get(h, ())) >= BOILERPLATE_DOCS}
        shared = collections.Counter(j for h in b.clauses - boiler for j in holders.get(h, ()))
        if s.exact:  # a row finds the text; its clauses, all of them, are counted
            shared = collections.Counter(
                {j: len((b.clauses - boiler) & texts[j].clauses) for j in shared}
            )
        best: tuple | None = None
        for j, n in shared.items():
            if n < 2:
                continue
            rows, sampled = kept[j]
            if s.exact:
                rows, sampled = texts[j].clauses, False
            if sampled:
                n_item = len(sample(b.clauses, s.k) - boiler)
                stored_n = len(rows) - len(sample(frozenset(boiler), s.k))
            else:
                n_item = len(b.clauses) - len(boiler)
                stored_n = len(texts[j].clauses) - len(boiler)
            got, ratio, incoming = decision(n, n_item, stored_n, rows, len(texts[j].clauses), b)
            key = (-ratio, -incoming, j)
            if got != "none" and (best is None or key < best[0]):
                best = (key, got, j)
        out.append((best[1], best[2]) if best else ("none", None))
        rows, sampled = stored(b, s)
        kept.append((rows, sampled))
        for h in rows:
            if len(holders[h]) < BOILERPLATE_DOCS:
                holders[h].append(len(kept) - 1)
    return out


def labelled(pairs: list[tuple[dict, dict, dict]]) -> list[tuple[str, Text, Text]]:
    return [(p["label"], text(a), text(b)) for p, a, b in pairs]


def generated(copies: int, seed: int) -> list[tuple[str, Text, Text]]:
    articles = read_jsonl(DATA / "news" / "sina2018.jsonl")
    texts: dict[int, Text] = {}
    out = []
    for name, a, b in quality.study_edits(articles, copies, seed, distinct=True):
        if id(a) not in texts:
            texts[id(a)] = text(a)
        out.append((name, texts[id(a)], text(b)))
    return out


def compare(pairs: list[tuple[str, Text, Text]]) -> dict[str, dict]:
    """group -> Counter of (scheme, today's decision, the scheme's decision)."""
    groups: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for group, a, b in pairs:
        today = decide(a, b, TODAY)
        for scheme in SCHEMES:
            got = decide(a, b, scheme)
            for name in (group, "all"):
                groups[name][(scheme, today, got)] += 1
    return groups


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--copies", type=int, default=300, help="originals per generated edit type")
    ap.add_argument("--seed", type=int, default=20181120)
    ap.add_argument("--output", type=Path, default=RESULTS)
    args = ap.parse_args(argv)
    started = time.perf_counter()

    log("clauses of the labelled pairs")
    sets = {name: compare(labelled(pairs)) for name, pairs in validation.labelled_sets().items()}
    log("generated edits")
    sets["generated edits"] = compare(generated(args.copies, args.seed))
    log("rows a document over sina2018")
    articles = read_jsonl(DATA / "news" / "sina2018.jsonl")
    texts = [text(a) for a in articles]
    rows = {s: sum(len(stored(x, s)[0]) for x in texts) / len(texts) for s in SCHEMES}
    clauses = sum(len(x.clauses) for x in texts) / len(texts)
    log("sina2018 as one store, each scheme")
    runs = {s: store_run(texts, s) for s in SCHEMES}

    out = Report()
    out(
        f"# Clause sampling and the containment layer ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())})"
    )
    out("")
    out(
        f"`python bench/clause_sampling.py --copies {args.copies}`, engine at {engine_revision()}; "
        f"{time.perf_counter() - started:.0f} s. The containment layer's decision (duplicate, "
        "band = review or copied body, none) on incoming B against stored A, with today's clause "
        "rows and with a sample of a long stored text's clauses (h & (k-1) = 0, with its first L "
        'clauses where named; all of them under T clauses), counted on the samples or ("counted '
        'in full") found by a row and counted on all clauses. The store around the pair '
        "(boilerplate) is not modelled in the pair tables."
    )
    out("")
    out("Rows and bytes a document (sina2018, all 11,377 articles):")
    out("")
    out(
        "| scheme | clause rows a document | est. heap + index bytes a kept document "
        "(+ the clause array where counted in full) |"
    )
    out("|---|---:|---:|")
    base = rows[TODAY]
    for s in SCHEMES:
        est = (CLAUSE_HEAP_BYTES + CLAUSE_INDEX_BYTES) * rows[s] / base
        if s.exact:
            est += 24 + 8 * clauses
        out(f"| {s.name} | {rows[s]:.1f} | {est:,.0f} |")
    out("")
    out(
        f"Over a store: all {len(texts):,} sina2018 articles in file order, each against every "
        "earlier one (all stored), boilerplate (a clause held by 5 stored texts) left out as "
        "the engine does; each text's containment decision and matched text, per scheme against "
        "today's:"
    )
    out("")
    out("| scheme | duplicate / band | decision changed | same decision, other text matched |")
    out("|---|---|---|---|")
    base_run = runs[TODAY]
    for s in SCHEMES:
        run = runs[s]
        counts = collections.Counter(d for d, _j in run)
        moved = collections.Counter(
            f"{d0[:4]}->{d1[:4]}"
            for (d0, _a), (d1, _b) in zip(base_run, run, strict=True)
            if d0 != d1
        )
        other = sum(
            1
            for (d0, a), (d1, b) in zip(base_run, run, strict=True)
            if d0 == d1 != "none" and a != b
        )
        detail = ", ".join(f"{m} {n}" for m, n in sorted(moved.items())) or "none"
        out(f"| {s.name} | {counts['duplicate']} / {counts['band']} | {detail} | {other} |")
    out("")
    out(
        "Decisions: today's count of each, then per scheme the pairs whose decision "
        "changes (`dup->band` etc.; 'same' is the share unchanged)."
    )
    for set_name, groups in sets.items():
        out("")
        out(f"### {set_name}")
        out("")
        out(
            "| group | pairs | today dup / band / none | "
            + " | ".join(s.name for s in SCHEMES[1:])
            + " |"
        )
        out("|---|---:|---|" + "---|" * (len(SCHEMES) - 1))
        for group in sorted(groups, key=lambda g: (g == "all", g)):
            c = groups[group]
            today = collections.Counter()
            for (s, t0, _g), n in c.items():
                if s == TODAY:
                    today[t0] += n
            total = sum(today.values())
            cells = []
            for s in SCHEMES[1:]:
                moved = collections.Counter()
                same = 0
                for (s2, t0, g), n in c.items():
                    if s2 != s:
                        continue
                    if t0 == g:
                        same += n
                    else:
                        moved[f"{t0[:4]}->{g[:4]}"] += n
                detail = ", ".join(f"{m} {n}" for m, n in sorted(moved.items()))
                cells.append(f"{100 * same / total:.1f}%" + (f" ({detail})" if detail else ""))
            out(
                f"| {group} | {total} | {today['duplicate']} / {today['band']} / {today['none']} | "
                + " | ".join(cells)
                + " |"
            )
    out.write(args.output)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
