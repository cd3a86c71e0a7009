"""Writing thresholds and undoing them: :func:`apply` writes a report's
suggestions in one transaction, the triggers record every change with who and
why, :func:`revert` undoes a change set, :func:`history` lists them."""

from __future__ import annotations

import getpass
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from ..errors import CalibrationError
from .layers import CalibrationReport
from .settings import model_row, relation_exists

#: Settings each layer's thresholds are written to (duplicate, review).
SETTING_NAMES: dict[str, tuple[str, str]] = {
    "simhash": ("simhash_distance", "simhash_review_distance"),
    "containment": ("containment_threshold", "containment_review_threshold"),
}


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
    if not relation_exists(conn, "dedup_settings_history"):
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
