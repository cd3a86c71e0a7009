"""What calibration reads: a stretch of recent arrivals (kept documents and the
near duplicates turned away), the review decisions, and labelled pairs imported
as decisions."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
import psycopg

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
