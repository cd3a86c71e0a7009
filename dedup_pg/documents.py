"""Incoming documents and the checks that turn bad input into clear errors.

Every problem with one item becomes an :class:`InputError` naming the item,
so a batch can report it and go on with the rest.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from .errors import InputError  # raised here; imported from here by callers

FIELDS = ("id", "title", "body", "url", "source", "seen_at", "published_at", "content_type")
#: ``html`` (a page, as str or bytes) may stand in for ``body``: its main text
#: (and title, when none is given) is extracted (dedup_pg.pages, extra ``html``).


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
        seconds = value / 1000 if value > 1e11 else value  # epoch milliseconds or seconds
        result = datetime.fromtimestamp(seconds, tz=timezone.utc)
    elif isinstance(value, str):
        try:
            result = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            raise InputError(f"{field} {value!r} is not an ISO 8601 time") from None
    else:
        raise InputError(f"{field} must be an ISO 8601 string or epoch number")
    if result.tzinfo is None:
        return result.replace(tzinfo=timezone.utc)
    # stored in UTC: Python accepts offsets up to ±24h, PostgreSQL only ±15:59
    try:
        return result.astimezone(timezone.utc)
    except OverflowError:
        raise InputError(f"{field} {value!r} is out of range") from None


def to_document(
    item: Document | Mapping[str, Any] | str, max_chars: int, extractor: str | None = None
) -> Document:
    """Validate one item (a Document, a mapping with the JSONL fields, or bare text).

    An item with ``html`` instead of ``body`` gets its main text extracted by
    ``extractor`` (default: :data:`dedup_pg.pages.DEFAULT_EXTRACTOR`).
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
    if ident is not None and not isinstance(ident, str | int):
        raise InputError(f"id must be a string or integer, got {type(ident).__name__}")
    size = len(body) + len(title or "")
    if size > max_chars:
        raise InputError(
            f"document has {size:,} characters, more than max_chars={max_chars:,} "
            "(raise it with: dedup-pg settings set max_chars N)"
        )
    return Document(
        body=body,
        id=_text(str(ident), "id") if ident is not None else None,
        title=title,
        url=_text(item.get("url"), "url"),
        source=_text(item.get("source"), "source"),
        seen_at=_time(item.get("seen_at"), "seen_at"),
        published_at=_time(item.get("published_at"), "published_at"),
        content_type=_text(item.get("content_type"), "content_type"),
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
    if not isinstance(value, dict):
        raise InputError(
            f"{where}: expected a JSON object, got {type(value).__name__}", item_id=where, raw=raw
        )
    return value
