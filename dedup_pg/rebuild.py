"""Full-history rebuild: re-run de-duplication over everything stored, in batch.

Streaming ingest decides one arrival at a time against what is stored. A
rebuild decides over all stored documents at once, for a corpus loaded in bulk
or after a normalization or tokenizer change (:func:`refingerprint` first
rewrites the stored fingerprints in place, resumably):

1. candidate pairs come from set-based SQL (``dedup_rebuild_pairs``: equal
   digests, SimHash band self-joins, shared clauses, shared MinHash bands;
   ``dedup_rebuild_vector_pairs``: HNSW neighbours of the active model), judged
   by ``dedup_ingest``'s rules, the fact check included;
2. the duplicate links form clusters (:func:`assign`): in arrival order, a
   document linked to an earlier document that is still kept becomes its
   duplicate, so each cluster's kept document is its earliest (``seen_at``,
   then ``doc_id``) and no duplicate is recorded against a document it was not
   compared with (a plain union of the links would chain: A~B, B~C, C "of" A).
   A hash-layer match that failed the fact check stops the search as it does
   in streaming: the document is kept, for review, unless the semantic layer
   (which streaming runs next on what the hash layers kept) finds a duplicate;
3. every duplicate is demoted to a restorable ``auto`` candidate of its kept
   document (``dedup_demote_document``, as the semantic layer does in
   streaming), and review pairs between kept documents are queued like
   streaming reviews.

Demotions change which clauses count as boilerplate, so the steps repeat until
a round demotes nothing: a second rebuild then changes nothing.

Where it differs from streaming: boilerplate clauses are counted over all
stored documents in the window (not only those before each one), and settings
are the database's (per-source overrides are not applied).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from . import database
from . import facts as facts_mod
from . import minhash as mh
from .fingerprint import fingerprint
from .normalize import NORMALIZATION_VERSION, NormalizeOptions
from .sqlfiles import queries
from .templates import TemplateSet

#: Layer precedence for a pair with several kinds of evidence (streaming
#: checks them in this order).
LAYERS = ("exact", "simhash", "containment", "minhash", "semantic")
#: Rounds of pairs -> clusters -> demotions before giving up on a fixpoint.
MAX_ROUNDS = 5
#: Keys of a link's thresholds that are the rebuild's own, not written with a
#: candidate: the lead rule's clause count, the fact check's verdicts.
_INTERNAL = ("lead_n", "facts_disagree", "facts_added")

Progress = Callable[[str], None]
_BEGINNING = datetime(1, 1, 1, tzinfo=timezone.utc)
DocKey = tuple[datetime, int]  # (seen_at, doc_id): the order "earliest" means


@dataclass(frozen=True)
class Link:
    """A judged pair: ``doc_id`` is the later document, ``matched_doc_id`` the earlier."""

    doc_id: int
    seen_at: datetime
    matched_doc_id: int
    matched_seen_at: datetime
    verdict: str  # duplicate | review
    layer: str
    score: float
    distance: int | None
    thresholds: dict[str, Any]


@dataclass
class Cluster:
    """Documents joined by duplicate links; ``kept`` is the earliest."""

    kept: int
    members: list[int]  # the others, earliest first


@dataclass
class RebuildReport:
    documents: int = 0
    pairs: int = 0
    clusters: list[Cluster] = field(default_factory=list)  # of the first round
    duplicates: dict[str, int] = field(default_factory=dict)  # by layer
    reviews: dict[str, int] = field(default_factory=dict)
    skipped: int = 0  # demotions the writer refused (protected or gone meanwhile)
    rounds: int = 0
    seconds: float = 0.0
    dry_run: bool = False
    run_id: int | None = None
    refingerprint: RefingerprintResult | None = None

    def to_json(self) -> dict[str, Any]:
        sizes = [len(c.members) + 1 for c in self.clusters]
        return {
            "documents": self.documents,
            "pairs": self.pairs,
            "clusters": len(self.clusters),
            "largest_cluster": max(sizes, default=0),
            "duplicates": dict(self.duplicates),
            "reviews": dict(self.reviews),
            "skipped": self.skipped,
            "rounds": self.rounds,
            "seconds": round(self.seconds, 3),
            "dry_run": self.dry_run,
            "run_id": self.run_id,
            "refingerprint": self.refingerprint.__dict__ if self.refingerprint else None,
        }


@dataclass
class RefingerprintResult:
    run_id: int | None
    total: int  # documents this run had to do (when it started or resumed)
    done: int  # documents done by the run, over all its sessions
    changed: int  # documents whose fingerprints changed
    failed: int  # documents nothing is left of under the new rules (kept as they were)
    resumed: bool
    seconds: float


# -- re-fingerprint ------------------------------------------------------------


def fingerprint_key(options: NormalizeOptions, templates: TemplateSet | None) -> str:
    """What stored fingerprints depend on, hashed: normalization version and
    settings, learned template versions, tokenizer. Runs resume only under the
    same key."""
    try:
        from importlib.metadata import version

        tokenizer = version("rjieba")
    except Exception:  # noqa: BLE001 - a missing distribution only weakens the key
        tokenizer = "unknown"
    data = {
        "norm_version": NORMALIZATION_VERSION,
        "lowercase": options.lowercase,
        "noise_patterns": list(options.noise_patterns),
        "script_folding": options.script_folding,
        "templates": sorted((templates.versions if templates else {}).items()),
        "tokenizer": tokenizer,
        # revision 0008's fingerprints: a run finished before them did not
        # write them, so the key must differ from that run's
        "minhash": [mh.MINHASH_VERSION, mh.NUM_PERM, mh.SHINGLE, mh.BAND_ROWS, mh.MIN_SHINGLES],
        "facts": [facts_mod.FACTS_VERSION, sorted(facts_mod.NAME_TAGS), facts_mod.MAX_FACTS],
    }
    return hashlib.sha1(json.dumps(data, sort_keys=True).encode()).hexdigest()


def refingerprint(
    conn: psycopg.Connection[Any],
    *,
    options: NormalizeOptions,
    templates: TemplateSet | None = None,
    batch_size: int = 500,
    force: bool = False,
    progress: Callable[[int, int, int], None] | None = None,
    dry_run: bool = False,
) -> RefingerprintResult:
    """Recompute every stored document's fingerprints (SHA-1, title SHA-1,
    SimHash, clauses, norm_version, MinHash signature and bands, facts) from
    its stored title and body under the current rules, and write those that
    changed, a batch per transaction. Documents stored before revision 0008
    get their MinHash signature and facts.

    Resumable: each batch commits with the run's progress (``dedup_rebuild_runs``),
    and a run under the same :func:`fingerprint_key` picks up after the last
    document done. When the last run under this key finished, there is nothing
    to do (ingest fingerprints new documents under the same rules) unless
    ``force``. ``dry_run``: one transaction, the caller rolls it back.
    ``progress(done, total, changed)`` after each batch.
    """
    started = time.perf_counter()
    key = fingerprint_key(options, templates)
    q = queries()
    last = conn.execute(q["rebuild_last_refingerprint"]).fetchone()
    resume = None if dry_run else conn.execute(q["rebuild_resumable"], {"key": key}).fetchone()
    if resume is None and not force and last is not None and last[0] == key and last[1]:
        return RefingerprintResult(None, 0, 0, 0, 0, False, time.perf_counter() - started)
    run = resume or (None, None, 0, 0, 0)
    after = {"seen_at": run[1] or _BEGINNING, "doc_id": run[2] or 0}
    keys = conn.execute(q["refingerprint_keys"], after).fetchall()
    if resume is None and not dry_run:
        with conn.transaction():
            conn.execute(q["rebuild_abandon"], {"key": key})
            row = conn.execute(
                q["rebuild_start"],
                {"kind": "refingerprint", "key": key, "since": None, "total": len(keys)},
            ).fetchone()
        assert row is not None
        run = row
    run_id, done, changed = run[0], int(run[3]), int(run[4])
    failed = 0
    literals = database.reads_array_literals(conn)  # the schema's form of an item's arrays
    for start in range(0, len(keys), batch_size):
        batch = keys[start : start + batch_size]
        ids = [doc_id for _, doc_id in batch]
        lo, hi = batch[0][0], batch[-1][0]
        texts = conn.execute(
            q["refingerprint_texts"], {"doc_ids": ids, "lo": lo, "hi": hi}
        ).fetchall()
        items = []
        for doc_id, seen_at, title, body, source in texts:
            text = templates.strip(source, body) if templates else body
            try:
                fp = fingerprint(text, title, options)
            except ValueError:
                failed += 1  # nothing left under the new rules: keep it as it was
                continue
            items.append(
                {
                    "doc_id": doc_id,
                    "seen_at": seen_at.isoformat(),
                    **fp.sql_item(literals),
                }
            )
        with conn.transaction():
            row = conn.execute(q["refingerprint"], {"items": Jsonb(items)}).fetchone()
            n_changed = int(row[0]) if row else 0
            if run_id is not None:
                conn.execute(
                    q["rebuild_progress"],
                    {
                        "run_id": run_id,
                        "seen_at": batch[-1][0],
                        "doc_id": batch[-1][1],
                        "done": len(batch),
                        "changed": n_changed,
                    },
                )
        done += len(batch)
        changed += n_changed
        if progress:
            progress(done, len(keys) + int(run[3]), changed)
    if run_id is not None:
        summary = {"done": done, "changed": changed, "failed": failed}
        conn.execute(q["rebuild_finish"], {"run_id": run_id, "summary": Jsonb(summary)})
    return RefingerprintResult(
        run_id, len(keys), done, changed, failed, resume is not None, time.perf_counter() - started
    )


# -- bulk load -------------------------------------------------------------------


def load_rows(conn: psycopg.Connection[Any], rows: list[dict[str, Any]]) -> list[int]:
    """Store fingerprinted rows (``deduper.prepare_batch``'s) as documents without
    checking them: the rebuild that follows decides. One transaction."""
    if not rows:
        return []
    days = sorted(
        {datetime.fromisoformat(r["seen_at"]).astimezone(timezone.utc).date() for r in rows}
    )
    with conn.transaction():
        conn.execute(queries()["ensure_partitions"], {"from": days[0], "to": days[-1]})
        out = conn.execute(queries()["rebuild_load"], {"items": Jsonb(rows)}).fetchall()
    return [doc_id for _, doc_id in out]


# -- clusters --------------------------------------------------------------------


def _rank(link: Link) -> tuple[Any, ...]:
    """Best evidence first: layer order, then score, then the earliest match."""
    return (LAYERS.index(link.layer), -link.score, link.matched_seen_at, link.matched_doc_id)


def _facts_disagree(link: Link) -> bool:
    """A hash-layer duplicate turned into a review by the fact check."""
    return link.verdict == "review" and bool(link.thresholds.get("facts_disagree"))


def _matching(link: Link) -> bool:
    """A link that would make its document a duplicate, facts aside: streaming
    takes the first hash layer's match of this kind and checks its facts."""
    return link.verdict == "duplicate" or _facts_disagree(link)


def assign(
    links: Iterable[Link], *, protected: Collection[int] = (), since: datetime = _BEGINNING
) -> tuple[list[Cluster], dict[int, Link]]:
    """Walk the documents in arrival order (seen_at, doc_id), as streaming
    ingest met them: a document with a duplicate link to an earlier document
    that is still kept becomes a duplicate of it (the best link: layer order,
    then score); otherwise it is kept. A cluster is a kept document with its
    duplicates, so its kept document is its earliest, and a duplicate is always
    judged against the document it is recorded against (no chains: A~B and
    B~C do not make C a duplicate of A when B itself is a duplicate).

    A match that failed the fact check (a ``review`` link with
    ``facts_disagree``) counts as a hash-layer match in the layer order: when
    it is the best, the document is kept (its review) and no later hash layer
    is consulted, as in streaming, where the fact check comes after the first
    hash layer that matched; the semantic layer, which streaming runs next on
    what the hash layers kept, still may make it a duplicate. Other links that
    are not ``duplicate`` are ignored.

    ``protected`` documents (whitelisted, kept by a reviewer) and those seen
    before ``since`` stay kept. Returns the clusters and each duplicate's link.
    """
    by_doc: dict[int, list[Link]] = defaultdict(list)
    order: dict[int, DocKey] = {}
    for link in links:
        if not _matching(link):
            continue
        by_doc[link.doc_id].append(link)
        order[link.doc_id] = (link.seen_at, link.doc_id)
        order[link.matched_doc_id] = (link.matched_seen_at, link.matched_doc_id)
    joined: dict[int, Link] = {}
    members: dict[int, list[int]] = defaultdict(list)
    for doc_id in sorted(by_doc, key=order.__getitem__):
        if doc_id in protected or order[doc_id] < (since, 0):
            continue
        kept = [x for x in by_doc[doc_id] if x.matched_doc_id not in joined]
        if kept and _facts_disagree(best := min(kept, key=_rank)):
            kept = [x for x in kept if x.layer == "semantic" and x.verdict == "duplicate"]
        if kept:
            best = min(kept, key=_rank)
            joined[doc_id] = best
            members[best.matched_doc_id].append(doc_id)
    clusters = [Cluster(k, m) for k, m in sorted(members.items(), key=lambda i: order[i[0]])]
    return clusters, joined


# -- the rebuild -------------------------------------------------------------------


def _links(rows: Iterable[tuple[Any, ...]]) -> list[Link]:
    return [Link(*row[:8], thresholds=dict(row[8] or {})) for row in rows]


def _needs_lead(link: Link) -> bool:
    return link.verdict == "lead" or bool(link.thresholds.get("facts_added"))


def _resolve_leads(
    conn: psycopg.Connection[Any],
    links: list[Link],
    options: NormalizeOptions,
    templates: TemplateSet | None,
) -> list[Link]:
    """Links whose verdict depends on the later text's lead clauses, which are
    not stored (recomputed here from the later text), as dedup_ingest checks
    them:

    - containment pairs that are duplicates only by the lead rule (``lead``):
      the earlier text's clauses must all open the later one (its first
      ``lead_n + 2`` lead clauses);
    - matches whose later text adds many facts (``facts_added``): another
      story (the fact check fails) unless at least half its lead clauses are
      among the earlier text's clauses (a full recrawl of a page stored
      truncated, :func:`_opens_with`).
    """
    pending = [x for x in links if _needs_lead(x)]
    out = [x for x in links if not _needs_lead(x)]
    if not pending:
        return out
    q = queries()
    texts = {
        row[0]: row[1:]
        for row in conn.execute(
            q["rebuild_lead_texts"], {"doc_ids": sorted({x.doc_id for x in pending})}
        ).fetchall()
    }
    stored_ids = sorted({x.matched_doc_id for x in pending})
    lo = min(x.matched_seen_at for x in pending)
    hi = max(x.matched_seen_at for x in pending)
    # a text's rows, and a long text's clauses beyond them (documents.clauses)
    clauses: dict[int, set[int]] = {}
    for name in ("rebuild_clauses_of", "rebuild_clause_arrays_of"):
        for doc_id, hashes in conn.execute(
            q[name], {"doc_ids": stored_ids, "lo": lo, "hi": hi}
        ).fetchall():
            clauses.setdefault(doc_id, set()).update(hashes)
    lead_of: dict[int, tuple[int, ...]] = {}
    for x in pending:
        if x.doc_id not in lead_of:
            title, body, source = texts.get(x.doc_id, (None, "", None))
            try:
                text = templates.strip(source, body) if templates else body
                lead_of[x.doc_id] = fingerprint(text, title, options).lead
            except ValueError:
                lead_of[x.doc_id] = ()
        lead, stored = lead_of[x.doc_id], clauses.get(x.matched_doc_id, set())
        added = bool(x.thresholds.get("facts_added")) and not _opens_with(lead, stored)
        failed = bool(x.thresholds.get("facts_disagree")) or added
        plain = {
            k: v for k, v in x.thresholds.items() if k not in ("facts_added", "facts_disagree")
        }
        checked = plain | {"facts_disagree": True} if failed else plain
        if x.verdict == "duplicate":
            out.append(_with(x, verdict="review" if failed else "duplicate", thresholds=checked))
            continue
        n = int(x.thresholds.get("lead_n", 0))
        if n >= 2 and len(stored & set(lead[: n + 2])) == n:
            # a duplicate by the lead rule, unless the fact check said otherwise
            out.append(_with(x, verdict="review" if failed else "duplicate", thresholds=checked))
        elif x.score >= float(x.thresholds.get("containment_review_threshold", 1.0)):
            # a plain containment review: no duplicate, so no fact check
            out.append(_with(x, verdict="review", thresholds=plain))
    return out


def _opens_with(lead: tuple[int, ...], stored: set[int]) -> bool:
    """Does a text with these lead clauses open with a stored text (at least
    half its lead clauses among the stored ones)? The exemption from the fact
    check's added-facts rule, as dedup_ingest computes it."""
    return 2 * len(stored & set(lead)) >= len(lead)


def _with(link: Link, **changes: Any) -> Link:
    values = {**link.__dict__, **changes}
    values["thresholds"] = {k: v for k, v in values["thresholds"].items() if k != "lead_n"}
    return Link(**values)


def _written(thresholds: Mapping[str, Any]) -> dict[str, Any]:
    """A link's thresholds as a candidate records them (as streaming does)."""
    return {k: v for k, v in thresholds.items() if k not in _INTERNAL}


def _use_semantic(conn: psycopg.Connection[Any]) -> bool:
    settings = dict(conn.execute(queries()["settings"]).fetchall())
    if settings.get("semantic_mode", "off") == "off":
        return False
    return conn.execute(queries()["active_model"]).fetchone() is not None


def rebuild(
    conn: psycopg.Connection[Any],
    *,
    options: NormalizeOptions,
    templates: TemplateSet | None = None,
    since: datetime | None = None,
    dry_run: bool = False,
    semantic: bool = True,
    overrides: Mapping[str, Any] | None = None,
    chunk: int = 500,
    progress: Progress | None = None,
) -> RebuildReport:
    """Re-decide every stored document seen at or after ``since`` (all when
    None; earlier documents within the window take part as partners). See the
    module docstring. ``dry_run``: report what would be done, write nothing
    (one round: later rounds depend on the first one's writes)."""
    started = time.perf_counter()
    q = queries()
    say = progress or (lambda _message: None)
    report = RebuildReport(dry_run=dry_run)
    params = {"since": since, "overrides": Jsonb(dict(overrides or {}))}
    report.documents = len(conn.execute(q["rebuild_documents"], {"since": since}).fetchall())
    vectors = semantic and _use_semantic(conn)
    protected = {row[0] for row in conn.execute(q["rebuild_protected"]).fetchall()}
    if not dry_run:
        row = conn.execute(
            q["rebuild_start"],
            {"kind": "clusters", "key": None, "since": since, "total": report.documents},
        ).fetchone()
        report.run_id = row[0] if row else None
    since_key = since or _BEGINNING
    for round_no in range(1, MAX_ROUNDS + 1):
        report.rounds = round_no
        t0 = time.perf_counter()
        with conn.transaction():  # the pair functions use temporary tables
            links = _links(conn.execute(q["rebuild_pairs"], params).fetchall())
            if vectors:
                links += _links(conn.execute(q["rebuild_vector_pairs"], params).fetchall())
        links = _resolve_leads(conn, links, options, templates)
        if round_no == 1:
            report.pairs = len(links)
        say(f"round {round_no}: {len(links):,} judged pairs ({time.perf_counter() - t0:.1f} s)")
        clusters, joined = assign(links, protected=protected, since=since_key)
        if round_no == 1:
            report.clusters = clusters
        demote = [
            {
                "doc_id": m,
                "seen_at": link.seen_at.isoformat(),
                "kept_doc_id": link.matched_doc_id,
                "kept_seen_at": link.matched_seen_at.isoformat(),
                "layer": link.layer,
                "score": link.score,
                "distance": link.distance,
                "thresholds": _written(link.thresholds) | {"rebuild_run_id": report.run_id},
            }
            for m, link in joined.items()
        ]
        gone = {d["doc_id"] for d in demote}
        in_cluster = {m: c.kept for c in clusters for m in (c.kept, *c.members)}
        reviewed = {row[0] for row in conn.execute(q["rebuild_reviewed"]).fetchall()}
        reviews = _reviews(links, gone, in_cluster, reviewed)
        if dry_run:
            for d in demote:
                report.duplicates[d["layer"]] = report.duplicates.get(d["layer"], 0) + 1
            for r in reviews:
                report.reviews[r["layer"]] = report.reviews.get(r["layer"], 0) + 1
            break
        written = 0
        for start in range(0, len(demote), chunk):
            part = demote[start : start + chunk]
            with conn.transaction():
                done = {
                    d
                    for d, _ in conn.execute(q["rebuild_demote"], {"links": Jsonb(part)}).fetchall()
                }
            for d in part:
                if d["doc_id"] in done:
                    report.duplicates[d["layer"]] = report.duplicates.get(d["layer"], 0) + 1
            report.skipped += len(part) - len(done)
            written += len(done)
            say(f"round {round_no}: {written:,}/{len(demote):,} duplicates written")
        for start in range(0, len(reviews), chunk):
            part = reviews[start : start + chunk]
            with conn.transaction():
                done = {
                    d
                    for d, _ in conn.execute(
                        q["rebuild_review"], {"reviews": Jsonb(part)}
                    ).fetchall()
                }
            for r in part:
                if r["doc_id"] in done:
                    report.reviews[r["layer"]] = report.reviews.get(r["layer"], 0) + 1
        if written == 0:
            break
    report.seconds = time.perf_counter() - started
    if report.run_id is not None:
        conn.execute(
            q["rebuild_finish"], {"run_id": report.run_id, "summary": Jsonb(report.to_json())}
        )
    return report


def _reviews(
    links: list[Link], gone: set[int], cluster_of: Mapping[int, int], reviewed: set[int]
) -> list[dict[str, Any]]:
    """One review per kept document (the later of the pair), as streaming queues
    at most one: a match that failed the fact check first (streaming puts it
    in place of any review found before it), then SimHash (closest),
    containment, MinHash, semantic (highest score); never within a cluster,
    with a demoted document, or for a document that has a candidate of its own
    already (``reviewed``)."""

    def rank(x: Link) -> tuple[Any, ...]:
        return (not _facts_disagree(x), *_rank(x))

    best: dict[int, Link] = {}
    skip = gone | reviewed
    for x in links:
        if x.verdict != "review" or x.doc_id in skip or x.matched_doc_id in gone:
            continue
        if x.doc_id in cluster_of and cluster_of.get(x.doc_id) == cluster_of.get(x.matched_doc_id):
            continue
        cur = best.get(x.doc_id)
        if cur is None or rank(x) < rank(cur):
            best[x.doc_id] = x
    return [
        {
            "doc_id": x.doc_id,
            "seen_at": x.seen_at.isoformat(),
            "matched_doc_id": x.matched_doc_id,
            "matched_seen_at": x.matched_seen_at.isoformat(),
            "layer": x.layer,
            "score": x.score,
            "distance": x.distance,
            "thresholds": _written(x.thresholds),
        }
        for x in sorted(best.values(), key=lambda x: (x.seen_at, x.doc_id))
    ]
