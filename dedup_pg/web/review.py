"""``/review``: the review queue and one candidate at a time, in the browser.

Same process, same Dedupers (one connection each) and same token as the HTTP
check service. Every decision goes through the SQL verbs (restore_candidate,
confirm_candidate, dismiss_candidate) by way of dedup_review_decide, which
applies it only while the candidate still has the status the reviewer saw: a
second reviewer is told the first one's decision and nothing is applied twice.
dedup_review_undo takes back a reviewer's own newest decision.

Safety, as crawled text is hostile: the templates are autoescaped (nothing is
marked safe), a Content-Security-Policy allows only this package's own script
and stylesheet (no inline script, no other origin), links are made only of
http(s) URLs. POSTs need the session's CSRF token (a form field or the
``X-CSRF-Token`` header) and, when the browser sends one, an ``Origin`` of this
host; a bearer token (scripts) needs neither, as browsers never send one by
themselves. With ``DEDUP_PG_API_TOKEN`` set, the login form asks for it and the
session cookie is signed with a key derived from it (changing the token ends
every session); without one, the login asks only the reviewer's name.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import secrets
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from datetime import date, datetime, timedelta, timezone
from importlib.resources import files
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

import psycopg
from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from starlette.concurrency import run_in_threadpool

from .. import __version__
from ..candidates import read_candidate
from ..fingerprint import fingerprint
from ..normalize import NormalizeOptions
from ..sqlfiles import queries
from ..templates import TemplateSet
from ..textdiff import Comparison, compare

STATUSES = ("pending", "auto", "confirmed", "restored", "dismissed")
LAYERS = ("exact", "simhash", "containment", "minhash", "semantic")
#: The work queue (pending) oldest first; the other lists newest first.
ASCENDING = frozenset({"pending"})
#: What each status can become on the page (as the SQL verbs allow it).
VERBS = {
    "pending": ("confirm", "dismiss"),
    "auto": ("restore", "confirm"),
    "confirmed": ("restore",),
    "restored": ("confirm",),
    "dismissed": ("confirm",),
}
VERB_LABELS = {
    "restore": "Restore: not a duplicate, keep it",
    "confirm": "Confirm: it is a duplicate",
    "dismiss": "Dismiss: not a duplicate, keep both",
}
#: The layers whose matches the fact check verifies (dedup_ingest's).
FACT_CHECKED_LAYERS = frozenset({"simhash", "containment", "minhash"})
#: What dedup_facts_verdict's answer means, as the page says it.
FACT_REASONS = {
    "differ": "differ: two stories on one template (each holds facts the other lacks, a "
    "templated item's numbers differ on both sides, or the two name sums of money and "
    "none is in both), for review",
    "added": "differ: the incoming text adds many facts (another text quoting this one), "
    "for review",
    None: "agree: no reason in the facts to keep them apart",
}
DONE = {"restore": "restored", "confirm": "confirmed", "dismiss": "dismissed"}
PAGE_SIZE = 50
#: Per-layer counts stop here ("10,000+"): exact counts of millions of
#: automatic duplicates would cost more than the page.
COUNT_CAP = 10_000
SIGHTINGS_SHOWN = 200
SESSION_COOKIE = "dedup_review"
LOGIN_COOKIE = "dedup_review_login"
SESSION_MAX_AGE = 7 * 24 * 3600
MAX_NOTE = 2000
MAX_NAME = 80
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_STATIC = {"review.js": "text/javascript", "review.css": "text/css"}
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)


class ReviewError(Exception):
    """An error page (or JSON ``{"detail": ...}``) with this status."""

    def __init__(self, status: int, message: str, *, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers or {}


class _LoginNeeded(Exception):
    pass


@dataclass(frozen=True)
class Reviewer:
    """Who is deciding. ``csrf`` is the session's token; None for a bearer
    client (a script), which has no cookie a foreign page could ride on."""

    name: str
    csrf: str | None


class Sessions:
    """Signed session cookies: ``payload.signature``, the payload the
    reviewer's name, a CSRF token and the time it was issued."""

    def __init__(self, token: str | None) -> None:
        # with a token, sessions outlive a restart and end when it changes;
        # without one, a restart ends them (the key is made per process)
        self._key = (
            hashlib.sha256(b"dedup-pg review session\0" + token.encode()).digest()
            if token
            else secrets.token_bytes(32)
        )

    def _sign(self, payload: bytes) -> str:
        return (
            base64.urlsafe_b64encode(hmac.digest(self._key, payload, "sha256")).decode().rstrip("=")
        )

    def issue(self, name: str) -> str:
        payload = json.dumps(
            {"n": name, "c": secrets.token_urlsafe(24), "t": int(time.time())},
            ensure_ascii=True,
        ).encode()
        return base64.urlsafe_b64encode(payload).decode().rstrip("=") + "." + self._sign(payload)

    def read(self, cookie: str | None) -> Reviewer | None:
        if not cookie or "." not in cookie or len(cookie) > 4096:
            return None
        body, sig = cookie.rsplit(".", 1)
        try:
            payload = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
        except ValueError:
            return None
        if not hmac.compare_digest(self._sign(payload), sig):
            return None
        try:
            data = json.loads(payload)
            name, csrf, issued = str(data["n"]), str(data["c"]), int(data["t"])
        except (ValueError, KeyError, TypeError):
            return None
        if time.time() - issued > SESSION_MAX_AGE:
            return None
        return Reviewer(name, csrf)


@dataclass(frozen=True)
class Filters:
    """What the queue shows: one status, optionally one layer, one source, a
    score range, one UTC day (of seen_at)."""

    status: str = "pending"
    layer: str | None = None
    source: str | None = None
    min_score: float | None = None
    max_score: float | None = None
    day: date | None = None

    @classmethod
    def parse(cls, params: Any) -> Filters:
        def text(name: str) -> str | None:
            value = params.get(name)
            return value.strip() or None if isinstance(value, str) else None

        def number(name: str) -> float | None:
            value = text(name)
            if value is None:
                return None
            try:
                f = float(value)
            except ValueError:
                raise ReviewError(400, f"{name}: not a number: {value!r}") from None
            if f != f or f in (float("inf"), float("-inf")):
                raise ReviewError(400, f"{name}: not a finite number")
            return f

        status = text("status") or "pending"
        if status not in STATUSES:
            raise ReviewError(400, f"status must be one of {', '.join(STATUSES)}")
        layer = text("layer")
        if layer is not None and layer not in LAYERS:
            raise ReviewError(400, f"layer must be one of {', '.join(LAYERS)}")
        source = text("source")
        if source is not None and (len(source) > 500 or "\x00" in source):
            raise ReviewError(400, "source: too long or not text")
        day_text = text("day")
        try:
            day = date.fromisoformat(day_text) if day_text else None
        except ValueError:
            raise ReviewError(400, f"day must be YYYY-MM-DD, not {day_text!r}") from None
        return cls(status, layer, source, number("min_score"), number("max_score"), day)

    def params(self, **changes: Any) -> dict[str, str]:
        """As query parameters (only what is set)."""
        f = replace(self, **changes)
        out = {
            "status": f.status,
            "layer": f.layer,
            "source": f.source,
            "min_score": None if f.min_score is None else f"{f.min_score:g}",
            "max_score": None if f.max_score is None else f"{f.max_score:g}",
            "day": f.day.isoformat() if f.day else None,
        }
        return {
            k: v for k, v in out.items() if v is not None and not (k == "status" and v == "pending")
        }

    def query(self, **changes: Any) -> str:
        return urlencode(self.params(**changes))

    def sql(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "layer": self.layer,
            "source": self.source,
            "min_score": self.min_score,
            "max_score": self.max_score,
            "day": self.day,
        }


def encode_cursor(created_at: datetime, candidate_id: int) -> str:
    return f"{(created_at - _EPOCH) // timedelta(microseconds=1)}.{candidate_id}"


def decode_cursor(text: str | None) -> tuple[datetime, int] | None:
    if not text:
        return None
    m = re.fullmatch(r"(-?\d{1,19})\.(\d{1,19})", text)
    if not m:
        raise ReviewError(400, f"not a queue position: {text!r}")
    try:
        return _EPOCH + timedelta(microseconds=int(m.group(1))), int(m.group(2))
    except OverflowError:
        raise ReviewError(400, f"not a queue position: {text!r}") from None


def safe_url(url: str | None) -> str | None:
    """The URL if it may be a link (http or https); None for ``javascript:``
    and everything else, which is then shown as text."""
    if not url:
        return None
    try:
        scheme = urlsplit(url.strip()).scheme.lower()
    except ValueError:
        return None
    return url.strip() if scheme in ("http", "https") else None


def _local_path(target: str | None, default: str = "/review") -> str:
    """A redirect target that stays on this site's /review pages."""
    if not target or not target.startswith("/review") or target.startswith("//"):
        return default
    if any(c in target for c in "\\\r\n\t"):
        return default
    return target


def _rows(cur: psycopg.Cursor) -> list[dict[str, Any]]:
    names = [c.name for c in cur.description or []]
    return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]


def _facts_of(
    body: str | None,
    title: str | None,
    source: str | None,
    options: NormalizeOptions,
    templates: TemplateSet,
) -> tuple[str, ...]:
    """The facts (numbers, names) a text's fingerprint holds under the current
    rules, as ingest computes it (the source's learned template lines
    stripped first); none for a text normalization leaves empty or one that
    is gone."""
    if not body:
        return ()
    try:
        return fingerprint(templates.strip(source, body), title, options).facts
    except ValueError:
        return ()


def _with_matched_titles(conn: psycopg.Connection, rows: list[dict[str, Any]]) -> None:
    """Give each queue row its matched document's source and title (None once
    that document's day is dropped), read by key in one query."""
    keys = [(r["matched_doc_id"], r.pop("matched_seen_at")) for r in rows]
    found = {
        (m["doc_id"], m["seen_at"]): m
        for m in _rows(
            conn.execute(
                queries()["review_matched_titles"],
                {"docs": [k[0] for k in keys], "seen": list({k[1] for k in keys})},
            )
        )
    }
    for r, key in zip(rows, keys, strict=True):
        m = found.get(key, {})
        r["matched_source"], r["matched_title"] = m.get("source"), m.get("title")


def _jsonable(value: Any) -> Any:
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return value


def _environment() -> Environment:
    env = Environment(
        loader=PackageLoader("dedup_pg.web", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )

    def when(value: datetime | None) -> str:
        if value is None:
            return "-"
        return value.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")

    def when_short(value: datetime | None) -> str:
        if value is None:
            return "-"
        return value.astimezone(timezone.utc).strftime("%m-%d %H:%M")

    def score(value: float | None) -> str:
        return "-" if value is None else f"{value:.3f}"

    def count(value: int) -> str:
        return f"{value:,}+" if value >= COUNT_CAP else f"{value:,}"

    env.filters.update(when=when, when_short=when_short, score=score, count=count)
    env.globals.update(version=__version__, VERB_LABELS=VERB_LABELS)
    return env


def _static_version() -> str:
    digest = hashlib.sha256()
    for name in sorted(_STATIC):
        digest.update(files("dedup_pg.web").joinpath("static", name).read_bytes())
    return digest.hexdigest()[:12]


def install(
    app: FastAPI, pool: Callable[[], Any], token: str | None, *, page_size: int = PAGE_SIZE
) -> None:
    """Add ``/review`` to the service: its routes, its error pages and its
    security headers. ``pool()`` is the service's pool of Dedupers."""
    env = _environment()
    sessions = Sessions(token)
    static_version = _static_version()
    env.globals["static_version"] = static_version
    router = APIRouter(include_in_schema=False)

    def deduper() -> AbstractContextManager[Any]:
        return pool().deduper()

    # --- who is asking -------------------------------------------------

    def bearer(request: Request) -> Reviewer | None:
        header = request.headers.get("authorization", "")
        if token is None or not header.lower().startswith("bearer "):
            return None
        if not hmac.compare_digest(header[7:].strip().encode(), token.encode()):
            raise ReviewError(401, "wrong bearer token", headers={"WWW-Authenticate": "Bearer"})
        name = _clean_name(request.headers.get("x-reviewer") or "") or "api"
        return Reviewer(name, None)

    def reviewer(request: Request) -> Reviewer | None:
        return bearer(request) or sessions.read(request.cookies.get(SESSION_COOKIE))

    def page_reviewer(request: Request) -> Reviewer:
        """An HTML page's reviewer, or off to the login."""
        who = reviewer(request)
        if who is None:
            raise _LoginNeeded()
        return who

    def json_reviewer(request: Request) -> Reviewer | None:
        """Reading JSON needs a session or the token when a token is set."""
        who = reviewer(request)
        if who is None and token is not None:
            raise ReviewError(
                401,
                "log in at /review/login or send the bearer token",
                headers={"WWW-Authenticate": "Bearer"},
            )
        return who

    def post_reviewer(request: Request, form: dict[str, str]) -> Reviewer:
        """A POST's reviewer, after the cross-site checks."""
        who = reviewer(request)
        if who is None:
            raise ReviewError(401, "log in at /review/login first (or send the bearer token)")
        if who.csrf is None:
            return who  # a bearer client
        _same_origin(request)
        sent = form.get("csrf") or request.headers.get("x-csrf-token") or ""
        if not hmac.compare_digest(sent.encode(), who.csrf.encode()):
            raise ReviewError(403, "missing or wrong CSRF token: reload the page and try again")
        return who

    async def read_form(request: Request) -> dict[str, str]:
        body = await request.body()
        if len(body) > 64 * 1024:
            raise ReviewError(413, "form too large")
        ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if not body:
            return {}
        if ctype == "application/json":
            try:
                data = json.loads(body)
            except ValueError:
                raise ReviewError(400, "body is not JSON") from None
            if not isinstance(data, dict):
                raise ReviewError(400, "body must be a JSON object")
            return {str(k): v if isinstance(v, str) else json.dumps(v) for k, v in data.items()}
        if ctype not in ("application/x-www-form-urlencoded", ""):
            raise ReviewError(415, "send a form (application/x-www-form-urlencoded) or JSON")
        try:
            return dict(parse_qsl(body.decode("utf-8"), keep_blank_values=True))
        except UnicodeDecodeError:
            raise ReviewError(400, "form is not UTF-8") from None

    def wants_json(request: Request) -> bool:
        return "application/json" in request.headers.get("accept", "")

    def render(request: Request, template: str, status: int = 200, **context: Any) -> HTMLResponse:
        who = context.pop("who", None)
        html = env.get_template(template).render(
            who=who, csrf=who.csrf if who else None, token_required=token is not None, **context
        )
        return HTMLResponse(html, status_code=status)

    # --- pages ---------------------------------------------------------

    @router.get("/review/static/{name}")
    def static(name: str, request: Request) -> Response:
        if name not in _STATIC:
            raise ReviewError(404, "no such file")
        etag = f'"{static_version}"'
        if request.headers.get("if-none-match") == etag:
            return Response(status_code=304, headers={"ETag": etag})
        data = files("dedup_pg.web").joinpath("static", name).read_bytes()
        return Response(
            data,
            media_type=_STATIC[name] + "; charset=utf-8",
            headers={"ETag": etag, "Cache-Control": "public, max-age=86400"},
        )

    @router.get("/review/login")
    def login_form(request: Request, next: str | None = None) -> HTMLResponse:
        nonce = secrets.token_urlsafe(24)
        response = render(
            request, "login.html", next=_local_path(next), nonce=nonce, error=None, name=""
        )
        _set_cookie(request, response, LOGIN_COOKIE, nonce, max_age=3600)
        return response

    @router.post("/review/login")
    async def login(request: Request) -> Response:
        form = await read_form(request)
        _same_origin(request)
        nonce = request.cookies.get(LOGIN_COOKIE) or ""
        if not nonce or not hmac.compare_digest(form.get("nonce", "").encode(), nonce.encode()):
            raise ReviewError(403, "the login form expired or came from another site: reload it")
        target = _local_path(form.get("next"))
        name = _clean_name(form.get("name", ""))
        error = None
        if not name:
            error = "Say who you are: your name is recorded with each decision."
        elif token is not None and not hmac.compare_digest(
            form.get("token", "").encode(), token.encode()
        ):
            error = "Wrong token."
        if error:
            fresh = secrets.token_urlsafe(24)
            response = render(
                request,
                "login.html",
                401 if name else 400,
                next=target,
                nonce=fresh,
                error=error,
                name=name or "",
            )
            _set_cookie(request, response, LOGIN_COOKIE, fresh, max_age=3600)
            return response
        response = RedirectResponse(target, status_code=303)
        _set_cookie(
            request, response, SESSION_COOKIE, sessions.issue(name), max_age=SESSION_MAX_AGE
        )
        response.delete_cookie(LOGIN_COOKIE, path="/review")
        return response

    @router.post("/review/logout")
    async def logout(request: Request) -> Response:
        post_reviewer(request, await read_form(request))
        response = RedirectResponse("/review/login", status_code=303)
        response.delete_cookie(SESSION_COOKIE, path="/review")
        return response

    def queue_data(filters: Filters, after: str | None, before: str | None) -> dict[str, Any]:
        ascending = filters.status in ASCENDING
        start = decode_cursor(after) or decode_cursor(before)
        backwards = before is not None and after is None
        # display order: ascending for pending; "backwards" is towards the top
        up = ascending != backwards
        params = {
            **filters.sql(),
            "at": start[0] if start else None,
            "id": start[1] if start else None,
            "limit": page_size + 1,
        }
        with deduper() as dd:
            rows = _rows(
                dd.conn.execute(queries()["review_queue_up" if up else "review_queue_down"], params)
            )
            _with_matched_titles(dd.conn, rows)
            counts = {
                row["layer"]: row["n"]
                for row in _rows(
                    dd.conn.execute(
                        queries()["review_layer_counts"], {**filters.sql(), "cap": COUNT_CAP}
                    )
                )
            }
            pending = dd.conn.execute(queries()["review_pending_total"]).fetchone()[0]
        more = len(rows) > page_size
        rows = rows[:page_size]
        if backwards:
            if not more:  # back at the top: the first page, full
                return queue_data(filters, None, None)
            rows.reverse()
        has_prev = (more if backwards else start is not None) and bool(rows)
        has_next = (more if not backwards else True) and bool(rows)
        return {
            "items": rows,
            "counts": counts,
            "pending": pending,
            "next": encode_cursor(rows[-1]["created_at"], rows[-1]["candidate_id"])
            if has_next
            else None,
            "prev": encode_cursor(rows[0]["created_at"], rows[0]["candidate_id"])
            if has_prev
            else None,
        }

    @router.get("/review")
    def queue_page(
        request: Request, after: str | None = None, before: str | None = None
    ) -> Response:
        who = page_reviewer(request)
        filters = Filters.parse(request.query_params)
        data = queue_data(filters, after, before)
        flash = flash_messages(request, who)
        return render(
            request,
            "queue.html",
            who=who,
            filters=filters,
            data=data,
            flash=flash,
            STATUSES=STATUSES,
            LAYERS=LAYERS,
            ASCENDING=ASCENDING,
        )

    @router.get("/review/api/queue")
    def queue_json(
        request: Request, after: str | None = None, before: str | None = None
    ) -> JSONResponse:
        json_reviewer(request)
        filters = Filters.parse(request.query_params)
        data = queue_data(filters, after, before)
        return JSONResponse(_jsonable({"filters": filters.params(), **data}))

    def candidate_data(candidate_id: int, filters: Filters) -> dict[str, Any]:
        if not 0 < candidate_id < 2**63:
            raise ReviewError(404, f"duplicate candidate {candidate_id} does not exist")
        with deduper() as dd:
            options, templates = dd.options, dd.templates.current()
            c = read_candidate(dd.conn, candidate_id)
            if c is None:
                raise ReviewError(404, f"duplicate candidate {candidate_id} does not exist")
            docs = [d for d in (c["matched_doc_id"], c["doc_id"]) if d is not None]
            sightings = _rows(
                dd.conn.execute(
                    queries()["review_sightings"], {"docs": docs, "limit": SIGHTINGS_SHOWN}
                )
            )
            neighbours = {}
            ascending = filters.status in ASCENDING
            for direction, up in (("next", ascending), ("prev", not ascending)):
                found = _rows(
                    dd.conn.execute(
                        queries()["review_queue_up" if up else "review_queue_down"],
                        {
                            **filters.sql(),
                            "at": c["created_at"],
                            "id": c["candidate_id"],
                            "limit": 1,
                        },
                    )
                )
                neighbours[direction] = found[0]["candidate_id"] if found else None
            # the fact check is SQL's (dedup_facts_verdict): the rule ingest and
            # rebuild apply, not a copy of it
            checked = c["layer"] in FACT_CHECKED_LAYERS and c["matched_exists"]
            check = {"verdict": None, "copied_body": None}
            if checked:
                check = _rows(
                    dd.conn.execute(
                        queries()["review_fact_check"],
                        {
                            "source": c["source"],
                            "thresholds": json.dumps(c["thresholds"] or {}),
                            "clauses": list(c["clauses"] or []),
                            "own": c["doc_id"],
                            "matched": c["matched_doc_id"],
                            "matched_seen_at": c["matched_seen_at"],
                            "facts": list(c["facts"] or []),
                            "matched_facts": list(c["matched_facts"] or []),
                            "body": c["body"],
                            "matched_body": c["matched_body"],
                            "matched_clause_count": c["matched_clause_count"],
                        },
                    )
                )[0]
        for internal in ("clauses", "matched_clause_count"):
            c.pop(internal)
        thresholds = c["thresholds"] or {}
        # SQL keeps the facts' keys (documents.facts); the page shows the facts,
        # read again from the two texts as fingerprint() reads them
        mine = list(_facts_of(c["body"], c["title"], c["source"], options, templates))
        theirs = list(
            _facts_of(
                c["matched_body"], c["matched_title"], c["matched_source"], options, templates
            )
        )
        c["facts"], c["matched_facts"] = mine, theirs
        verdict = check["verdict"]
        facts = {
            "incoming_only": [f for f in mine if f not in set(theirs)],
            "matched_only": [f for f in theirs if f not in set(mine)],
            "shared": len(set(mine) & set(theirs)),
            "incoming": len(set(mine)),
            "matched": len(set(theirs)),
            "share": thresholds.get("facts_disagreement_share"),
            "added_share": thresholds.get("facts_added_share"),
            "checked": checked,
            "verdict": verdict,
            "disagree": verdict is not None if checked else None,
            "reason": FACT_REASONS[verdict] if checked else None,
            "copied_body": check["copied_body"],
        }
        return {
            "candidate": c,
            "sightings": sightings,
            "sightings_total": sightings[0]["total"] if sightings else 0,
            "neighbours": neighbours,
            "facts": facts,
            "verbs": VERBS[c["status"]],
        }

    def comparison(c: dict[str, Any]) -> tuple[Comparison, Comparison]:
        body = compare(c["matched_body"] or "", c["body"] or "")
        title = compare(c["matched_title"] or "", c["title"] or "")
        return body, title

    @router.get("/review/api/candidates/{candidate_id}")
    def candidate_json(candidate_id: int, request: Request) -> JSONResponse:
        json_reviewer(request)
        data = candidate_data(candidate_id, Filters.parse(request.query_params))
        body, _ = comparison(data["candidate"])
        c = {k: v for k, v in data["candidate"].items()}
        c["thresholds"] = c["thresholds"] or {}
        return JSONResponse(
            _jsonable(
                {
                    **data,
                    "candidate": c,
                    "comparison": {
                        "similarity": round(body.similarity, 4),
                        "moved_paragraphs": body.moved,
                        "left": [_para_json(p) for p in body.left],
                        "right": [_para_json(p) for p in body.right],
                    },
                }
            )
        )

    @router.get("/review/{candidate_id}")
    def candidate_page(candidate_id: int, request: Request) -> Response:
        who = page_reviewer(request)
        filters = Filters.parse(request.query_params)
        data = candidate_data(candidate_id, filters)
        body, title = comparison(data["candidate"])
        c = data["candidate"]
        thresholds = sorted((c["thresholds"] or {}).items())
        relevant = {k for k, _ in thresholds if k.startswith((c["layer"], "facts_"))}
        return render(
            request,
            "candidate.html",
            who=who,
            filters=filters,
            c=c,
            data=data,
            body=body,
            title=title,
            thresholds=thresholds,
            relevant=relevant,
            urls={"incoming": safe_url(c["url"]), "matched": safe_url(c["matched_url"])},
            flash=flash_messages(request, who, c),
            here=f"/review/{candidate_id}" + (f"?{filters.query()}" if filters.query() else ""),
        )

    # --- decisions -----------------------------------------------------

    @router.post("/review/{candidate_id}/{verb}")
    async def decide(candidate_id: int, verb: str, request: Request) -> Response:
        form = await read_form(request)
        who = post_reviewer(request, form)
        if verb not in DONE:
            raise ReviewError(404, f"no such action: {verb} (restore, confirm, dismiss)")
        if not 0 < candidate_id < 2**63:
            raise ReviewError(404, f"duplicate candidate {candidate_id} does not exist")
        expected = form.get("expected") or None
        if expected is not None and expected not in STATUSES:
            raise ReviewError(400, f"expected must be one of {', '.join(STATUSES)}")
        note = (form.get("note") or "").strip() or None
        if note is not None and len(note) > MAX_NOTE:
            raise ReviewError(400, f"a note has at most {MAX_NOTE} characters")
        if note is not None and "\x00" in note:
            raise ReviewError(400, "a note cannot hold NUL characters")
        # the queue the reviewer works in (its filters), to go on to its next candidate
        filters = Filters.parse(dict(parse_qsl(form.get("queue", ""))))

        def run() -> tuple[dict[str, Any], int | None]:
            with deduper() as dd:
                try:
                    row = _rows(
                        dd.conn.execute(
                            queries()["review_decide"],
                            {
                                "id": candidate_id,
                                "verb": verb,
                                "expected": expected,
                                "note": note,
                                "by": who.name,
                            },
                        )
                    )[0]
                except psycopg.errors.NoDataFound as exc:
                    raise ReviewError(404, exc.diag.message_primary or "no such candidate") from exc
                except psycopg.errors.RaiseException as exc:
                    hint = f" ({exc.diag.message_hint})" if exc.diag.message_hint else ""
                    raise ReviewError(409, f"{exc.diag.message_primary}{hint}") from exc
                following = None
                if row["outcome"] == "applied":
                    key = _rows(dd.conn.execute(queries()["review_key"], {"id": candidate_id}))[0]
                    up = filters.status in ASCENDING
                    found = _rows(
                        dd.conn.execute(
                            queries()["review_queue_up" if up else "review_queue_down"],
                            {
                                **filters.sql(),
                                "at": key["created_at"],
                                "id": candidate_id,
                                "limit": 1,
                            },
                        )
                    )
                    following = found[0]["candidate_id"] if found else None
                return row, following

        row, following = await run_in_threadpool(run)
        query = filters.query()
        if row["outcome"] == "applied":
            target = f"/review/{following}" if following else "/review"
            extra = {"done": row["action_id"]}
        else:
            target = f"/review/{candidate_id}"
            extra = {row["outcome"]: row["status"]}
        location = target + "?" + "&".join(x for x in (query, urlencode(extra)) if x)
        if wants_json(request) or who.csrf is None:
            message = {
                "applied": f"candidate {candidate_id}: {row['status']}",
                "unchanged": f"candidate {candidate_id} was already {row['status']}: nothing changed",
                "already": (
                    f"candidate {candidate_id} was already decided ({row['status']}"
                    + (f" by {row['decided_by']}" if row["decided_by"] else "")
                    + "): nothing was applied"
                ),
            }[row["outcome"]]
            return JSONResponse(
                _jsonable({**row, "message": message, "next": following, "location": location}),
                status_code=409 if row["outcome"] == "already" else 200,
            )
        return RedirectResponse(location, status_code=303)

    @router.post("/review/undo")
    async def undo(request: Request) -> Response:
        form = await read_form(request)
        who = post_reviewer(request, form)
        back = _local_path(form.get("back"))

        def run() -> dict[str, Any]:
            with deduper() as dd:
                try:
                    return _rows(dd.conn.execute(queries()["review_undo"], {"by": who.name}))[0]
                except psycopg.errors.RaiseException as exc:
                    raise ReviewError(409, exc.diag.message_primary or "cannot undo") from exc

        row = await run_in_threadpool(run)
        if row["outcome"] == "nothing":
            location = back + ("&" if "?" in back else "?") + "nothing=1"
        else:
            location = (
                f"/review/{row['candidate_id']}?{urlencode({row['outcome']: row['action_id']})}"
            )
        if wants_json(request) or who.csrf is None:
            return JSONResponse(
                _jsonable({**row, "location": location}),
                status_code=409 if row["outcome"] == "superseded" else 200,
            )
        return RedirectResponse(location, status_code=303)

    def flash_messages(
        request: Request, who: Reviewer, c: dict[str, Any] | None = None
    ) -> list[dict[str, str]]:
        """Messages after a redirect, made from the database (the action log,
        the candidate as it is), never from text in the URL."""
        q = request.query_params
        out: list[dict[str, str]] = []
        action_ids = {k: q.get(k) for k in ("done", "undone", "superseded") if q.get(k)}
        if action_ids:
            with deduper() as dd:
                for kind, value in action_ids.items():
                    if not value.isdigit() or len(value) > 18:
                        continue
                    rows = _rows(dd.conn.execute(queries()["review_action"], {"id": int(value)}))
                    if not rows:
                        continue
                    a = rows[0]
                    if kind == "done":
                        out.append(
                            {
                                "kind": "ok",
                                "text": f"Candidate {a['candidate_id']}: {a['to_status']} (was {a['from_status']})."
                                + (
                                    " Press u to undo."
                                    if a["acted_by"] == who.name and not a["undone_at"]
                                    else ""
                                ),
                                "link": f"/review/{a['candidate_id']}",
                            }
                        )
                    elif kind == "undone":
                        out.append(
                            {
                                "kind": "ok",
                                "text": f"Undone: your {a['verb']} of candidate {a['candidate_id']}; it is {a['from_status']} again.",
                            }
                        )
                    else:
                        out.append(
                            {
                                "kind": "warn",
                                "text": f"Not undone: candidate {a['candidate_id']} was decided again after your {a['verb']}"
                                + (f" (now {c['status']} by {c['decided_by'] or '-'})" if c else "")
                                + "; that decision stands.",
                            }
                        )
        if c is not None and (q.get("already") or q.get("unchanged")):
            by = f" by {c['decided_by']}" if c["decided_by"] else ""
            at = f" at {c['decided_at']:%Y-%m-%d %H:%M:%S} UTC" if c["decided_at"] else ""
            kind = "already" if q.get("already") else "unchanged"
            out.append(
                {
                    "kind": "warn",
                    "text": (
                        f"Already decided{by}{at}: {c['status']}. Nothing was applied."
                        if kind == "already"
                        else f"It was already {c['status']}: nothing changed."
                    ),
                }
            )
        if q.get("nothing"):
            out.append(
                {"kind": "warn", "text": "Nothing to undo: you have no decision left to take back."}
            )
        return out

    app.include_router(router)

    @app.exception_handler(ReviewError)
    async def review_error(request: Request, exc: ReviewError) -> Response:
        if (
            request.url.path.startswith("/review/api/")
            or wants_json(request)
            or "authorization" in request.headers
        ):
            return JSONResponse(
                {"detail": exc.message}, status_code=exc.status, headers=exc.headers
            )
        who = sessions.read(request.cookies.get(SESSION_COOKIE))
        return render(
            request, "error.html", exc.status, who=who, code=exc.status, message=exc.message
        )

    @app.exception_handler(_LoginNeeded)
    async def login_needed(request: Request, exc: _LoginNeeded) -> Response:
        target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        return RedirectResponse("/review/login?" + urlencode({"next": target}), status_code=303)

    @app.middleware("http")
    async def review_headers(request: Request, call_next: Callable[[Request], Any]) -> Response:
        response = await call_next(request)
        if request.url.path.startswith("/review"):
            response.headers.setdefault("Content-Security-Policy", CSP)
            response.headers["X-Content-Type-Options"] = "nosniff"
            response.headers["X-Frame-Options"] = "DENY"
            # links out to crawled sites do not carry the review page's address
            response.headers["Referrer-Policy"] = "same-origin"
            if not request.url.path.startswith("/review/static/"):
                response.headers["Cache-Control"] = "no-store"
        return response


def _para_json(p: Any) -> dict[str, Any]:
    return {
        "number": p.number,
        "status": p.status,
        "partner": p.partner,
        "spans": [[s.kind, s.text] for s in p.spans],
    }


def _clean_name(name: str) -> str:
    return _CONTROL.sub("", name).strip()[:MAX_NAME]


def _same_origin(request: Request) -> None:
    """A POST that a browser says came from another site is refused (the
    CSRF token is checked too; this is the second lock)."""
    origin = request.headers.get("origin")
    if origin is None:
        return
    host = request.headers.get("host", "")
    try:
        netloc = urlsplit(origin).netloc
    except ValueError:
        netloc = ""
    if not netloc or netloc.lower() != host.lower():
        raise ReviewError(403, "cross-site request refused")


def _set_cookie(
    request: Request, response: Response, name: str, value: str, *, max_age: int
) -> None:
    secure = request.url.scheme == "https" or request.headers.get("x-forwarded-proto") == "https"
    response.set_cookie(
        name, value, max_age=max_age, path="/review", httponly=True, samesite="lax", secure=secure
    )
