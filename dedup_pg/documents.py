"""Incoming documents and the checks that turn bad input into clear errors.

Every problem with one item becomes an :class:`InputError` naming the item,
so a batch can report it and go on with the rest.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

from .errors import InputError  # raised here; imported from here by callers

FIELDS = ("id", "title", "body", "url", "source", "seen_at", "published_at", "content_type")
#: Longest id and source, in UTF-8 bytes: ids are in a btree index, whose rows
#: PostgreSQL caps at ~2,700 bytes ("index row requires N bytes").
MAX_ID_BYTES = 1024
MAX_URL_BYTES = 8192
#: Defaults of the settings seen_at_future_hours and seen_at_past_days.
DEFAULT_SEEN_AT_FUTURE_HOURS = 24
DEFAULT_SEEN_AT_PAST_DAYS = 30
#: ``html`` (a page, as str or bytes) may stand in for ``body``: its main text
#: (and title, when none is given) is extracted (dedup_pg.pages, extra ``html``).


@dataclass(frozen=True)
class Line:
    """One item as a reader received it: where it was (``"line 12"``) and its
    bytes, so an error names the place and ``ingest_errors`` keeps the bytes."""

    value: Mapping[str, Any]
    where: str
    raw: bytes


@dataclass(frozen=True)
class SeenAtWindow:
    """Which ``seen_at`` values are accepted, relative to the time of the check:
    at most ``future`` ahead (clock skew, a local time read as UTC) and
    ``past`` behind (backfills). Each accepted day gets partitions, so an
    absurd time (year 1 or 9999, an epoch in the wrong unit) is an error."""

    future: timedelta = timedelta(hours=DEFAULT_SEEN_AT_FUTURE_HOURS)
    past: timedelta | None = timedelta(days=DEFAULT_SEEN_AT_PAST_DAYS)  # None: no limit

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any]) -> SeenAtWindow:
        future = float(settings.get("seen_at_future_hours", DEFAULT_SEEN_AT_FUTURE_HOURS))
        past = float(settings.get("seen_at_past_days", DEFAULT_SEEN_AT_PAST_DAYS))
        return cls(timedelta(hours=future), timedelta(days=past) if past > 0 else None)

    def check(self, value: datetime, now: datetime) -> None:
        if value > now + self.future:
            raise InputError(
                f"seen_at {value.isoformat()} is more than {_span(self.future)} ahead of now "
                f"({now.isoformat(timespec='seconds')}; setting seen_at_future_hours)"
            )
        if self.past is not None and value < now - self.past:
            raise InputError(
                f"seen_at {value.isoformat()} is more than {_span(self.past)} before now "
                f"(a backfill? raise the setting seen_at_past_days)"
            )


def _span(delta: timedelta) -> str:
    hours = delta.total_seconds() / 3600
    return f"{hours:g} hours" if hours < 48 else f"{hours / 24:g} days"


@dataclass(frozen=True)
class Document:
    """A document as the crawler hands it over. Only ``body`` is required."""

    body: str
    id: str | None = None
    title: str | None = None
    url: str | None = None
    source: str | None = None
    seen_at: datetime | None = None
    published_at: datetime | None = None
    content_type: str | None = None  # picks semantic thresholds: news, product, comment, ...


def _text(value: Any, field: str) -> str | None:
    if value is None:
        return None
    if isinstance(value, bytes | bytearray):
        try:
            value = bytes(value).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(
                f"{field} is not valid UTF-8 (byte 0x{value[exc.start]:02x} at offset {exc.start})"
            ) from None
    if not isinstance(value, str):
        raise InputError(f"{field} must be a string, got {type(value).__name__}")
    if "\x00" in value:
        raise InputError(
            f"{field} contains a NUL character (U+0000) at offset {value.index(chr(0))}; "
            "PostgreSQL text cannot store it"
        )
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InputError(f"{field} holds an unpaired surrogate at offset {exc.start}") from None
    return value


def _from_html(page: Any, url: Any, extractor: str | None) -> tuple[str, str | None]:
    """Main text and title of a page (bytes are decoded by a detector, not
    trusted to be UTF-8: crawled pages come in GBK, GB18030, Big5)."""
    from .pages import page_text  # the optional extra is imported only for html input

    if not isinstance(page, str | bytes | bytearray):
        raise InputError(f"html must be a string or bytes, got {type(page).__name__}")
    result = page_text(
        bytes(page) if isinstance(page, bytearray) else page,
        url if isinstance(url, str) else None,
        extractor,
    )
    return _text(result.text, "html") or "", _text(result.title, "title")


def _time(value: Any, field: str) -> datetime | None:
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        result = value
    elif isinstance(value, int | float) and not isinstance(value, bool):
        if not math.isfinite(value):
            raise InputError(f"{field} {value!r} is not a time")
        # epoch seconds, or milliseconds past 1e11 (year 5138 in seconds)
        seconds = value / 1000 if abs(value) > 1e11 else value
        try:
            result = datetime.fromtimestamp(seconds, tz=timezone.utc)
        except (OverflowError, OSError, ValueError):
            raise InputError(f"{field} {value!r} is out of range as an epoch time") from None
    elif isinstance(value, str):
        try:
            result = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            raise InputError(f"{field} {value[:100]!r} is not an ISO 8601 time") from None
    else:
        raise InputError(
            f"{field} must be an ISO 8601 string or epoch number, got {type(value).__name__}"
        )
    if result.tzinfo is None:
        result = result.replace(tzinfo=timezone.utc)
    # stored in UTC: Python accepts offsets up to ±24h, PostgreSQL only ±15:59
    try:
        return result.astimezone(timezone.utc)
    except OverflowError:
        raise InputError(f"{field} {value!r} is out of range") from None


def _limited(value: str | None, field: str, limit: int) -> str | None:
    if value is not None and len(value.encode("utf-8")) > limit:
        raise InputError(
            f"{field} has {len(value.encode('utf-8')):,} bytes; at most {limit:,} are accepted"
        )
    return value


def to_document(
    item: Document | Mapping[str, Any] | str,
    max_chars: int,
    extractor: str | None = None,
    window: SeenAtWindow | None = None,
    now: datetime | None = None,
) -> Document:
    """Validate one item (a Document, a mapping with the JSONL fields, or bare text).

    An item with ``html`` instead of ``body`` gets its main text extracted by
    ``extractor`` (default: :data:`dedup_pg.pages.DEFAULT_EXTRACTOR`).
    ``window``: the accepted ``seen_at`` range around ``now`` (default: the
    default settings'); a missing ``seen_at`` means ``now``.
    """
    if isinstance(item, str | bytes):
        item = {"body": item}
    if isinstance(item, Document):
        item = {f: getattr(item, f) for f in FIELDS}
    if not isinstance(item, Mapping):
        raise InputError(f"an item must be an object with a body, got {type(item).__name__}")
    extracted_title = None
    if item.get("body") is None and item.get("html") is not None:
        body, extracted_title = _from_html(item.get("html"), item.get("url"), extractor)
    elif item.get("body") is None:
        raise InputError("missing field: body (or html)")
    else:
        body = _text(item.get("body"), "body")
    assert body is not None
    if not body.strip():
        raise InputError("body is empty or whitespace only")
    title = _text(item.get("title"), "title") or extracted_title
    ident = item.get("id")
    if ident is not None and (not isinstance(ident, str | int) or isinstance(ident, bool)):
        raise InputError(f"id must be a string or integer, got {type(ident).__name__}")
    size = len(body) + len(title or "")
    if size > max_chars:
        raise InputError(
            f"document has {size:,} characters, more than max_chars={max_chars:,} "
            "(raise it with: dedup-pg settings set max_chars N)"
        )
    seen_at = _time(item.get("seen_at"), "seen_at")
    if seen_at is not None:
        (window or SeenAtWindow()).check(seen_at, now or datetime.now(timezone.utc))
    return Document(
        body=body,
        id=_limited(_text(str(ident), "id"), "id", MAX_ID_BYTES) if ident is not None else None,
        title=title,
        url=_limited(_text(item.get("url"), "url"), "url", MAX_URL_BYTES),
        source=_limited(_text(item.get("source"), "source"), "source", MAX_ID_BYTES),
        seen_at=seen_at,
        published_at=_time(item.get("published_at"), "published_at"),
        content_type=_limited(
            _text(item.get("content_type"), "content_type"), "content_type", MAX_ID_BYTES
        ),
    )


def parse_jsonl_line(line: bytes | str, lineno: int) -> dict[str, Any]:
    """One JSONL line -> object; malformed lines raise InputError naming the line
    and carrying its bytes."""
    raw = line if isinstance(line, bytes) else line.encode("utf-8", "surrogatepass")
    where = f"line {lineno}"
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{where}: not valid UTF-8 at byte offset {exc.start}", item_id=where, raw=raw
        ) from None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"{where}: malformed JSON ({exc.msg} at column {exc.colno})", item_id=where, raw=raw
        ) from None
    except RecursionError:
        raise InputError(f"{where}: JSON nested too deeply", item_id=where, raw=raw) from None
    except ValueError as exc:  # e.g. an integer of more than 4,300 digits
        raise InputError(f"{where}: unreadable JSON ({exc})", item_id=where, raw=raw) from None
    if not isinstance(value, dict):
        raise InputError(
            f"{where}: expected a JSON object, got {type(value).__name__}", item_id=where, raw=raw
        )
    return value
