"""The one path from input to verdict.

Python validates and fingerprints each item (normalize -> tokenize -> SimHash,
SHA-1, clause hashes); one call of the SQL function ``dedup_ingest`` per
batch runs every check and the inserts inside one transaction. Bad items are
reported (and recorded in ``ingest_errors``) without holding up the rest.
"""

from __future__ import annotations

import collections
import concurrent.futures
import contextlib
import functools
import itertools
import json
import logging
import os
import random
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import date, datetime, timezone
from typing import Any, TypeVar

import orjson
import psycopg
from psycopg.rows import class_row
from psycopg.types.json import Jsonb

from . import database, semantic
from .documents import Document, InputError, Line, SeenAtWindow, to_document
from .embeddings import Embedder
from .errors import first_line
from .fingerprint import Fingerprint, content_digest, fingerprint, with_json_arrays
from .normalize import DEFAULT_NOISE_PATTERNS, NormalizeOptions
from .sqlfiles import queries
from .templates import TemplateCache, TemplateSet
from .verdicts import Verdict, VerdictRow

_log = logging.getLogger(__name__)
DEFAULT_BATCH_SIZE = 500
#: Settings that decide fingerprints: set per database, never per call.
_PER_DATABASE = frozenset(
    {"lowercase", "noise_patterns", "max_chars", "script_folding", "html_extractor"}
    | {"template_min_share", "template_min_docs"}
)
#: What ingest accepts: a Document, a mapping with the JSONL fields, bare text
#: (str, or UTF-8 bytes), a reader's Line (a mapping with its place and bytes),
#: or a reader's InputError to be reported in its place.
Item = Document | Mapping[str, Any] | str | bytes | Line | InputError
_T = TypeVar("_T")
#: Faults that pass: retried with backoff, the batch's transaction run again.
_TRANSIENT = (
    psycopg.errors.LockNotAvailable,  # lock_timeout
    psycopg.errors.QueryCanceled,  # statement_timeout
    psycopg.errors.SerializationFailure,
    psycopg.errors.DeadlockDetected,
)
#: The server refuses a value in the batch: the batch is split until the item
#: is alone, and that item is recorded in ingest_errors.
_REJECTED = (psycopg.DataError, psycopg.IntegrityError, psycopg.errors.ProgramLimitExceeded)
DEFAULT_RETRIES = 5
DEFAULT_RECONNECT_SECONDS = 60.0


class IngestStopped(database.DatabaseError):
    """The database kept failing after the retries: ingest cannot go on. The
    batches before the failing one are committed; the failing one is not."""


@dataclass
class StageTimes:
    """Seconds spent per stage, summed over calls (for benchmarks)."""

    prepare: float = 0.0  # validation + normalization + tokenization + fingerprints
    sql: float = 0.0
    embed: float = 0.0  # the semantic layer's embedding (inside ``sql``'s transaction)
    # always mode: embedding the next batch while the database checks this one
    embed_ahead: float = 0.0
    embedded_ahead: int = 0  # texts (those the hash layers then drop are not used)
    documents: int = 0


class Deduper:
    """De-duplicate documents against a PostgreSQL database.

    ``Deduper()`` uses ``DEDUP_PG_DSN`` or, when unset, the embedded server in
    ``DEDUP_PG_HOME``; the schema is migrated to head on first use.

    >>> with Deduper() as dd:                               # doctest: +SKIP
    ...     dd.ingest({"id": "a1", "title": "...", "body": "..."})
    Verdict(id='a1', verdict='new', ...)
    """

    def __init__(
        self,
        dsn: str | None = None,
        *,
        home: str | os.PathLike[str] | None = None,
        batch_size: int = DEFAULT_BATCH_SIZE,
        migrate: bool = True,
        thresholds: Mapping[str, Any] | None = None,
        embedder: Embedder | None = None,
        retries: int = DEFAULT_RETRIES,
        reconnect_seconds: float = DEFAULT_RECONNECT_SECONDS,
    ) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        if retries < 0:
            raise ValueError("retries must be at least 0")
        self._where = (dsn, home)  # to find (or restart) the server after a lost connection
        self.retries = retries
        self.reconnect_seconds = reconnect_seconds
        self.dsn = database.resolve_dsn(dsn, home)
        if migrate:
            database.migrate(self.dsn)
        self.batch_size = batch_size
        self.conn = database.connect(self.dsn, autocommit=True)
        # an older schema (migrate=False) reads an item's arrays as JSON arrays only
        self._array_literals = database.reads_array_literals(self.conn)
        self.times = StageTimes()
        self._days: set[date] = set()
        self._embedder = embedder  # reused when it is the active model
        self._semantic: semantic.SemanticLayer | None = None
        self.reload_settings()
        self.thresholds = self.check_thresholds(thresholds or {})

    # -- settings ------------------------------------------------------------
    def reload_settings(self) -> None:
        """Read ``dedup_settings`` (call after changing them from another session)."""
        rows = self.conn.execute(queries()["settings"]).fetchall()
        self.settings: dict[str, Any] = {name: value for name, value in rows}
        patterns = self.settings.get("noise_patterns")
        self.options = NormalizeOptions(
            lowercase=bool(self.settings.get("lowercase", False)),
            noise_patterns=DEFAULT_NOISE_PATTERNS if patterns is None else tuple(patterns),
            script_folding=self.settings.get("script_folding"),
        )
        self.max_chars = int(self.settings.get("max_chars", 1_000_000))
        self.window = SeenAtWindow.from_settings(self.settings)
        self.extractor: str | None = self.settings.get("html_extractor")
        self.templates = TemplateCache(self.conn)  # learned template lines, per source
        self._semantic = None  # the active model may have changed too
        _check_mode(self.settings)

    def semantic_layer(self) -> semantic.SemanticLayer:
        """The active embedding model, loaded on first use (a database with
        none gets the default: see semantic.ensure_active_model)."""
        if self._semantic is None:
            model = semantic.ensure_active_model(self.conn)
            reuse = self._embedder if self._embedder and self._embedder.name == model.name else None
            self._semantic = semantic.SemanticLayer(model, reuse, self.options)
        return self._semantic

    def check_thresholds(self, thresholds: Mapping[str, Any]) -> dict[str, Any]:
        """Validate per-call threshold overrides: known settings only, and not the
        normalization ones (those change fingerprints, so they are per database)."""
        bad = sorted(k for k in thresholds if k not in self.settings or k in _PER_DATABASE)
        if bad:
            raise ValueError(f"these settings cannot be overridden per call: {', '.join(bad)}")
        _check_mode(thresholds)
        return dict(thresholds)

    def set_setting(self, name: str, value: Any) -> None:
        """Change one setting (validated by re-reading it; an invalid value is
        rolled back, so it never breaks the next Deduper)."""
        try:
            with self.conn.transaction():
                row = self.conn.execute(
                    queries()["set_setting"], {"name": name, "value": Jsonb(value)}
                ).fetchone()
                if row is None:
                    raise KeyError(f"unknown setting {name!r} (see: SELECT * FROM dedup_settings)")
                self.reload_settings()
        except ValueError:
            self.reload_settings()
            raise

    # -- public API ----------------------------------------------------------
    def ingest(self, doc: Item) -> Verdict:
        """Check one document and store it unless it is a duplicate."""
        return self.ingest_batch([doc])[0]

    def ingest_batch(
        self, docs: list[Item], thresholds: Mapping[str, Any] | None = None
    ) -> list[Verdict]:
        """Check and store ``docs`` in one transaction, fingerprinted in this
        thread: for callers that already batch (the HTTP service, Scrapy).
        ``thresholds`` override the settings for this call only."""
        prepared = prepare_batch(docs, **self._prepare_args())
        prepared.items = docs
        return self._execute(prepared, dry_run=False, thresholds=thresholds)

    def ingest_many(
        self,
        docs: Iterable[Item],
        batch_size: int | None = None,
        *,
        workers: int | None = None,
    ) -> Iterator[Verdict]:
        """Check and store a stream of documents, one transaction per batch.

        Yields one verdict per input item, in input order. Items may be
        :class:`Document`, mappings with the JSONL fields, plain strings, or
        :class:`InputError` instances (a reader's parse failure, reported as is).
        The next batch is fingerprinted while the database works on the current
        one: in a thread (``workers=0``), or in ``workers`` processes.
        ``workers=None`` (the default) takes :func:`default_workers` for this
        machine, and a thread when the input is a single batch. In semantic
        mode ``always`` the next batch is embedded then too, in a thread.
        """
        for verdicts in self.ingest_batches(docs, batch_size, workers=workers):
            yield from verdicts

    def ingest_batches(
        self,
        docs: Iterable[Item],
        batch_size: int | None = None,
        *,
        workers: int | None = None,
    ) -> Iterator[list[Verdict]]:
        """:meth:`ingest_many`, one list of verdicts per committed batch (a
        caller that writes verdicts down can flush after each)."""
        size = batch_size or self.batch_size
        batches = _chunks(iter(docs), size)
        prepare = functools.partial(prepare_batch, **self._prepare_args())
        if workers is None:
            # a single batch is not worth starting processes for (each imports
            # the package and fills its own term table: ~1 s of CPU)
            first = list(itertools.islice(batches, 2))
            workers = default_workers() if len(first) > 1 else 0
            batches = itertools.chain(first, batches)
        executor: concurrent.futures.Executor
        if workers > 0:
            _read_tables_before_fork()
            executor = concurrent.futures.ProcessPoolExecutor(
                workers, initializer=_start_worker, initargs=(os.getpid(),)
            )
        else:
            executor = concurrent.futures.ThreadPoolExecutor(1)
        with executor, concurrent.futures.ThreadPoolExecutor(1) as embedding:
            stream = _prefetch(executor, prepare, batches, ahead=max(workers, 1))
            if self.settings["semantic_mode"] == "always":
                self.semantic_layer()
                stream = _prefetch(embedding, self._embed_ahead, stream, ahead=1)
            for prepared in stream:
                if prepared.embedded:
                    self.times.embed_ahead += prepared.embedded.seconds
                    self.times.embedded_ahead += prepared.embedded.texts
                yield self._execute(prepared, dry_run=False)

    def is_duplicate(self, text: str, title: str | None = None) -> Verdict:
        """Check a text against the database without storing anything."""
        return self.check_many([{"body": text, "title": title}])[0]

    def seen(self, text: str, title: str | None = None) -> Verdict:
        """The exact layer alone, read-only: was this text (after normalization)
        stored within the window? One digest lookup, for a crawler that wants
        to skip what it already has before parsing or fetching more; near
        duplicates need ``is_duplicate``."""
        try:
            doc = to_document({"body": text, "title": title}, self.max_chars, None)
            digest = content_digest(doc.body, doc.title, self.options)
        except (InputError, ValueError) as exc:
            return Verdict(None, "error", error=str(exc))
        row = self.conn.execute(
            queries()["seen"],
            {"sha1": digest, "window": int(self.settings["window_days"])},
        ).fetchone()
        if row is None:
            return Verdict(None, "new")
        return Verdict(
            None,
            "duplicate",
            "exact",
            matched_id=row[1],
            matched_doc_id=row[0],
            score=1.0,
            distance=0,
        )

    def check_many(
        self, docs: Iterable[Item], thresholds: Mapping[str, Any] | None = None
    ) -> list[Verdict]:
        """Read-only check of several documents (each against the database only)."""
        items = list(docs)
        prepared = prepare_batch(items, **self._prepare_args())
        prepared.items = items
        return self._execute(prepared, dry_run=True, thresholds=thresholds)

    def _prepare_args(self) -> dict[str, Any]:
        return {
            "options": self.options,
            "max_chars": self.max_chars,
            "templates": self.templates.current(),
            "extractor": self.extractor,
            "window": self.window,
        }

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> Deduper:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the path ------------------------------------------------------------
    def _execute(
        self, prepared: Prepared, *, dry_run: bool, thresholds: Mapping[str, Any] | None = None
    ) -> list[Verdict]:
        started = time.perf_counter()
        results: list[Verdict | None] = [None] * prepared.size
        for pos, ident, message, _record in prepared.errors:
            results[pos] = Verdict(id=ident, verdict="error", error=message)
        records = [] if dry_run else [e[3] for e in prepared.errors]
        ids = {row["pos"]: row["external_id"] for row in prepared.rows}
        overrides = self.thresholds | self.check_thresholds(thresholds or {})
        rejected: dict[int, str] = {}
        rows = (
            self._submit(prepared, prepared.rows, records, dry_run, overrides, rejected)
            if (prepared.rows or records)
            else []
        )
        for pos, message in rejected.items():
            results[pos] = Verdict(id=ids[pos], verdict="error", error=message)
        for row in rows:
            results[row.pos] = Verdict(
                id=ids[row.pos],
                verdict=row.verdict,
                layer=row.layer,
                doc_id=row.doc_id,
                matched_doc_id=row.matched_doc_id,
                matched_id=row.matched_external_id,
                score=row.score,
                distance=row.distance,
                candidate_id=row.candidate_id,
            )
        self.times.prepare += prepared.seconds
        self.times.sql += time.perf_counter() - started
        self.times.documents += prepared.size
        missing = [i for i, r in enumerate(results) if r is None]
        if missing:
            raise AssertionError(f"dedup_ingest returned no verdict for items {missing}")
        return results  # type: ignore[return-value]

    def _submit(
        self,
        prepared: Prepared,
        payload: list[dict[str, Any]],
        errors: list[dict[str, Any]],
        dry_run: bool,
        overrides: dict[str, Any],
        rejected: dict[int, str],
    ) -> list[VerdictRow]:
        """Check ``payload`` and record ``errors`` in one transaction, retried on
        transient faults. If the server rejects a value in it, the batch is
        split in halves, each its own transaction, until the rejected item is
        alone: it gets an ``error`` verdict (in ``rejected``) and its bytes go
        to ``ingest_errors``; the other items are checked as usual."""
        try:
            return self._retrying(
                lambda: self._call(payload, errors, dry_run, overrides, prepared.embedded)
            )
        except _REJECTED as exc:
            message = f"rejected by PostgreSQL: {first_line(exc)}"
            if len(payload) <= 1:
                if not payload:
                    raise  # recording input errors alone failed: a bug, not input
                pos = payload[0]["pos"]
                rejected[pos] = message
                if not dry_run:  # (a dry run has no input errors to record either)
                    record = _error_record(prepared.item(pos), message)
                    self._retrying(lambda: self._call([], [*errors, record], False, overrides))
                return []
            _log.warning(
                "a batch of %d was rejected by the server (%s); splitting it", len(payload), message
            )
            mid = len(payload) // 2
            return self._submit(prepared, payload[:mid], errors, dry_run, overrides, rejected) + (
                self._submit(prepared, payload[mid:], [], dry_run, overrides, rejected)
            )

    def _retrying(self, attempt: Callable[[], _T]) -> _T:
        """Run one transaction; on a transient fault (a lock or statement
        timeout, a serialization failure, a deadlock, a lost connection) run it
        again after a growing pause, at most ``retries`` times, then raise
        :class:`IngestStopped` with one line saying why."""
        for tried in range(self.retries + 1):
            try:
                return attempt()
            except _TRANSIENT as exc:
                fault = exc
            except psycopg.OperationalError as exc:
                if not (self.conn.closed or self.conn.broken):
                    raise
                fault = exc
                self._reconnect(exc)
            if tried < self.retries:
                pause = min(5.0, 0.1 * 2**tried) * (0.5 + random.random())
                _log.warning(
                    "transient database fault (%s); retry %d of %d in %.1f s",
                    first_line(fault),
                    tried + 1,
                    self.retries,
                    pause,
                )
                time.sleep(pause)
        raise IngestStopped(
            f"the database kept failing after {self.retries} retries: "
            f"{type(fault).__name__}: {first_line(fault)}"
        ) from fault

    def _reconnect(self, cause: Exception) -> None:
        """A new connection once the server is back (an embedded server that
        died is started again), trying for ``reconnect_seconds``."""
        deadline = time.monotonic() + self.reconnect_seconds
        pause = 0.2
        while True:
            try:
                self.dsn = database.resolve_dsn(*self._where)
                conn = database.connect(self.dsn, autocommit=True)
            except (database.DatabaseError, psycopg.OperationalError) as exc:
                if time.monotonic() + pause > deadline:
                    raise IngestStopped(
                        f"lost the database connection ({first_line(cause)}) and could not "
                        f"reconnect within {self.reconnect_seconds:g} s: {first_line(exc)}"
                    ) from exc
                time.sleep(pause)
                pause = min(pause * 2, 5.0)
                continue
            with contextlib.suppress(Exception):
                self.conn.close()
            self.conn = conn
            self.templates.conn = conn
            _log.warning("reconnected to the database after: %s", first_line(cause))
            return

    def _call(
        self,
        payload: list[dict[str, Any]],
        errors: list[dict[str, Any]],
        dry_run: bool,
        overrides: dict[str, Any],
        embedded: semantic.Embedded | None = None,
    ) -> list[VerdictRow]:
        """One transaction: record input errors, then dedup_ingest over the batch."""
        if not dry_run:
            self._ensure_partitions(payload)
        if not self._array_literals:
            payload = [with_json_arrays(p) for p in payload]
        sql = queries()["ingest"]
        for attempt in range(3):
            try:
                # a read-only check (it records no input errors either) is one
                # statement, two when the semantic layer reads after it: no
                # BEGIN and COMMIT round trips around it
                with contextlib.nullcontext() if dry_run else self.conn.transaction():
                    if errors:
                        with self.conn.cursor() as cur:
                            cur.executemany(queries()["record_error"], errors)
                    if not payload:
                        return []
                    params = {
                        "items": Jsonb(payload, dumps=_dump_items),
                        "dry_run": dry_run,
                        "overrides": Jsonb(overrides),
                    }
                    with self.conn.cursor(row_factory=class_row(VerdictRow)) as cur:
                        rows = cur.execute(sql, params).fetchall()
                    if not any(r.embed for r in rows):
                        return rows
                    layer = self.semantic_layer()
                    before = layer.seconds
                    try:
                        return layer.run(
                            self.conn,
                            rows,
                            {p["pos"]: p for p in payload},
                            dry_run=dry_run,
                            overrides=overrides,
                            ahead=embedded,
                        )
                    finally:
                        self.times.embed += layer.seconds - before
            except psycopg.errors.ObjectNotInPrerequisiteState:
                # the active embedding model changed under us: load the new one
                if attempt == 2:
                    raise
                self._semantic = None
                time.sleep(0.05 * (attempt + 1))
        raise AssertionError("unreachable")

    def _embed_ahead(self, prepared: Prepared) -> Prepared:
        """Always mode embeds every text the hash layers keep, most of a crawl:
        so a thread embeds the next batch while the database checks this one.
        Between a model switch and its reload there is no layer, and vectors
        of the old model are dropped in ``run``: such batches are embedded in
        their transaction, by the new model."""
        layer = self._semantic
        if layer is not None and self.settings["semantic_mode"] == "always":
            prepared.embedded = layer.embed_ahead(prepared.rows)
        return prepared

    def _ensure_partitions(self, payload: list[dict[str, Any]]) -> None:
        days = {
            datetime.fromisoformat(p["seen_at"]).astimezone(timezone.utc).date() for p in payload
        }
        for day in sorted(days - self._days):
            self.conn.execute(queries()["ensure_partitions"], {"from": day, "to": day})
            self._days.add(day)


def _check_mode(settings: Mapping[str, Any]) -> None:
    mode = settings.get("semantic_mode", "off")
    if mode not in semantic.MODES:
        raise ValueError(f"semantic_mode must be one of {', '.join(semantic.MODES)}, not {mode!r}")


@dataclass
class Prepared:
    """A batch after validation and fingerprinting, ready for dedup_ingest."""

    size: int
    rows: list[dict[str, Any]]
    # (position, input id, message, ingest_errors record) per rejected item
    errors: list[tuple[int, str | None, str, dict[str, Any]]]
    seconds: float
    embedded: semantic.Embedded | None = None  # always mode: vectors made ahead
    items: list[Item] | None = None  # the input, kept where the batch runs (not sent to workers)

    def item(self, pos: int) -> Item | None:
        return self.items[pos] if self.items is not None else None


def prepare_batch(
    batch: list[Item],
    *,
    options: NormalizeOptions,
    max_chars: int,
    templates: TemplateSet | None = None,
    extractor: str | None = None,
    window: SeenAtWindow | None = None,
) -> Prepared:
    """Validate and fingerprint a batch. Runs in a thread or a worker process.
    ``templates``: learned template lines, stripped per source before
    fingerprinting; ``extractor``: for items given as html; ``window``: the
    accepted seen_at range. An item that cannot be read for any reason is
    reported alone: one bad item never stops a batch."""
    started = time.perf_counter()
    now = datetime.now(timezone.utc)
    rows: list[dict[str, Any]] = []
    errors: list[tuple[int, str | None, str, dict[str, Any]]] = []
    for pos, item in enumerate(batch):
        try:
            if isinstance(item, InputError):
                raise item
            value = item.value if isinstance(item, Line) else item
            doc = to_document(value, max_chars, extractor, window, now)
            body = templates.strip(doc.source, doc.body) if templates else doc.body
            try:
                fp = fingerprint(body, doc.title, options)
            except ValueError as exc:
                raise InputError(str(exc)) from None
        except Exception as exc:  # InputError, or a fault reading this item alone
            if not isinstance(exc, InputError):
                _log.warning("item %d could not be read", pos, exc_info=True)
            message = str(exc) if isinstance(exc, InputError) else f"{type(exc).__name__}: {exc}"
            if isinstance(item, Line) and not message.startswith(item.where):
                message = f"{item.where}: {message}"
            record = _error_record(item, message)
            errors.append((pos, record["external_id"], message, record))
            continue
        rows.append(_to_row(pos, doc, fp, doc.seen_at or now))
    return Prepared(len(batch), rows, errors, time.perf_counter() - started)


#: The most fingerprinting processes :func:`default_workers` picks: past two,
#: the one database connection is the bottleneck (a cold process fingerprints
#: a sina2018 document in ~0.9-1.2 ms, ``dedup_ingest`` checks and stores it in
#: ~0.6-1.5 ms), so more processes only add start-up cost.
MAX_AUTO_WORKERS = 2


def _start_worker(parent: int) -> None:
    """A fingerprinting worker's start: it saves its term table when it ends
    (dedup_pg.term_cache), and it ends when the ingesting process is gone.
    Killed (SIGKILL, an OOM kill), that process cannot stop its pool, and its
    workers, blocked reading a queue whose other writers are each other,
    would wait forever."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(1)

    threading.Thread(target=watch, name="dedup-pg-parent-watch", daemon=True).start()
    # a worker ends through multiprocessing, which skips atexit: its terms go
    # to the term cache at that exit instead (not when killed)
    import multiprocessing.util

    from .tokenize import TERMS

    multiprocessing.util.Finalize(None, TERMS.save, exitpriority=10)


def _read_tables_before_fork() -> None:
    """Read what every fingerprinting worker reads on its first new terms
    (jieba's tables: a few ms from the term cache folder, ~0.4 s from jieba's
    files, ~0.8 s the first time they are made for the folder) here, once, when workers are forked: they share them
    (copy-on-write) instead of each reading them. The first batch waits as
    long either way."""
    import multiprocessing

    from .tokenize import jieba_tables

    if multiprocessing.get_context().get_start_method() == "fork":
        jieba_tables()


def default_workers(cpus: int | None = None) -> int:
    """The fingerprinting processes ``ingest_many(workers=None)`` and
    ``dedup-pg ingest`` use: none on one CPU (processes add work and nothing
    runs beside them), else one per CPU this process may run on, at most
    :data:`MAX_AUTO_WORKERS`. Measured on a 2-core machine with the embedded
    server (BENCHMARKS.md, "Against the peers"): when it was quiet, 2 processes
    ingested 1.2-1.4x the documents a second of one thread; with other jobs
    holding both cores they were level (0.96x)."""
    if cpus is None:
        cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return 0 if (cpus or 1) <= 1 else min(cpus or 1, MAX_AUTO_WORKERS)


def _dump_items(items: object) -> bytes:
    """A batch for ``dedup_ingest`` as JSON: orjson's UTF-8 (5.5 ms for 500 sina2018
    rows, 3.7 MB) where psycopg's default, ``json.dumps``, takes 31 ms and escapes
    every ideograph as ``\\uXXXX`` (6.2 MB) for the server to parse back; json's
    output for what orjson refuses (a lone surrogate, an int beyond 64 bits), so
    the server reports it as before."""
    try:
        return orjson.dumps(items)
    except TypeError:  # orjson.JSONEncodeError
        return json.dumps(items).encode("ascii")


def _chunks(iterator: Iterator[Item], size: int) -> Iterator[list[Item]]:
    while batch := list(itertools.islice(iterator, size)):
        yield batch


def _prefetch(
    executor: concurrent.futures.Executor,
    func: Callable[[_T], Prepared],
    batches: Iterator[_T],
    ahead: int,
) -> Iterator[Prepared]:
    """Run ``func`` over ``batches`` up to ``ahead`` batches in advance, in order,
    without reading the whole input (it may be an endless stream)."""
    pending: collections.deque[tuple[_T, concurrent.futures.Future[Prepared]]]
    pending = collections.deque()
    for batch in batches:
        pending.append((batch, executor.submit(func, batch)))
        if len(pending) > ahead:
            yield _with_items(*pending.popleft())
    while pending:
        yield _with_items(*pending.popleft())


def _with_items(batch: object, future: concurrent.futures.Future[Prepared]) -> Prepared:
    """The result, with the input it was made from (kept in this process: a
    worker's result does not carry the input back)."""
    prepared = future.result()
    if prepared.items is None and isinstance(batch, list):
        prepared.items = batch
    return prepared


def _to_row(pos: int, doc: Document, fp: Fingerprint, seen_at: datetime) -> dict[str, Any]:
    return {
        "pos": pos,
        "external_id": doc.id,
        "title": doc.title,
        "body": doc.body,
        "url": doc.url,
        "source": doc.source,
        "seen_at": seen_at.isoformat(),
        "published_at": doc.published_at.isoformat() if doc.published_at else None,
        **fp.sql_item(),
        "content_type": doc.content_type,
    }


def _error_record(item: object, message: str) -> dict[str, Any]:
    """An ``ingest_errors`` row for an item: what it is called, and its bytes."""
    return {
        "external_id": _item_id(item),
        "source": _item_field(item, "source"),
        "error": _printable(message)[:10_000],
        "payload": _raw_payload(item),
    }


def _printable(text: str) -> str:
    """``text`` as PostgreSQL can store it: NUL and lone surrogates escaped."""
    return text.replace("\x00", "\\x00").encode("utf-8", "backslashreplace").decode("utf-8")


def _item_field(item: object, name: str) -> str | None:
    if isinstance(item, Line):
        item = item.value
    try:
        value = item.get(name) if isinstance(item, Mapping) else getattr(item, name, None)
        if value is None or isinstance(value, bytes | bytearray):
            return None
        text = value[:1000] if isinstance(value, str) else repr(value)[:1000]
    except Exception:  # an id too large to print, a mapping that fails: name it by place
        return None
    return _printable(text)


def _item_id(item: object) -> str | None:
    if isinstance(item, InputError):
        return item.item_id
    if isinstance(item, Line):
        return _item_field(item, "id") or item.where
    return _item_field(item, "id")


def _raw_payload(item: object) -> bytes | None:
    """What was received, as bytes, so a rejected item is never lost."""
    if isinstance(item, InputError):
        return item.raw
    if isinstance(item, Line):
        return item.raw
    if isinstance(item, bytes | bytearray):
        return bytes(item)
    if isinstance(item, str):
        return item.encode("utf-8", "surrogatepass")
    if isinstance(item, Document):
        item = item.__dict__
    if isinstance(item, Mapping):

        def default(value: object) -> object:
            if isinstance(value, bytes | bytearray):
                return {"$bytes_hex": bytes(value).hex()}
            return str(value)

        try:
            return json.dumps(dict(item), ensure_ascii=True, default=default).encode("ascii")
        except (ValueError, RecursionError):
            pass
    try:
        return repr(item).encode("utf-8", "backslashreplace")
    except (ValueError, RecursionError):
        return type(item).__name__.encode()
