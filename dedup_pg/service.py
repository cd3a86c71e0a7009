"""HTTP check service: the same verdicts for crawlers not written in Python.

``dedup-pg serve`` runs it with uvicorn. Every endpoint goes through
:class:`dedup_pg.Deduper`, the library path the CLI uses; there is no second
implementation of the checks. A pool of Dedupers (one connection each) serves
requests in parallel; concurrent requests carrying the same text are made safe
by the database's stripe locks, exactly as for concurrent ingest processes.

User input never causes a 500: malformed JSON and wrong types get 400/422,
oversized requests 413, bad documents a per-item ``error`` verdict.
"""

from __future__ import annotations

import hmac
import json
import os
import queue
from collections.abc import Iterator
from contextlib import asynccontextmanager, contextmanager
from datetime import datetime
from typing import Annotated, Any

import psycopg
from fastapi import Depends, FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from fastapi.utils import is_body_allowed_for_status_code
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException as StarletteHTTPException

from . import __version__, database
from .deduper import Deduper
from .metrics import prometheus_text
from .verdicts import Verdict

DEFAULT_MAX_BYTES = 10 * 1024 * 1024
# module level: with postponed annotations FastAPI resolves them in this namespace
Credentials = Annotated[HTTPAuthorizationCredentials | None, Depends(HTTPBearer(auto_error=False))]
DEFAULT_MAX_DOCUMENTS = 1000


class _JSON(JSONResponse):
    """JSON that never fails on what a client sent. Strings are echoed back
    (an id in a verdict, a setting's name in a 422), and JSON lets a client
    send a lone surrogate (``"\\ud800"``), which UTF-8 cannot encode: such a
    response is written with ``\\u`` escapes instead, so the client gets back
    exactly the string it sent."""

    def render(self, content: Any) -> bytes:
        try:
            return super().render(content)
        except UnicodeEncodeError:
            return json.dumps(
                content, ensure_ascii=True, allow_nan=False, separators=(",", ":")
            ).encode("ascii")


class DocumentIn(BaseModel):
    """A document as a crawler sends it; only ``body`` is needed (a missing or
    empty body is reported as that item's error, not as a failed request)."""

    model_config = ConfigDict(extra="ignore")
    id: str | int | None = Field(None, description="The crawler's id for it (echoed in verdicts)")
    title: str | None = None
    body: str | None = Field(None, description="The text (required; checked per item)")
    url: str | None = None
    source: str | None = Field(None, description="Site or feed name, for provenance and stats")
    seen_at: datetime | None = Field(None, description="When it was crawled (default: now)")
    published_at: datetime | None = None


_THRESHOLDS = Field(
    None,
    description="Thresholds for this request over the database's settings "
    '(names as in dedup_settings, e.g. {"containment_threshold": 0.9})',
)


class CheckRequest(DocumentIn):
    thresholds: dict[str, Any] | None = _THRESHOLDS


class IngestRequest(BaseModel):
    documents: list[DocumentIn] = Field(min_length=1, max_length=DEFAULT_MAX_DOCUMENTS)
    thresholds: dict[str, Any] | None = _THRESHOLDS


class IngestResponse(BaseModel):
    verdicts: list[Verdict]


class DocumentOut(BaseModel):
    doc_id: int
    external_id: str | None
    title: str | None
    body: str
    url: str | None
    source: str | None
    seen_at: datetime
    published_at: datetime | None
    sightings: int


class Health(BaseModel):
    status: str
    revision: str | None
    version: str


class _Pool:
    """Dedupers, one database connection each, lent to one request at a time."""

    def __init__(self, dsn: str, size: int) -> None:
        database.migrate(dsn)
        self._free: queue.Queue[Deduper] = queue.Queue()
        self._all = [Deduper(dsn, migrate=False) for _ in range(size)]
        for dd in self._all:
            self._free.put(dd)

    @contextmanager
    def deduper(self) -> Iterator[Deduper]:
        dd = self._free.get()
        try:
            if dd.conn.closed or dd.conn.broken:
                fresh = Deduper(dd.dsn, migrate=False)
                dd.close()  # frees the broken connection's resources
                self._all[self._all.index(dd)] = fresh  # what close() closes
                dd = fresh
            yield dd
        finally:
            self._free.put(dd)

    def close(self) -> None:
        for dd in self._all:
            dd.close()


def _thresholds(dd: Deduper, thresholds: dict[str, Any] | None) -> dict[str, Any]:
    try:
        return dd.check_thresholds(thresholds or {})
    except ValueError as exc:
        raise HTTPException(422, str(exc)) from exc


def create_app(
    dsn: str | None = None,
    *,
    home: str | None = None,
    token: str | None = None,
    pool_size: int = 4,
    max_bytes: int = DEFAULT_MAX_BYTES,
    review: bool = True,
) -> FastAPI:
    """The ASGI application. ``token`` (default: ``DEDUP_PG_API_TOKEN``) turns on
    bearer-token auth for the /v1 endpoints and /metrics, and a login (the
    token, then a session cookie) for the review page, ``/review``
    (:mod:`dedup_pg.web.review`; ``review=False`` leaves it out)."""
    token = token if token is not None else os.environ.get("DEDUP_PG_API_TOKEN") or None
    state: dict[str, _Pool] = {}

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> Any:
        # the database is reached at start-up, not when the app is built (so the
        # OpenAPI schema can be produced without one)
        state["pool"] = _Pool(database.resolve_dsn(dsn, home), pool_size)
        yield
        state["pool"].close()

    app = FastAPI(
        title="dedup-pg",
        version=__version__,
        summary="Text de-duplication verdicts: new, duplicate (of what, by which layer) or review.",
        lifespan=lifespan,
        # not pydantic's own JSON writer, which fails on lone surrogates
        default_response_class=_JSON,
        max_body_size=max_bytes,  # larger bodies (also chunked ones) get 413
    )

    def authorized(creds: Credentials) -> None:
        if token is None:
            return
        if creds is None or not hmac.compare_digest(creds.credentials.encode(), token.encode()):
            raise HTTPException(
                401, "missing or wrong bearer token", headers={"WWW-Authenticate": "Bearer"}
            )

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        # a body that is not JSON at all is a 400; JSON of the wrong shape a 422
        bad_json = any(e.get("type") == "json_invalid" for e in exc.errors())
        errors = [{k: e[k] for k in ("loc", "msg", "type") if k in e} for e in exc.errors()]
        return _JSON({"detail": errors}, status_code=400 if bad_json else 422)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        # FastAPI's own handler, written with _JSON (a detail may quote the input)
        if not is_body_allowed_for_status_code(exc.status_code):
            return Response(status_code=exc.status_code, headers=exc.headers)
        return _JSON({"detail": exc.detail}, status_code=exc.status_code, headers=exc.headers)

    @app.exception_handler(psycopg.OperationalError)
    async def unavailable(request: Request, exc: psycopg.OperationalError) -> JSONResponse:
        return _JSON({"detail": "database unavailable"}, status_code=503)

    @app.post(
        "/v1/check",
        response_model=Verdict,
        dependencies=[Depends(authorized)],
        summary="Read-only verdict for one document (nothing is stored)",
    )
    def check(req: CheckRequest) -> Verdict:
        with state["pool"].deduper() as dd:
            return dd.check_many(
                [req.model_dump(exclude={"thresholds"})], _thresholds(dd, req.thresholds)
            )[0]

    @app.post(
        "/v1/ingest",
        response_model=IngestResponse,
        dependencies=[Depends(authorized)],
        summary="Check and store documents: one verdict per item, in order",
    )
    def ingest(req: IngestRequest) -> IngestResponse:
        with state["pool"].deduper() as dd:
            verdicts = dd.ingest_batch(
                [d.model_dump() for d in req.documents], _thresholds(dd, req.thresholds)
            )
            return IngestResponse(verdicts=verdicts)

    @app.get(
        "/v1/documents/{doc_id}",
        response_model=DocumentOut,
        dependencies=[Depends(authorized)],
        responses={404: {"description": "No such document"}},
        summary="A kept document",
    )
    def document(doc_id: int) -> DocumentOut:
        if not -(2**63) <= doc_id < 2**63:
            raise HTTPException(404, f"document {doc_id} does not exist")
        with state["pool"].deduper() as dd:
            cur = dd.conn.execute(
                "SELECT d.doc_id, d.external_id, d.title, d.body, d.url, d.source, d.seen_at, d.published_at,"
                " (SELECT count(*) FROM document_sightings s WHERE s.doc_id = d.doc_id) AS sightings"
                " FROM documents d WHERE d.doc_id = %s",
                [doc_id],
            )
            row = cur.fetchone()
            if row is None:
                raise HTTPException(404, f"document {doc_id} does not exist")
            return DocumentOut(
                **dict(zip([c.name for c in cur.description or []], row, strict=True))
            )

    @app.get(
        "/healthz",
        response_model=Health,
        summary="Liveness: the database answers",
        responses={503: {"description": "Database unavailable"}},
    )
    def healthz() -> Health:
        with state["pool"].deduper() as dd:
            row = dd.conn.execute("SELECT version_num FROM alembic_version").fetchone()
        return Health(status="ok", revision=row[0] if row else None, version=__version__)

    @app.get(
        "/metrics",
        response_class=PlainTextResponse,
        dependencies=[Depends(authorized)],
        summary="Prometheus metrics",
    )
    def metrics() -> PlainTextResponse:
        with state["pool"].deduper() as dd:
            text = prometheus_text(dd.conn)
        return PlainTextResponse(text, media_type="text/plain; version=0.0.4; charset=utf-8")

    if review:
        from .web.review import install

        install(app, lambda: state["pool"], token)

    return app
