"""The report as text (the terminal) and as JSON (``--format json``)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import numpy as np

from .layers import CalibrationReport, LayerReport


def _fmt_threshold(layer: LayerReport, value: float) -> str:
    return f"{value:.0f}" if layer.lower_is_closer else f"{value:.2f}"


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def _ascii_table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    lines = [
        "  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
        for r in [header, *rows]
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def render_text(report: CalibrationReport) -> str:
    """The terminal report: sample, per layer the valley, suggested against current
    thresholds with the share of documents per band, and precision/recall."""
    out = [
        f"sample: {report.documents} arrivals ({report.from_candidates} of them near duplicates "
        f"the engine turned away), seen {_day(report.first_seen)} .. {_day(report.last_seen)}"
        + (f", source {report.source}" if report.source else ""),
    ]
    if report.model:
        out.append(
            f"semantic model: {report.model} (strategy {report.strategy}), content type {report.content_type}"
        )
    out.extend(report.notes)
    header = [
        "layer",
        "thresholds",
        "duplicate / review",
        "docs dup",
        "docs review",
        "docs new",
        "pairs dup",
        "pairs review",
    ]
    rows = []
    for layer in report.layers.values():
        rule = "distance <=" if layer.lower_is_closer else "score >="
        for name, t in (
            ("suggested", layer.suggested),
            (f"current ({layer.current_from})", layer.current),
        ):
            key = "suggested" if name == "suggested" else "current"
            s, p = layer.shares[key], layer.pair_shares[key]
            rows.append(
                [
                    layer.layer,
                    name,
                    f"{rule} {_fmt_threshold(layer, t.duplicate)} / {_fmt_threshold(layer, t.review)}",
                    _pct(s["duplicate"]),
                    _pct(s["review"]),
                    _pct(s["new"]),
                    f"{100 * p['duplicate']:.3f}%",
                    f"{100 * p['review']:.3f}%",
                ]
            )
    out += ["", _ascii_table(header, rows), ""]
    out.append("docs: share of sampled documents whose nearest neighbour falls in the band;")
    out.append("pairs: share of all sampled pairs (how fast false matches grow with the window).")
    for layer in report.layers.values():
        out += ["", f"[{layer.layer}] " + _describe_valley(layer)]
        out += [f"  note: {n}" for n in layer.notes]
        if layer.decisions:
            out.append(
                f"  review decisions: {layer.decided_pairs} pairs, {layer.decided_duplicates} confirmed duplicates"
            )
            rows = [
                [
                    ("<= " if layer.lower_is_closer else ">= ")
                    + _fmt_threshold(layer, p.threshold)
                    + (" *" if p.threshold == layer.suggested.duplicate else "")
                    + (" (current)" if p.threshold == layer.current.duplicate else ""),
                    str(p.predicted),
                    _pct(p.precision),
                    _pct(p.recall),
                ]
                for p in layer.decisions
            ]
            out.append(
                "  "
                + _ascii_table(["duplicate at", "pairs", "precision", "recall"], rows).replace(
                    "\n", "\n  "
                )
            )
    return "\n".join(out)


def _day(value: datetime | None) -> str:
    return value.strftime("%Y-%m-%d %H:%M") if value else "-"


def _describe_valley(layer: LayerReport) -> str:
    v = layer.valley
    scale = layer.scale()
    centers = scale.centers()
    if not v.found or v.floor is None:
        return f"no valley: {v.reason}"
    a, b = v.floor
    fmt = (lambda x: f"{x:.0f}") if layer.lower_is_closer else (lambda x: f"{x:.3f}")
    if layer.lower_is_closer:
        a, b = b, a  # distances: list the floor from closer to farther
    return (
        f"modes at {layer.unit} {fmt(centers[v.low_mode])} (far) and {fmt(centers[v.high_mode])} "  # type: ignore[index]
        f"(near); valley floor {fmt(centers[a])} .. {fmt(centers[b])}, lowest at "
        f"{fmt(centers[v.minimum])} ({100 * (v.depth or 0):.1f}% of the smaller mode)"  # type: ignore[index]
    )


def to_json(report: CalibrationReport) -> dict[str, Any]:
    """The report as plain JSON values (``--format json``)."""

    def iso(x: datetime | None) -> str | None:
        return x.isoformat() if x else None

    layers = {}
    for name, layer in report.layers.items():
        v = layer.valley
        centers = layer.scale().centers()
        layers[name] = {
            "unit": layer.unit,
            "duplicate_when": "score <= threshold"
            if layer.lower_is_closer
            else "score >= threshold",
            "suggested": layer.suggested.as_dict(),
            "current": layer.current.as_dict(),
            "current_from": layer.current_from,
            "valley": {
                "found": v.found,
                "reason": v.reason or None,
                "low_mode": None if v.low_mode is None else float(centers[v.low_mode]),
                "high_mode": None if v.high_mode is None else float(centers[v.high_mode]),
                "minimum": None if v.minimum is None else float(centers[v.minimum]),
                "floor": None
                if v.floor is None
                else [float(centers[v.floor[0]]), float(centers[v.floor[1]])],
                "depth": v.depth,
            },
            "document_shares": layer.shares,
            "pair_shares": layer.pair_shares,
            "nearest_neighbour_histogram": _hist_json(layer, layer.nn_counts),
            "pair_histogram": _hist_json(layer, layer.pair_counts),
            "decisions": {
                "pairs": layer.decided_pairs,
                "duplicates": layer.decided_duplicates,
                "points": [p.__dict__ for p in layer.decisions],
            },
            "notes": layer.notes,
        }
    return {
        "documents": report.documents,
        "from_candidates": report.from_candidates,
        "source": report.source,
        "since": iso(report.since),
        "until": iso(report.until),
        "first_seen": iso(report.first_seen),
        "last_seen": iso(report.last_seen),
        "model": report.model,
        "strategy": report.strategy,
        "content_type": report.content_type,
        "notes": report.notes,
        "layers": layers,
    }


def _hist_json(layer: LayerReport, counts: np.ndarray) -> dict[str, list[float]]:
    centers = layer.scale().centers()
    keep = counts > 0
    return {
        "at": [round(float(c), 4) for c in centers[keep]],
        "count": [int(c) for c in counts[keep]],
    }
