"""Learned template noise: lines a site repeats on most of its pages.

Navigation, "相关推荐" headings, copyright and ad lines recur across a large
share of one source's documents. Left in, they make different articles of a
site look alike and the same article on two sites look different. This module
learns them from the stored documents, per source, and strips them before
fingerprinting (the stored document keeps its text as received).

Learning is incremental (:func:`learn`): each run counts, per source, the
distinct lines of the documents stored since the last run into
``source_template_lines`` and promotes the lines found in at least
``template_min_share`` of the source's documents (counted since the line first
appeared, so a new site design is learned as fast as the first one) into
``source_templates``. Analysts read and edit that table: ``enabled`` switches a
pattern off or on, and a row with ``kind = 'block'`` (several lines) is
stripped where its lines occur together. Every change to a source's patterns
bumps its version in ``source_template_state`` (a trigger, so edits from psql
count too), the way ``norm_version`` versions normalization: documents
ingested before ``changed_at`` were fingerprinted under the previous set.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import psycopg

from .normalize import _fold_spaces, clean
from .sqlfiles import queries

#: Lines shorter or longer than this (characters, whitespace folded) are never
#: learned: one character says nothing, and a long line is content.
MIN_LINE_CHARS = 2
MAX_LINE_CHARS = 200
#: How long a running Deduper trusts its copy of the patterns before checking
#: whether a source's version changed.
REFRESH_SECONDS = 30.0


def line_key(line: str) -> str:
    """The form lines are compared in: normalized, whitespace folded."""
    return _fold_spaces(clean(line))


def _hash(key: str) -> int:
    return int.from_bytes(hashlib.sha1(key.encode("utf-8")).digest()[:8], "big", signed=True)


@dataclass(frozen=True)
class SourcePatterns:
    lines: frozenset[str] = frozenset()
    blocks: tuple[tuple[str, ...], ...] = ()


@dataclass(frozen=True)
class TemplateSet:
    """Enabled patterns by source (picklable: worker processes get a copy)."""

    by_source: Mapping[str, SourcePatterns] = field(default_factory=dict)
    versions: Mapping[str, int] = field(default_factory=dict)

    def strip(self, source: str | None, text: str) -> str:
        """``text`` without the source's template lines and blocks, or ``text``
        itself when nothing matches (so fingerprints of sources without
        patterns are unchanged) or when nothing would be left."""
        patterns = self.by_source.get(source) if source is not None else None
        if not patterns:
            return text
        lines = clean(text).split("\n")
        keys = [line_key(line) for line in lines]
        drop = [key in patterns.lines for key in keys]
        for block in patterns.blocks:
            n = len(block)
            for start in range(len(keys) - n + 1):
                if tuple(keys[start : start + n]) == block:
                    drop[start : start + n] = [True] * n
        if not any(drop) or all(drop):
            return text
        return "\n".join(line for line, d in zip(lines, drop, strict=True) if not d)


def load(conn: psycopg.Connection[Any]) -> TemplateSet:
    """Every enabled pattern, by source."""
    lines: dict[str, set[str]] = {}
    blocks: dict[str, list[tuple[str, ...]]] = {}
    for source, kind, text in conn.execute(queries()["template_patterns"]):
        if kind == "block":
            block = tuple(k for k in (line_key(x) for x in text.split("\n")) if k)
            if block:
                blocks.setdefault(source, []).append(block)
        else:
            key = line_key(text)
            if key:
                lines.setdefault(source, set()).add(key)
    versions = dict(conn.execute(queries()["template_versions"]).fetchall())
    return TemplateSet(
        {
            s: SourcePatterns(frozenset(lines.get(s, ())), tuple(blocks.get(s, ())))
            for s in set(lines) | set(blocks)
        },
        versions,
    )


class TemplateCache:
    """A Deduper's copy of the patterns, re-read when a source's version
    changed (checked at most every :data:`REFRESH_SECONDS`)."""

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self.conn = conn
        self.checked = 0.0
        self.templates = TemplateSet()
        self.reload()

    def reload(self) -> TemplateSet:
        self.templates = load(self.conn)
        self.checked = time.monotonic()
        return self.templates

    def current(self) -> TemplateSet:
        if time.monotonic() - self.checked < REFRESH_SECONDS:
            return self.templates
        self.checked = time.monotonic()
        versions = dict(self.conn.execute(queries()["template_versions"]).fetchall())
        return self.reload() if versions != self.templates.versions else self.templates


@dataclass
class Learned:
    """What one learning run did for one source."""

    source: str
    documents: int  # documents counted in this run
    docs_counted: int  # documents counted so far
    new_patterns: int
    version: int


def _distinct_lines(body: str) -> dict[int, str]:
    out: dict[int, str] = {}
    for line in clean(body).split("\n"):
        key = line_key(line)
        if MIN_LINE_CHARS <= len(key) <= MAX_LINE_CHARS:
            out.setdefault(_hash(key), line.strip())
    return out


def learn(
    conn: psycopg.Connection[Any],
    source: str | None = None,
    *,
    min_share: float | None = None,
    min_docs: int | None = None,
    days: int = 30,
) -> list[Learned]:
    """Count the lines of documents stored since the last run (seen within
    ``days``), per source, and promote the recurring ones to patterns.

    ``min_share`` / ``min_docs`` default to the database settings
    ``template_min_share`` and ``template_min_docs``.
    """
    settings = dict(conn.execute(queries()["settings"]).fetchall())
    min_share = float(settings.get("template_min_share", 0.3) if min_share is None else min_share)
    min_docs = int(settings.get("template_min_docs", 10) if min_docs is None else min_docs)
    if not 0 < min_share <= 1 or min_docs < 2:
        raise ValueError("template_min_share must be in (0, 1] and template_min_docs at least 2")
    states = {
        row[0]: row[1:]
        for row in conn.execute(queries()["template_states"], {"source": source}).fetchall()
    }
    after = min((s[1] for s in states.values()), default=0) if states else 0
    counts: dict[str, dict[int, list[Any]]] = {}
    docs: dict[str, int] = {}
    last: dict[str, int] = {}
    with conn.transaction():
        with conn.cursor(name="dedup_template_learn") as cur:
            cur.itersize = 2000
            cur.execute(
                queries()["template_documents"], {"after": after, "source": source, "days": days}
            )
            for doc_id, doc_source, body in cur:
                if doc_id <= states.get(doc_source, (0, 0))[1]:
                    continue
                docs[doc_source] = docs.get(doc_source, 0) + 1
                last[doc_source] = max(last.get(doc_source, 0), doc_id)
                per = counts.setdefault(doc_source, {})
                for h, text in _distinct_lines(body).items():
                    entry = per.get(h)
                    if entry is None:
                        per[h] = [text, 1]
                    else:
                        entry[1] += 1
        results = []
        for src in sorted(docs):
            before = states.get(src, (0, 0))[0]
            conn.execute(
                queries()["template_count_lines"],
                {
                    "source": src,
                    "hashes": list(counts[src]),
                    "texts": [e[0] for e in counts[src].values()],
                    "counts": [e[1] for e in counts[src].values()],
                    "docs_before": before,
                },
            )
            total = before + docs[src]
            conn.execute(
                queries()["template_advance"],
                {"source": src, "docs": total, "last_doc_id": last[src]},
            )
            row = conn.execute(
                queries()["template_promote"],
                {"source": src, "total": total, "min_share": min_share, "min_docs": min_docs},
            ).fetchone()
            conn.execute(queries()["template_prune"], {"source": src})
            version = conn.execute(queries()["template_version"], {"source": src}).fetchone()
            results.append(
                Learned(src, docs[src], total, row[0] if row else 0, version[0] if version else 0)
            )
    return results


def list_patterns(
    conn: psycopg.Connection[Any], source: str | None = None
) -> Iterable[tuple[Any, ...]]:
    """Patterns (id, source, kind, enabled, share, doc_count, learned_version, text)."""
    return conn.execute(queries()["template_list"], {"source": source}).fetchall()


def set_enabled(conn: psycopg.Connection[Any], pattern_ids: Iterable[int], enabled: bool) -> int:
    """Switch patterns on or off; returns how many exist."""
    ids = list(pattern_ids)
    rows = conn.execute(
        queries()["template_set_enabled"], {"ids": ids, "enabled": enabled}
    ).fetchall()
    missing = sorted(set(ids) - {r[0] for r in rows})
    if missing:
        raise KeyError(f"no template pattern with id {', '.join(map(str, missing))}")
    return len(rows)
