"""The answer for one document."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal, NamedTuple

VerdictKind = Literal["new", "duplicate", "review", "error"]
Layer = Literal["exact", "simhash", "containment", "minhash", "semantic"]


@dataclass(frozen=True)
class Verdict:
    """What dedup-pg decided for one document.

    verdict: ``new`` (stored), ``duplicate`` (not stored as a document; recorded
        as a sighting, and near duplicates in ``duplicate_candidates``),
        ``review`` (stored, and queued for a person), ``error`` (bad input).
    layer: which check decided a duplicate or review.
    matched_id / matched_doc_id: the matched document's input id / its doc_id.
    score: 1.0 for exact; 1 - distance/64 for SimHash; the share of clauses
        for containment; the estimated Jaccard of character 5-grams for MinHash;
        the cosine for semantic.
    distance: the SimHash Hamming distance (0 for exact, None otherwise).
    doc_id: the document's own id when it was stored (new, review).
    candidate_id: its duplicate_candidates row (every duplicate and review).
    error: why the item was rejected (verdict ``error``).
    """

    id: str | None
    verdict: VerdictKind
    layer: Layer | None = None
    matched_id: str | None = None
    matched_doc_id: int | None = None
    doc_id: int | None = None
    score: float | None = None
    distance: int | None = None
    candidate_id: int | None = None
    error: str | None = None

    @property
    def is_duplicate(self) -> bool:
        return self.verdict == "duplicate"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class VerdictRow(NamedTuple):
    """A row of dedup_ingest or dedup_ingest_semantic, by the names of their
    RETURNS TABLE columns (read with ``psycopg.rows.class_row(VerdictRow)``)."""

    pos: int
    verdict: str
    layer: str | None = None
    doc_id: int | None = None
    matched_doc_id: int | None = None
    matched_external_id: str | None = None
    score: float | None = None
    distance: int | None = None
    candidate_id: int | None = None
    embed: bool = False  # dedup_ingest: the semantic layer must embed this item
    neighbours: list[int] | None = None  # dedup_ingest: the gate's candidates

    def verdict_columns(self) -> dict[str, Any]:
        """The verdict itself (pos .. candidate_id), as dedup_ingest_semantic
        reads dedup_ingest's verdict from its items."""
        return {name: getattr(self, name) for name in VERDICT_COLUMNS}


#: The verdict columns both ingest functions return (before dedup_ingest's
#: embed and neighbours).
VERDICT_COLUMNS = VerdictRow._fields[: VerdictRow._fields.index("embed")]
