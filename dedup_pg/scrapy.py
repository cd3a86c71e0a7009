"""A Scrapy item pipeline that drops duplicates before they reach storage.

Enable it ahead of the pipelines that store items::

    ITEM_PIPELINES = {"dedup_pg.scrapy.DedupPipeline": 100, "myproject.pipelines.Store": 500}

Items are batched (``DEDUP_PG_BATCH_SIZE`` items, or whatever arrived within
``DEDUP_PG_MAX_DELAY`` seconds) and checked by :class:`dedup_pg.Deduper` in a
worker thread, so the crawl goes on while the database works. A duplicate is
dropped with :class:`scrapy.exceptions.DropItem` naming the document it
duplicates; a kept item gets its verdict in ``item["dedup"]``. Counts go to
Scrapy's stats as ``dedup_pg/new``, ``dedup_pg/duplicate/<layer>``,
``dedup_pg/review``, ``dedup_pg/error``.

Settings (all optional):

==========================  ===============================================================
DEDUP_PG_DSN / _HOME        the database (default: as the CLI: env vars, else embedded)
DEDUP_PG_FIELDS             item field names, e.g. ``{"id": "url", "body": "content"}``;
                            keys: id, title, body, html, url, source, seen_at, published_at
DEDUP_PG_SOURCE             source of items without one (default: the spider's name)
DEDUP_PG_BATCH_SIZE         items per transaction (default 50)
DEDUP_PG_MAX_DELAY          seconds an item waits for its batch to fill (default 1.0)
DEDUP_PG_ON_REVIEW          ``keep`` (default) or ``drop`` items sent to review
DEDUP_PG_ON_ERROR           ``keep`` (default) or ``drop`` items that cannot be checked
DEDUP_PG_VERDICT_FIELD      field that receives the verdict dict (default ``dedup``; empty: none)
DEDUP_PG_THRESHOLDS         thresholds for this crawl over the database's settings, e.g.
                            ``{"containment_threshold": 0.9, "simhash_distance": 2}``
==========================  ===============================================================

An item with ``html`` and no ``body`` is checked on the page's text with tags,
scripts and styles removed.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from typing import Any

from itemadapter import ItemAdapter
from scrapy.crawler import Crawler
from scrapy.exceptions import DropItem, NotConfigured

from .deduper import Deduper
from .verdicts import Verdict

FIELDS = ("id", "title", "body", "html", "url", "source", "seen_at", "published_at", "content_type")


class DedupPipeline:
    """Drop duplicate items; attach the verdict to the others."""

    def __init__(self, crawler: Crawler) -> None:
        settings = crawler.settings
        self.crawler = crawler
        self.dsn: str | None = settings.get("DEDUP_PG_DSN") or None
        self.home: str | None = settings.get("DEDUP_PG_HOME") or None
        self.fields = {name: name for name in FIELDS} | dict(settings.getdict("DEDUP_PG_FIELDS"))
        unknown = set(self.fields) - set(FIELDS)
        if unknown:
            raise NotConfigured(f"DEDUP_PG_FIELDS: unknown keys {sorted(unknown)}; known: {FIELDS}")
        self.source: str | None = settings.get("DEDUP_PG_SOURCE") or None
        self.batch_size = settings.getint("DEDUP_PG_BATCH_SIZE", 50)
        self.max_delay = settings.getfloat("DEDUP_PG_MAX_DELAY", 1.0)
        self.on_review = settings.get("DEDUP_PG_ON_REVIEW", "keep")
        self.on_error = settings.get("DEDUP_PG_ON_ERROR", "keep")
        for name, value in (
            ("DEDUP_PG_ON_REVIEW", self.on_review),
            ("DEDUP_PG_ON_ERROR", self.on_error),
        ):
            if value not in ("keep", "drop"):
                raise NotConfigured(f"{name} must be 'keep' or 'drop', not {value!r}")
        self.verdict_field: str = settings.get("DEDUP_PG_VERDICT_FIELD", "dedup")
        self.thresholds = dict(settings.getdict("DEDUP_PG_THRESHOLDS"))
        self._pending: list[tuple[dict[str, Any], asyncio.Future[Verdict]]] = []
        self._running: set[asyncio.Task[None]] = set()
        self._timer: asyncio.TimerHandle | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> DedupPipeline:
        return cls(crawler)

    async def open_spider(self) -> None:
        # one thread: batches reach the database in order, on one connection
        self._executor = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="dedup-pg")
        loop = asyncio.get_running_loop()
        self._dd = await loop.run_in_executor(
            self._executor, lambda: Deduper(self.dsn, home=self.home, thresholds=self.thresholds)
        )
        if self.source is None and self.crawler.spider is not None:
            self.source = self.crawler.spider.name

    async def process_item(self, item: Any) -> Any:
        future: asyncio.Future[Verdict] = asyncio.get_running_loop().create_future()
        self._pending.append((self._document(ItemAdapter(item)), future))
        if len(self._pending) >= self.batch_size:
            self._flush()
        elif self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(self.max_delay, self._flush)
        return self._decide(item, await future)

    async def close_spider(self) -> None:
        self._flush()
        while self._running:
            await asyncio.gather(*self._running, return_exceptions=True)
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self._executor, self._dd.close)
        self._executor.shutdown()

    # -- internals ----------------------------------------------------------
    def _document(self, adapter: ItemAdapter) -> dict[str, Any]:
        doc = {name: adapter.get(field) for name, field in self.fields.items()}
        if doc.get("body") is None and doc.pop("html", None) is not None:
            doc["body"] = adapter.get(self.fields["html"])  # normalization strips the markup
        doc.pop("html", None)
        if doc.get("id") is None:
            doc["id"] = doc.get("url")
        if doc.get("source") is None:
            doc["source"] = self.source
        return doc

    def _flush(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        batch, self._pending = self._pending, []
        if batch:
            task = asyncio.ensure_future(self._check(batch))
            self._running.add(task)
            task.add_done_callback(self._running.discard)

    async def _check(self, batch: list[tuple[dict[str, Any], asyncio.Future[Verdict]]]) -> None:
        docs = [doc for doc, _ in batch]
        loop = asyncio.get_running_loop()
        try:
            verdicts = await loop.run_in_executor(self._executor, self._dd.ingest_batch, docs)
        except Exception as exc:  # the database failed: every item of the batch fails with it
            for _, future in batch:
                if not future.done():
                    future.set_exception(exc)
            return
        for (_, future), verdict in zip(batch, verdicts, strict=True):
            if not future.done():
                future.set_result(verdict)

    def _decide(self, item: Any, v: Verdict) -> Any:
        stats = self.crawler.stats
        if stats is not None:
            stats.inc_value(
                f"dedup_pg/{v.verdict}" + (f"/{v.layer}" if v.verdict == "duplicate" else "")
            )
        if v.verdict == "duplicate":
            raise DropItem(
                f"duplicate of {v.matched_id} (doc_id {v.matched_doc_id}; {v.layer}, score {v.score:.3f})"
            )
        if v.verdict == "review" and self.on_review == "drop":
            raise DropItem(
                f"sent to review: resembles {v.matched_id} ({v.layer}, score {v.score:.3f})"
            )
        if v.verdict == "error" and self.on_error == "drop":
            raise DropItem(f"cannot be checked: {v.error}")
        if self.verdict_field:
            adapter = ItemAdapter(item)
            if adapter.is_item_class(type(item)) and (
                self.verdict_field in adapter.field_names() or isinstance(item, dict)
            ):
                adapter[self.verdict_field] = v.to_dict()
        return item
