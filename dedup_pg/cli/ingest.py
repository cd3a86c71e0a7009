"""Feeding documents in and asking about one: ``ingest`` (JSONL, HTML folders,
WARC; --out verdict lines, --resume, the exit codes), ``check`` and ``demo``."""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import sys
from collections.abc import Iterator
from importlib.resources import files
from typing import IO, Any

import click
import psycopg

from .. import database
from ..deduper import DEFAULT_RETRIES
from ..documents import InputError, Line, parse_jsonl_line
from ..errors import first_line
from ..verdicts import Verdict
from .common import batch_size_option, database_options, open_deduper

#: ``dedup-pg ingest`` exit codes (2 is a usage error, as for every command).
EXIT_ALL_INGESTED = 0
EXIT_STOPPED = 1  # a database fault outlasted the retries; committed batches stay
EXIT_SOME_REJECTED = 3  # the stream went through; some items got an error verdict


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


def verdict_line(v: Verdict) -> str:
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


def input_items(path: str, stack: contextlib.ExitStack) -> tuple[Iterator[Any], int | None]:
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


def _workers(ctx: click.Context, param: click.Parameter, value: object) -> int | None:
    """--workers: 'auto' (None: Deduper.ingest_batches decides) or 0 to 64."""
    if value is None or value == "auto":
        return None
    try:
        number = int(value)  # type: ignore[call-overload]
    except (TypeError, ValueError):
        raise click.BadParameter(f"{value!r} is neither 'auto' nor a number") from None
    if not 0 <= number <= 64:
        raise click.BadParameter(f"{number} is not in the range 0<=x<=64")
    return number


@click.command()
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
@batch_size_option
@click.option(
    "--workers",
    default="auto",
    show_default=True,
    callback=_workers,
    envvar="DEDUP_PG_WORKERS",
    show_envvar=True,
    help="Processes that fingerprint ahead of the database (0: one thread; auto: "
    "one per CPU, at most 2, none on one CPU or for a single batch).",
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
@database_options
def ingest(
    file: str,
    out_path: str | None,
    resume: bool,
    batch_size: int,
    workers: int | None,
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
        dd = stack.enter_context(open_deduper(dsn, home, batch_size=batch_size, retries=retries))
        from tqdm import tqdm

        items, total = input_items(file, stack)
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
                        out.write(verdict_line(verdict) + "\n")
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
        first = first_line(stopped)
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


@click.command()
@click.argument("text")
@click.option("--title", help="Title of the text, if it has one.")
@click.option("--json", "as_json", is_flag=True, help="Print the verdict as JSON.")
@click.option(
    "--exact", is_flag=True, help="The exact layer alone: has this very text been stored?"
)
@database_options
def check(
    text: str, title: str | None, as_json: bool, exact: bool, dsn: str | None, home: str | None
) -> None:
    """Check TEXT ('-' for stdin) against the database without storing it."""
    if text == "-":
        text = sys.stdin.read()
    with open_deduper(dsn, home) as dd:
        verdict = dd.seen(text, title=title) if exact else dd.is_duplicate(text, title=title)
    if as_json:
        click.echo(verdict_line(verdict))
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


@click.command()
@click.option(
    "--keep",
    is_flag=True,
    help="Keep the demo database (printed at the end) instead of a fresh one.",
)
@database_options
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
    with open_deduper(dsn, home) as dd:
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
