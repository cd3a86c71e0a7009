"""Per layer (no I/O): how its scores are binned (:class:`Scale`), the
thresholds the valley suggests, the share of documents and pairs in each band,
precision and recall over review decisions; the report's dataclasses."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np

from .scores import nearest_neighbours, upper_pairs
from .valley import Valley, find_valley

LAYERS: tuple[str, ...] = ("simhash", "containment", "semantic")

# The SimHash and containment thresholds in force are read from dedup_settings
# (settings.effective_settings); their defaults are the migrations' (README "Settings"),
# kept nowhere else, so there is no copy here to drift from them.
#: The SimHash band layout finds every fingerprint within 3 bits by exact band
#: match and within 7 by probing radius 1: the engine refuses wider distances.
SIMHASH_MAX_DUPLICATE = 3
SIMHASH_MAX_REVIEW = 7


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
