"""One duplicate candidate as a reviewer reads it (the review page and
``dedup-pg review show``): the candidate's row and its matched document's.

The two are read apart, by key (``review_candidate``, then
``review_matched_document`` in ``sql/queries.sql``): on Citus a candidate and
its matched document are distributed by different columns and do not join.
"""

from __future__ import annotations

from typing import Any

import psycopg

from .sqlfiles import queries


def read_candidate(conn: psycopg.Connection, candidate_id: int) -> dict[str, Any] | None:
    """The candidate's columns and its matched document's (``matched_*``, all
    None and ``matched_exists`` false once that document's day is dropped);
    ``body`` is the matched document's when the candidate stored none (an exact
    duplicate), and ``body_is_matched`` says so. None: no such candidate."""
    cur = conn.execute(queries()["review_candidate"], {"id": candidate_id})
    row = cur.fetchone()
    if row is None:
        return None
    c = dict(zip([d.name for d in cur.description or []], row, strict=True))
    cur = conn.execute(
        queries()["review_matched_document"],
        {"doc_id": c["matched_doc_id"], "seen_at": c["matched_seen_at"]},
    )
    names = [d.name for d in cur.description or []]
    matched = cur.fetchone()
    c["matched_exists"] = matched is not None
    c.update(zip(names, matched or [None] * len(names), strict=True))
    c["body_is_matched"] = c["body"] is None
    if c["body"] is None:
        c["body"] = c["matched_body"]
    return c
